"""Numerical facts about an expression: is it already shifted by its own maximum?

``torch.log(torch.sum(torch.exp(x), dim))`` overflows only where ``exp(x)`` can: when ``x``
is ``y - max(y, dim)`` (every term at most 0, the largest exactly 0) the sum lies in
``[1, n]`` and the spelled-out form is as stable as ``torch.logsumexp`` (the CRF
``_forward_alg`` of the sequence-labelling tutorials: ``max_tag_var, _ = torch.max(tag_var,
dim=1)``; ``tag_var = tag_var - max_tag_var.view(-1, 1)``). Rewriting it changes nothing a
user can observe and leaves a double shift (measured on torch 2.13:
``docs/measurements/shifted_logsumexp.py``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.names import NameIndex, unpack_position
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.vocabulary.tensor_methods import SHAPE_ONLY_METHODS
from torchfix_codemods.analysis.vocabulary.torch_api import MAXIMUM_FUNCTIONS


def shifted_by_own_max(names: NameIndex, expr: cst.BaseExpression,
                       dim: cst.BaseExpression) -> str | None:
    """Why ``expr`` is ``y - max(y, dim)`` with the same literal ``dim`` as the sum (None when
    that is not shown): written out, or a name whose one reaching binding is. Along another
    dimension every term is still at most 0, but no term need be 0 and the sum may underflow."""
    if isinstance(expr, cst.Name):
        bindings = reaching_bindings(names, expr)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
            return None
        expr = bindings[0].value
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract)):
        return None
    minuend = code_of(expr.left)
    maximum = _strip_layout(expr.right)
    found = _maximum_of(names, maximum)
    if found is None or code_of(found[0]) != minuend or code_of(found[1]) != code_of(dim):
        return None
    return f"`{code_of(expr)}` is already shifted by its own maximum"


def _strip_layout(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value in SHAPE_ONLY_METHODS:
        expr = expr.func.value
    return expr


def _maximum_of(names: NameIndex, expr: cst.BaseExpression, depth: int = 0
                ) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``y`` when ``expr`` is the maximum of ``y``: ``torch.max(y, dim)[0]``,
    ``y.max(dim)[0]``, ``y.max(dim).values``, ``torch.amax(y, dim)``, or a name bound once
    to one of them (also as the first name of ``m, _ = torch.max(y, dim)``), with the
    dimension it reduces."""
    if depth > 3:
        return None
    if isinstance(expr, cst.Name):
        bindings = reaching_bindings(names, expr)
        if len(bindings) != 1 or bindings[0].kind != "assign":
            return None
        node = bindings[0].node
        value = bindings[0].value
        if value is None and isinstance(node, cst.Assign) and len(node.targets) == 1 and \
                unpack_position(node.targets[0].target, expr) == 0 and \
                isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            return _max_call_argument(names, node.value, indexed=False)
        return _maximum_of(names, value, depth + 1) if value is not None else None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and \
            isinstance(expr.slice[0].slice, cst.Index) and \
            code_of(expr.slice[0].slice.value) == "0":
        return _max_call_argument(names, expr.value, indexed=False)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "values":
        return _max_call_argument(names, expr.value, indexed=False)
    return _max_call_argument(names, expr, indexed=True)


def _max_call_argument(names: NameIndex, expr: cst.BaseExpression, *, indexed: bool
                       ) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """The tensor a ``max`` call reduces along a dimension (``indexed``: a call whose result
    is the values themselves, ``torch.amax``)."""
    if not isinstance(expr, cst.Call) or not expr.args:
        return None
    qualified = names.qualified_name(expr.func) or ""
    if indexed:
        if qualified == "torch.amax" and len(expr.args) >= 2 and _is_dim(expr.args[1]):
            return expr.args[0].value, expr.args[1].value
        return None
    if qualified in MAXIMUM_FUNCTIONS and len(expr.args) >= 2 and _is_dim(expr.args[1]):
        return expr.args[0].value, expr.args[1].value
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "max" and \
            not qualified and expr.args and _is_dim(expr.args[0]):
        return expr.func.value, expr.args[0].value
    return None


def _is_dim(arg: cst.Arg) -> bool:
    """A dimension (``1``, ``-1``, ``dim=1``), not a second tensor (``torch.max(a, b)`` is the
    elementwise maximum)."""
    if arg.keyword is not None:
        return arg.keyword.value == "dim"
    value = arg.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, cst.Integer)
