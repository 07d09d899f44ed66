"""Memory layout: which expressions give a tensor whose strides are not contiguous, and whether
a ``.view(...)`` call asks for a shape or reinterprets the dtype.

``permute``, ``transpose``, ``.t()``, ``.T``/``.mT``, ``swapaxes``, ``movedim`` and ``expand``
return views with reordered (or zero) strides. ``.view(shape)`` on such a view raises "view size
is not compatible with input tensor's size and stride" whenever the new shape merges
dimensions that are no longer adjacent in memory; ``.reshape(shape)`` returns the very same
view when ``view`` would have worked and a copy otherwise (measured on torch 2.13: 3,000
random permute/transpose/t/expand + view cases, see TFC109's "Fix safety").

``.view(dtype)`` is a different operation (it reinterprets the bytes, and works on many
non-contiguous tensors), and ``reshape`` has no dtype form: ``reshape(torch.int32)`` raises
``TypeError``. So a view's argument is classified before anything is rewritten.

## References
- https://docs.pytorch.org/docs/stable/generated/torch.Tensor.view.html
- https://docs.pytorch.org/docs/stable/generated/torch.reshape.html
- https://docs.pytorch.org/docs/stable/tensor_view.html
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import libcst as cst

from torchfix_codemods.analysis.core.calls import positional_args
from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    CONVERSIONS,
    COPIES,
    REORDERING_METHODS,
    SWAPPING_METHODS,
)
from torchfix_codemods.analysis.vocabulary.torch_api import (
    RANK_KEEPING_FUNCTIONS,
    REORDERING_FUNCTIONS,
    SHAPE_FACTORIES,
)

REORDERING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})
DTYPE_NAMES = frozenset("""
float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 long short
uint8 uint16 uint32 uint64 bool complex64 complex128 cfloat cdouble chalf float8_e4m3fn
float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz qint8 quint8 qint32 bits8 bits16
""".split())
"""Attribute names of ``torch`` that are dtypes (``torch.float16``...)."""
_MAX_DEPTH = 6
_RANK_DEPTH = 16
"""Steps (names and calls) followed to a tensor's rank: attention code takes about ten."""

ViewArgument = Literal["shape", "not-shape", "unknown"]
_RANK: Slot[Evaluation[int | None]] = Slot("layout.rank")
_ARGUMENT_KIND: Slot[Evaluation[ViewArgument]] = Slot("layout.argument_kind")


@dataclass(frozen=True)
class Reordering:
    """A reordering view: how it is spelled, the tensor it reorders, and the least number of
    dimensions its result has (None when unknown)."""

    description: str
    base: cst.BaseExpression
    rank: int | None


KEEPS_LAYOUT = frozenset({"eq", "ne", "gt", "lt", "ge", "le"})
"""Elementwise comparisons: their result has the strides of a reordered first operand
(measured on torch 2.13: ``pred.t().eq(target.view(1, -1).expand_as(pred.t()))`` has strides
``(1, 5)``, and ``[:5].view(-1)`` of it raises, the ImageNet example's ``accuracy``)."""


def reordering_source(names: NameIndex, expr: cst.BaseExpression) -> Reordering | None:
    """For ``x.permute(...)`` (and the other reordering views), what reorders ``x``.

    A name is followed to the one binding that reaches it, in its scope (``y =
    x.transpose(1, 2)`` then ``y.view(...)``; ``pred = pred.t()`` after an earlier
    ``pred``); a slice of the first dimension (``x[:k]``) and an elementwise comparison
    (``x.eq(y)``) keep a reordered layout; any other expression is None.
    """
    for _ in range(8):
        found = _direct_source(names, expr)
        if found is not None:
            return found
        if isinstance(expr, cst.Name):
            value = _reaching_value(names, expr)
            if value is None:
                return None
            expr = value
        elif _leading_slice(expr):
            expr = expr.value  # type: ignore[attr-defined]
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in KEEPS_LAYOUT and names.qualified_name(expr.func) is None:
            expr = expr.func.value
        else:
            return None
    return None


def _leading_slice(expr: cst.BaseExpression) -> bool:
    """``x[a:b]``: a slice of the first dimension only, a view with the same strides."""
    return (isinstance(expr, cst.Subscript) and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Slice) and expr.slice[0].slice.step is None)


