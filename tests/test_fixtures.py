"""Every ``tests/fixtures/<CODE>/<case>.py``: fixed exactly into its expected file, traps untouched.

The expected files are written by hand from the rule's documented facts; a case without one must
come out byte-identical even with ``--unsafe-fixes``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from torchfix_codemods.engine import process
from torchfix_codemods.rules.registry import all_rules
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.verify.fixtures import Fixture, collect_fixtures

ROOT = Path(__file__).parent / "fixtures"
FIXTURES = collect_fixtures(ROOT)


def _fix(fixture: Fixture, data: bytes, *, unsafe: bool | None = None):
    settings = fixture.settings()
    if unsafe is not None:
        settings = dataclasses.replace(settings, unsafe_fixes=unsafe)
    return process(SourceUnit.from_bytes(str(fixture.path), data),
                   settings.options_for(str(fixture.path)), apply_fixes=True)


def _id(fixture: Fixture) -> str:
    return str(fixture.path.relative_to(ROOT))


@pytest.mark.parametrize("fixture", FIXTURES, ids=_id)
def test_fixture_is_fixed_as_expected(fixture: Fixture) -> None:
    data = fixture.path.read_bytes()
    if fixture.expected_path is None:
        result = _fix(fixture, data, unsafe=True)
        assert result.new_bytes is None, (
            f"{fixture.path.name} must stay byte-identical, but fix produced:\n{result.fixed}")
        assert all(not (f.fix and f.fix.applied) for f in result.findings)
        return
    expected = fixture.expected_path.read_bytes()
    compile(expected, str(fixture.expected_path), "exec", dont_inherit=True)
    result = _fix(fixture, data)
    produced = result.new_bytes if result.new_bytes is not None else data
    assert produced.decode() == expected.decode()
    assert produced == expected
    if fixture.code is not None:
        assert any(f.code == fixture.code for f in result.findings), "case raised no finding"
    again = _fix(fixture, produced)
    assert again.new_bytes is None, f"second fix changed {fixture.path.name}:\n{again.fixed}"


REAL_TRAPS = [f for f in FIXTURES if f.is_trap and f.expected_path is None
              and f.path.read_text(encoding="utf-8").startswith("# Reduced from ")]


@pytest.mark.parametrize("fixture", REAL_TRAPS, ids=_id)
def test_traps_reduced_from_real_code_raise_no_finding(fixture: Fixture) -> None:
    """A trap cut from a real repository (its header names the repository, commit and path)
    is code a reviewer judged must-not-touch: none of the rules it selects may report it."""
    result = _fix(fixture, fixture.path.read_bytes(), unsafe=True)
    assert fixture.settings().enabled, "the trap selects no rule"
    assert result.findings == []


def test_every_fixture_directory_names_a_rule() -> None:
    codes = {rule.code for rule in all_rules()}
    for directory in ROOT.iterdir():
        if directory.is_dir() and not directory.name.startswith(("_", ".")):
            assert directory.name in codes, f"{directory.name} is not a rule code"


def test_rules_with_fixes_have_fixture_cases_and_traps() -> None:
    for rule in all_rules():
        if rule.code == "TFC000":
            continue
        cases = [f for f in FIXTURES if f.code == rule.code]
        assert any(f.expected_path or f.executable for f in cases) or all(
            e.after is None for e in rule.invalid), f"{rule.code}: no fixture case"
        assert any(f.is_trap for f in cases), f"{rule.code}: no trap fixture"
