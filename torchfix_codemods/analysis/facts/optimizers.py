"""Is this an optimizer, and does this call update parameters?

Evidence, in order: a name bound to a ``torch.optim`` constructor
(``sgd = torch.optim.SGD(...)``), or a name that says so (``optimizer``,
``self.opt_g``, ``optimizers[0]``). A learning-rate scheduler is never one,
even when it is named ``opt_sched``: its ``step()`` changes no gradient. AMP's
``GradScaler`` steps the optimizer it is given (``scaler.step(optimizer)``).

Two rule families ask: the training-loop rules want the optimizer an
``X.step()`` steps (to reset its gradients), the inference analysis wants to
know whether a function updates parameters at all (then it is training, not
evaluation).
"""

from __future__ import annotations

import re

import libcst as cst

from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.syntax import code_of


def _last_part(expr: cst.BaseExpression) -> str | None:
    dotted = dotted_name(expr)
    return dotted.split(".")[-1].lower() if dotted is not None else None


def is_grad_scaler(expr: cst.BaseExpression) -> bool:
    """Named like AMP's ``GradScaler`` (``scaler``, ``self.grad_scaler``)."""
    return "scaler" in (_last_part(expr) or "")


def _constructor(names: NameIndex, expr: cst.BaseExpression) -> str:
    """The qualified name of what built the object a name is bound to (``""``: unknown)."""
    if not isinstance(expr, cst.Name):
        return ""
    binding = names.binding_of(expr)
    if binding is None or not isinstance(binding.value, cst.Call):
        return ""
    return names.qualified_name(binding.value.func) or ""


def _built_by_torch_optim(names: NameIndex, expr: cst.BaseExpression) -> bool:
    qualified = _constructor(names, expr)
    return qualified.startswith("torch.optim.") and "lr_scheduler" not in qualified


def is_distributed_optimizer(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """Bound to ``torch.distributed.optim.DistributedOptimizer(...)``: an RPC optimizer whose
    gradients live in a distributed autograd context. It has ``step`` and nothing else, no
    ``zero_grad`` (measured on torch 2.13)."""
    qualified = _constructor(names, expr)
    return qualified.startswith("torch.distributed.optim") and \
        qualified.endswith(".DistributedOptimizer")
_SCHEDULER_WORDS = frozenset({"scheduler", "sched", "schedule"})
_LR_SCHEDULER_QUALIFIERS = frozenset({
    "lr", "warmup", "cosine", "step", "multistep", "plateau", "cyclic", "onecycle", "exp",
    "linear", "poly", "main", "base", "model", "net", "optim", "optimizer", "opt", "gen", "disc",
    "generator", "discriminator", "encoder", "decoder", "actor", "critic", "train"})
"""Words that may stand next to "scheduler" in a learning-rate scheduler's name
(``lr_scheduler``, ``scheduler_g``, ``warmup_scheduler``); any other word names something
else that is scheduled (``kl_scheduler``, ``noise_scheduler``, ``lambda_scheduler``)."""


def _named_like_lr_scheduler(last: str) -> bool:
    words = [w for w in re.split(r"[_\d]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", last).lower())
             if len(w) > 1]
    schedulers = [w for w in words if w in _SCHEDULER_WORDS]
    return len(schedulers) == 1 and all(
        w in _SCHEDULER_WORDS or w in _LR_SCHEDULER_QUALIFIERS for w in words)


def is_scheduler(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` is a learning-rate scheduler: a name bound to a ``torch.optim.lr_scheduler``
    constructor, or named like one (``scheduler``, ``self.lr_sched``, ``scheduler_g``); a
    ``kl_scheduler`` or ``noise_scheduler`` schedules something else."""
    dotted = dotted_name(expr)
    if dotted is None:
        return False
    if isinstance(expr, cst.Name):
        binding = names.binding_of(expr)
        if binding is not None and isinstance(binding.value, cst.Call) and \
                (names.qualified_name(binding.value.func) or "").startswith(
                    "torch.optim.lr_scheduler."):
            return True
    return _named_like_lr_scheduler(dotted.split(".")[-1])


def scheduled_optimizer(names: NameIndex, scheduler: cst.BaseExpression) -> str | None:
    """The optimizer a scheduler was built for, as written (``StepLR(opt, 30)`` -> ``opt``),
    when the scheduler is a name bound once to such a call."""
    if not isinstance(scheduler, cst.Name):
        return None
    bindings = names.bindings_of(scheduler)
    if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
        return None
    call = bindings[0].value
    first = call.args[0] if call.args else None
    if first is None or first.star or (first.keyword is not None and
                                      first.keyword.value != "optimizer"):
        return None
    return dotted_name(first.value)


def is_optimizer(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` is an optimizer: built by ``torch.optim`` or named like one, never a scheduler."""
    last = _last_part(expr)
    if last is None:
        return isinstance(expr, cst.Subscript) and "opt" in code_of(expr).lower()
    if "sched" in last:
        return False
    return "opt" in last or _built_by_torch_optim(names, expr)


def optimizer_of_step(names: NameIndex, call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer an ``X.step(...)`` call steps, when it is named by a dotted name.

    ``optimizer.step()`` and ``self.opt.step()`` step their receiver;
    ``scaler.step(optimizer)`` steps its argument. A scheduler's ``step`` is None.
    """
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
        return None
    receiver = func.value
    if dotted_name(receiver) is None:
        return None
    if is_grad_scaler(receiver):
        if call.args and call.args[0].keyword is None and dotted_name(call.args[0].value):
            return call.args[0].value
        return None
    return receiver if is_optimizer(names, receiver) else None


def updates_parameters(names: NameIndex, call: cst.Call) -> bool:
    """``optimizer.step()``, ``optimizer.zero_grad()``, ``scaler.step(...)``: training work."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("step", "zero_grad")):
        return False
    receiver = func.value
    return is_grad_scaler(receiver) or is_optimizer(names, receiver)