def _only_value(names: NameIndex, name: cst.Name) -> cst.BaseExpression | None:
    """The value of a name's only binding, assigned in the scope that reads it."""
    bindings = names.bindings_of(name)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    if names.scope_of(bindings[0].node) is not names.scope_of(name):
        return None
    return bindings[0].value


def _reaching_value(names: NameIndex, name: cst.Name) -> cst.BaseExpression | None:
    """The value of the one binding that reaches ``name``, assigned in the scope that reads
    it (``pred = pred.t()`` reaches the reads after it, not the earlier ``pred``)."""
    bindings = reaching_bindings(names, name)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    if names.scope_of(bindings[0].node) is not names.scope_of(name):
        return None
    return bindings[0].value


def _direct_source(names: NameIndex, expr: cst.BaseExpression) -> Reordering | None:
    if isinstance(expr, cst.Attribute) and expr.attr.value in REORDERING_ATTRIBUTES:
        if names.qualified_name(expr) is not None:
            return None
        rank = rank_of(names, expr.value)
        return Reordering(f"`.{expr.attr.value}`", expr.value, 2 if rank is None else rank)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    qualified = names.qualified_name(func)
    if qualified in REORDERING_FUNCTIONS:
        positional = positional_args(expr)
        if not positional:
            return None
        name = qualified.split(".")[-1]  # type: ignore[union-attr]
        return Reordering(f"`{qualified}()`", positional[0].value,
                          _reordered_rank(names, name, positional[0].value, positional[1:]))
    if qualified is None and isinstance(func, cst.Attribute) and \
            func.attr.value in REORDERING_METHODS:
        return Reordering(f"`.{func.attr.value}()`", func.value,
                          _reordered_rank(names, func.attr.value, func.value, expr.args))
    return None


def _reordered_rank(names: NameIndex, method: str, base: cst.BaseExpression,
                    args: Sequence[cst.Arg]) -> int | None:
    """The least rank of ``base.<method>(*args)``: the permutation's length, the expanded
    shape's length, 2 for ``.t()``, or the base's rank (at least the highest dimension a
    ``transpose`` names)."""
    if method in ("permute", "expand"):
        return _shape_length(args)
    if method == "expand_as":
        return rank_of(names, args[0].value) if len(args) == 1 else None  # at least its rank
    known = rank_of(names, base)
    if method == "t":
        return 2 if known is None else known
    if known is not None:
        return known
    if method in SWAPPING_METHODS and len(args) == 2:
        dims = [_int_literal(arg.value) for arg in args]
        if all(dim is not None for dim in dims):
            return max(d + 1 if d >= 0 else -d for d in dims)  # type: ignore[operator]
    return None


def _int_literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and \
            isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value, 0)
    return None


def _shape_length(args: Sequence[cst.Arg]) -> int | None:
    """How many dimensions ``f(2, 3)``/``f((2, 3))``/``f([2, 3])`` spell; None with a ``*``,
    a keyword, or a single argument that is not a literal sequence or a number."""
    if any(arg.star or arg.keyword is not None for arg in args) or not args:
        return None
    if len(args) > 1:
        return len(args)
    value = args[0].value
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return len(value.elements)
    if _int_literal(value) is not None or isinstance(value, cst.BinaryOperation):
        return 1
    return None


_SAME_RANK_METHODS = CONVERSIONS | COPIES | {
    "relu", "sigmoid", "tanh", "exp", "abs", "neg", "softmax", "log_softmax", "masked_fill",
    "type_as", "transpose", "t", "swapaxes", "swapdims"}




def rank_of(names: NameIndex, expr: cst.BaseExpression, depth: int = 0) -> int | None:
    """At least how many dimensions ``expr`` has, when the code spells it: ``.view(b, t, c)``
    and ``.reshape(...)`` (3), ``torch.zeros(2, 3)`` (2), ``.permute(...)``,
    ``.unsqueeze``/``.squeeze(d)``, rank-keeping methods and functions (``F.softmax``),
    arithmetic and ``@`` (broadcasting never lowers the rank of its largest operand), and
    names bound once to one of these. A lower bound: enough to prove a ``view`` merges."""
    evaluation = module_evaluation(names.memo, _RANK, _RANK_DEPTH, cycle=None, too_deep=None)
    return evaluation(expr, depth, lambda e, d: _rank(names, e, d))


