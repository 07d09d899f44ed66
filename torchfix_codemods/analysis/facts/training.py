"""What one training loop does per iteration: backward calls, optimizer steps, gradient resets.

TFC503 asks it of every loop that steps an optimizer: a loop that calls
``backward()`` and ``step()`` and never resets gradients accumulates them. A
reset may be spelled many ways (``optimizer.zero_grad()``, ``model.zero_grad()``,
``p.grad = None``, ``p.grad.zero_()``, a helper of this file that does one of
these), and any of them counts.

Distributed autograd (``torch.distributed.autograd``, the RPC framework) is not
a local training loop: ``dist_autograd.backward(context_id, [loss])`` writes
gradients into the ``with dist_autograd.context()`` of that iteration, a fresh
one each time, and ``DistributedOptimizer.step(context_id)`` reads them there.
Nothing accumulates, and the optimizer has no ``zero_grad`` to call.

Three more questions live here, each answered for every rule that asks:

* in what order one iteration does its gradient work (:func:`iteration_events`,
  for TFC505-TFC507);
* whether ``.grad`` is read after a reset before the next backward
  (:func:`grad_read_after`, for TFC504);
* which ``no_grad`` blocks are validation written inline in a training loop
  (:func:`inline_validations`, for TFC205).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from torchfix_codemods.analysis.core.callees import local_function, own_method
from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.statements import comes_before, contains
from torchfix_codemods.analysis.core.syntax import code_of, literal_bool
from torchfix_codemods.analysis.core.walk import children, walk_local
from torchfix_codemods.analysis.facts.grad_mode import disables_grad
from torchfix_codemods.analysis.facts.inference import (
    FunctionFacts,
    InferenceAnalysis,
)
from torchfix_codemods.analysis.facts.optimizers import (
    is_distributed_optimizer,
    is_grad_scaler,
    is_optimizer,
    is_scheduler,
    optimizer_of_step,
)
from torchfix_codemods.analysis.vocabulary.naming import EVAL_TOKENS, name_tokens
from torchfix_codemods.analysis.vocabulary.torch_api import CLIP_FUNCTIONS


@dataclass
class LoopFacts:
    """What one training loop does per iteration."""

    loop: cst.For | cst.While
    backwards: list[cst.Call] = field(default_factory=list)
    steps: list[tuple[cst.Call, cst.BaseExpression]] = field(default_factory=list)
    resets: bool = False
    """A ``zero_grad()``/``zero_()`` call in the loop."""
    conditional_step: bool = False
    distributed_autograd: bool = False
    """Gradients go to a per-iteration distributed autograd context (see the module doc)."""
    maybe_resets: list[cst.CSTNode] = field(default_factory=list)
    """Assignments, and local functions or own methods (``self.reset_grad()``) the loop
    calls, whose code may reset gradients."""

    @property
    def optimizers(self) -> set[str]:
        return {code_of(optimizer) for _, optimizer in self.steps}

    @functools.cached_property
    def zeroes_grads(self) -> bool:
        """Whether the loop resets gradients. Generating the code of every candidate was most
        of a cold run's time in training scripts, so it is done on first use only (from
        speed)."""
        return self.resets or any(marker in code_of(node) for node in self.maybe_resets
                                  for marker in _ZERO_MARKERS)


_DISTRIBUTED_AUTOGRAD = "torch.distributed.autograd."
_ZERO_MARKERS = ("zero_grad", "set_to_none", ".grad = None", ".grad=None", ".grad.zero_()",
                 "grad.zero_", "grad.detach_")


def loop_facts(names: NameIndex, loop: cst.For | cst.While) -> LoopFacts:
    """Backwards, optimizer steps and gradient resets inside ``loop`` (any depth)."""
    facts = LoopFacts(loop)
    for node in walk_local(loop.body):
        if isinstance(node, cst.Call):
            func = node.func
            qualified = names.qualified_name(func) or ""
            if qualified.startswith(_DISTRIBUTED_AUTOGRAD):
                facts.distributed_autograd = True
            elif isinstance(func, cst.Attribute) and func.attr.value == "backward":
                facts.backwards.append(node)
            if isinstance(func, cst.Attribute) and func.attr.value in ("zero_grad", "zero_"):
                facts.resets = True
            optimizer = optimizer_of_step(names, node)
            if optimizer is not None:
                facts.steps.append((node, optimizer))
                if is_distributed_optimizer(names, optimizer):
                    facts.distributed_autograd = True
                if any(isinstance(a, (cst.If, cst.IfExp)) and _inside(names, a, loop)
                       for a in names.ancestors(node)):
                    facts.conditional_step = True
            called = local_function(names, node) or own_method(names, node)
            if called is not None:
                facts.maybe_resets.append(called)
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            facts.maybe_resets.append(node)
    return facts


def _inside(names: NameIndex, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in names.ancestors(node))


# ------------------------------------------------------------- one iteration, in order
# TFC505-TFC507 ask where in one iteration the gradient work happens: a `zero_grad()`
# between the backward and the step wipes the gradients the step needs, a clip before
# the backward clips stale ones, a scheduler stepped before the optimizer skips the first
# learning rate. The events below are those calls in the order they run.

EventKind = Literal["backward", "zero_grad", "step", "clip", "unscale", "scheduler_step"]



@dataclass(frozen=True)
class Event:
    """A call that does gradient work, as one iteration of a loop runs it."""

    kind: EventKind
    call: cst.Call
    target: str | None
    """The optimizer a ``step``/``zero_grad``/``unscale`` acts on, the scheduler a
    ``scheduler_step`` steps, as written (``self.opt``); None when it cannot be told
    (``model.zero_grad()``, a helper's step)."""
    nested: bool = False
    """Runs in a loop nested in the iteration, or in a function of this file the iteration
    calls, rather than once at the iteration's own level."""


def event_of(names: NameIndex, call: cst.Call) -> Event | None:
    """What gradient work ``call`` does, if any."""
    func = call.func
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        receiver = func.value
        if method == "backward":
            return Event("backward", call, None)
        if method == "zero_grad":
            return Event("zero_grad", call,
                         code_of(receiver) if is_optimizer(names, receiver) else None)
        if method == "unscale_" and is_grad_scaler(receiver) and call.args:
            return Event("unscale", call, code_of(call.args[0].value))
        if method == "step" and is_scheduler(names, receiver):
            return Event("scheduler_step", call, code_of(receiver))
    optimizer = optimizer_of_step(names, call)
    if optimizer is not None:
        return Event("step", call, code_of(optimizer))
    if names.qualified_name(func) in CLIP_FUNCTIONS:
        return Event("clip", call, None)
    return None


def iteration_events(names: NameIndex, loop: cst.For | cst.While,
                     analysis: InferenceAnalysis | None = None) -> list[Event]:
    """The gradient work of one iteration of ``loop``, in the order it runs.

    Work in loops nested in the body is included with ``nested`` set. With an
    ``analysis``, a call to a function of this file that steps an optimizer (a
    ``train(epoch)`` helper) counts as a nested ``step`` at the call.
    """
    events: list[Event] = []
    for node in walk_local(loop.body):
        if not isinstance(node, cst.Call):
            continue
        event = event_of(names, node)
        if event is not None:
            nested = innermost_loop(names, node) is not loop
            events.append(Event(event.kind, event.call, event.target, nested))
        elif analysis is not None and _calls_stepping_helper(names, analysis, node):
            events.append(Event("step", node, None, True))
    return events


def _calls_stepping_helper(names: NameIndex, analysis: InferenceAnalysis, call: cst.Call) -> bool:
    function = names.enclosing(call, cst.FunctionDef)
    facts = analysis.functions.get(id(function)) if function is not None else None
    callee = analysis.resolve(call, facts)
    return callee is not None and _steps(names, analysis, callee, frozenset())


def _steps(names: NameIndex, analysis: InferenceAnalysis, facts: FunctionFacts,
           seen: frozenset[int]) -> bool:
    """Does the function (or one it calls in this file) step an optimizer?"""
    if id(facts.node) in seen:
        return False
    for site in facts.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        if optimizer_of_step(names, call) is not None:
            return True
        callee = analysis.resolve(call, facts)
        if callee is not None and _steps(names, analysis, callee, seen | {id(facts.node)}):
            return True
    return False


# ------------------------------------------------------- `.grad` after a gradient reset
def grad_read_after(names: NameIndex, reset: cst.Call) -> cst.CSTNode | None:
    """A read of ``.grad`` that can run after ``reset`` (a ``zero_grad()``) and before the
    next backward, or None.

    After ``zero_grad(set_to_none=True)`` such a read sees None where it saw zeros. The
    reads looked at are those of the function holding ``reset`` (or of module-level code)
    and of this file's functions it calls; a read runs "before the next backward" when
    it follows the reset in source order with no backward between, or lies earlier in a
    loop around the reset that has no backward on the way round. When the reset's own
    code has no backward at all, a read anywhere in the file counts.
    """
    function = names.enclosing(reset, cst.FunctionDef)
    scope: cst.CSTNode = function.body if function is not None else _module(names)
    backwards = [n for n in walk_local(scope) if isinstance(n, cst.Call) and
                 isinstance(n.func, cst.Attribute) and n.func.attr.value == "backward"]
    if not backwards:
        reads = [n for n in _all_nodes(names) if _reads_grad(names, n)]
        return reads[0] if reads else None
    for read in _grad_reads(names, scope):
        if _runs_before_next_backward(names, reset, read, backwards):
            return read
    return None


def _module(names: NameIndex) -> cst.Module:
    assert names.module_scope is not None and isinstance(names.module_scope.node, cst.Module)
    return names.module_scope.node


def _all_nodes(names: NameIndex) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [_module(names)]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children(node))
    return found


