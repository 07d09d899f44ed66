"""TFC409: the rest of TorchFix's released rules: non-public torch aliases and precision hints.

The non-public aliases are the TFC409 rows of ``rules/data/replacements.toml``.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix
from torchfix_codemods.rules.table_rule import TableRule


class TorchInternalsAndHints(TableRule):
    """## What it does
    The rest of TorchFix's released rules:
    - the non-public `torch.utils.data._utils.collate.default_collate` /
      `default_convert` (call and import forms) -> the public
      `torch.utils.data.dataloader.default_collate` / `default_convert`;
    - `torch.log(1 + x)` -> `torch.log1p(x)` and `torch.exp(x) - 1` ->
      `torch.expm1(x)` (hints);
    - torchvision's deprecated `transforms.v2.ToTensor`;
    - `import torchvision.models as models` -> `from torchvision import models`
      (TorchFix's TOR203; its `datasets` and `transforms` forms are reported
      without a fix).

    ## Why is this bad?
    Private modules move without notice. `log(1 + x)` and `exp(x) - 1` lose all
    precision for small `x` (`torch.log(1 + torch.tensor(1e-8))` is 0).
    `v2.ToTensor` is deprecated. The `import a.b as b` form is the longer way
    to say `from a import b`.

    ## Example
    ```python
    from torch.utils.data._utils.collate import default_collate
    y = torch.log(1 + x)
    ```

    ## Use instead
    ```python
    from torch.utils.data.dataloader import default_collate
    y = torch.log1p(x)
    ```

    ## Fix safety
    Safe for the collate aliases (the same functions) and the torchvision
    `models` import form (the same module object). The precision hints are
    reports: the new result differs in its last bits, on purpose. `v2.ToTensor`
    is a report: use
    `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`.
    `import torchvision.transforms as transforms` and its `datasets` twin are
    reported (TorchFix 0.7.0 flags all three forms: measured) and never
    rewritten: the rewrite changes nothing, and on real repositories
    (pytorch/examples, timm) reviewers rejected it as noise. So is a `models`
    import that the file never reads (bamos/densenet.pytorch): reported, not
    rewritten.

    ## References
    - [`torch.log1p`](https://docs.pytorch.org/docs/stable/generated/torch.log1p.html)
    - [`torch.expm1`](https://docs.pytorch.org/docs/stable/generated/torch.expm1.html)
    - [`torch.utils.data.default_collate`](https://docs.pytorch.org/docs/stable/data.html)
    - [torchvision `transforms.v2.ToTensor` (deprecated)](https://docs.pytorch.org/vision/stable/generated/torchvision.transforms.v2.ToTensor.html)
    - [TorchFix (TOR104-TOR107, TOR202, TOR203)](https://github.com/pytorch-labs/torchfix)
    """

    code = "TFC409"
    name = "torch-internals-and-hints"
    message = "non-public torch alias or a numerically better torch function"
    safety = Safety.SAFE
    triggers = ("_utils", "log", "exp", "ToTensor", "torchvision")
    needs = Needs.any_of("log", "exp", "ToTensor", "import:torchvision.datasets",
                         "import:torchvision.models", "import:torchvision.transforms")
    """Besides the table's private names: `torch.log`/`torch.exp` calls, `ToTensor`, and the
    `import torchvision.<name> as <name>` statements."""
    valid = (
        "from torch.utils.data.dataloader import default_collate\n",
        "import torch\ny = torch.log1p(x)\n",
        "import math\ny = math.log(1 + x)\n",
        "from torchvision import models\n",
    )
    invalid = (
        Example(
            "from torch.utils.data._utils.collate import default_collate\nb = default_collate(xs)\n",
            "from torch.utils.data.dataloader import default_collate\nb = default_collate(xs)\n",
        ),
        Example(
            "import torch\nb = torch.utils.data._utils.collate.default_convert(xs)\n",
            "import torch\nb = torch.utils.data.dataloader.default_convert(xs)\n",
        ),
        Example("import torch\ny = torch.log(1 + x)\n"),
        Example("import torch\ny = torch.exp(x) - 1\n"),
        Example("from torchvision.transforms import v2\nt = v2.ToTensor()\n"),
        Example("import torchvision.models as models\nnet = models.resnet18()\n",
                "from torchvision import models\nnet = models.resnet18()\n"),
        Example("import torchvision.models as models\n"),
        Example("import torchvision.transforms as transforms\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        if self.qualified_name(node.func) != "torch.log" or len(node.args) != 1:
            return
        value = node.args[0].value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and (
                _is_one(value.left) or _is_one(value.right)):
            self.report(node, "`torch.log(1 + x)` loses precision for small `x`: use "
                        "`torch.log1p(x)`")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if (isinstance(node.operator, cst.Subtract) and _is_one(node.right)
                and isinstance(node.left, cst.Call)
                and self.qualified_name(node.left.func) == "torch.exp"):
            self.report(node, "`torch.exp(x) - 1` loses precision for small `x`: use "
                        "`torch.expm1(x)`")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        super().visit_Attribute(node)
        self._to_tensor(node)

    def visit_Name(self, node: cst.Name) -> None:
        super().visit_Name(node)
        if self.qualified_name(node) == "torchvision.transforms.v2.ToTensor" and self.names.is_read(node):
            self._to_tensor(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        super().visit_ImportFrom(node)
        module = dotted_name(node.module) if node.module is not None else None
        if module == "torchvision.transforms.v2" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if dotted_name(alias.name) == "ToTensor":
                    self.report(alias, TO_TENSOR)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            module, _, name = full.rpartition(".")
            if (module == "torchvision" and name in ("datasets", "models", "transforms")
                    and alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                    and alias.asname.name.value == name):
                message = (f"`import torchvision.{name} as {name}` is "
                           f"`from torchvision import {name}`")
                if name != "models" or not self.names.loads_in(self.names.scope_of(node), name):
                    # `datasets`/`transforms`, or a `models` the file never reads: rewriting an
                    # import nothing uses is churn a reviewer rejects
                    self.report(node, message + " (style only, no fix: the same module)",
                                note=True)
                    continue
                fix = None
                if len(node.names) == 1:
                    new = cst.ImportFrom(module=cst.Name("torchvision"),
                                         names=[cst.ImportAlias(cst.Name(name))])
                    fix = Fix(Safety.SAFE, f"write `from torchvision import {name}`", [(node, new)])
                self.report(node, message, fix=fix)

    def _to_tensor(self, node: cst.Name | cst.Attribute) -> None:
        parent = self.names.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if self.qualified_name(node) == "torchvision.transforms.v2.ToTensor":
            self.report(node, TO_TENSOR)


TO_TENSOR = ("`transforms.v2.ToTensor` is deprecated: use "
             "`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`")


def _is_one(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return node.value == "1"
    if isinstance(node, cst.Float):
        return node.value in ("1.0", "1.")
    return False


RULES = [TorchInternalsAndHints]
