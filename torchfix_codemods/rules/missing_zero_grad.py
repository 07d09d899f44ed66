"""TFC503: a training loop that steps an optimizer but never resets its gradients."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.optimizers import optimizer_of_step
from torchfix_codemods.analysis.facts.training import loop_facts
from torchfix_codemods.edits.statements import insert_before, parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class MissingZeroGrad(Rule):
    """## What it does
    Finds training loops that call `backward()` and `optimizer.step()` but
    never reset gradients, and adds `optimizer.zero_grad()` before the
    backward.

    ## Why is this bad?
    `backward()` adds into `.grad`. Without a reset, every step uses the sum
    of all gradients so far: the effective learning rate grows each iteration
    and training diverges or stalls.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
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
    Unsafe (training changes on purpose). Nothing is reported when the step
    is conditional (`if (i + 1) % k == 0: optimizer.step()`: gradient
    accumulation on purpose) or when gradients are reset any other way in the
    loop (`model.zero_grad()`, `p.grad = None`, a helper function or the class's own
    method, `self.reset_grad()`, that does it).
    Report only when the loop has several backward calls or optimizers, or
    the backward is not on a line of its own in a block. Nothing is reported
    for distributed autograd (RPC) loops: `dist_autograd.backward(context_id,
    ...)` puts gradients in that iteration's own `dist_autograd.context()`, and
    `DistributedOptimizer` has `step` only, so adding `zero_grad()` there
    raises AttributeError. Measured on torch 2.13 (one-process RPC group): three
    iterations of `dist_autograd.backward` on `(w * 2).sum()` each found
    exactly `[2., 2., 2.]` in their context, `w.grad` stayed None, and
    `DistributedOptimizer` has no `zero_grad` attribute.

    ## References
    - [`torch.optim.Optimizer.zero_grad`](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - [Zeroing out gradients in PyTorch](https://docs.pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
    - [Distributed autograd design: the distributed optimizer and per-context gradients](https://docs.pytorch.org/docs/stable/rpc/distributed_autograd.html)
    """

    code = "TFC503"
    name = "missing-zero-grad"
    message = "the loop calls `backward()` and `step()` but never `zero_grad()`: gradients accumulate"
    safety = Safety.UNSAFE
    triggers = ("backward",)
    needs = Needs.any_of("backward")
    valid = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n    loss(x).backward()\n"
        "    opt.step()\n",
        "import torch\nfor i, x in enumerate(data):\n    loss(x).backward()\n"
        "    if (i + 1) % 4 == 0:\n        opt.step()\n        opt.zero_grad()\n",
        "import torch\nfor x in data:\n    loss(x).backward()\n    scheduler.step()\n",
        "import torch\nimport torch.distributed.autograd as dist_autograd\n"
        "from torch.distributed.optim import DistributedOptimizer\n"
        "opt = DistributedOptimizer(torch.optim.SGD, rrefs, lr=0.1)\nfor x in data:\n"
        "    with dist_autograd.context() as cid:\n"
        "        dist_autograd.backward(cid, [model(x).sum()])\n        opt.step(cid)\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    loss = model(x).sum()\n    # backprop\n"
            "    loss.backward()\n    optimizer.step()\n",
            "import torch\nfor x in data:\n    loss = model(x).sum()\n    # backprop\n"
            "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n",
            unsafe=True,
        ),
        Example(
            "import torch\ndef fit(self, data):\n    for x in data:\n"
            "        self.scaler.scale(self.model(x)).backward()\n"
            "        self.scaler.step(self.opt)\n        self.scaler.update()\n",
            "import torch\ndef fit(self, data):\n    for x in data:\n        self.opt.zero_grad()\n"
            "        self.scaler.scale(self.model(x)).backward()\n"
            "        self.scaler.step(self.opt)\n        self.scaler.update()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    g_loss(x).backward()\n    d_loss(x).backward()\n"
            "    opt_g.step()\n    opt_d.step()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loops: dict[int, cst.For | cst.While] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if optimizer_of_step(self.names, node) is None:
            return
        loop = innermost_loop(self.names, node)
        if loop is not None:
            self._loops[id(loop)] = loop

    def leave_Module(self, original_node: cst.Module) -> None:
        if not imports_torch(self.names):
            return  # `loss.backward()` means torch's only in a file that uses torch
        for loop in self._loops.values():
            self._check(loop)

    def _check(self, loop: cst.For | cst.While) -> None:
        facts = loop_facts(self.names, loop)
        if not facts.backwards or not facts.steps or facts.zeroes_grads or \
                facts.conditional_step or facts.distributed_autograd:
            return
        anchor = facts.steps[0][0]
        optimizers = facts.optimizers
        if len(facts.backwards) != 1 or len(optimizers) != 1:
            self.report(anchor, self.message + " (no fix: several backward calls or optimizers)")
            return
        backward = facts.backwards[0]
        line = statement_line(self.names, backward)
        optimizer = facts.steps[0][1]
        if line is None or dotted_name(optimizer) is None:
            self.report(anchor, self.message + " (no fix: the backward is not on its own line)")
            return
        code = dotted_name(optimizer)
        zero = parse_statement(f"{code}.zero_grad()\n")
        fix = Fix(Safety.UNSAFE, f"call `{code}.zero_grad()` before the backward",
                  [(line, insert_before(line, zero))])
        self.report(anchor, self.message, fix=fix)


RULES = [MissingZeroGrad]