def _reads_grad(names: NameIndex, node: cst.CSTNode) -> bool:
    """``p.grad`` read (``p.grad = None`` and ``del p.grad`` write it)."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "grad"):
        return False
    parent = names.parent(node)
    return not isinstance(parent, (cst.AssignTarget, cst.Del))


def _grad_reads(names: NameIndex, scope: cst.CSTNode) -> list[cst.CSTNode]:
    """``.grad`` reads in ``scope``, and calls there of this file's functions that read it."""
    reads: list[cst.CSTNode] = []
    for node in walk_local(scope):
        if _reads_grad(names, node):
            reads.append(node)
        elif isinstance(node, cst.Call):
            called = local_function(names, node)
            if called is not None and any(_reads_grad(names, n) for n in walk_local(called.body)):
                reads.append(node)
    return reads


def _runs_before_next_backward(names: NameIndex, reset: cst.Call, read: cst.CSTNode,
                               backwards: list[cst.Call]) -> bool:
    if comes_before(names, reset, read):
        return not any(comes_before(names, reset, b) and comes_before(names, b, read)
                       for b in backwards)
    for loop in names.ancestors(reset):
        if isinstance(loop, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if not isinstance(loop, (cst.For, cst.While)) or not contains(names, loop, read):
            continue
        on_the_way = [b for b in backwards if contains(names, loop, b) and (
            comes_before(names, reset, b) or comes_before(names, b, read))]
        return not on_the_way
    return False


# ------------------------------------------------- validation written inside the epoch loop
@dataclass
class InlineValidation:
    """``with torch.no_grad(): for ... in val_loader: model(x)`` inside a loop that trains."""

    block: cst.With
    epoch_loop: cst.For | cst.While
    loader_loop: cst.For
    models: dict[str, str]
    """The models the validation calls, as written, with why each is a model."""
    evaluated: bool
    """The iteration switches (or explicitly sets) the mode of a validated model before the
    validation first calls it: ``model.eval()``, ``model.train(False)``, ``model.train(flag)``."""


_VALIDATION_WORD = re.compile(
    r"^(?:" + "|".join(sorted(EVAL_TOKENS)) + r"|dev)(?:loader|set|data|dataset|dl|ds|iter)?$")


def _names_validation(expr: cst.BaseExpression) -> bool:
    """``val_loader``, ``self.valid_dl``, ``loaders["test"]``, ``enumerate(testloader)``."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9_]*", code_of(expr))
    return any(_VALIDATION_WORD.match(token) for word in words for token in name_tokens(word))


def inline_validations(names: NameIndex, analysis: InferenceAnalysis) -> list[InlineValidation]:
    """Validation blocks written inline in a training loop (not in a function of their own).

    A block is a ``with`` that turns autograd off, whose body loops over something named
    for validation or testing and calls a model there; its loop must train in the same
    iteration, outside the block (a backward or optimizer step, directly, in a nested
    batch loop, or in a function of this file it calls).
    """
    found: list[InlineValidation] = []
    for node in _all_nodes(names):
        if not isinstance(node, cst.With) or \
                not any(disables_grad(names, item.item) for item in node.items):
            continue
        epoch = innermost_loop(names, node)
        if epoch is None:
            continue
        loader = next((n for n in walk_local(node.body) if isinstance(n, cst.For) and
                       _names_validation(n.iter)), None)
        if loader is None:
            continue
        function = names.enclosing(node, cst.FunctionDef)
        facts = analysis.functions.get(id(function)) if function is not None else None
        models: dict[str, str] = {}
        first_call: cst.Call | None = None
        for inner in walk_local(loader.body):
            if isinstance(inner, cst.Call):
                called = analysis.called_model(inner, facts)
                if called is not None and dotted_name(called[0]) is not None:
                    models.setdefault(code_of(called[0]), called[1])
                    first_call = first_call or inner
        if first_call is None:
            continue
        trains = any(event.kind in ("backward", "step") and not contains(names, node, event.call)
                     for event in iteration_events(names, epoch, analysis))
        if not trains:
            continue
        found.append(InlineValidation(node, epoch, loader, models,
                                      _mode_set_before(names, epoch, first_call, set(models))))
    return found


def _mode_calls(names: NameIndex, scope: cst.CSTNode, models: set[str]) -> list[cst.Call]:
    """``.eval()``/``.train(...)`` calls on one of ``models`` in ``scope``, in source order."""
    return [node for node in walk_local(scope) if isinstance(node, cst.Call) and
            isinstance(node.func, cst.Attribute) and node.func.attr.value in ("eval", "train")
            and code_of(node.func.value) in models]


def _not_training_mode(call: cst.Call) -> bool:
    """``eval()``, ``train(False)``, ``train(flag)``: not a plain switch to train mode."""
    assert isinstance(call.func, cst.Attribute)
    return call.func.attr.value == "eval" or bool(
        call.args and literal_bool(call.args[0].value) is not True)


def _mode_set_before(names: NameIndex, epoch: cst.For | cst.While, call: cst.Call,
                     models: set[str]) -> bool:
    """Is a validated model in a mode the code chose when the validation first calls it?

    Yes when the last ``.eval()``/``.train(...)`` on it that runs in the iteration before
    ``call`` is not ``train()``/``train(True)``; or when nothing in the loop switches it
    (no mode call, not handed to any call) and the code before the loop put it in eval
    (an EMA copy evaluated every epoch and never trained).
    """
    inside = [c for c in _mode_calls(names, epoch.body, models) if comes_before(names, c, call)]
    if inside:
        return _not_training_mode(inside[-1])
    if _mode_calls(names, epoch.body, models) or _handed_over(names, epoch, models):
        return False
    scope = names.enclosing(epoch, cst.FunctionDef)
    before = [c for c in _mode_calls(names, scope.body if scope is not None else _module(names),
                                     models) if comes_before(names, c, epoch)]
    return bool(before) and _not_training_mode(before[-1])


def _handed_over(names: NameIndex, loop: cst.For | cst.While, models: set[str]) -> bool:
    """One of ``models`` is passed to a call in ``loop`` (which may switch its mode)."""
    return any(isinstance(node, cst.Arg) and code_of(node.value) in models
               for node in walk_local(loop.body))
