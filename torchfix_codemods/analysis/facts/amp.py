"""AMP's ``GradScaler`` in a training step: which calls scale, unscale, step and update.

The documented shape of one mixed-precision step is::

    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)          # only when something reads the gradients
    torch.nn.utils.clip_grad_norm_(...)
    scaler.step(optimizer)
    scaler.update()

The mixed-precision rules (TFC508-TFC511) ask where a step departs from it. A scaler is
recognised the way :func:`~torchfix_codemods.analysis.facts.optimizers.is_grad_scaler` does
(``scaler``, ``self.grad_scaler``); the order of the calls comes from
:func:`~torchfix_codemods.analysis.facts.training.event_of`, over one loop iteration or, for a
``train_step`` function with no loop of its own, over the function body.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.optimizers import is_grad_scaler
from torchfix_codemods.analysis.facts.training import Event, event_of

Scope = cst.For | cst.While | cst.FunctionDef


def _scaler_method(call: cst.Call, method: str) -> cst.BaseExpression | None:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == method and \
            dotted_name(func.value) is not None and is_grad_scaler(func.value):
        return func.value
    return None


def scaler_of_backward(call: cst.Call) -> cst.BaseExpression | None:
    """The scaler of ``scaler.scale(loss).backward()``, else None."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "backward" and
            isinstance(func.value, cst.Call)):
        return None
    return _scaler_method(func.value, "scale")


def scaler_of_step(call: cst.Call) -> cst.BaseExpression | None:
    """The scaler of ``scaler.step(optimizer)``, else None."""
    return _scaler_method(call, "step") if call.args else None


def scaler_of_update(call: cst.Call) -> cst.BaseExpression | None:
    """The scaler of ``scaler.update(...)``, else None."""
    return _scaler_method(call, "update")


def step_scope(names: NameIndex, node: cst.CSTNode) -> Scope | None:
    """Where the training step around ``node`` is read as one sequence: the innermost loop,
    else the function holding it (a ``train_step(batch)`` called once per batch)."""
    loop = innermost_loop(names, node)
    if loop is not None:
        return loop
    return names.enclosing(node, cst.FunctionDef)


def step_events(names: NameIndex, scope: Scope) -> list[Event]:
    """The gradient work of one run of ``scope`` in source order; work in loops nested in
    it has ``nested`` set."""
    events: list[Event] = []
    for node in walk_local(scope.body):
        if isinstance(node, cst.Call):
            event = event_of(names, node)
            if event is not None:
                own = innermost_loop(names, node)
                nested = own is not scope if isinstance(scope, (cst.For, cst.While)) \
                    else own is not None
                events.append(Event(event.kind, event.call, event.target, nested))
    return events


def scaler_calls(scope: Scope, method: str) -> list[cst.Call]:
    """``scaler.<method>(...)`` calls anywhere in ``scope`` (nested loops included)."""
    return [node for node in walk_local(scope.body)
            if isinstance(node, cst.Call) and _scaler_method(node, method) is not None]
