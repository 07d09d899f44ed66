"""TFC407: ``require_grad``, a typo for ``requires_grad`` that silently does nothing."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class RequiresGradTypo(Rule):
    """## What it does
    Finds the misspelling `require_grad` (for `requires_grad`): assigned
    (`p.require_grad = False`), called (`x.require_grad_()`) or passed to a
    torch factory (`torch.zeros(3, require_grad=True)`).

    ## Why is this bad?
    Assigning `require_grad` creates a new attribute and does nothing else: the
    parameter you meant to freeze keeps training, or the tensor you meant to
    differentiate gets no gradient, silently. The call and keyword forms raise
    (`AttributeError`, `TypeError: zeros() got an unexpected keyword argument
    'require_grad'`).

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Use instead
    ```python
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    The keyword form in a `torch.*` call is safe (a `TypeError` becomes the
    intended tensor). The attribute forms are unsafe: the fix does what the
    code meant, which changes what trains, and the receiver is not proven to
    be a tensor (an object of your own may define `require_grad`).

    ## References
    - [`torch.Tensor.requires_grad_`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.requires_grad_.html)
    - [Autograd mechanics: setting `requires_grad`](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TFC407"
    name = "requires-grad-typo"
    message = "`require_grad` is a typo for `requires_grad`: as written it does nothing"
    safety = Safety.UNSAFE
    triggers = ("require_grad",)
    needs = Needs.any_of("require_grad", "require_grad_", "require_grad=")
    uses_torch_names = False
    valid = (
        "import torch\nx = torch.zeros(3, requires_grad=True)\n",
        "import torch\nx.requires_grad = False\n",
        "import torch\nflag = cfg.require_grad\n",
    )
    invalid = (
        Example(
            "import torch\nfor p in model.parameters():\n    p.require_grad = False\n",
            "import torch\nfor p in model.parameters():\n    p.requires_grad = False\n",
            unsafe=True,
        ),
        Example(
            "import torch\nx = torch.zeros(3, require_grad=True)\n",
            "import torch\nx = torch.zeros(3, requires_grad=True)\n",
        ),
        Example(
            "import torch\nx = torch.ones(2)\nx.require_grad_()\n",
            "import torch\nx = torch.ones(2)\nx.requires_grad_()\n",
            unsafe=True,
        ),
    )

    def _attribute(self, target: cst.BaseExpression, safety: Safety) -> None:
        # Like TorchFix, only in files that mention torch: elsewhere `require_grad`
        # may be a field of the user's own objects.
        if "torch" not in self.context.source:
            return
        if isinstance(target, cst.Attribute) and target.attr.value in ("require_grad", "require_grad_"):
            new = target.with_changes(attr=cst.Name(target.attr.value.replace("require", "requires")))
            self.report(target, fix=Fix(safety, "spell it `requires_grad`", [(target, new)]))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._attribute(target.target, Safety.UNSAFE)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._attribute(node.target, Safety.UNSAFE)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._attribute(node.target, Safety.UNSAFE)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "require_grad_":
            self._attribute(func, Safety.UNSAFE)
            return
        typo = keyword_arg(node, "require_grad")
        if typo is None:
            return
        qualified = self.qualified_name(func) or ""
        if not qualified.startswith("torch.") or keyword_arg(node, "requires_grad") is not None:
            self.report(node)
            return
        new = typo.with_changes(keyword=cst.Name("requires_grad"))
        self.report(node, fix=Fix(Safety.SAFE, "spell it `requires_grad`", [(typo, new)]))


RULES = [RequiresGradTypo]
