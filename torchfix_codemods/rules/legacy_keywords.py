"""TFC412: ``backward(retain_variables=...)``, the pre-0.4 name of ``retain_graph``.

torch 0.4 renamed the keyword; today the old one raises ``TypeError`` (measured
in ``rules/data/legacy_inventory.json``), so 0.3-era training loops that keep a
graph for a second backward (GANs, multi-loss models) stop at their first step.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.tensors import provenance
from torchfix_codemods.analysis.vocabulary.torch_api import AUTOGRAD_BACKWARD
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

OLD = "retain_variables"
NEW = "retain_graph"


class RetainVariables(Rule):
    """## What it does
    Renames `retain_variables=` to `retain_graph=` in `loss.backward(...)`
    and `torch.autograd.backward(...)`.

    ## Why is this bad?
    torch 0.4 renamed the argument; since then `loss.backward(retain_variables=True)`
    raises `TypeError: Tensor.backward() got an unexpected keyword argument
    'retain_variables'`, so old code stops at its first training step.

    ## Example
    ```python
    d_loss.backward(retain_variables=True)
    ```

    ## Use instead
    ```python
    d_loss.backward(retain_graph=True)
    ```

    ## Fix safety
    Safe: the old call always raises on a current torch, and `retain_graph`
    is the same flag under its new name (a second backward through the kept
    graph gives the same gradients). Only in files that import torch, and not
    on receivers known not to be tensors; a call that passes both names is
    reported without a fix.

    ## References
    - [`torch.Tensor.backward`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    - [PyTorch 0.4.0 release notes](https://github.com/pytorch/pytorch/releases/tag/v0.4.0)
    """

    code = "TFC412"
    name = "retain-variables"
    message = "`retain_variables=` was renamed `retain_graph=` in torch 0.4 and now raises"
    safety = Safety.SAFE
    triggers = (OLD,)
    needs = Needs.any_of(OLD + "=")
    valid = (
        "import torch\nloss.backward(retain_graph=True)\n",
        "import chainer\nloss.backward(retain_variables=True)\n",
    )
    invalid = (
        Example(
            "import torch\nx = torch.ones(2, requires_grad=True)\nloss = (x * x).sum()\n"
            "loss.backward(retain_variables=True)\n",
            "import torch\nx = torch.ones(2, requires_grad=True)\nloss = (x * x).sum()\n"
            "loss.backward(retain_graph=True)\n",
        ),
        Example(
            "import torch\ntorch.autograd.backward(loss, retain_variables=True)\n",
            "import torch\ntorch.autograd.backward(loss, retain_graph=True)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        old = keyword_arg(node, OLD)
        if old is None or not imports_torch(self.names):
            return
        func = node.func
        if self.qualified_name(func) in AUTOGRAD_BACKWARD:
            pass
        elif isinstance(func, cst.Attribute) and func.attr.value == "backward":
            if provenance(self.names, func.value).is_not_tensor:
                return
        else:
            return
        if keyword_arg(node, NEW) is not None:
            self.report(node, self.message + " (no fix: `retain_graph=` is passed too)")
            return
        new = old.with_changes(keyword=cst.Name(NEW))
        self.report(old, fix=Fix(Safety.SAFE, f"rename `{OLD}=` to `{NEW}=`", [(old, new)]))


RULES = [RetainVariables]
