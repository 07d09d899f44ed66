"""TFC402: deprecated ``torch.nn.functional`` aliases (``F.sigmoid``, ``F.tanh``, ``F.upsample``).

The mapping is the TFC402 rows of ``rules/data/replacements.toml``.
"""

from __future__ import annotations

from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Example
from torchfix_codemods.rules.table_rule import TableRule


class FunctionalAliases(TableRule):
    """## What it does
    Rewrites the deprecated `torch.nn.functional` aliases: `F.sigmoid` and
    `F.tanh` to `torch.sigmoid` and `torch.tanh`; `F.upsample`,
    `F.upsample_nearest` and `F.upsample_bilinear` to `F.interpolate` with the
    mode they stood for.

    ## Why is this bad?
    Each call warns (`nn.functional.sigmoid is deprecated. Use torch.sigmoid
    instead.`), and the aliases are slated for removal.

    ## Example
    ```python
    y = F.sigmoid(x)
    z = F.upsample_bilinear(img, scale_factor=2)
    ```

    ## Use instead
    ```python
    y = torch.sigmoid(x)
    z = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=True)
    ```

    ## Fix safety
    Safe: the aliases call exactly these functions (measured bitwise equal on
    torch 2.13). `torch` is named in the file's own alias and imported when the
    file has no `torch` name (`import torch.nn.functional as F` alone).

    ## References
    - [`torch.nn.functional`](https://docs.pytorch.org/docs/stable/nn.functional.html)
    - [`torch.nn.functional.interpolate`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html)
    """

    code = "TFC402"
    name = "functional-aliases"
    message = "deprecated `torch.nn.functional` alias"
    safety = Safety.SAFE
    triggers = ("sigmoid", "tanh", "upsample")
    report_imports = False
    valid = (
        "import torch\ny = torch.sigmoid(x)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "import numpy as np\ny = np.tanh(x)\n",
        "import torch.nn.functional as F\nF.tanh = my_tanh\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\ny = F.sigmoid(x) + F.tanh(x)\n",
            "import torch\nimport torch.nn.functional as F\ny = torch.sigmoid(x) + torch.tanh(x)\n",
        ),
        Example(
            "import torch\nfrom torch.nn import functional as F\ny = F.upsample(x, None, 2)\n",
            "import torch\nfrom torch.nn import functional as F\ny = F.interpolate(x, None, 2)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\ny = F.upsample_bilinear(x, scale_factor=2)\n",
            "import torch\nimport torch.nn.functional as F\n"
            "y = F.interpolate(x, scale_factor=2, mode=\"bilinear\", align_corners=True)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\nact = F.tanh\n",
            "import torch\nimport torch.nn.functional as F\nact = torch.tanh\n",
        ),
    )


RULES = [FunctionalAliases]
