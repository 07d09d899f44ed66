"""TFC405: the hook-based ``torch.nn.utils.weight_norm``, deprecated for its parametrization.

The mapping is the TFC405 rows of ``rules/data/replacements.toml``.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix
from torchfix_codemods.rules.table_rule import TableRule
from torchfix_codemods.rules.tables import Replacement


class WeightNorm(TableRule):
    """## What it does
    Rewrites `torch.nn.utils.weight_norm(module)` to
    `torch.nn.utils.parametrizations.weight_norm(module)`.

    ## Why is this bad?
    The hook-based `weight_norm` is deprecated (FutureWarning) in favour of the
    parametrization, which works with `deepcopy`, `torch.compile` and
    `state_dict` round trips.

    ## Example
    ```python
    conv = torch.nn.utils.weight_norm(nn.Conv1d(4, 4, 3))
    ```

    ## Use instead
    ```python
    conv = torch.nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3))
    ```

    ## Fix safety
    Unsafe: the forward values are the same, but the parameters are renamed
    (`weight_g`/`weight_v` become `parametrizations.weight.original0`/
    `original1`), so checkpoints saved before no longer load with
    `load_state_dict(strict=True)`, and optimizers built from names change.
    Report only when the file calls `remove_weight_norm` or reads
    `weight_g`/`weight_v`, which the parametrization does not have (use
    `torch.nn.utils.parametrize.remove_parametrizations`), and when the program
    pickles a whole module (`torch.save(model, path)`): on torch 2.13 a module
    holding a parametrized weight norm raises `RuntimeError: Serialization of
    parametrized modules is only supported through state_dict()` from
    `torch.save` and `pickle.dumps`, where the hook-based one saves.

    ## References
    - [`torch.nn.utils.parametrizations.weight_norm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.parametrizations.weight_norm.html)
    - [`torch.nn.utils.weight_norm` (deprecated)](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.weight_norm.html)
    """

    code = "TFC405"
    name = "weight-norm"
    message = "deprecated `torch.nn.utils.weight_norm`: use `parametrizations.weight_norm`"
    safety = Safety.UNSAFE
    min_torch = (2, 1)
    triggers = ("weight_norm",)
    project_facts = ("module-classes", "checkpoints")
    needs = Needs.any_of(fragments=("weight_norm",))
    valid = (
        "import torch\nm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(2, 2))\n",
        "from mylib import weight_norm\nm = weight_norm(layer)\n",
    )
    invalid = (
        Example(
            "import torch\nm = torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))\n",
            "import torch\nm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(2, 2))\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch.nn.utils import weight_norm\nm = weight_norm(torch.nn.Linear(2, 2))\n",
            "import torch\nfrom torch.nn.utils.parametrizations import weight_norm\n"
            "m = weight_norm(torch.nn.Linear(2, 2))\n",
            unsafe=True,
        ),
        Example(
            "import torch\nm = torch.nn.utils.weight_norm(layer)\ntorch.nn.utils.remove_weight_norm(m)\n"),
    )

    def _old_names_used(self) -> bool:
        source = self.context.source
        return any(word in source for word in ("remove_weight_norm", "weight_g", "weight_v"))

    def _pickled_by(self) -> tuple[str, ...]:
        """Files of the program that ``torch.save`` a whole module: a parametrized module
        cannot be pickled (RuntimeError), the hook-based one can."""
        return self.context.project.module_saves()

    def check_call(self, call: cst.Call, spec: Replacement) -> None:
        if self._old_names_used():
            self.report(call, f"{spec.note}; no fix: this file uses `remove_weight_norm` or "
                        "`weight_g`/`weight_v`, which the parametrization renames")
            return
        pickled = self._pickled_by()
        if pickled:
            self.report(call, f"{spec.note}; no fix: {pickled[0]} saves a whole module with "
                        "`torch.save`, which a parametrized module refuses (save its "
                        "`state_dict()` instead, then switch)")
            return
        super().check_call(call, spec)

    def _import_fix(self, node: cst.ImportFrom, module: str) -> Fix | None:
        if self._old_names_used() or self._pickled_by():
            return None
        return super()._import_fix(node, module)


RULES = [WeightNorm]
