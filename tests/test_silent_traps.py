"""Traps that must not even be reported, for the rules whose findings claim an error or a cost.

The fixture test checks that a trap comes out of ``fix`` byte-identical, which a report-only
rule satisfies whatever it reports. For these rules a trap is code that looks like the
mistake and is not: a finding there is noise, so the trap must raise none of its rule's
findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchfix_codemods.engine import process
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.verify.fixtures import Fixture, collect_fixtures

SILENT_TRAP_CODES = ("TFC109", "TFC110", "TFC302", "TFC303", "TFC304", "TFC305", "TFC306")
ROOT = Path(__file__).parent / "fixtures"
TRAPS = [f for f in collect_fixtures(ROOT) if f.is_trap and f.code in SILENT_TRAP_CODES]


def test_every_listed_rule_has_traps() -> None:
    for code in SILENT_TRAP_CODES:
        assert sum(1 for f in TRAPS if f.code == code) >= 5, code


@pytest.mark.parametrize("fixture", TRAPS, ids=lambda f: str(f.path.relative_to(ROOT)))
def test_trap_raises_no_finding_of_its_rule(fixture: Fixture) -> None:
    unit = SourceUnit.from_bytes(str(fixture.path), fixture.path.read_bytes())
    result = process(unit, fixture.settings().options_for(str(fixture.path)), apply_fixes=False)
    assert [f for f in result.findings if f.code == fixture.code] == []
