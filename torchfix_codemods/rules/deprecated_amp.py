"""TFC401: ``torch.cuda.amp`` / ``torch.cpu.amp`` -> ``torch.amp`` with an explicit device.

The mapping (names, parameters, first release) is the TFC401 rows of
``rules/data/replacements.toml``; this module only adds the bare-decorator form
of ``custom_fwd``/``custom_bwd``.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.edits.arguments import keyword
from torchfix_codemods.edits.expressions import parse_expression
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example
from torchfix_codemods.rules.table_rule import TableRule


class CudaAmp(TableRule):
    """## What it does
    Rewrites `torch.cuda.amp.autocast(...)`, `torch.cpu.amp.autocast(...)`,
    `torch.cuda.amp.GradScaler(...)`, `torch.cpu.amp.GradScaler(...)` and
    `torch.cuda.amp.custom_fwd`/`custom_bwd` to the device-generic
    `torch.amp` API, in every spelling: attribute calls, aliases
    (`import torch as T`), and `from torch.cuda.amp import autocast`.

    ## Why is this bad?
    The per-device classes are deprecated and warn on every construction
    (`FutureWarning: torch.cuda.amp.autocast(args...) is deprecated. Please use
    torch.amp.autocast('cuda', args...) instead.`). The new API takes the device
    as its first argument, so a naive rename either fails (no device) or, with
    positional arguments, shifts them: `torch.cuda.amp.autocast(False)` renamed
    to `torch.amp.autocast(False)` passes `False` as the device type, and
    `GradScaler(2.0**16)` would get a float as its device.

    ## Example
    ```python
    from torch.cuda.amp import autocast, GradScaler
    scaler = GradScaler(2.0**16)
    with autocast(True, torch.bfloat16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**16)
    with torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Fix safety
    Safe: positional arguments are mapped by name (`enabled`, `dtype`,
    `cache_enabled`; `init_scale`, `growth_factor`, ...), and the defaults are
    the same (`torch.amp.autocast("cuda")` uses float16 and `"cpu"` bfloat16,
    the per-device defaults; only a process that changed the default with
    `torch.set_autocast_dtype` sees a difference, because the old classes
    pinned theirs). The new name is written in the file's own alias;
    `import torch` is added only when the file has no `torch` name, and a
    `from torch.cuda.amp import ...` left unused is removed. Report only with
    `*args`/`**kwargs` or a non-call use (`ctx = torch.cuda.amp.autocast`).
    `torch.amp.autocast` is used from torch 2.0, `torch.amp.GradScaler` 2.3 and
    `torch.amp.custom_fwd` 2.4: with an older `--target-torch` those fixes are
    withheld.

    ## References
    - [Automatic mixed precision (`torch.amp`)](https://docs.pytorch.org/docs/stable/amp.html)
    """

    code = "TFC401"
    name = "cuda-amp"
    message = "deprecated `torch.cuda.amp`/`torch.cpu.amp` API: use `torch.amp` with a device"
    safety = Safety.SAFE
    triggers = ("amp",)
    needs = Needs.any_of("amp")  # `torch.cuda.amp` as an attribute or in an import
    report_imports = False
    valid = (
        "import torch\nwith torch.amp.autocast('cuda'):\n    pass\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n",
        "from apex import amp\nmodel = amp.initialize(model)\n",
    )
    invalid = (
        Example(
            "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
            "import torch\nwith torch.amp.autocast(\"cuda\"):\n    pass\n",
        ),
        Example(
            "import torch\nwith torch.cuda.amp.autocast(False, torch.bfloat16):\n    pass\n",
            "import torch\nwith torch.amp.autocast(\"cuda\", enabled=False, dtype=torch.bfloat16):\n"
            "    pass\n",
        ),
        Example(
            "import torch\nscaler = torch.cuda.amp.GradScaler(2.0**16, enabled=True)\n",
            "import torch\nscaler = torch.amp.GradScaler(\"cuda\", init_scale=2.0**16, enabled=True)\n",
        ),
        Example(
            "import torch\nfrom torch.cuda.amp import autocast\nwith autocast(dtype=torch.float16):\n"
            "    pass\n",
            "import torch\nwith torch.amp.autocast(\"cuda\", dtype=torch.float16):\n    pass\n",
        ),
        Example(
            "import torch\nwith torch.cpu.amp.autocast():\n    pass\n",
            "import torch\nwith torch.amp.autocast(\"cpu\"):\n    pass\n",
        ),
        Example("import torch\nctx = torch.cuda.amp.autocast\n"),
        Example("import torch\nwith torch.cuda.amp.autocast(**options):\n    pass\n"),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not self._bare_decorator(node):
            super().visit_Attribute(node)

    def visit_Name(self, node: cst.Name) -> None:
        if not self._bare_decorator(node):
            super().visit_Name(node)

    def _bare_decorator(self, node: cst.Name | cst.Attribute) -> bool:
        """``@torch.cuda.amp.custom_fwd`` -> ``@torch.amp.custom_fwd(device_type="cuda")``."""
        parent = self.names.parent(node)
        if not (isinstance(parent, cst.Decorator) and parent.decorator is node):
            return False
        spec = self.table().get(self.qualified_name(node) or "")
        if spec is None or spec.new is None or "device_type" not in spec.mapping.constants:
            return False
        try:
            reference = self.context.imports.reference(spec.new, node)
        except ImportUnavailable as error:
            self.report(node, f"{spec.note}; no fix: {error}")
            return True
        new = cst.Call(reference.expression, args=[
            keyword(name, parse_expression(text)) for name, text in spec.mapping.constants.items()])
        self.report(node, spec.note, fix=self._fix(spec, node, new, reference.needs, node))
        return True


RULES = [CudaAmp]
