"""Is this tensor a *leaf that requires grad*? Evidence only, with a reason a reviewer can read.

Autograd refuses in-place writes to such a tensor while it records ("a leaf Variable that
requires grad is being used in an in-place operation"), and to any view of one ("a view of a
leaf Variable..."). Measured on torch 2.13: ``w -= lr * w.grad``, ``w.add_(1)``,
``w.zero_()``, ``w[0] = 1`` and ``m.weight.fill_(1)`` all raise outside ``no_grad``; a
parameter built with ``requires_grad=False``, a non-leaf, ``w.detach()``, ``w.grad`` and
``nn.init.normal_(w)`` (which writes under ``no_grad`` itself) do not.

The evidence:

* a torch factory called with ``requires_grad=True`` (``torch.randn(3, requires_grad=True)``);
* ``.requires_grad_()`` on a tensor that does not require grad yet (a torch factory's
  result, possibly moved or cast, or a ``.detach()``);
* ``nn.Parameter(...)`` (unless ``requires_grad=False``), and ``self.w`` in a class whose every
  ``self.w = ...`` is one;
* ``.weight``/``.bias`` of a ``torch.nn`` layer;
* the loop variable of ``for p in model.parameters()`` (or ``named_parameters()``, or an
  optimizer's ``group["params"]``): a parameter requires grad unless it was frozen, and a
  frozen one is left as it was by the fix TFC110 makes.

A name counts only when every binding of it (in-place updates aside) has evidence.

## References
- https://docs.pytorch.org/docs/stable/notes/autograd.html
- https://docs.pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
- https://docs.pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, keyword_arg
from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex
from torchfix_codemods.analysis.core.syntax import code_of, literal_bool
from torchfix_codemods.analysis.facts.modules import init_assignment, module_classes, self_assignments
from torchfix_codemods.analysis.facts.tensors import module_reason
from torchfix_codemods.analysis.vocabulary.tensor_methods import CONVERSIONS, COPIES
from torchfix_codemods.analysis.vocabulary.torch_api import PARAMETER_CLASSES
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    RECURRENT_PARAMETER_PREFIX,
    is_module_parameter,
)

_KEEPS_NO_GRAD = CONVERSIONS | COPIES
"""Methods whose result does not require grad when their receiver does not."""
_MAX_DEPTH = 6


_EVALUATION: Slot[Evaluation[str | None]] = Slot("leaves.evaluation")


def leaf_requiring_grad(names: NameIndex, expr: cst.BaseExpression, depth: int = 0) -> str | None:
    """Why ``expr`` is a leaf tensor that requires grad, or None without evidence."""
    evaluation = module_evaluation(names.memo, _EVALUATION, _MAX_DEPTH, cycle=None, too_deep=None)
    return evaluation(expr, depth, lambda e, d: _leaf(names, e, d))


def _leaf(names: NameIndex, expr: cst.BaseExpression, depth: int) -> str | None:
    """One step; ``depth`` already counts it (the evaluation passes the asker's plus one)."""
    if isinstance(expr, cst.Name):
        return _name(names, expr, depth)
    if isinstance(expr, cst.Attribute):
        return _attribute(names, expr, depth)
    if isinstance(expr, cst.Call):
        return _created(names, expr)
    return None


def _name(names: NameIndex, name: cst.Name, depth: int) -> str | None:
    bindings = [b for b in names.bindings_of(name) if b.kind != "augassign"]
    if not bindings:
        return None
    reasons = [_binding(names, binding, name, depth) for binding in bindings]
    if any(reason is None for reason in reasons):
        return None
    return reasons[0]


def _binding(names: NameIndex, binding: Binding, name: cst.Name, depth: int) -> str | None:
    if binding.kind in ("assign", "annassign") and binding.value is not None:
        return leaf_requiring_grad(names, binding.value, depth)
    if binding.kind == "for" and isinstance(binding.node, cst.For):
        return _loop_over_parameters(names, binding.node, name)
    return None


def _loop_over_parameters(names: NameIndex, loop: cst.For, name: cst.Name) -> str | None:
    """``for p in m.parameters()``, ``for n, p in m.named_parameters()``,
    ``for p in group["params"]`` with ``group`` looping over ``opt.param_groups``."""
    iterator, target = loop.iter, loop.target
    if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute):
        method = iterator.func.attr.value
        if method == "parameters" and isinstance(target, cst.Name):
            return "a parameter (loop over `.parameters()`)"
        if method == "named_parameters" and isinstance(target, cst.Tuple) and \
                len(target.elements) == 2 and \
                isinstance(target.elements[1].value, cst.Name) and \
                target.elements[1].value.value == name.value:
            return "a parameter (loop over `.named_parameters()`)"
        return None
    if isinstance(iterator, cst.Subscript) and isinstance(target, cst.Name) and \
            isinstance(iterator.value, cst.Name) and len(iterator.slice) == 1:
        key = iterator.slice[0].slice
        if not (isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString)
                and key.value.evaluated_value == "params"):
            return None
        for binding in names.bindings_of(iterator.value):
            outer = binding.node
            if binding.kind != "for" or not isinstance(outer, cst.For):
                return None
            if not (isinstance(outer.iter, cst.Attribute) and outer.iter.attr.value == "param_groups"):
                return None
        return "a parameter of an optimizer's `param_groups`"
    return None


