"""The README stays true: its rule table is the registry's, its commands are CI's."""

from __future__ import annotations

from pathlib import Path

from torchfix_codemods.readme import replace_table

ROOT = Path(__file__).resolve().parent.parent


def test_rule_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert replace_table(readme) == readme, (
        "README rule table is stale: run `python -m torchfix_codemods.readme`")


def test_ci_installs_and_tests_the_way_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("pip install torch==2.13.0", 'pip install -e ".[test]"', "python -m pytest -q"):
        assert command in readme and command in ci, command


def test_torchfix_parity_table_in_readme_matches_the_measured_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    doc = (ROOT / "docs" / "torchfix-parity.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| TOR")]
    assert len(rows) >= 16
    for row in rows:
        assert row in readme, row
