"""TFC402: deprecated ``torch.nn.functional`` aliases (``F.upsample`` and its two siblings).

The mapping is the TFC402 rows of ``rules/data/replacements.toml``.
"""

from __future__ import annotations

from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Example
from torchfix_codemods.rules.table_rule import TableRule


class FunctionalAliases(TableRule):
    """## What it does
    Rewrites the deprecated `torch.nn.functional` upsampling aliases to
    `F.interpolate` with the mode they stood for: `F.upsample`,
    `F.upsample_nearest` and `F.upsample_bilinear`.

    ## Why is this bad?
    Each call warns (`nn.functional.upsample is deprecated. Use
    nn.functional.interpolate instead.`, measured on torch 2.13), and the
    aliases are slated for removal.

    `F.sigmoid` and `F.tanh` are left alone: older torch documentation called
    them deprecated, but on torch 2.13 they neither warn nor differ from
    `torch.sigmoid`/`torch.tanh` (bitwise), and their docstrings no longer say
    so.

    ## Example
    ```python
    z = F.upsample_bilinear(img, scale_factor=2)
    ```

    ## Use instead
    ```python
    z = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=True)
    ```

    ## Fix safety
    Safe: the aliases call exactly these functions (measured bitwise equal on
    torch 2.13). `upsample_bilinear` is `interpolate(..., mode="bilinear",
    align_corners=True)`, which differs from `interpolate`'s default
    `align_corners=False`, so the argument is written out.

    ## References
    - [`torch.nn.functional`](https://docs.pytorch.org/docs/stable/nn.functional.html)
    - [`torch.nn.functional.interpolate`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html)
    """

    code = "TFC402"
    name = "functional-aliases"
    message = "deprecated `torch.nn.functional` alias"
    safety = Safety.SAFE
    triggers = ("upsample",)
    report_imports = False
    valid = (
        "import torch\ny = torch.sigmoid(x)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "import numpy as np\ny = np.tanh(x)\n",
        "import torch.nn.functional as F\nF.tanh = my_tanh\n",
        "import torch\nimport torch.nn.functional as F\ny = F.sigmoid(x) + F.tanh(x)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.nn import functional as F\ny = F.upsample(x, None, 2)\n",
            "import torch\nfrom torch.nn import functional as F\ny = F.interpolate(x, None, 2)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\ny = F.upsample_bilinear(x, scale_factor=2)\n",
            "import torch\nimport torch.nn.functional as F\n"
            "y = F.interpolate(x, scale_factor=2, mode=\"bilinear\", align_corners=True)\n",
        ),
    )


RULES = [FunctionalAliases]
