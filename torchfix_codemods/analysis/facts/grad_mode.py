"""Grad mode: where gradient tracking is off, and where the code sets it explicitly.

Two different questions, answered from one table:

* *Is autograd off here?* (``with torch.no_grad():``, ``inference_mode``, a
  function decorated with either). A write through ``.data`` there only needs
  ``.data`` dropped; a loss accumulated there keeps no graph.
* *Does the code decide the grad mode itself here?* The contexts above plus
  ``enable_grad`` and ``set_grad_enabled(flag)``: an evaluation function under
  any of them already chose its mode, and adding ``no_grad`` would override
  that choice (``enable_grad`` inside a ``no_grad`` caller is how saliency code
  turns tracking back on).

``enable_grad`` and ``set_grad_enabled`` are never "off": ``set_grad_enabled``
takes a runtime flag, and ``enable_grad`` turns tracking on.

## References
- https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
- https://pytorch.org/docs/stable/generated/torch.no_grad.html
- https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.calls import calls_by_name
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.syntax import code_of, literal_bool
from torchfix_codemods.analysis.vocabulary.torch_api import (
    AUTOGRAD_FUNCTION_CLASSES,
    DISABLES_GRAD,
    ENABLES_GRAD,
    SET_GRAD_ENABLED,
    SETS_GRAD_MODE,
)


def _target(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``torch.no_grad`` for both ``torch.no_grad()`` and a bare ``torch.no_grad``."""
    return expr.func if isinstance(expr, cst.Call) else expr


def disables_grad(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` (a ``with`` item or a decorator) turns gradient tracking off."""
    return _grad_api_name(names, _target(expr)) in DISABLES_GRAD


def sets_grad_mode(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` (a ``with`` item, a decorator or a call) decides the grad mode itself."""
    return _grad_api_name(names, _target(expr)) in SETS_GRAD_MODE


def _grad_api_name(names: NameIndex, target: cst.BaseExpression) -> str | None:
    """The qualified name of ``target``; or, where ``torch`` is bound by nothing the file
    shows (a star import of a module the index does not follow, DeNA/PyTorch_YOLOv3's
    ``from utils.utils import *``), ``torch.no_grad`` as written: only torch has grad-mode
    contexts by those names, and a ``torch`` the file does not bind comes from elsewhere."""
    qualified = names.qualified_name(target)
    if qualified is not None:
        return qualified
    dotted = dotted_name(target)
    if dotted is None or not dotted.startswith("torch."):
        return None
    root = target
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name) or any(not b.star for b in names.bindings_of(root)):
        return None
    return dotted


def in_no_grad(names: NameIndex, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs with autograd off: inside ``with torch.no_grad():`` (or
    ``inference_mode``) or in a function decorated with one, up to the enclosing function."""
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.With):
            if any(disables_grad(names, item.item) for item in ancestor.items):
                return True
        if isinstance(ancestor, cst.FunctionDef):
            return any(disables_grad(names, d.decorator) for d in ancestor.decorators)
    return False


_AUTOGRAD_FUNCTION_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})


@dataclass(frozen=True)
class GradMode:
    """Whether autograd records at a point of the code, and what says so."""

    enabled: bool | None
    """False: off (``no_grad``...); True: on as far as this file shows; None: a runtime flag."""
    reason: str


def grad_mode_at(names: NameIndex, node: cst.CSTNode,
                 inference_decorators: tuple[str, ...] = ()) -> GradMode:
    """The grad mode ``node`` runs in: the innermost ``with`` that sets it, else the enclosing
    function's decorators (``no_grad``, ``inference_mode``, the user's configured inference
    decorators), a custom ``autograd.Function``'s ``forward``/``backward``, or every call of a
    module-level function in this file being made with autograd off."""
    return _grad_mode_at(names, node, frozenset(inference_decorators), frozenset())


def _grad_mode_at(names: NameIndex, node: cst.CSTNode, decorators: frozenset[str],
                  seen: frozenset[int]) -> GradMode:
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                mode = _context_mode(names, item.item, decorators)
                if mode is not None:
                    return mode
        if isinstance(ancestor, cst.FunctionDef):
            if id(ancestor) in seen:
                return GradMode(None, "a function that calls itself")
            return _function_mode(names, ancestor, decorators, seen | {id(ancestor)})
    if _sets_mode_by_call(names):
        return GradMode(None, "the file switches the grad mode with a bare "
                              "`torch.set_grad_enabled(...)` call")
    return GradMode(True, "nothing turns autograd off here")


