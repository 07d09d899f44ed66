"""TFC408: torchvision's deprecated ``pretrained=`` arguments, rewritten to the exact weights.

The weights each model loaded with ``pretrained=True`` are data
(``rules/data/torchvision_weights.toml``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, keyword_arg, positional_args
from torchfix_codemods.analysis.core.syntax import code_of, is_none, literal_bool
from torchfix_codemods.edits.arguments import as_keyword
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.tables import load_data

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

    ## References
    - [torchvision models and pre-trained weights](https://docs.pytorch.org/vision/stable/models.html)
    """

    code = "TFC408"
    name = "torchvision-pretrained"
    message = "deprecated torchvision `pretrained=`: use `weights=`"
    safety = Safety.SAFE
    triggers = ("pretrained",)

    @classmethod
    def file_needs(cls) -> Needs:
        """A model builder of the table is named (an attribute or an import) where it is called."""
        return Needs.any_of(*{key.rsplit(".", 1)[-1] for key in _weights()["pretrained"]})
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
                code = code_of(arg.value)
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


RULES = [TorchvisionPretrained]
