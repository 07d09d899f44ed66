"""Every rule's inline VALID/INVALID examples, run by one test for all rules."""

from __future__ import annotations

import pytest
from support import findings, fixed_text

from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Rule
from torchfix_codemods.rules.registry import all_rules

RULES = [rule for rule in all_rules() if rule.code != "TFC000"]


def _examples(kind: str) -> list[tuple[type[Rule], int, object]]:
    return [(rule, i, example) for rule in RULES for i, example in enumerate(getattr(rule, kind))]


def test_every_rule_has_examples_and_docs() -> None:
    for rule in all_rules():
        assert rule.code.startswith("TFC") and len(rule.code) == 6, rule
        assert rule.name and rule.name == rule.name.lower(), rule
        docs = rule.documentation()
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                        "## Fix safety", "## References"):
            assert section in docs, f"{rule.code} docs lack {section!r}"
        # Self-contained: the facts and their sources are in the docs, not behind a pointer
        # to a file a reader of the project does not have.
        references = docs.split("## References", 1)[1]
        assert "](https://" in references, f"{rule.code} references link nothing"
        assert "RULES.md" not in docs and "DESIGN.md" not in docs, rule.code
        if rule.code != "TFC000":
            assert rule.invalid, f"{rule.code} has no invalid examples"
            assert rule.valid, f"{rule.code} has no valid examples"
            assert rule.triggers, f"{rule.code} has no prefilter triggers"


@pytest.mark.parametrize(("rule", "index", "source"), _examples("valid"),
                         ids=lambda v: v.code if isinstance(v, type) else None)
def test_valid_example_is_not_flagged(rule: type[Rule], index: int, source: str) -> None:
    found = [f for f in findings(source, [rule.code]) if f.code == rule.code]
    assert found == [], f"{rule.code} valid[{index}] flagged: {found}"


@pytest.mark.parametrize(("rule", "index", "example"), _examples("invalid"),
                         ids=lambda v: v.code if isinstance(v, type) else None)
def test_invalid_example_is_flagged_and_fixed(rule: type[Rule], index: int, example) -> None:
    found = [f for f in findings(example.before, [rule.code]) if f.code == rule.code]
    assert found, f"{rule.code} invalid[{index}] not flagged"
    if example.after is None:
        assert all(f.fix is None for f in found), f"{rule.code} invalid[{index}] should be report-only"
        assert fixed_text(example.before, [rule.code], unsafe=True) == example.before
        return
    # Safe examples are fixed by plain `fix`; unsafe ones only with --unsafe-fixes.
    safe_result = fixed_text(example.before, [rule.code], unsafe=False)
    if example.unsafe:
        assert any(f.fix is not None and f.fix.safety is Safety.UNSAFE for f in found)
        assert safe_result == example.before, f"{rule.code} applied an unsafe fix without the flag"
        assert fixed_text(example.before, [rule.code], unsafe=True) == example.after
    else:
        assert safe_result == example.after