def _context_mode(names: NameIndex, expr: cst.BaseExpression,
                  decorators: frozenset[str]) -> GradMode | None:
    """The mode a ``with`` item or a decorator sets, or None when it sets none."""
    target = _target(expr)
    qualified = names.qualified_name(target)
    if qualified in DISABLES_GRAD:
        return GradMode(False, f"under `{qualified}`")
    if qualified in ENABLES_GRAD:
        return GradMode(True, f"under `{qualified}`")
    if qualified in SET_GRAD_ENABLED:
        flag = literal_bool(expr.args[0].value) if (isinstance(expr, cst.Call) and
                                                    len(expr.args) == 1) else None
        return GradMode(flag, f"under `{qualified}({'...' if flag is None else flag})`")
    spelled = qualified or dotted_name(target)
    if spelled is not None and decorators and (
            spelled in decorators or any(d.endswith("." + spelled) for d in decorators)):
        return GradMode(False, f"under `{spelled}` (a configured inference decorator)")
    return None


def _function_mode(names: NameIndex, function: cst.FunctionDef, decorators: frozenset[str],
                   seen: frozenset[int]) -> GradMode:
    for decorator in function.decorators:
        mode = _context_mode(names, decorator.decorator, decorators)
        if mode is not None:
            return mode
        if not _keeps_grad_mode(names, decorator.decorator):
            # torch's own optimizers wrap `step` in `_use_grad_for_differentiable`
            return GradMode(None, f"`@{code_of(decorator.decorator)}` may set the grad mode")
    owner = names.parent(names.parent(function) or function)
    if isinstance(owner, cst.ClassDef) and function.name.value in _AUTOGRAD_FUNCTION_METHODS and \
            any(names.qualified_name(base.value) in AUTOGRAD_FUNCTION_CLASSES for base in owner.bases):
        return GradMode(False, f"in `{owner.name.value}.{function.name.value}`, which autograd "
                               "runs with recording off")
    if _sets_mode_by_call(names):
        return GradMode(None, "the file switches the grad mode with a bare "
                              "`torch.set_grad_enabled(...)` call")
    calls = _calls_of(names, function)
    if calls:
        modes = [_grad_mode_at(names, call, decorators, seen) for call in calls]
        if all(mode.enabled is False for mode in modes):
            return GradMode(False, f"every call of `{function.name.value}` in this file is "
                                   f"{modes[0].reason}")
    return GradMode(True, "nothing turns autograd off here")


def grad_enabled(names: NameIndex, node: cst.CSTNode) -> bool | None:
    """Whether autograd records at ``node``, as far as this file shows: the ``enabled`` of
    :func:`grad_mode_at` (False off, True on, None a runtime value or a decorator that may
    set it)."""
    return grad_mode_at(names, node).enabled


_MODE_KEEPING_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_MODE_KEEPING_QUALIFIED = frozenset({"typing.override", "typing_extensions.override",
                                     "abc.abstractmethod", "functools.cache",
                                     "functools.lru_cache", "functools.wraps"})


def _keeps_grad_mode(names: NameIndex, decorator: cst.BaseExpression) -> bool:
    """A decorator known to leave the grad mode alone (any other may set it)."""
    target = _target(decorator)
    if isinstance(target, cst.Name) and target.value in _MODE_KEEPING_DECORATORS and \
            not names.bindings_of(target):
        return True
    return names.qualified_name(target) in _MODE_KEEPING_QUALIFIED


def calls_of_function(names: NameIndex, function: cst.FunctionDef) -> list[cst.Call]:
    """Every call of the module-level ``function`` in this file, or none when it is also
    passed around (then it runs where this file does not show)."""
    return _calls_of(names, function)


def _calls_of(names: NameIndex, function: cst.FunctionDef) -> list[cst.Call]:
    """Calls of a module-level function by its name in this file; none when the function is
    also passed around (a callback runs where this file does not show)."""
    scope = names.scope_of(function)
    if scope is not names.module_scope or len(scope.bindings.get(function.name.value, [])) != 1:
        return []
    calls = []
    for read in names.loads_in(scope, function.name.value):
        parent = names.parent(read)
        if not (isinstance(parent, cst.Call) and parent.func is read):
            return []  # passed around (a callback): called from places this file does not show
        if names.enclosing(parent, cst.FunctionDef) is function:
            return []  # recursion
        calls.append(parent)
    return calls


_SETS_MODE_BY_CALL: Slot[bool] = Slot("grad_mode.set_by_call")


def _sets_mode_by_call(names: NameIndex) -> bool:
    """The file calls ``torch.set_grad_enabled(...)`` outside a ``with`` (a global switch)."""
    if _SETS_MODE_BY_CALL in names.memo:
        return names.memo[_SETS_MODE_BY_CALL]
    found = any(names.qualified_name(call.func) in SET_GRAD_ENABLED and
                not isinstance(names.parent(call), (cst.WithItem, cst.Decorator))
                for call in calls_by_name(names))
    names.memo[_SETS_MODE_BY_CALL] = found
    return found
