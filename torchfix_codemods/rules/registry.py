"""The rule classes, by code: every module of the ``rules`` package that defines ``RULES``.

Adding a rule is adding a class (in its module) and its line in
:mod:`torchfix_codemods.catalog`; nothing in the engine, CLI or reports
changes. :func:`rule_by_code` imports only the module that defines the rule,
:func:`all_rules` imports them all and checks them against the catalog.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import torchfix_codemods.rules as rules_package
from torchfix_codemods.catalog import CATALOG, RuleEntry, UnknownRuleCode, entry
from torchfix_codemods.rules.base import Rule


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code; raises when a class and the catalog disagree."""
    rules: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(rules_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        rules.extend(getattr(module, "RULES", ()))
    codes = [rule.code for rule in rules]
    duplicates = {code for code in codes if codes.count(code) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    found = {_entry_of(rule) for rule in rules}
    if found != set(CATALOG):
        missing = sorted(found - set(CATALOG), key=lambda e: e.code)
        stale = sorted(set(CATALOG) - found, key=lambda e: e.code)
        raise RuntimeError(f"torchfix_codemods/catalog.py disagrees with the rule classes: "
                           f"add {missing}, remove {stale}")
    return tuple(sorted(rules, key=lambda rule: rule.code))


def _entry_of(rule: type[Rule]) -> RuleEntry:
    # The module (or package: a rule split into modules) of ``rules`` that lists it in RULES.
    module = rule.__module__.removeprefix(rules_package.__name__ + ".").split(".", 1)[0]
    return RuleEntry(rule.code, rule.name, module, rule.default_enabled, rule.project_facts)


@cache
def rule_by_code(code: str) -> type[Rule]:
    """The rule class for ``code``, importing only its module."""
    found = entry(code)
    module = importlib.import_module(f"{rules_package.__name__}.{found.module}")
    for rule in getattr(module, "RULES", ()):
        if rule.code == code:
            return rule
    raise UnknownRuleCode(code)  # pragma: no cover - all_rules() checks the catalog
