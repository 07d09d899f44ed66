"""Replacement tables as data: old API -> new API, read from ``rules/data/*.toml``.

Why data and not code: the facts (which name replaces which, how each argument
maps, from which torch release, whether the rewrite keeps behaviour) are what a
reviewer checks against the torch docs, and what a user may want to read. The
rules read the tables; :func:`map_call` turns one table entry plus one call
into the rewritten call, or into the reason it cannot be rewritten.

Arguments are bound to the OLD signature exactly as Python would bind them
(positional by order, then keywords), then emitted in the NEW call: positional
where the new API takes them positionally, otherwise as keywords. An argument
the table does not map, ``*args``/``**kwargs`` the table cannot see through, or
a missing required argument make the call unmappable: the rule reports instead
of guessing (TorchFix's placeholder ``A`` and dropped ``some=`` came from
guessing).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import libcst as cst

from torchfix_codemods.model import Safety

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# ``rules`` is a regular package; ``data`` is a plain folder of TOML files inside it.
DATA_PACKAGE = "torchfix_codemods.rules"
TorchVersion = tuple[int, int]


@dataclass(frozen=True)
class Replacement:
    """One row of ``replacements.toml`` (see the file's header for each field)."""

    old: str
    rule: str
    new: str | None = None
    params: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    keywords: Mapping[str, str] = field(default_factory=dict)
    constants: Mapping[str, str] = field(default_factory=dict)
    convert: Mapping[str, str] = field(default_factory=dict)
    leading: tuple[str, ...] = ()
    together: tuple[str, ...] = ()
    passthrough: bool = False
    handler: str | None = None
    min_torch: TorchVersion | None = None
    safety: Safety = Safety.NONE
    removed: bool = False
    note: str = ""


def _version(text: str | None) -> TorchVersion | None:
    if not text:
        return None
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@cache
def load_data(name: str) -> dict[str, Any]:
    """A TOML file shipped in ``torchfix_codemods/rules/data``."""
    raw = resources.files(DATA_PACKAGE).joinpath("data", name).read_bytes()
    return tomllib.loads(raw.decode("utf-8"))


@cache
def replacements() -> dict[str, Replacement]:
    """Every entry of ``replacements.toml``, by old qualified name."""
    table: dict[str, Replacement] = {}
    for old, row in load_data("replacements.toml")["function"].items():
        table[old] = Replacement(
            old=old,
            rule=row["rule"],
            new=row.get("new"),
            params=tuple(row.get("params", ())),
            args=tuple(row.get("args", ())),
            keywords=dict(row.get("keywords", {})),
            constants=dict(row.get("constants", {})),
            convert=dict(row.get("convert", {})),
            leading=tuple(row.get("leading", ())),
            together=tuple(row.get("together", ())),
            passthrough=bool(row.get("passthrough", False)),
            handler=row.get("handler"),
            min_torch=_version(row.get("min_torch")),
            safety=Safety(row.get("safety", "none")),
            removed=bool(row.get("removed", False)),
            note=row.get("note", ""),
        )
    return table


def replacements_for(rule: str) -> dict[str, Replacement]:
    return {old: spec for old, spec in replacements().items() if spec.rule == rule}


class Unmappable(Exception):
    """The call's arguments cannot be carried over without guessing; the text says why."""


def bind(call: cst.Call, params: tuple[str, ...], extra: set[str]) -> dict[str, cst.Arg]:
    """Old parameter name -> the argument passed for it, as Python would bind them.

    ``extra`` are keyword-only names the old API accepted (``out``).
    """
    bound: dict[str, cst.Arg] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            raise Unmappable("arguments come from `*args`/`**kwargs`, which the tool cannot see")
        if arg.keyword is None:
            if position >= len(params) or params[position].startswith("*"):
                raise Unmappable("more positional arguments than the old signature takes")
            bound[params[position]] = arg
            position += 1
            continue
        name = arg.keyword.value
        if name in bound:
            raise Unmappable(f"`{name}` is passed twice")
        if name not in params and name not in extra:
            raise Unmappable(f"the argument `{name}=` has no counterpart in the new API")
        bound[name] = arg
    return bound


def parse(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def literal_bool(node: cst.BaseExpression) -> bool | None:
    """True/False for the literals, None for anything else (``None`` included)."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _qr_mode(value: cst.BaseExpression) -> cst.BaseExpression:
    """``some`` -> ``mode``: a literal maps to a literal, anything else to a conditional."""
    flag = literal_bool(value)
    if flag is True:
        return cst.SimpleString('"reduced"')
    if flag is False:
        return cst.SimpleString('"complete"')
    if is_none(value):
        raise Unmappable("`some=None` is not a valid value")
    test = value
    if isinstance(value, (cst.IfExp, cst.Lambda, cst.NamedExpr)):
        test = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.IfExp(test=test, body=cst.SimpleString('"reduced"'),
                     orelse=cst.SimpleString('"complete"'))


CONVERTERS: dict[str, Callable[[cst.BaseExpression], cst.BaseExpression]] = {
    "qr_mode": _qr_mode,
}


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))


def as_keyword(arg: cst.Arg, name: str, value: cst.BaseExpression | None = None) -> cst.Arg:
    """The same argument (its comments kept) passed as ``name=value``."""
    equal = arg.equal if isinstance(arg.equal, cst.AssignEqual) else cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return arg.with_changes(keyword=cst.Name(name), equal=equal,
                            value=arg.value if value is None else value)


def as_positional(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)


def with_layout(original: cst.Call, new_args: list[cst.Arg]) -> list[cst.Arg]:
    """Give the new arguments the separators of the old ones, position by position.

    Keeps multi-line calls multi-line and a trailing comma trailing.
    """
    old = list(original.args)
    separators = [arg.comma for arg in old[:-1] if isinstance(arg.comma, cst.Comma)]
    template = separators[0] if separators else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if not separators and isinstance(original.whitespace_before_args, cst.ParenthesizedWhitespace):
        template = cst.Comma(whitespace_after=original.whitespace_before_args)
    result = []
    for index, arg in enumerate(new_args):
        last = index == len(new_args) - 1
        if last:
            comma = old[-1].comma if old else cst.MaybeSentinel.DEFAULT
        elif index < len(old) - 1 and isinstance(old[index].comma, cst.Comma):
            comma = old[index].comma
        else:
            comma = template
        result.append(arg.with_changes(comma=comma))
    return result


def map_call(call: cst.Call, spec: Replacement, func: cst.BaseExpression) -> cst.Call:
    """The call rewritten to ``spec.new`` (named by ``func``), or :class:`Unmappable`."""
    if spec.passthrough:
        return call.with_changes(func=func)
    bound = bind(call, spec.params, set(spec.keywords))
    present = [name for name in spec.together if name in bound]
    if present and len(present) != len(spec.together):
        wanted = " and ".join(f"`{n}`" for n in spec.together)
        raise Unmappable(f"the new API needs {wanted} together, only `{present[0]}` is given")
    new_args: list[cst.Arg] = [cst.Arg(parse(text)) for text in spec.leading]
    for name in spec.args:
        if name not in bound:
            raise Unmappable(f"the required argument `{name}` is missing")
        new_args.append(as_positional(bound[name]))
    for name, arg in bound.items():
        if name in spec.args:
            continue
        if name not in spec.keywords:
            raise Unmappable(f"the argument `{name}` has no counterpart in the new API")
        value = arg.value
        converter = spec.convert.get(name)
        if converter is not None:
            value = CONVERTERS[converter](value)
        new_args.append(as_keyword(arg, spec.keywords[name], value))
    for name, text in spec.constants.items():
        new_args.append(keyword(name, parse(text)))
    if not new_args:
        return call.with_changes(func=func, args=[])
    return call.with_changes(func=func, args=with_layout(call, new_args))


def parity_codes() -> dict[str, list[str]]:
    """TorchFix code -> our rule codes that flag the same lines (``torchfix_parity.toml``)."""
    return {code: list(ours) for code, ours in load_data("torchfix_parity.toml")["codes"].items()}
