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

import libcst as cst

from torchfix_codemods.analysis.calls import calls_by_name
from torchfix_codemods.analysis.names import NameIndex
from torchfix_codemods.analysis.syntax import literal_bool

DISABLES_GRAD = frozenset({
    "torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
    "torch.inference_mode", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.inference_mode",
})
"""Context managers and decorators under which autograd records nothing."""
SETS_GRAD_MODE = DISABLES_GRAD | frozenset({
    "torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
    "torch.autograd.grad_mode.set_grad_enabled",
})
"""Everything that decides the grad mode of the code it wraps."""


def _target(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``torch.no_grad`` for both ``torch.no_grad()`` and a bare ``torch.no_grad``."""
    return expr.func if isinstance(expr, cst.Call) else expr


def disables_grad(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` (a ``with`` item or a decorator) turns gradient tracking off."""
    return names.qualified_name(_target(expr)) in DISABLES_GRAD


def sets_grad_mode(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` (a ``with`` item, a decorator or a call) decides the grad mode itself."""
    return names.qualified_name(_target(expr)) in SETS_GRAD_MODE


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


ENABLES_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad",
                          "torch.autograd.grad_mode.enable_grad"})
_SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                               "torch.autograd.grad_mode.set_grad_enabled",
                               "torch._C._set_grad_enabled"})
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_AUTOGRAD_FUNCTION_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})


def grad_enabled(names: NameIndex, node: cst.CSTNode) -> bool | None:
    """Whether autograd records at ``node``, as far as this file shows.

    False under ``no_grad``/``inference_mode`` (a ``with`` or a decorator), inside a custom
    ``torch.autograd.Function``'s ``forward``/``backward`` (autograd runs them with recording
    off), and in a function whose every call in this file is made with recording off. True
    under ``enable_grad``, and in code that nothing turns off. None where the mode is a
    runtime value: under ``set_grad_enabled(flag)``, in a function with a decorator that may
    set it (anything but ``staticmethod``, ``property``, ``override``...), or in a file that
    sets it with a bare ``torch.set_grad_enabled(...)`` call.
    """
    return _grad_enabled(names, node, frozenset())


def _grad_enabled(names: NameIndex, node: cst.CSTNode, seen: frozenset[int]) -> bool | None:
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                if sets_grad_mode(names, item.item):
                    return _mode_set_by(names, item.item)
        if isinstance(ancestor, cst.FunctionDef):
            if id(ancestor) in seen:
                return None  # mutual recursion: no answer
            return _function_grad_enabled(names, ancestor, seen | {id(ancestor)})
    return None if _sets_mode_by_call(names) else True


def _function_grad_enabled(names: NameIndex, function: cst.FunctionDef,
                           seen: frozenset[int]) -> bool | None:
    for decorator in function.decorators:
        if sets_grad_mode(names, decorator.decorator):
            return _mode_set_by(names, decorator.decorator)
        if not _keeps_grad_mode(names, decorator.decorator):
            return None  # torch's own optimizers wrap `step` in `_use_grad_for_differentiable`
    owner = names.parent(names.parent(function) or function)
    if isinstance(owner, cst.ClassDef) and function.name.value in _AUTOGRAD_FUNCTION_METHODS and \
            any(names.qualified_name(base.value) in _AUTOGRAD_FUNCTIONS for base in owner.bases):
        return False
    if _sets_mode_by_call(names):
        return None
    calls = _calls_of(names, function)
    if calls and all(_grad_enabled(names, call, seen) is False for call in calls):
        return False
    return True


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


def _mode_set_by(names: NameIndex, expr: cst.BaseExpression) -> bool | None:
    """The mode a ``with`` item or decorator that sets it leaves: off for ``no_grad``, on for
    ``enable_grad``, ``set_grad_enabled(False)``'s literal, None for a runtime flag."""
    if disables_grad(names, expr):
        return False
    if names.qualified_name(_target(expr)) in ENABLES_GRAD:
        return True
    if isinstance(expr, cst.Call) and len(expr.args) == 1:
        return literal_bool(expr.args[0].value)
    return None


def _calls_of(names: NameIndex, function: cst.FunctionDef) -> list[cst.Call]:
    """Calls of a module-level function by its name in this file (none for methods)."""
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


def _sets_mode_by_call(names: NameIndex) -> bool:
    """The file calls ``torch.set_grad_enabled(...)`` outside a ``with`` (a global switch)."""
    cached = names.cache.get("grad_mode.set_by_call")
    if isinstance(cached, bool):
        return cached
    found = any(names.qualified_name(call.func) in _SET_GRAD_ENABLED and
                not isinstance(names.parent(call), (cst.WithItem, cst.Decorator))
                for call in calls_by_name(names))
    names.cache["grad_mode.set_by_call"] = found
    return found
