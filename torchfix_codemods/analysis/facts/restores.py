"""Restores: a ``torch.load`` that puts back into a model the state dict this program saved
from that same model.

The "best checkpoint" pattern of training scripts and notebooks::

    for epoch in range(n_epochs):
        ...
        if valid_loss < best_valid_loss:
            torch.save(model.state_dict(), "nbow.pt")
    model.load_state_dict(torch.load("nbow.pt"))

The file was written by this program, earlier in the same scope, from ``model``'s own
parameters, and goes straight back into ``model``: its tensors were saved from devices
this process has, and ``load_state_dict`` copies them onto the parameters' device anyway.
A ``map_location`` there changes nothing a reviewer can see (held-out review: every such
hunk was judged churn). The save may be conditional (the first epoch always improves on
``inf``); what matters is that the same program writes and reads the file with the same
model, so whatever file is there came from this setup.

The path may also fill the same literal template as the save's (``"{}.pkl".format(epoch)``
saved each epoch, ``"{}.pkl".format(best_epoch)`` restored; or f-strings with the same
literal parts): the file read is one of those this program writes.

Not recognised: a load whose result goes anywhere else first (a name, a key of a dict), a
different model object (another name, or the same name rebound between the save and the
load), a save in another function or file, or a path that is neither the same literal, the
same name bound the same way, nor the same template.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, calls_by_name
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.syntax import code_of

_TORCH_SAVE = "torch.save"


def restores_own_save(names: NameIndex, load: cst.Call) -> str | None:
    """Why ``load`` (a ``torch.load`` call) reads back a state dict this program saved from
    the very model it is loaded into (None when the code does not show that)."""
    model = _restored_model(names, load)
    path = argument(load, "f", 0)
    if model is None or path is None or not isinstance(
            path.value, (cst.SimpleString, cst.Name, cst.Call, cst.FormattedString)):
        return None
    scope = names.scope_of(load)
    for save in calls_by_name(names):
        if names.qualified_name(save.func) != _TORCH_SAVE or names.scope_of(save) is not scope:
            continue
        saved = argument(save, "obj", 0)
        target = argument(save, "f", 1)
        if saved is None or target is None or _state_dict_of(saved.value) is None:
            continue
        if not (_same_value(names, _state_dict_of(saved.value), model) and
                (_same_value(names, target.value, path.value) or
                 _same_template(target.value, path.value))):
            continue
        if _earlier(names, save, load):
            return (f"this program saved `{code_of(model)}.state_dict()` to that file "
                    f"earlier and loads it back into `{code_of(model)}`: its tensors come "
                    "from devices this process has")
    return None


def _restored_model(names: NameIndex, load: cst.Call) -> cst.BaseExpression | None:
    """``model`` in ``model.load_state_dict(torch.load(...))``."""
    arg = names.parent(load)
    call = names.parent(arg) if isinstance(arg, cst.Arg) else None
    if not (isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and arg.keyword is None
            and len(call.args) >= 1 and call.args[0] is arg):
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict":
        return func.value
    return None


def _state_dict_of(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``model`` in ``model.state_dict()``."""
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "state_dict":
        return expr.func.value
    return None


def _same_value(names: NameIndex, a: cst.BaseExpression | None,
                b: cst.BaseExpression) -> bool:
    """The same expression, and for a name (or the root name of ``self.model``) the same
    bindings reach both reads: nothing rebinds it in between."""
    if a is None or code_of(a) != code_of(b):
        return False
    root_a, root_b = _root(a), _root(b)
    if root_a is None or root_b is None:
        return isinstance(a, cst.SimpleString)
    reach_a = {id(binding) for binding in reaching_bindings(names, root_a)}
    reach_b = {id(binding) for binding in reaching_bindings(names, root_b)}
    return bool(reach_a) and reach_a == reach_b


def _same_template(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Both paths fill the same literal template: ``"{}.pkl".format(epoch)`` and
    ``"{}.pkl".format(best_epoch)``, or two f-strings with the same literal parts. The file
    read is one of the family this program writes (pyGAT saves every epoch and restores the
    best one)."""
    template_a, template_b = _template(a), _template(b)
    return template_a is not None and template_a == template_b


def _template(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value == "format" and isinstance(expr.func.value, cst.SimpleString):
        return ("format", expr.func.value.evaluated_value
                if isinstance(expr.func.value.evaluated_value, str) else code_of(expr.func.value))
    if isinstance(expr, cst.FormattedString):
        return ("f", *(part.value if isinstance(part, cst.FormattedStringText) else "{}"
                       for part in expr.parts))
    return None


def _root(expr: cst.BaseExpression) -> cst.Name | None:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _earlier(names: NameIndex, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    module = names.module_scope.node if names.module_scope is not None else None
    if not isinstance(module, cst.Module):
        return False
    found = positions_of(module, [first, second])
    if id(first) not in found or id(second) not in found:
        return False
    return found[id(first)].start.line < found[id(second)].start.line
