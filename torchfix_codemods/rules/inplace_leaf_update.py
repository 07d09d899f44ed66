"""TFC110: an in-place update of a leaf tensor that requires grad, while autograd records."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.statements import consecutive_runs, own_line
from torchfix_codemods.analysis.facts.grad_mode import grad_enabled
from torchfix_codemods.analysis.facts.leaves import leaf_requiring_grad
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import wrapped_in_with
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_NOT_DATA_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_"})
"""Methods ending in ``_`` that change a flag or the tensor's identity, not its values."""

_Pending = tuple[cst.CSTNode, cst.SimpleStatementLine | None, str]


class InplaceLeafUpdate(Rule):
    """## What it does
    Finds in-place updates of a leaf tensor that requires grad made while
    autograd records (`w -= lr * w.grad`, `p.add_(...)` on parameters,
    `w[0] = 0`, `m.weight.fill_(1)`), and wraps the statement(s) in
    `with torch.no_grad():`. Consecutive updates share one block.

    ## Why is this bad?
    Autograd refuses to change a leaf it will compute gradients for: the
    statement raises `RuntimeError: a leaf Variable that requires grad is being
    used in an in-place operation` (or `a view of a leaf Variable ...` for
    `w[0] = 0`). A hand-written optimizer step or a weight initialisation is
    meant to happen outside the graph, which is what `torch.no_grad()` says.

    ## Example
    ```python
    w = torch.randn(3, requires_grad=True)
    for x, y in data:
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad
        w.grad.zero_()
    ```

    ## Use instead
    ```python
    w = torch.randn(3, requires_grad=True)
    for x, y in data:
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()
    ```

    ## Fix safety
    Safe: the statement raised every time it ran with recording on, and under
    `no_grad` it makes the update it spells. Measured on torch 2.13:
    `w -= lr * w.grad`, `w.add_(1)`, `w.sub_(g, alpha=lr)`, `w.zero_()`,
    `w[0] = 1`, `w[0].add_(1)`, `m.weight.fill_(1)` on an `nn.Linear`,
    `p.copy_(...)` over `model.parameters()`, `nn.Parameter(...).mul_(2)` and
    `torch.randn(2).requires_grad_().add_(1)` all raise; under `no_grad` the
    tensor stays a leaf that requires grad, and a manual SGD step written this
    way equals `torch.optim.SGD` bit for bit. Where recording was already off
    (a caller's `no_grad`) or the parameter is frozen, the block changes
    nothing.

    Only tensors with evidence are considered: a torch factory with
    `requires_grad=True`, `.requires_grad_()` on a new tensor, an
    `nn.Parameter` (not `requires_grad=False`), `.weight`/`.bias` of a
    `torch.nn` layer, the loop variable over `.parameters()` or an optimizer's
    `group["params"]`. No finding under `no_grad`/`inference_mode` (a block or
    a decorator), in a custom `torch.autograd.Function`'s `forward`/`backward`,
    in a function this file only calls under `no_grad`, in a function with a
    decorator that may set the mode (torch's own optimizers wrap `step` in
    `_use_grad_for_differentiable`), under `set_grad_enabled(flag)`, or in a
    file that switches the mode with a bare `torch.set_grad_enabled(...)` call.
    Writes through `.data` are TFC103; `nn.init.*_` functions write under
    `no_grad` themselves and are fine. An update nested in a larger expression
    or sharing its line is reported without a fix.

    ## References
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [`torch.Tensor.is_leaf`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html)
    """

    code = "TFC110"
    name = "inplace-update-of-leaf"
    message = ("in-place update of a leaf tensor that requires grad raises while autograd records: "
               "do it under `torch.no_grad()`")
    safety = Safety.SAFE
    triggers = ("requires_grad", "Parameter", "parameters(", "param_groups", ".weight", ".bias")
    needs = Needs.any_of(fragments=("requires_grad", "Parameter", "parameters", "param_groups",
                                      "weight", "bias")) \
        & Needs.any_of("._", "op=", "[]=")  # what `_consider` is called for: an in-place write
    valid = (
        "import torch\nw = torch.randn(3, requires_grad=True)\nwith torch.no_grad():\n"
        "    w -= 0.1 * w.grad\n",
        "import torch\nw = torch.randn(3, requires_grad=True)\nw.grad.zero_()\n",
        "import torch\nw = torch.randn(3)\nw.add_(1)\n",
        "import torch\nimport torch.nn as nn\nm = nn.Linear(3, 2)\nnn.init.zeros_(m.bias)\n",
        "import torch\n@torch.no_grad()\ndef step(model, lr):\n    for p in model.parameters():\n"
        "        p.add_(p.grad, alpha=-lr)\n",
        "import torch\nw = torch.randn(3, requires_grad=True)\nw.data.add_(1)\n",
    )
    invalid = (
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\nw -= 0.1 * w.grad\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\nwith torch.no_grad():\n"
            "    w -= 0.1 * w.grad\n",
        ),
        Example(
            "import torch\ndef sgd(model, lr):\n    for p in model.parameters():\n"
            "        p.add_(p.grad, alpha=-lr)\n",
            "import torch\ndef sgd(model, lr):\n    for p in model.parameters():\n"
            "        with torch.no_grad():\n            p.add_(p.grad, alpha=-lr)\n",
        ),
        Example(
            "import torch.nn as nn\nm = nn.Linear(3, 2)\nm.weight.fill_(1.0)\nm.bias.zero_()\n",
            "import torch.nn as nn\nimport torch\n\nm = nn.Linear(3, 2)\nwith torch.no_grad():\n"
            "    m.weight.fill_(1.0)\n    m.bias.zero_()\n",
        ),
        Example(
            "import torch\nw = torch.zeros(3, requires_grad=True)\nv = w.add_(1) * 2\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._pending: list[_Pending] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if not method.endswith("_") or method.startswith("__") or method in _NOT_DATA_WRITES:
            return
        if self.qualified_name(func) is not None:
            return  # `torch.nn.init.zeros_(w)`: a function, which writes under no_grad itself
        self._consider(node, func.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._consider(node, node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
            self._consider(node, node.targets[0].target)

    def _consider(self, node: cst.CSTNode, receiver: cst.BaseExpression) -> None:
        """``node`` updates ``receiver`` (or a view of it, ``receiver[i]``) in place."""
        view = isinstance(receiver, cst.Subscript)
        if view:
            receiver = receiver.value  # type: ignore[union-attr]
        reason = leaf_requiring_grad(self.names, receiver)
        if reason is None or grad_enabled(self.names, node) is not True:
            return
        if view:
            reason = f"a view of {reason}"
        self._pending.append((node, own_line(self.names, node), reason))

    def leave_Module(self, original_node: cst.Module) -> None:
        whole: list[tuple[cst.CSTNode, cst.SimpleStatementLine, str]] = []
        for node, line, reason in self._pending:
            if line is None:
                self.report(node, self.message + " (no fix: the update is part of a larger "
                            "statement; move it to its own line)", reason=reason)
            else:
                whole.append((node, line, reason))
        for run in consecutive_runs(self.names, whole, lambda item: item[1]):
            self._fix_run(run)

    def _fix_run(self, run: list[tuple[cst.CSTNode, cst.SimpleStatementLine, str]]) -> None:
        lines = list(dict.fromkeys(line for _, line, _ in run))
        try:
            reference = self.context.imports.reference("torch.no_grad", lines[0])
        except ImportUnavailable as error:
            for node, _, reason in run:
                self.report(node, self.message + f" (no fix: {error})", reason=reason)
            return
        fix = Fix(Safety.SAFE, "make the update under `torch.no_grad()`",
                  wrapped_in_with(lines, cst.Call(func=reference.expression)),  # type: ignore[arg-type]
                  imports=(reference.needs,) if reference.needs else ())
        for node, _, reason in run:
            self.report(node, fix=fix, reason=reason)


RULES = [InplaceLeafUpdate]
