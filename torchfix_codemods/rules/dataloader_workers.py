"""TFC410: a ``DataLoader`` without worker processes (a note, off by default)."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument
from torchfix_codemods.analysis.vocabulary.torch_classes import DATALOADER_CLASSES
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Rule


class DataLoaderWithoutWorkers(Rule):
    """## What it does
    Notes `DataLoader(...)` constructed without `num_workers`, or with a literal
    `num_workers=0`. Off by default, like TorchFix's TOR401, which reports both.
    An explicit `0` may be a decision (a dataset that cannot be pickled, a
    debugging run, a tiny in-memory dataset), so its note says so and asks the
    reader to confirm it rather than to change it. A `num_workers` that is not a
    literal is not reported: its value is not known here.

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

    ## References
    - [`torch.utils.data`: multi-process data loading](https://docs.pytorch.org/docs/stable/data.html)
    - [Performance tuning guide: asynchronous data loading](https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    """

    code = "TFC410"
    name = "dataloader-without-workers"
    message = "`DataLoader` without `num_workers`: batches load synchronously, between steps"
    explicit_zero_message = ("`DataLoader` with `num_workers=0`: batches load synchronously, "
                             "between steps; keep it only if that is deliberate (an unpicklable "
                             "dataset, debugging)")
    default_enabled = False
    triggers = ("DataLoader",)
    needs = Needs.any_of(fragments=("DataLoader",))
    valid = (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n",
        "from mylib import DataLoader\nloader = DataLoader(ds)\n",
        "import torch\nloader = torch.utils.data.DataLoader(ds, num_workers=n)\n",
    )
    invalid = (
        Example("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"),
        Example("import torch\nloader = torch.utils.data.DataLoader(ds, shuffle=True)\n"),
        Example("import torch\nloader = torch.utils.data.DataLoader(ds, num_workers=0)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) not in DATALOADER_CLASSES:
            return
        if any(arg.star == "**" for arg in node.args):
            return
        workers = argument(node, "num_workers", 5)
        if workers is None:
            self.report(node)
        elif isinstance(workers.value, cst.Integer) and workers.value.evaluated_value == 0:
            self.report(node, self.explicit_zero_message)


RULES = [DataLoaderWithoutWorkers]