def _attribute(names: NameIndex, expr: cst.Attribute, depth: int) -> str | None:
    if isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return _own_parameter(names, expr)
    if expr.attr.value not in ("weight", "bias") and \
            not RECURRENT_PARAMETER_PREFIX.match(expr.attr.value):
        return None
    module = module_reason(names, expr.value)
    if module is None or _frozen(names, expr.value) or \
            not is_module_parameter(expr.attr.value, module.built_from):
        return None
    built = module.built_from
    if built is not None and built.startswith("torch.nn."):
        return f"`.{expr.attr.value}` of a `{built}`, a parameter"
    return None


def _frozen(names: NameIndex, module: cst.BaseExpression) -> bool:
    """The module's parameters were made not to require grad: ``nn.Conv2d(...)
    .requires_grad_(False)`` where it is built, or ``m.requires_grad_(False)`` on its name."""
    if not isinstance(module, cst.Name):
        return False
    for binding in names.bindings_of(module):
        if binding.value is not None and "requires_grad_(False)" in code_of(binding.value):
            return True
    found = names.lookup(module.value, names.scope_of(module))
    if found is None:
        return False
    for read in names.loads_in(found[0], module.value):
        parent = names.parent(read)
        call = names.parent(parent) if isinstance(parent, cst.Attribute) else None
        if isinstance(parent, cst.Attribute) and parent.attr.value == "requires_grad_" and \
                isinstance(call, cst.Call) and call.args and \
                literal_bool(call.args[0].value) is False:
            return True
    return False


def _own_parameter(names: NameIndex, expr: cst.Attribute) -> str | None:
    """``self.w`` in an ``nn.Module`` subclass of this file whose ``__init__`` assigns
    ``self.w = nn.Parameter(...)``, and no other method assigns it."""
    owner = names.enclosing(expr, cst.ClassDef)
    if owner is None or owner.name.value not in module_classes(names):
        return None
    methods = [s for s in owner.body.body if isinstance(s, cst.FunctionDef)]
    if sum(len(self_assignments(method, expr.attr.value)) for method in methods) != 1:
        return None
    value = init_assignment(owner, expr.attr.value)
    if isinstance(value, cst.Call) and _parameter(names, value):
        return f"`self.{expr.attr.value}` is an `nn.Parameter`"
    return None


def _parameter(names: NameIndex, call: cst.Call) -> bool:
    """``nn.Parameter(data)`` or ``nn.Parameter(data, requires_grad=True)``."""
    if names.qualified_name(call.func) not in PARAMETER_CLASSES:
        return False
    flag = argument(call, "requires_grad", 1)
    return flag is None or literal_bool(flag.value) is True


def _created(names: NameIndex, call: cst.Call) -> str | None:
    if _parameter(names, call):
        return "an `nn.Parameter`"
    qualified = names.qualified_name(call.func)
    if qualified is not None:
        flag = keyword_arg(call, "requires_grad")
        if qualified.count(".") == 1 and qualified.startswith("torch.") and flag is not None \
                and literal_bool(flag.value) is True:
            return f"created by `{qualified}(..., requires_grad=True)`"
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and \
            (not call.args or literal_bool(call.args[0].value) is True) and \
            _does_not_require_grad(names, func.value):
        return "a new tensor marked with `.requires_grad_()`"
    return None


def _does_not_require_grad(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """A torch factory's result without ``requires_grad=True`` (or a ``.detach()``), possibly
    moved or cast: it does not require grad, so it is a leaf."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        qualified = names.qualified_name(func)
        if qualified is not None:
            flag = keyword_arg(expr, "requires_grad")
            return qualified.count(".") == 1 and qualified.startswith("torch.") and \
                qualified not in PARAMETER_CLASSES and (flag is None or
                                                        literal_bool(flag.value) is False)
        if not isinstance(func, cst.Attribute) or func.attr.value not in _KEEPS_NO_GRAD:
            return False
        if func.attr.value == "detach":
            return True
        expr = func.value
    return False
