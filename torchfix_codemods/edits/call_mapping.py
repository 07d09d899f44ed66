"""One call of an old API rewritten as a call of the new one, argument by argument.

Arguments are bound to the OLD signature exactly as Python would bind them
(positional by order, then keywords), then emitted in the NEW call: positional
where the new API takes them positionally, otherwise as keywords. An argument
the mapping does not name, ``*args``/``**kwargs`` it cannot see through, or a
missing required argument make the call unmappable: the rule reports instead
of guessing (TorchFix's placeholder ``A`` for ``cholesky``'s input and its
dropped ``some=`` for ``qr`` came from guessing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import libcst as cst

from torchfix_codemods.analysis.core.syntax import is_none, literal_bool
from torchfix_codemods.edits.arguments import as_keyword, as_positional, keyword, with_layout
from torchfix_codemods.edits.expressions import as_condition, parse_expression


@dataclass(frozen=True)
class CallMapping:
    """How the arguments of an old call become the arguments of the new one."""

    params: tuple[str, ...] = ()
    """The OLD signature's parameters in positional order (``*name``: varargs)."""
    args: tuple[str, ...] = ()
    """The NEW call's positional arguments, named by old parameter."""
    keywords: Mapping[str, str] = field(default_factory=dict)
    """Old parameter -> new keyword (an old argument named nowhere: unmappable)."""
    constants: Mapping[str, str] = field(default_factory=dict)
    """New keyword -> source text, always added (``mode='"nearest"'``)."""
    convert: Mapping[str, str] = field(default_factory=dict)
    """Old parameter -> converter id (:data:`CONVERTERS`), for a value whose spelling changes."""
    leading: tuple[str, ...] = ()
    """Source text of positional arguments put first (a device string)."""
    together: tuple[str, ...] = ()
    """Parameters the new API accepts only as a pair (``rtol``/``atol``)."""
    passthrough: bool = False
    """Same parameters, same names: only the callee changes."""


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


def _qr_mode(value: cst.BaseExpression) -> cst.BaseExpression:
    """``some`` -> ``mode``: a literal maps to a literal, anything else to a conditional."""
    flag = literal_bool(value)
    if flag is True:
        return cst.SimpleString('"reduced"')
    if flag is False:
        return cst.SimpleString('"complete"')
    if is_none(value):
        raise Unmappable("`some=None` is not a valid value")
    return cst.IfExp(test=as_condition(value), body=cst.SimpleString('"reduced"'),
                     orelse=cst.SimpleString('"complete"'))


CONVERTERS: dict[str, Callable[[cst.BaseExpression], cst.BaseExpression]] = {
    "qr_mode": _qr_mode,
}


def map_call(call: cst.Call, mapping: CallMapping, func: cst.BaseExpression) -> cst.Call:
    """The call rewritten to call ``func`` with its arguments mapped, or :class:`Unmappable`."""
    if mapping.passthrough:
        return call.with_changes(func=func)
    bound = bind(call, mapping.params, set(mapping.keywords))
    present = [name for name in mapping.together if name in bound]
    if present and len(present) != len(mapping.together):
        wanted = " and ".join(f"`{n}`" for n in mapping.together)
        raise Unmappable(f"the new API needs {wanted} together, only `{present[0]}` is given")
    new_args: list[cst.Arg] = [cst.Arg(parse_expression(text)) for text in mapping.leading]
    for name in mapping.args:
        if name not in bound:
            raise Unmappable(f"the required argument `{name}` is missing")
        new_args.append(as_positional(bound[name]))
    for name, arg in bound.items():
        if name in mapping.args:
            continue
        if name not in mapping.keywords:
            raise Unmappable(f"the argument `{name}` has no counterpart in the new API")
        value = arg.value
        converter = mapping.convert.get(name)
        if converter is not None:
            value = CONVERTERS[converter](value)
        new_args.append(as_keyword(arg, mapping.keywords[name], value))
    for name, text in mapping.constants.items():
        new_args.append(keyword(name, parse_expression(text)))
    if not new_args:
        return call.with_changes(func=func, args=[])
    return call.with_changes(func=func, args=with_layout(call, new_args))