def _rank(names: NameIndex, expr: cst.BaseExpression, depth: int) -> int | None:
    """One step of :func:`rank_of`; ``depth`` already counts it."""
    if isinstance(expr, cst.Name):
        value = _only_value(names, expr)
        return rank_of(names, value, depth) if value is not None else None
    if isinstance(expr, cst.BinaryOperation):
        ranks = [rank_of(names, side, depth) for side in (expr.left, expr.right)]
        if isinstance(expr.operator, cst.MatrixMultiply):
            return max(ranks) if all(r is not None and r >= 2 for r in ranks) else None  # type: ignore[type-var]
        known = [r for r in ranks if r is not None]
        return max(known) if known else None
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    qualified = names.qualified_name(func)
    if qualified in SHAPE_FACTORIES:
        return _shape_length([a for a in expr.args if a.keyword is None])
    if qualified in RANK_KEEPING_FUNCTIONS:
        return rank_of(names, expr.args[0].value, depth) if expr.args else None
    if qualified is not None or not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    if method in ("view", "reshape") and view_argument(names, expr) == "shape":
        return _shape_length(expr.args)
    if method == "permute":
        return _shape_length(expr.args)
    receiver = rank_of(names, func.value, depth)
    if receiver is None:
        return None
    if method == "unsqueeze":
        return receiver + 1
    if method == "squeeze" and expr.args:
        return receiver - 1
    return receiver if method in _SAME_RANK_METHODS else None


def target_rank(names: NameIndex, call: cst.Call) -> int | None:
    """How many dimensions ``t.view(...)`` asks for (None when the arguments do not say)."""
    found = _shape_length(call.args)
    if found is not None or len(call.args) != 1:
        return found
    value = _only_value(names, call.args[0].value) if isinstance(call.args[0].value,
                                                                 cst.Name) else None
    if isinstance(value, (cst.Tuple, cst.List)):
        return _shape_length([cst.Arg(value)])
    return None


def view_argument(names: NameIndex, call: cst.Call) -> ViewArgument:
    """Whether ``t.view(...)`` asks for a shape, for something else (a dtype), or cannot be told.

    Integer literals, arithmetic, tuples and lists, ``x.size()``/``x.shape``, a starred
    argument and names bound only to those are shapes; so are several arguments none of which
    is anything else. ``torch.float16``, names that say ``dtype``, a ``dtype=`` keyword, and
    strings, floats or ``None`` are not.
    """
    if any(arg.keyword is not None for arg in call.args):
        return "not-shape" if any(arg.keyword and arg.keyword.value == "dtype"
                                  for arg in call.args) else "unknown"
    if not call.args:
        return "unknown"
    kinds = {"shape" if arg.star else _argument_kind(names, arg.value, 0) for arg in call.args}
    if "not-shape" in kinds:
        return "not-shape"
    if len(call.args) > 1 or kinds == {"shape"}:
        return "shape"
    return "unknown"


def _argument_kind(names: NameIndex, expr: cst.BaseExpression, depth: int) -> ViewArgument:
    evaluation = module_evaluation(names.memo, _ARGUMENT_KIND, _MAX_DEPTH, cycle="unknown",
                                   too_deep="unknown")
    return evaluation(expr, depth, lambda e, d: _argument_step(names, e, d))


def _argument_step(names: NameIndex, expr: cst.BaseExpression, depth: int) -> ViewArgument:
    """One step of :func:`_argument_kind`; ``depth`` already counts it."""
    if isinstance(expr, (cst.Integer, cst.Tuple, cst.List, cst.BinaryOperation)):
        return "shape"
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, cst.Integer):
        return "shape"
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                         cst.Float, cst.Imaginary, cst.Dict, cst.Set, cst.Lambda)) or \
            (isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")):
        return "not-shape"
    qualified = names.qualified_name(expr)
    if qualified is not None:
        return "not-shape" if qualified.startswith("torch.") and \
            qualified.split(".")[-1] in DTYPE_NAMES else "unknown"
    if "dtype" in code_of(expr).lower():
        return "not-shape"
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value == "size" and not expr.args:
        return "shape"
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and \
            expr.func.value in ("len", "int") and not names.bindings_of(expr.func):
        return "shape"
    if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
        return "shape"
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and \
            expr.value.attr.value == "shape":
        return "shape"
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        kinds = {_argument_kind(names, b.value, depth) if b.kind == "assign" and
                 b.value is not None else "unknown" for b in bindings}
        return kinds.pop() if len(kinds) == 1 else "unknown"
    return "unknown"
