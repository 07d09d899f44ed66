"""TFC505-TFC507: gradient work done in the wrong order within one training iteration.

The order is read by :func:`torchfix_codemods.analysis.facts.training.iteration_events`
(backward, ``zero_grad``, clip, ``unscale_``, optimizer and scheduler steps, in
the order one iteration runs them); the rules here decide which orders are
mistakes and move the one misplaced statement. A move is offered only when the
statement can move whole (:func:`~torchfix_codemods.analysis.core.statements.movable_statement`)
and the code it moves across neither reads what it writes nor writes what it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.statements import (
    comes_before,
    contains,
    exclusive,
    interferes,
    leaves_its_branch,
    movable_statement,
    next_statement,
    nodes_between,
    spans,
    statement_line,
)
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.inference import InferenceAnalysis
from torchfix_codemods.analysis.facts.optimizers import is_grad_scaler, scheduled_optimizer
from torchfix_codemods.analysis.facts.training import Event, event_of, iteration_events
from torchfix_codemods.edits.statements import move_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

Loop = cst.For | cst.While


class _OrderRule(Rule):
    """Collects the loops around one kind of call, then judges each loop's iteration."""

    kind: str = ""

    def visit_Module(self, node: cst.Module) -> None:
        self._loops: dict[int, Loop] = {}

    def visit_Call(self, node: cst.Call) -> None:
        event = event_of(self.names, node)
        if event is None or event.kind != self.kind:
            return
        loop = innermost_loop(self.names, node)
        if loop is not None:
            self._loops[id(loop)] = loop

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._loops or not imports_torch(self.names):
            return  # `backward()` and `step()` mean torch's only in a file that uses torch
        for loop in self._loops.values():
            self.check(loop)

    def check(self, loop: Loop) -> None:
        raise NotImplementedError

    def move(self, loop: Loop, call: cst.Call, target: cst.BaseStatement, *, after: bool,
             description: str, reordered: cst.Call) -> Fix | str:
        """The fix moving ``call``'s statement next to ``target``, or why there is none;
        ``reordered`` is the call the move puts it on the other side of, on purpose."""
        unit = movable_statement(self.names, call)
        if unit is None:
            return "the call is not a statement of its own that can move"
        if contains(self.names, unit, target) or contains(self.names, target, unit):
            return "it shares a statement with the call it would move past"
        if leaves_its_branch(self.names, unit, target, loop.body):
            return "it would leave the branch that holds it"
        order = spans(self.names)
        if comes_before(self.names, unit, target):
            across = nodes_between(self.names, loop.body, order[id(unit)][1],
                                   order[id(target)][1] + 1 if after else order[id(target)][0])
        else:
            across = nodes_between(self.names, loop.body,
                                   order[id(target)][0] - 1 if not after else order[id(target)][1],
                                   order[id(unit)][0])
        if interferes(self.names, unit, across, exempt=(reordered,)):
            return "the code it would move across uses what it reads or writes"
        replacements = move_statement(unit, target, after=after,
                                      following=next_statement(self.names, unit))
        return Fix(Safety.UNSAFE, description, replacements)  # type: ignore[arg-type]

    def report_move(self, node: cst.CSTNode, message: str, fix: Fix | str) -> None:
        if isinstance(fix, Fix):
            self.report(node, message, fix=fix)
        else:
            self.report(node, f"{message} (no fix: {fix})")


def _level(events: Sequence[Event]) -> list[Event]:
    return [event for event in events if not event.nested]


def _same_run(rule: Rule, event: Event, others: Sequence[Event]) -> list[Event]:
    """``others`` without the events in another branch of an ``if`` than ``event``: the
    ``else`` of the branch holding ``event`` never runs in the same iteration."""
    return [other for other in others if not exclusive(rule.names, event.call, other.call)]


