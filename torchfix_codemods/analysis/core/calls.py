"""Which argument of a call binds which parameter, read the way Python binds them.

``argument(call, "map_location", 1)`` finds ``map_location`` whether it is
passed by keyword or as the second positional argument, and answers None when
``*args`` could be hiding it: a rule that is not sure an argument is absent
must not add it again.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchfix_codemods.analysis.core.names import NameIndex


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star == "*" for arg in call.args)


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def argument(call: cst.Call, name: str, position: int | None) -> cst.Arg | None:
    """The argument bound to parameter ``name`` (by keyword or by position)."""
    found = keyword_arg(call, name)
    if found is not None or position is None:
        return found
    positional = positional_args(call)
    if has_star_args(call) and len(positional) <= position:
        return None
    return positional[position] if len(positional) > position else None


def calls_by_name(names: NameIndex) -> Iterator[cst.Call]:
    """Every call in the file whose function is a (dotted) name, ``f(...)`` or ``a.b.f(...)``:
    the calls a file-wide question about ``torch.set_grad_enabled`` or
    ``torch.cuda.is_available`` needs, found from the name index without a walk."""
    for scope in names.all_scopes:
        for reads in scope.loads.values():
            for read in reads:
                child: cst.CSTNode = read
                parent = names.parent(read)
                while isinstance(parent, cst.Attribute) and parent.value is child:
                    child, parent = parent, names.parent(parent)
                if isinstance(parent, cst.Call) and parent.func is child:
                    yield parent


def parameter_bound_by(function: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of ``function`` that ``arg`` of ``call`` binds (a plain call of it: no
    ``self`` to skip), or None (a ``*``/``**`` argument, or more arguments than parameters)."""
    if arg.star:
        return None
    params = [*function.params.posonly_params, *function.params.params]
    if arg.keyword is not None:
        named = arg.keyword.value
        return named if any(p.name.value == named for p in
                            (*params, *function.params.kwonly_params)) else None
    position = [a for a in call.args if a.keyword is None and not a.star].index(arg)
    return params[position].name.value if position < len(params) else None
