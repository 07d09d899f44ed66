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

from torchfix_codemods.analysis.names import NameIndex

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