def _sibling_holding(rule: Rule, unit_block_owner: cst.CSTNode | None,
                     node: cst.CSTNode) -> cst.BaseStatement | None:
    """The statement of the block owned by ``unit_block_owner`` that contains ``node``."""
    previous: cst.CSTNode = node
    for ancestor in rule.names.ancestors(node):
        if ancestor is unit_block_owner:
            return previous if isinstance(previous, cst.BaseStatement) else None
        previous = ancestor
    return None


class ZeroGradBetweenBackwardAndStep(_OrderRule):
    """## What it does
    Finds `zero_grad()` called after `backward()` and before the optimizer's
    `step()` in the same iteration, and moves it before the backward.

    ## Why is this bad?
    `backward()` fills `.grad`; `zero_grad()` then wipes it (to None by default
    since torch 2.0), and `step()` finds nothing to apply. Nothing trains, and
    nothing fails: the loss simply stays where it was. Measured on torch 2.13:
    after three iterations of `backward(); zero_grad(); step()` the weights of
    a model trained with SGD, SGD with momentum, Adam or AdamW with weight decay
    had not moved at all (optimizers skip parameters whose `.grad` is None).

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    Unsafe: the fix makes training happen, on purpose (measured on torch 2.13:
    after the move, SGD with momentum and Adam with accumulation end with the
    weights of the loop written in the usual order, bit for bit). The `zero_grad()` moves
    right before the first backward since the previous step when both are in
    the same block; when it is in the step's block instead (`if (i + 1) % k ==
    0: optimizer.zero_grad(); optimizer.step()`, gradient accumulation written
    in the wrong order) it moves right after the step, which keeps the
    accumulation. Report only when neither holds, when the line does other work
    too, or when the code it would move across assigns what it reads. Not a
    finding: `zero_grad()` after the step (the other correct place), a
    `zero_grad()` followed by another backward before the step (a GAN
    alternating two losses), and `model.zero_grad()` in a loop that steps
    several optimizers.

    ## References
    - [`torch.optim.Optimizer.zero_grad`](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - [Zeroing out gradients in PyTorch](https://docs.pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
    - [Optimizing model parameters (the training loop)](https://docs.pytorch.org/tutorials/beginner/basics/optimization_tutorial.html)
    """

    code = "TFC505"
    name = "zero-grad-between-backward-and-step"
    message = "`zero_grad()` between `backward()` and `step()` wipes the gradients: nothing trains"
    safety = Safety.UNSAFE
    triggers = ("zero_grad",)
    needs = Needs.any_of("zero_grad")
    kind = "zero_grad"
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n    model(x).sum().backward()\n"
        "    opt.step()\n",
        "import torch\nfor x in data:\n    model(x).sum().backward()\n    opt.step()\n"
        "    opt.zero_grad()\n",
        "import torch\nfor i, x in enumerate(data):\n    model(x).sum().backward()\n"
        "    if (i + 1) % 4 == 0:\n        opt.step()\n        opt.zero_grad()\n",
        "import torch\nfor x in data:\n    d_loss(x).backward()\n    d_opt.step()\n"
        "    g_opt.zero_grad()\n    g_loss(x).backward()\n    g_opt.step()\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    loss = model(x).sum()\n    loss.backward()\n"
            "    optimizer.zero_grad()\n    optimizer.step()\n",
            "import torch\nfor x in data:\n    loss = model(x).sum()\n    optimizer.zero_grad()\n"
            "    loss.backward()\n    optimizer.step()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor i, x in enumerate(data):\n    model(x).sum().backward()\n"
            "    if (i + 1) % 4 == 0:\n        opt.zero_grad()\n        opt.step()\n",
            "import torch\nfor i, x in enumerate(data):\n    model(x).sum().backward()\n"
            "    if (i + 1) % 4 == 0:\n        opt.step()\n        opt.zero_grad()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    loss = model(x).sum()\n    loss.backward()\n"
            "    print(optimizer.zero_grad(), 'reset')\n    optimizer.step()\n"
        ),
    )

    def check(self, loop: Loop) -> None:
        events = _level(iteration_events(self.names, loop))
        steppers = {e.target for e in events if e.kind == "step"}
        for index, event in enumerate(events):
            if event.kind == "zero_grad" and (event.target is not None or len(steppers) == 1):
                self._check(loop, _same_run(self, event, events[:index]), event,
                            _same_run(self, event, events[index + 1:]))

    def _check(self, loop: Loop, before: list[Event], zero: Event, after: list[Event]) -> None:
        since: list[Event] = []
        for event in reversed(before):
            if event.kind in ("step", "zero_grad"):
                break
            since.insert(0, event)
        backwards = [e for e in since if e.kind == "backward"]
        if not backwards:
            return  # zeroed after the step, or before any backward: the right places
        step = None
        for event in after:
            if event.kind == "backward":
                return  # another backward refills the gradients before the step
            if event.kind == "step" and (zero.target is None or event.target == zero.target):
                step = event
                break
        if step is None:
            return
        message = self.message
        if zero.target is not None:
            message = (f"`{zero.target}.zero_grad()` between `backward()` and "
                       f"`{_step_text(step)}` wipes the gradients: nothing trains")
        self.report_move(zero.call, message, self._fix(loop, zero, backwards[0], step))

    def _fix(self, loop: Loop, zero: Event, backward: Event, step: Event) -> Fix | str:
        unit = movable_statement(self.names, zero.call)
        backward_line = statement_line(self.names, backward.call)
        step_line = statement_line(self.names, step.call)
        if unit is None:
            return "the call is not a statement of its own that can move"
        parent = self.names.parent(unit)
        if backward_line is not None and self.names.parent(backward_line) is parent:
            return self.move(loop, zero.call, backward_line, after=False,
                             description="call `zero_grad()` before the backward",
                             reordered=backward.call)
        if step_line is not None and self.names.parent(step_line) is parent and \
                comes_before(self.names, unit, step_line):
            return self.move(loop, zero.call, step_line, after=True,
                             description="call `zero_grad()` after the step",
                             reordered=step.call)
        return "the backward and the step are in other blocks than the `zero_grad()`"


