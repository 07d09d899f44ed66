"""TFC404: ``torch.utils.checkpoint`` called without an explicit ``use_reentrant=``."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import has_star_kwargs, keyword_arg
from torchfix_codemods.analysis.vocabulary.torch_api import CHECKPOINTS
from torchfix_codemods.edits.arguments import add_keyword
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class CheckpointUseReentrant(Rule):
    """## What it does
    Finds `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)`
    calls without `use_reentrant=` and adds `use_reentrant=True`, today's
    default; with `--unsafe-fixes` it adds `use_reentrant=False` instead.

    ## Why is this bad?
    Omitting it warns on every call ("the use_reentrant parameter should be
    passed explicitly ... calling checkpoint without use_reentrant will raise
    an exception"), and the default is announced to change. The two variants
    differ: the reentrant one gives no gradients to inputs that do not require
    grad and does not support `torch.autograd.grad` or keyword arguments.

    ## Example
    ```python
    y = checkpoint(block, x)
    ```

    ## Use instead
    ```python
    y = checkpoint(block, x, use_reentrant=True)   # today's behaviour, or
    y = checkpoint(block, x, use_reentrant=False)  # the recommended variant
    ```

    ## Fix safety
    Safe with `True`: it is exactly what torch does when the argument is
    missing (measured: identical gradients), minus the warning. With
    `--unsafe-fixes`, `False` is written instead, as TorchFix did: it is the
    recommended variant but changes which inputs and parameters receive
    gradients. Report only when `**kwargs` may already carry the argument.

    ## References
    - [`torch.utils.checkpoint`](https://docs.pytorch.org/docs/stable/checkpoint.html)
    """

    code = "TFC404"
    name = "checkpoint-use-reentrant"
    message = "`checkpoint` without `use_reentrant=`: pass it explicitly (`True` keeps today's behaviour)"
    safety = Safety.SAFE
    min_torch = (1, 11)
    triggers = ("checkpoint",)
    needs = Needs.any_of(*(name.rsplit(".", 1)[-1] for name in CHECKPOINTS))
    valid = (
        "import torch.utils.checkpoint\ny = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)\n",
        "from deepspeed import checkpointing\ny = checkpointing.checkpoint(f, x)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
            "import torch\nfrom torch.utils.checkpoint import checkpoint\n"
            "y = checkpoint(f, x, use_reentrant=True)\n",
        ),
        Example(
            "import torch\nimport torch.utils.checkpoint as cp\ny = cp.checkpoint_sequential(fs, 2, x)\n",
            "import torch\nimport torch.utils.checkpoint as cp\n"
            "y = cp.checkpoint_sequential(fs, 2, x, use_reentrant=True)\n",
        ),
        Example("import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x, **kw)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) not in CHECKPOINTS:
            return
        if keyword_arg(node, "use_reentrant") is not None:
            return
        if has_star_kwargs(node):
            self.report(node, self.message + "; no fix: `**kwargs` may already carry it")
            return
        # The recommended variant first; runs that do not allow unsafe fixes get today's
        # behaviour, made explicit (the engine picks).
        self.report(node, fix=self._fix_for(node, "False", Safety.UNSAFE),
                    alternatives=[self._fix_for(node, "True", Safety.SAFE)])

    @staticmethod
    def _fix_for(node: cst.Call, value: str, safety: Safety) -> Fix:
        return Fix(safety, f"add `use_reentrant={value}`",
                   [(node, add_keyword(node, "use_reentrant", cst.Name(value)))], min_torch=(1, 11))


RULES = [CheckpointUseReentrant]
