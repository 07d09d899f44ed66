"""The rule registry: every rule class, looked up by code, selected by prefix.

Every module in the ``rules`` package that defines a ``RULES`` list is
collected, so adding a rule is adding a class (and its module); nothing in the
engine, CLI or reports changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache

import torchfix_codemods.rules as rules_package
from torchfix_codemods.rules.base import Rule

SYNTAX_ERROR_CODE = "TFC000"



class UnknownRuleCode(ValueError):
    """A code or prefix that matches no rule."""


@cache
def all_rules() -> tuple[type[Rule], ...]:
    rules: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(rules_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        rules.extend(getattr(module, "RULES", ()))
    codes = [rule.code for rule in rules]
    duplicates = {code for code in codes if codes.count(code) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    return tuple(sorted(rules, key=lambda rule: rule.code))


@cache
def _by_code() -> dict[str, type[Rule]]:
    return {rule.code: rule for rule in all_rules()}


def rule_by_code(code: str) -> type[Rule]:
    try:
        return _by_code()[code]
    except KeyError:
        raise UnknownRuleCode(code) from None


def match(selector: str) -> list[type[Rule]]:
    """Rules a code or prefix selects (``TFC1``, ``TFC101``, ``ALL``).

    A prefix selects only rules that are on by default; naming a rule's full
    code selects it even when it is off by default, and ``ALL`` selects every
    rule, as in ruff.
    """
    selector = selector.strip().upper()
    if selector == "ALL":
        return list(all_rules())
    if selector in _by_code():
        return [_by_code()[selector]]
    found = [rule for rule in all_rules() if rule.code.startswith(selector)]
    if not found:
        raise UnknownRuleCode(selector)
    return [rule for rule in found if rule.default_enabled]


def resolve_selection(
    select: Iterable[str] | None, extend_select: Iterable[str], ignore: Iterable[str]
) -> frozenset[str]:
    """ruff's order: ``select`` (or the defaults), plus ``extend-select``, minus ``ignore``."""
    if select is None:
        chosen = {rule.code for rule in all_rules() if rule.default_enabled}
    else:
        chosen = {rule.code for selector in select for rule in match(selector)}
    for selector in extend_select:
        chosen.update(rule.code for rule in match(selector))
    for selector in ignore:
        chosen.difference_update(rule.code for rule in _match_any(selector))
    return frozenset(chosen)


def _match_any(selector: str) -> list[type[Rule]]:
    """For ``ignore``: a prefix removes every rule under it, default or not."""
    selector = selector.strip().upper()
    if selector == "ALL":
        return list(all_rules())
    found = [rule for rule in all_rules() if rule.code.startswith(selector)]
    if not found:
        raise UnknownRuleCode(selector)
    return found
