"""Rule documentation is for users: it names no test file, internal module or project
history (those are in docs/rule-evidence.md)."""

from __future__ import annotations

import re

import pytest

from torchfix_codemods.rules.registry import all_rules

INTERNAL = re.compile(r"tests/|test_\w+\.py|torchfix_codemods[./]|round-\d|labelled|bench/"
                      r"|\bissue \d+")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_rule_documentation_is_self_contained(rule) -> None:  # type: ignore[no-untyped-def]
    found = [match.group(0) for match in INTERNAL.finditer(rule.documentation())]
    assert found == [], f"{rule.code} documentation cites {found}"