class ClipBeforeBackward(_OrderRule):
    """## What it does
    Finds `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` called before
    the `backward()` whose gradients the following `step()` applies, and moves
    the clip right before the step.

    ## Why is this bad?
    Clipping acts on the `.grad` that exists when it runs. Before the backward
    that is last iteration's gradient, zeros, or None: the gradients the step
    applies are never clipped, and the exploding gradients clipping was added
    for go through. Measured on torch 2.13: with the clip before the backward,
    `clip_grad_norm_` returned 0.0 every iteration while the gradient norm at
    the step was 5.5e3, 3.9e7 and 1.3e11; `clip_grad_value_` with every
    `.grad` None (after `zero_grad()`) raises `RuntimeError`.

    ## Example
    ```python
    optimizer.zero_grad()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    ```

    ## Fix safety
    Unsafe: clipping starts to act, on purpose, so the gradients and the
    training run change (measured on torch 2.13: after the move the weights
    equal those of the loop that clips after the backward, and the
    `clip_grad_value_` loop that raised runs). The clip moves right before the step (inside the
    step's block, so with gradient accumulation it clips the accumulated
    gradient once per step). With a `GradScaler` step (`scaler.step(opt)`)
    the clip must see unscaled gradients: the move is offered only when
    `scaler.unscale_(opt)` is called after the backward, else report only.
    Report only too when the clip's line does other work, or when the code it
    would move across reads the name its result is assigned to (`norm =
    clip_grad_norm_(...)` logged before the backward), and when the move
    would take the clip out of the `if`/`else` branch that holds it (its
    condition, or a name only that branch binds, such as apex's `amp`, would
    no longer hold). A backward in the other branch of an `if` (`if fp16:
    ...clip... else: loss.backward()`) never runs after the clip in the same
    iteration: not a finding.

    ## References
    - [`torch.nn.utils.clip_grad_norm_`](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
    - [`torch.nn.utils.clip_grad_value_`](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_value_.html)
    - [AMP examples: gradient clipping with `unscale_`](https://docs.pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    """

    code = "TFC506"
    name = "clip-before-backward"
    message = "gradients are clipped before `backward()`: the step applies unclipped gradients"
    safety = Safety.UNSAFE
    triggers = ("clip_grad",)
    needs = Needs.any_of(fragments=("clip_grad",))
    kind = "clip"
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n    model(x).sum().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
        "import torch\nfor x in data:\n    opt.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    model(x).sum().backward()\n    opt.step()\n",
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n"
            "    scaler.update()\n"
        ),
    )

    def check(self, loop: Loop) -> None:
        events = _level(iteration_events(self.names, loop))
        for index, event in enumerate(events):
            if event.kind == "clip":
                self._check(loop, event, _same_run(self, event, events[index + 1:]))

    def _check(self, loop: Loop, clip: Event, after: list[Event]) -> None:
        backwards: list[Event] = []
        step = None
        for event in after:
            if event.kind == "backward":
                backwards.append(event)
            elif event.kind == "step":
                step = event
                break
        if step is None or not backwards:
            return
        message = (f"gradients are clipped before `backward()`: `{_step_text(step)}` applies "
                   "unclipped gradients")
        receiver = step.call.func.value if isinstance(step.call.func, cst.Attribute) else None
        if receiver is not None and is_grad_scaler(receiver):
            later = after[after.index(backwards[-1]) + 1: after.index(step)]
            if not any(e.kind == "unscale" for e in later):
                self.report(clip.call, f"{message} (no fix: with a GradScaler, clip after "
                            f"`scaler.unscale_({step.target})` following the backward)")
                return
        target = statement_line(self.names, step.call)
        if target is None or any(contains(self.names, target, b.call) for b in backwards):
            self.report(clip.call, f"{message} (no fix: the step is not on a line of its own)")
            return
        self.report_move(clip.call, message, self.move(
            loop, clip.call, target, after=False, description="clip right before the step",
            reordered=backwards[-1].call))


