"""TFC408-TFC410: torchvision's legacy API, non-public torch aliases and TorchFix's hints.

The weights each torchvision model loaded with ``pretrained=True`` are data
(``rules/data/torchvision_weights.toml``), as are the non-public aliases
(``rules/data/replacements.toml``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.calls import argument, keyword_arg, positional_args
from torchfix_codemods.analysis.imports import ImportUnavailable
from torchfix_codemods.analysis.names import dotted_name
from torchfix_codemods.analysis.replacements import (
    as_keyword,
    is_none,
    literal_bool,
    load_data,
)
from torchfix_codemods.model import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.replacing import TableRule, is_load

MODELS = "torchvision.models"


def _weights() -> dict:
    return load_data("torchvision_weights.toml")


def model_key(qualified: str) -> str | None:
    """``torchvision.models.resnet.resnet18`` -> ``resnet18``; None outside torchvision.models."""
    if not qualified.startswith(MODELS + "."):
        return None
    name = qualified[len(MODELS) + 1:]
    for submodule in _weights()["submodules"]:
        if name.startswith(submodule + "."):
            return name[len(submodule) + 1:]
    return name


class TorchvisionPretrained(Rule):
    """## What it does
    Rewrites torchvision's deprecated `pretrained=` / `pretrained_backbone=`
    arguments to `weights=` / `weights_backbone=`: `True` becomes the weights
    enum member that `pretrained=True` loaded (`ResNet18_Weights.IMAGENET1K_V1`),
    `False` becomes `None`.

    ## Why is this bad?
    torchvision 0.13 deprecated the boolean arguments (a warning on every model
    construction) and they are slated for removal.

    ## Example
    ```python
    model = torchvision.models.resnet50(pretrained=True)
    ```

    ## Use instead
    ```python
    model = torchvision.models.resnet50(weights=torchvision.models.ResNet50_Weights.IMAGENET1K_V1)
    ```

    ## Fix safety
    Safe: the enum member is exactly the legacy weights. It is deliberately not
    `.DEFAULT`: for resnet50 and many others `DEFAULT` is a newer, different
    set of weights, which would change every prediction. A `pretrained=` value
    that is not a literal (`pretrained=args.pretrained`) is reported with the
    expression to write (`weights=... if args.pretrained else None`): it never
    crashes the rule, and the file's other findings are kept (TorchFix's rule
    crashed on it and lost every finding of the file). Models without legacy
    weights (`vit_h_14`, `regnet_y_128gf`) are reported only.
    """

    code = "TFC408"
    name = "torchvision-pretrained"
    message = "deprecated torchvision `pretrained=`: use `weights=`"
    safety = Safety.SAFE
    triggers = ("pretrained",)
    valid = (
        "import torchvision\nm = torchvision.models.resnet18(weights=None)\n",
        "import timm\nm = timm.create_model('resnet18', pretrained=True)\n",
    )
    invalid = (
        Example(
            "import torchvision\nm = torchvision.models.resnet18(pretrained=True)\n",
            "import torchvision\nm = torchvision.models.resnet18("
            "weights=torchvision.models.ResNet18_Weights.IMAGENET1K_V1)\n",
        ),
        Example(
            "from torchvision import models\nm = models.detection.fasterrcnn_resnet50_fpn("
            "pretrained=False, pretrained_backbone=True)\n",
            "from torchvision import models\nm = models.detection.fasterrcnn_resnet50_fpn("
            "weights=None, weights_backbone=models.ResNet50_Weights.IMAGENET1K_V1)\n",
        ),
        Example("import torchvision\nm = torchvision.models.resnet18(pretrained=args.pretrained)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        key = model_key(self.qualified_name(node.func) or "")
        if key is None or key not in _weights()["pretrained"]:
            return
        replacements: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        imports = []
        problems = []
        for old, new, table in (("pretrained", "weights", "pretrained"),
                                ("pretrained_backbone", "weights_backbone", "pretrained_backbone")):
            arg = keyword_arg(node, old)
            if arg is None and old == "pretrained":
                arg = argument(node, old, 0)
                if arg is not None and positional_args(node)[-1] is not arg:
                    problems.append("`pretrained` is passed by position before other arguments")
                    continue
            if arg is None:
                continue
            weights = _weights()[table].get(key)
            flag = literal_bool(arg.value)
            if flag is None and not is_none(arg.value):
                shown = f"{MODELS}.{weights}" if weights else "None"
                code = cst.Module([]).code_for_node(arg.value)
                problems.append(f"`{old}=` is not a literal: write `{new}={shown} if {code} else None`")
                continue
            if not flag:
                replacements.append((arg, as_keyword(arg, new, cst.Name("None"))))
                continue
            if not weights:
                problems.append(f"`{key}` had no pretrained weights")
                continue
            try:
                reference = self.context.imports.reference(f"{MODELS}.{weights}", node)
            except ImportUnavailable as error:
                problems.append(str(error))
                continue
            if reference.needs is not None:
                imports.append(reference.needs)
            replacements.append((arg, as_keyword(arg, new, reference.expression)))
        if not replacements and not problems:
            return
        if problems:
            self.report(node, f"{self.message}; no fix: {'; '.join(problems)}")
            return
        new_call = node.with_changes(args=[dict(replacements).get(a, a) for a in node.args])
        self.report(node, fix=Fix(Safety.SAFE, "pass the same weights as `weights=`",
                                  [(node, new_call)], imports=tuple(imports)))


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
      (also `datasets`, `transforms`).

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
    Safe for the collate aliases (the same functions) and the torchvision import
    form (the same module object). The precision hints are reports: the new
    result differs in its last bits, on purpose. `v2.ToTensor` is a report: use
    `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`.
    """

    code = "TFC409"
    name = "torch-internals-and-hints"
    message = "non-public torch alias or a numerically better torch function"
    safety = Safety.SAFE
    triggers = ("_utils", "log", "exp", "ToTensor", "torchvision")
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
        Example("import torchvision.models as models\n", "from torchvision import models\n"),
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
        if self.qualified_name(node) == "torchvision.transforms.v2.ToTensor" and is_load(self, node):
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
                fix = None
                if len(node.names) == 1:
                    new = cst.ImportFrom(module=cst.Name("torchvision"),
                                         names=[cst.ImportAlias(cst.Name(name))])
                    fix = Fix(Safety.SAFE, f"write `from torchvision import {name}`", [(node, new)])
                self.report(node, f"`import torchvision.{name} as {name}` is "
                            f"`from torchvision import {name}`", fix=fix)

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


DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


class DataLoaderWithoutWorkers(Rule):
    """## What it does
    Notes `DataLoader(...)` constructed without `num_workers` (or with
    `num_workers=0`). Off by default, like TorchFix's TOR401.

    ## Why is this bad?
    With no workers, batches are loaded in the training process, between
    steps: the GPU waits for every batch (the profiler's "synchronized
    DataLoader" pattern).

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    ```

    ## Fix safety
    Report only: the right number depends on the machine, and workers need a
    picklable dataset and an `if __name__ == "__main__":` guard on some
    platforms.
    """

    code = "TFC410"
    name = "dataloader-without-workers"
    message = "`DataLoader` without `num_workers`: batches load synchronously, between steps"
    default_enabled = False
    triggers = ("DataLoader",)
    valid = (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n",
        "from mylib import DataLoader\nloader = DataLoader(ds)\n",
    )
    invalid = (
        Example("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"),
        Example("import torch\nloader = torch.utils.data.DataLoader(ds, num_workers=0)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) not in DATALOADERS:
            return
        if any(arg.star == "**" for arg in node.args):
            return
        workers = argument(node, "num_workers", 5)
        if workers is None or (isinstance(workers.value, cst.Integer) and workers.value.value == "0"):
            self.report(node)


RULES = [TorchvisionPretrained, TorchInternalsAndHints, DataLoaderWithoutWorkers]
