"""Every ``tests/fixtures/<CODE>/<case>.py``: fixed exactly into its expected file, traps untouched.

The expected files are written by hand from the rule's documented facts; a case without one must
come out byte-identical even with ``--unsafe-fixes``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from torchfix_codemods.engine import process
from torchfix_codemods.indexing import project_of_bytes
from torchfix_codemods.rules.registry import all_rules
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.verify.fixtures import (
    PROJECT_PREFIXES,
    Fixture,
    ProjectFixture,
    collect_fixtures,
    collect_projects,
)
from torchfix_codemods.verify.harness import fix_project

ROOT = Path(__file__).parent / "fixtures"
FIXTURES = collect_fixtures(ROOT)


def _fix(fixture: Fixture, data: bytes, *, unsafe: bool | None = None):
    settings = fixture.settings()
    if unsafe is not None:
        settings = dataclasses.replace(settings, unsafe_fixes=unsafe)
    path = str(fixture.path)
    return process(SourceUnit.from_bytes(path, data), settings.options_for(path),
                   apply_fixes=True, project=project_of_bytes({path: data}).view(path))


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


# --- projects: folders of files fixed together in one run --------------------------------------

PROJECTS = collect_projects(ROOT)


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: str(p.path.relative_to(ROOT)))
def test_project_is_fixed_as_expected(project: ProjectFixture) -> None:
    if project.is_trap:
        settings = dataclasses.replace(project.settings(), unsafe_fixes=True)
        for path, result in fix_project(project, settings).items():
            assert result.new_bytes is None, (
                f"{path.name} must stay byte-identical, but fix produced:\n{result.fixed}")
        return
    results = fix_project(project)
    produced: dict[Path, bytes] = {}
    for path, result in results.items():
        expected = project.expected_for(path)
        output = result.new_bytes if result.new_bytes is not None else path.read_bytes()
        if expected is None:
            assert result.new_bytes is None, f"{path.name} has no expected file but changed"
        else:
            compile(expected.read_bytes(), str(expected), "exec", dont_inherit=True)
            assert output.decode() == expected.read_text(encoding="utf-8"), path.name
        produced[path] = output
    assert any(project.expected_for(path) for path in project.files), "nothing expected"
    if project.code is not None:
        assert any(f.code == project.code for r in results.values() for f in r.findings)
    again = fix_project(project, texts=produced)
    changed = [path.name for path, result in again.items() if result.new_bytes is not None]
    assert not changed, f"a second fix changed {changed}"


def test_project_folders_are_not_single_cases() -> None:
    assert all(not part.startswith(PROJECT_PREFIXES)
               for fixture in FIXTURES for part in fixture.path.relative_to(ROOT).parts)