class SchedulerBeforeOptimizer(_OrderRule):
    """## What it does
    Finds a learning-rate scheduler's `step()` called before the optimizer's
    `step()` in the same iteration (per batch, or at the top of the epoch
    before the epoch's training), and moves it after the optimizer's step.

    ## Why is this bad?
    Since torch 1.1 the scheduler is stepped after the optimizer. Stepped
    before, the first value of the schedule is never used: measured on torch
    2.13 with `StepLR(opt, step_size=1, gamma=0.5)` and `lr=1.0`, the
    iterations trained with learning rates 0.5, 0.25, 0.125 instead of 1.0,
    0.5, 0.25, and torch warned "Detected call of `lr_scheduler.step()` before
    `optimizer.step()`". A warmup schedule loses its first step, a step decay
    comes one epoch early.

    ## Example
    ```python
    for epoch in range(epochs):
        scheduler.step()
        train(model, loader, optimizer)
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        train(model, loader, optimizer)
        scheduler.step()
    ```

    ## Fix safety
    Unsafe: the learning rate of every iteration changes, on purpose
    (measured on torch 2.13: after the move the iterations use 1.0, 0.5, 0.25
    and the weights equal those of the loop written in the documented order,
    per batch and per epoch with a `train(...)` helper). The
    scheduler step moves right after the statement of its block that holds
    the optimizer step (the inner batch loop, the `train(...)` call of a
    helper of this file that steps). Report only when the line does other
    work, when the optimizer step is not in the scheduler step's block, or
    when the code it would move across assigns what it reads. Not a finding:
    a scheduler stepped after the inner loop (per epoch), a `step(metric)`
    with arguments (`ReduceLROnPlateau` reads a metric, and a warmup may be
    stepped on purpose first), or a scheduler built for another optimizer than
    the one stepped.

    ## References
    - [How to adjust the learning rate](https://docs.pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    - [`torch.optim.lr_scheduler.LRScheduler`](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LRScheduler.html)
    """

    code = "TFC507"
    name = "scheduler-before-optimizer"
    message = ("`scheduler.step()` before `optimizer.step()`: the first learning rate of the "
               "schedule is skipped")
    safety = Safety.UNSAFE
    triggers = ("sched",)
    needs = Needs.any_of(fragments=("sched",))
    kind = "scheduler_step"
    valid = (
        "import torch\nfor epoch in range(3):\n    for x in data:\n        opt.zero_grad()\n"
        "        model(x).sum().backward()\n        opt.step()\n    scheduler.step()\n",
        "import torch\nfor epoch in range(3):\n    scheduler.step(val_loss)\n    for x in data:\n"
        "        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n",
    )
    invalid = (
        Example(
            "import torch\nfor epoch in range(3):\n    scheduler.step()\n    for x in data:\n"
            "        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n"
            "    print(epoch)\n",
            "import torch\nfor epoch in range(3):\n    for x in data:\n"
            "        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n"
            "    scheduler.step()\n    print(epoch)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n    lr = scheduler.step()\n"
            "    model(x).sum().backward()\n    print(lr)\n    opt.step()\n"
        ),
    )

    def check(self, loop: Loop) -> None:
        analysis = InferenceAnalysis.of(self.names, self.context.options.inference_decorators,
                                        self.context.path)
        events = iteration_events(self.names, loop, analysis)
        for index, event in enumerate(events):
            if event.kind == "scheduler_step" and not event.nested:
                self._check(loop, event, _same_run(self, event, events[:index]),
                            _same_run(self, event, events[index + 1:]))

    def _check(self, loop: Loop, scheduler: Event, before: list[Event],
               after: list[Event]) -> None:
        if scheduler.call.args:
            return  # `step(metric)`/`step(epoch)`: not the per-iteration call torch warns about
        receiver = scheduler.call.func.value  # type: ignore[attr-defined]
        optimizer = scheduled_optimizer(self.names, receiver)

        def stepped(event: Event) -> bool:
            return event.kind == "step" and (
                optimizer is None or event.target is None or event.target == optimizer)

        if any(stepped(e) for e in before):
            return  # the optimizer stepped earlier in the iteration
        step = next((e for e in after if stepped(e)), None)
        if step is None:
            return
        where = "" if step.target is not None else ", which steps the optimizer"
        message = (f"`{dotted_name(receiver) or 'scheduler'}.step()` before "
                   f"`{_step_text(step)}`{where}: the first learning rate of the schedule "
                   "is skipped")
        unit = movable_statement(self.names, scheduler.call)
        owner = self.names.parent(unit) if unit is not None else None
        target = _sibling_holding(self, owner, step.call) if owner is not None else None
        if target is None:
            self.report(scheduler.call, f"{message} (no fix: the optimizer step is not in the "
                        "scheduler step's block)")
            return
        self.report_move(scheduler.call, message, self.move(
            loop, scheduler.call, target, after=True,
            description="step the scheduler after the optimizer", reordered=step.call))


def _step_text(step: Event) -> str:
    """How a finding names the step: ``opt.step()``, ``scaler.step(opt)``, ``train(...)``."""
    func = step.call.func
    if step.target is None:
        return f"{dotted_name(func) or 'the call'}(...)"
    if isinstance(func, cst.Attribute) and is_grad_scaler(func.value):
        return f"{code_of(func.value)}.step({step.target})"
    return f"{step.target}.step()"


RULES = [ZeroGradBetweenBackwardAndStep, ClipBeforeBackward, SchedulerBeforeOptimizer]
