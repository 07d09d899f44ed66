"""TFC508-TFC511: a mixed-precision step that departs from the documented `GradScaler` recipe.

The order of one step (backward, unscale, clip, step, update) is read by
:mod:`torchfix_codemods.analysis.facts.amp`; the rules here decide which departures are
mistakes: clipping gradients that are still scaled (TFC508), stepping the optimizer
around the scaler (TFC509), never updating the scale (TFC510), and a scaler next to a
bfloat16 autocast that needs none (TFC511, off by default).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import local_function
from torchfix_codemods.analysis.core.calls import keyword_arg, positional_args
from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.statements import own_line, statement_line
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.amp import (
    Scope,
    scaler_calls,
    scaler_of_backward,
    scaler_of_step,
    scaler_of_update,
    step_events,
    step_scope,
)
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.training import Event, event_of
from torchfix_codemods.analysis.vocabulary.torch_api import AUTOCASTS, GRAD_SCALERS
from torchfix_codemods.edits.statements import insert_before, parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_SCALED_STEP = Needs.any_of("scale") & Needs.any_of("backward")


class _ScalerRule(Rule):
    """Collects the training steps around one kind of call, then judges each step."""

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes: dict[int, Scope] = {}
        self._calls: list[cst.Call] = []

    def collects(self, call: cst.Call) -> bool:
        raise NotImplementedError

    def scope_of(self, call: cst.Call) -> Scope | None:
        return step_scope(self.names, call)

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append(node)
        if self.collects(node):
            scope = self.scope_of(node)
            if scope is not None:
                self._scopes[id(scope)] = scope

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._scopes or not imports_torch(self.names):
            return
        for scope in self._scopes.values():
            self.check(scope, [e for e in step_events(self.names, scope) if not e.nested])

    def check(self, scope: Scope, events: list[Event]) -> None:
        raise NotImplementedError


def _last_backward(events: list[Event], index: int) -> Event | None:
    """The backward whose gradients the work at ``index`` sees: the last one before it with
    no step in between (None after a step, or with no backward)."""
    for event in reversed(events[:index]):
        if event.kind == "step":
            return None
        if event.kind == "backward":
            return event
    return None


def _step_receiver(step: Event) -> cst.BaseExpression | None:
    func = step.call.func
    return func.value if isinstance(func, cst.Attribute) else None


class ClipScaledGradients(_ScalerRule):
    """## What it does
    Finds `clip_grad_norm_` / `clip_grad_value_` called after
    `scaler.scale(loss).backward()` and before `scaler.step(optimizer)` with no
    `scaler.unscale_(optimizer)` in between, and inserts the unscale before the
    clip.

    ## Why is this bad?
    `scaler.scale(loss)` multiplies the loss, and so every gradient, by the
    scale (65536 to start with). A clip on those gradients compares the scaled
    norm with your threshold: `max_norm=1.0` then cuts the gradients to a
    65536th of what you meant, and `scaler.step` divides them by the scale
    once more. Measured on torch 2.13 with `GradScaler("cpu")`: the clip saw a
    norm of 1.67e5 instead of 2.54, and the step moved the weights by 1.5e-6
    instead of 0.0997. Training crawls, and nothing warns.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Unsafe: clipping starts to act at the threshold written, so the training
    run changes on purpose (measured on torch 2.13: after the fix the weights
    equal those of the loop written the documented way, bit for bit).
    `scaler.step` knows the gradients were already unscaled and does not
    unscale them again; with a disabled scaler (`enabled=False`) `unscale_`
    does nothing. Report only when the clip is not on a line of its own in a
    block, or when `scaler.unscale_` is called after the clip (calling it
    twice before a step raises `RuntimeError`). Not a finding: the unscale
    already before the clip, a clip outside the scaled step, a step that is not
    the scaler's.

    ## References
    - [AMP examples: working with unscaled gradients (gradient clipping)](https://docs.pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    - [`torch.amp.GradScaler.unscale_`](https://docs.pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_)
    """

    code = "TFC508"
    name = "clip-scaled-gradients"
    message = ("gradients are clipped while still multiplied by the GradScaler's scale: "
               "the threshold means nothing")
    safety = Safety.UNSAFE
    triggers = ("clip_grad",)
    needs = _SCALED_STEP & Needs.any_of(fragments=("clip_grad",))
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n",
        "import torch\nfor x in data:\n    opt.zero_grad()\n    model(x).sum().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(opt)\n    scaler.update()\n",
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    scaler.unscale_(opt)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(opt)\n    scaler.update()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n"
            "    if clip: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(opt)\n    scaler.update()\n"
        ),
    )

    def collects(self, call: cst.Call) -> bool:
        event = event_of(self.names, call)
        return event is not None and event.kind == "clip"

    def check(self, scope: Scope, events: list[Event]) -> None:
        for index, event in enumerate(events):
            if event.kind == "clip":
                self._check(event, events, index)

    def _check(self, clip: Event, events: list[Event], index: int) -> None:
        backward = _last_backward(events, index)
        if backward is None or scaler_of_backward(backward.call) is None:
            return
        start = events.index(backward)
        if any(e.kind == "unscale" for e in events[start:index]):
            return
        step = None
        unscaled_later = False
        for event in events[index + 1:]:
            if event.kind == "backward":
                return
            if event.kind == "unscale":
                unscaled_later = True
            if event.kind == "step":
                step = event
                break
        if step is None:
            return
        scaler = scaler_of_step(step.call)
        backward_scaler = scaler_of_backward(backward.call)
        if scaler is None or backward_scaler is None or \
                code_of(scaler) != code_of(backward_scaler) or step.target is None:
            return  # stepped around the scaler (TFC509), or another scaler
        message = (f"gradients are clipped while still scaled: call "
                   f"`{code_of(scaler)}.unscale_({step.target})` before the clip")
        if unscaled_later:
            self.report(clip.call, f"{message} (no fix: `unscale_` is called after the clip; "
                        "move it before the clip)")
            return
        line = statement_line(self.names, clip.call)
        if line is None:
            self.report(clip.call, f"{message} (no fix: the clip is not on a line of its own)")
            return
        unscale = parse_statement(f"{code_of(scaler)}.unscale_({step.target})\n")
        self.report(clip.call, message, fix=Fix(
            Safety.UNSAFE, f"call `{code_of(scaler)}.unscale_({step.target})` before the clip",
            [(line, insert_before(line, unscale))]))


class StepAroundScaler(_ScalerRule):
    """## What it does
    Finds `optimizer.step()` called after `scaler.scale(loss).backward()` in a
    step that never calls `scaler.step(...)`, and replaces it with
    `scaler.step(optimizer)` (followed by `scaler.update()` when the loop has
    none).

    ## Why is this bad?
    The gradients of a scaled loss are multiplied by the scale (65536 to start
    with). `optimizer.step()` applies them as they are: measured on torch 2.13
    with `GradScaler("cpu")` and SGD, one step moved the weights by 16605
    where `scaler.step(optimizer)` moved them by 0.253. And a step whose
    gradients overflowed is applied instead of skipped: an inf gradient made
    every weight non-finite, where `scaler.step` skipped the step and halved
    the scale.

    ## Example
    ```python
    scaler.scale(loss).backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Unsafe: the update changes on purpose (measured on torch 2.13: after the
    fix the weights equal those of the documented loop, bit for bit).
    `scaler.update()` is added after the step when the loop has no update of
    its own, because a second `scaler.step` on the same optimizer without an
    update in between raises `RuntimeError: step() has already been called
    since the last update()`. Report only when the step takes arguments (a
    closure: `scaler.step` does not support one) or is not a statement of its
    own, in a step function with no loop and no update of its own (the
    caller may update, and a second update without a step raises
    `AssertionError`), and when a function of the file that steps nothing
    updates the scaler (a hook). Not a finding: a step that already uses the scaler
    anywhere in the loop (a GAN stepping one optimizer through it), a backward
    that is not scaled.

    ## References
    - [AMP examples: typical mixed precision training](https://docs.pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [`torch.amp.GradScaler.step`](https://docs.pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.step)
    """

    code = "TFC509"
    name = "step-around-scaler"
    message = ("`optimizer.step()` after `scaler.scale(loss).backward()` applies the scaled "
               "gradients and never skips an overflowed step")
    safety = Safety.UNSAFE
    triggers = ("scale",)
    needs = _SCALED_STEP & Needs.any_of("step")
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n"
        "    scaler.update()\n",
        "import torch\nfor x in data:\n    opt.zero_grad()\n    model(x).sum().backward()\n"
        "    opt.step()\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    opt.step()\n",
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n"
            "    scaler.update()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    opt.step(closure)\n"
        ),
    )

    def collects(self, call: cst.Call) -> bool:
        event = event_of(self.names, call)
        return event is not None and event.kind == "step" and scaler_of_step(call) is None

    def check(self, scope: Scope, events: list[Event]) -> None:
        if scaler_calls(scope, "step"):
            return
        for index, event in enumerate(events):
            if event.kind == "step" and scaler_of_step(event.call) is None:
                self._check(scope, event, events, index)

    def _check(self, scope: Scope, step: Event, events: list[Event], index: int) -> None:
        backward = _last_backward(events, index)
        scaler = scaler_of_backward(backward.call) if backward is not None else None
        receiver = _step_receiver(step)
        if scaler is None or receiver is None or dotted_name(receiver) is None:
            return
        optimizer = code_of(receiver)
        message = (f"`{optimizer}.step()` after `{code_of(scaler)}.scale(...).backward()` "
                   f"applies the scaled gradients: use `{code_of(scaler)}.step({optimizer})`")
        line = own_line(self.names, step.call)
        if step.call.args or line is None:
            why = "the step takes arguments" if step.call.args else \
                "the step is not a statement of its own"
            self.report(step.call, f"{message} (no fix: {why})")
            return
        new = [parse_statement(f"{code_of(scaler)}.step({optimizer})\n")]
        updates = _scaler_updates(self, scope, self._calls)
        if updates != "here" and (isinstance(scope, cst.FunctionDef) or updates == "elsewhere"):
            self.report(step.call, f"{message} (no fix: the scaler's update is not in this "
                        "function and may run elsewhere; a second update would raise)")
            return
        if updates is None:
            new.append(parse_statement(f"{code_of(scaler)}.update()\n"))
        first = new[0].with_changes(leading_lines=line.leading_lines,
                                    trailing_whitespace=line.trailing_whitespace)
        replacement = cst.FlattenSentinel([first, *new[1:]])
        self.report(step.call, message, fix=Fix(
            Safety.UNSAFE, f"step through the scaler: `{code_of(scaler)}.step({optimizer})`",
            [(line, replacement)]))


def _scaler_updates(rule: Rule, scope: Scope, calls: list[cst.Call]) -> str | None:
    """Where ``scaler.update()`` may run for the step in ``scope``: ``"here"`` (a call in the
    enclosing function or module code, or in a helper of this file or method of the enclosing
    class called there), ``"elsewhere"`` (only in other code of the file, which may be a hook
    that runs after this step; an update next to a step of its own belongs to that step), or
    None. ``calls`` are all the calls of the file."""
    function = rule.names.enclosing(scope, cst.FunctionDef)
    outer: cst.CSTNode = function if function is not None else rule.context.module
    for node in walk_local(outer.body if isinstance(outer, cst.FunctionDef) else outer):
        if not isinstance(node, cst.Call):
            continue
        if scaler_of_update(node) is not None:
            return "here"
        helper = local_function(rule.names, node) or _own_method(rule, scope, node)
        if helper is not None and ".update(" in code_of(helper):
            return "here"
    for call in calls:
        if scaler_of_update(call) is not None and not _pairs_with_own_step(rule, call):
            return "elsewhere"
    return None


def _pairs_with_own_step(rule: Rule, update: cst.Call) -> bool:
    """The function around ``update`` (or the module code) steps a scaler itself: the update
    belongs to that training step (another loop of the file), not to a hook."""
    function = rule.names.enclosing(update, cst.FunctionDef)
    body: cst.CSTNode = function.body if function is not None else rule.context.module
    return any(isinstance(node, cst.Call) and scaler_of_step(node) is not None
               for node in walk_local(body))


def _own_method(rule: Rule, scope: Scope, call: cst.Call) -> cst.FunctionDef | None:
    """The method of the class around ``scope`` that ``self.name(...)`` calls."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and
            func.value.value == "self"):
        return None
    cls = rule.names.enclosing(scope, cst.ClassDef)
    if cls is None:
        return None
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == func.attr.value:
            return statement
    return None


class MissingScalerUpdate(_ScalerRule):
    """## What it does
    Finds a training loop that steps through a `GradScaler`
    (`scaler.step(optimizer)`) and never calls `scaler.update()`, and adds the
    update right after the step.

    ## Why is this bad?
    `scaler.update()` adapts the scale (halved after an overflow, grown after
    a run of good steps) and resets the scaler's per-step bookkeeping. Without
    it the scale never adapts, and on torch 2.13 the second
    `scaler.step(optimizer)` raises `RuntimeError: step() has already been
    called since the last update()` (measured with an enabled
    `GradScaler("cpu")`). A disabled scaler (`enabled=False`) does not raise,
    so the mistake hides until mixed precision is switched on.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(criterion(model(x), y)).backward()
        scaler.step(optimizer)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(criterion(model(x), y)).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    Unsafe: the loop that raised at its second step runs, and the scale
    adapts (measured on torch 2.13: the fixed loop ends with the weights of
    the documented loop, bit for bit). The update goes right after the last
    `scaler.step(...)` of the iteration, in the same block (inside an `if`
    that steps every k iterations, as the AMP examples do). Report only when
    the steps are in different blocks or not statements of their own, or when
    a function of the file that steps nothing updates the scaler (a hook that
    may run after this step: a second `update()` without a step raises
    `AssertionError`). Not a
    finding: an update anywhere in the function around the loop, or in a
    helper of this file or method of the same class the function calls.

    ## References
    - [AMP examples: typical mixed precision training](https://docs.pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [`torch.amp.GradScaler.update`](https://docs.pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update)
    """

    code = "TFC510"
    name = "missing-scaler-update"
    message = "the loop steps through a GradScaler but never calls `scaler.update()`"
    safety = Safety.UNSAFE
    triggers = ("scale",)
    needs = Needs.any_of("step") & Needs.any_of(fragments=("scaler",))
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n"
        "    scaler.update()\n",
        "import torch\ndef train_step(x):\n    scaler.scale(model(x).sum()).backward()\n"
        "    scaler.step(opt)\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n",
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    scaler.step(opt)\n"
            "    scaler.update()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    opt.zero_grad()\n"
            "    scaler.scale(model(x).sum()).backward()\n    print(scaler.step(opt))\n"
        ),
    )

    def collects(self, call: cst.Call) -> bool:
        return scaler_of_step(call) is not None

    def scope_of(self, call: cst.Call) -> Scope | None:
        return innermost_loop(self.names, call)

    def check(self, scope: Scope, events: list[Event]) -> None:
        steps = scaler_calls(scope, "step")
        updates = _scaler_updates(self, scope, self._calls)
        if not steps or updates == "here":
            return
        scalers = {code_of(scaler_of_step(step)) for step in steps}  # type: ignore[arg-type]
        if len(scalers) != 1:
            return
        scaler = scalers.pop()
        message = f"the loop steps through `{scaler}` but never calls `{scaler}.update()`"
        lines = [own_line(self.names, step) for step in steps]
        parents = {id(self.names.parent(line)) for line in lines if line is not None}
        last = lines[-1]
        if updates == "elsewhere":
            self.report(steps[-1], f"{message} (no fix: another part of the file updates the "
                        "scaler and may run after this step; a second update would raise)")
            return
        if last is None or None in lines or len(parents) != 1:
            self.report(steps[-1], f"{message} (no fix: the steps are not statements of their "
                        "own in one block)")
            return
        update = parse_statement(f"{scaler}.update()\n")
        self.report(steps[-1], message, fix=Fix(
            Safety.UNSAFE, f"call `{scaler}.update()` after the step",
            [(last, cst.FlattenSentinel([last, update]))]))




class GradScalerWithBfloat16(Rule):
    """## What it does
    Reports a `GradScaler` in a file whose every `autocast` runs in bfloat16.

    ## Why is this bad?
    Loss scaling exists because float16 underflows: its smallest normal
    number is 6.1e-05 and its largest 65504. bfloat16 has float32's exponent
    range (smallest normal 1.2e-38, largest 3.4e38, measured on torch 2.13;
    a gradient of 1e-8 is 0.0 in float16 and 1.0e-08 in bfloat16), so there is
    nothing to rescue: the scaler only adds work to every step (a multiply of
    the loss, an unscale and an inf/NaN check of every gradient).

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    scaler.scale(loss).backward()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    loss.backward()
    ```

    ## Fix safety
    No fix: removing the scaler touches every `scale`/`step`/`update` call,
    and a person should decide. Off by default (it costs speed, not
    correctness). Not a finding: a scaler built with `enabled=` (already
    switched by precision), a file with a float16 autocast or one whose dtype
    is not a literal `torch.bfloat16`. `torch.autocast("cpu")` with no dtype
    is bfloat16.

    ## References
    - [Automatic mixed precision: `torch.autocast` and `GradScaler`](https://docs.pytorch.org/docs/stable/amp.html)
    - [`torch.finfo`](https://docs.pytorch.org/docs/stable/type_info.html#torch.finfo)
    """

    code = "TFC511"
    name = "grad-scaler-with-bfloat16"
    message = "a GradScaler with bfloat16 autocast does nothing useful: bfloat16 has float32's range"
    safety = Safety.NONE
    default_enabled = False
    triggers = ("GradScaler",)
    needs = Needs.any_of("GradScaler") & Needs.any_of("autocast")
    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
        "with torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=dtype == torch.float16)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
    )
    invalid = (
        Example(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._scalers: list[cst.Call] = []
        self._bf16 = 0
        self._other = 0

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified in GRAD_SCALERS:
            if keyword_arg(node, "enabled") is None and not any(
                    a.star for a in node.args) and len(positional_args(node)) <= 1:
                self._scalers.append(node)
        elif qualified in AUTOCASTS:
            if self._bfloat16(node, qualified):
                self._bf16 += 1
            else:
                self._other += 1

    def _bfloat16(self, call: cst.Call, qualified: str) -> bool:
        if any(a.star for a in call.args):
            return False
        dtype = keyword_arg(call, "dtype")
        if dtype is not None:
            return self.qualified_name(dtype.value) == "torch.bfloat16"
        if qualified == "torch.cpu.amp.autocast":
            return True
        positional = positional_args(call)
        if qualified == "torch.cuda.amp.autocast" or not positional:
            return False
        device = positional[0].value
        return isinstance(device, cst.SimpleString) and device.evaluated_value == "cpu" and \
            len(positional) == 1

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._bf16 and not self._other:
            for scaler in self._scalers:
                self.report(scaler)


RULES = [ClipScaledGradients, StepAroundScaler, MissingScalerUpdate, GradScalerWithBfloat16]
