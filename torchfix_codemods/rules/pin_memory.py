"""TFC306: a DataLoader feeding a CUDA training loop without ``pin_memory`` (a note, off by
default)."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, has_star_kwargs
from torchfix_codemods.analysis.core.loops import loops_over
from torchfix_codemods.analysis.core.syntax import literal_bool
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.dataloaders import is_dataloader
from torchfix_codemods.analysis.facts.devices import cuda_work, uses_cuda
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Rule

_MOVES = frozenset({"to", "cuda"})


class PinMemoryMissing(Rule):
    """## What it does
    Notes a `DataLoader` built without `pin_memory=True` whose batches a
    training loop (a loop that calls `backward()`) moves to the GPU with
    `.to(...)`/`.cuda()`, in a file that uses CUDA. The loop may iterate the
    loader directly or in a function of this file it is handed to. Off by
    default.

    ## Why is this bad?
    A batch in ordinary (pageable) memory is first copied by the driver into
    a pinned staging buffer, then to the GPU, and `non_blocking=True` cannot
    overlap that copy with compute. With `pin_memory=True` the loader's pin
    thread puts each batch in page-locked memory, so the transfer is one DMA
    and can run asynchronously.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    Report only: pinned memory is a limited resource on the host, and on a
    machine without an accelerator `pin_memory=True` only warns ("'pin_memory'
    argument is set as true but no accelerator is found") and is ignored
    (read in torch 2.13's `torch/utils/data/dataloader.py`; the default is
    `False`). Not noted when `pin_memory` is passed at all (a flag decides),
    when arguments come through `**kwargs`, for evaluation loops (no
    `backward()`), or when the file shows no CUDA use.

    ## References
    - [`torch.utils.data`: memory pinning](https://docs.pytorch.org/docs/stable/data.html#memory-pinning)
    - [CUDA semantics: use pinned memory buffers](https://docs.pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers)
    - [Performance tuning guide](https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    """

    code = "TFC306"
    name = "pin-memory-missing"
    message = ("`DataLoader` feeding a CUDA training loop without `pin_memory=True`: each batch is "
               "copied through pageable memory")
    default_enabled = False
    triggers = ("DataLoader",)
    needs = Needs.any_of(fragments=("DataLoader",))
    valid = (
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, "
        "pin_memory=True)\nfor x in loader:\n    model(x.cuda()).sum().backward()\n",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "for x in loader:\n    model(x).sum().backward()\n",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "with torch.no_grad():\n    for x in loader:\n        print(model(x.cuda()))\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, "
            "num_workers=2)\nfor x in loader:\n    model(x.cuda()).sum().backward()\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.names, node) or has_star_kwargs(node):
            return
        pinned = argument(node, "pin_memory", 7)
        if pinned is not None and literal_bool(pinned.value) is not False:
            return
        target = assigned_name(self.names, node)
        if target is None or not imports_torch(self.names):
            return
        if any(_trains_on_cuda(self, loop) for loop in loops_over(self.names, target)):
            self.report(node)


def _trains_on_cuda(rule: Rule, loop: cst.For) -> bool:
    """The loop calls ``backward()`` and moves something to CUDA (``.cuda()``, or ``.to(...)``
    in a file that names a CUDA device)."""
    backward = moves = False
    for node in walk_local(loop.body):
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        method = node.func.attr.value
        backward = backward or method == "backward"
        if method in _MOVES and rule.qualified_name(node.func) is None:
            moves = moves or cuda_work(rule.names, node) is not None or uses_cuda(rule.names)
    return backward and moves


RULES = [PinMemoryMissing]
