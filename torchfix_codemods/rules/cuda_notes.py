"""TFC304-TFC305: notes on how code uses the GPU (off by default): a CUDA device hard-coded
with no CPU fallback, and the CUDA cache emptied on every training step."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.devices import cuda_device, has_cpu_fallback
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.optimizers import optimizer_of_step
from torchfix_codemods.prefilter import ANY_CODE, Needs
from torchfix_codemods.rules.base import Example, Rule

_DEVICE_KEYWORDS = frozenset({"device", "map_location"})


class HardCodedCuda(Rule):
    """## What it does
    Notes every place a file puts work on CUDA by name (`.cuda()`,
    `torch.device("cuda")`, `.to("cuda")`, `device="cuda:0"`,
    `map_location="cuda"`) when nothing in the file chooses a device: no
    `torch.cuda.is_available()` (or MPS/`torch.accelerator` query), no
    `"cuda" if ... else "cpu"`, no device or CUDA command-line option. Off
    by default. Not noted: code that runs only when CUDA was chosen (under
    `if self.use_cuda:` or `if device.type == "cuda":`), code whose job is
    CUDA (a `cuda()` method, a `CUDAAccelerator` class, `super().cuda()`),
    and comparisons with a CUDA device.

    ## Why is this bad?
    The script cannot run on a machine without an NVIDIA GPU (a laptop, CI,
    Apple silicon): the first such call raises `AssertionError: Torch not
    compiled with CUDA enabled` or `RuntimeError: No CUDA GPUs are available`.

    ## Example
    ```python
    model = Net().cuda()
    x = x.to("cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    x = x.to(device)
    ```

    ## Fix safety
    Report only: where the device should be chosen (once, at the top; from a
    flag; per rank) is the author's decision. Measured on torch 2.13's CPU
    build: `torch.zeros(1).cuda()` raises `AssertionError: Torch not compiled
    with CUDA enabled`. A file with any fallback is not reported at all, and
    `torch.cuda.*` calls themselves are not counted (they are CUDA API use,
    not a device choice).

    ## References
    - [CUDA semantics: device-agnostic code](https://docs.pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    - [`torch.cuda.is_available`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.is_available.html)
    """

    code = "TFC304"
    name = "hard-coded-cuda"
    message = ("hard-coded CUDA device and no CPU fallback in this file: it fails on a machine "
               "without a GPU; choose the device with `torch.cuda.is_available()`")
    default_enabled = False
    triggers = ("cuda",)
    needs = ANY_CODE  # a string literal ("cuda") decides, which the words do not hold
    valid = (
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.zeros(3).to(device)\n",
        "import torch\nif torch.cuda.is_available():\n    x = torch.zeros(3).cuda()\n",
        "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device', default='cuda')\nargs = parser.parse_args()\n"
        "x = torch.zeros(3).to(args.device)\n",
    )
    invalid = (
        Example("import torch\nx = torch.zeros(3).cuda()\n"),
        Example("import torch\nx = torch.zeros(3, device='cuda:0')\n"
                "state = torch.load('m.pt', map_location='cuda')\n"),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._sites: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.qualified_name(func)
        if qualified is None and isinstance(func, cst.Attribute):
            if func.attr.value == "cuda":
                self._sites.append(node)
            elif func.attr.value == "to" and node.args and node.args[0].keyword is None and \
                    _names_cuda_literally(self, node.args[0].value):
                self._sites.append(node)
        elif qualified == "torch.device" and node.args and node.args[0].keyword is None and \
                _names_cuda_literally(self, node.args[0].value):
            self._sites.append(node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value in _DEVICE_KEYWORDS and \
                _names_cuda_literally(self, node.value):
            self._sites.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._sites or not imports_torch(self.names) or has_cpu_fallback(self.names):
            return
        for site in self._sites:
            if not _chosen_or_cuda_specific(self, site):
                self.report(site)


_DEVICE_WORDS = ("cuda", "gpu", "device", "accelerat")


def _chosen_or_cuda_specific(rule: Rule, site: cst.CSTNode) -> bool:
    """The site runs only when the code chose CUDA (under ``if self.use_cuda:``, ``if
    device.type == "cuda":``), is code whose job is CUDA (a ``cuda`` method, a
    ``CUDAAccelerator`` class, ``super().cuda()``), or only compares with a CUDA device
    (``x.device == torch.device("cuda")``, ``torch.device("cuda").type``)."""
    parent = rule.names.parent(site)
    if isinstance(parent, cst.Comparison) or (isinstance(parent, cst.Attribute) and
                                              parent.attr.value == "type"):
        return True
    if isinstance(site, cst.Call) and isinstance(site.func, cst.Attribute) and \
            isinstance(site.func.value, cst.Call) and code_of(site.func.value) == "super()":
        return True
    child: cst.CSTNode = site
    for ancestor in rule.names.ancestors(site):
        if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and child is not ancestor.test \
                and any(word in code_of(ancestor.test).lower() for word in _DEVICE_WORDS):
            return True
        if isinstance(ancestor, cst.Comparison):
            return True
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and \
                any(word in ancestor.name.value.lower() for word in ("cuda", "gpu")):
            return True
        child = ancestor
    return False


def _names_cuda_literally(rule: Rule, expr: cst.BaseExpression) -> bool:
    """A string literal (or f-string) naming a CUDA device, written right there."""
    return isinstance(expr, (cst.SimpleString, cst.FormattedString)) and \
        cuda_device(rule.names, expr) is not None


class EmptyCacheInLoop(Rule):
    """## What it does
    Notes `torch.cuda.empty_cache()` called unconditionally in the loop that
    runs the training steps (the loop whose own iterations call `backward()`
    or an optimizer's `step()`). Off by default.

    ## Why is this bad?
    `empty_cache()` returns the caching allocator's free blocks to the
    driver; the next step then allocates them again with `cudaMalloc`, which
    synchronises the device and is far slower than reusing cached blocks.
    It does not make more memory available to PyTorch itself (torch's own
    docstring: "doesn't increase the amount of GPU memory available for
    PyTorch"), and it does not fix a leak: references kept alive are what
    hold memory.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    Report only: another process sharing the GPU may be why it is there.
    Calls once per epoch (in an outer loop), under a condition
    (`if step % 1000 == 0:`), or outside any training loop are not noted.
    Read in torch 2.13's `torch/cuda/memory.py`: `empty_cache()` only acts
    when CUDA is initialised and calls `torch._C._cuda_emptyCache()`.

    ## References
    - [CUDA semantics: memory management](https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - [`torch.cuda.empty_cache`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    """

    code = "TFC305"
    name = "empty-cache-in-loop"
    message = ("`torch.cuda.empty_cache()` on every training step slows each step down and frees "
               "no memory for PyTorch: remove it, or call it outside the loop")
    default_enabled = False
    triggers = ("empty_cache",)
    needs = Needs.any_of(fragments=("empty_cache",))
    valid = (
        "import torch\nfor epoch in range(3):\n    for x in data:\n        loss(x).backward()\n"
        "        opt.step()\n    torch.cuda.empty_cache()\n",
        "import torch\nfor i, x in enumerate(data):\n    loss(x).backward()\n    opt.step()\n"
        "    if i % 100 == 0:\n        torch.cuda.empty_cache()\n",
        "import torch\nfor path in files:\n    run(path)\n    torch.cuda.empty_cache()\n",
    )
    invalid = (
        Example("import torch\nfor x in data:\n    loss(x).backward()\n    opt.step()\n"
                "    torch.cuda.empty_cache()\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != "torch.cuda.empty_cache":
            return
        loop = innermost_loop(self.names, node)
        if loop is None or _conditional_in(self, node, loop):
            return
        if _steps_each_iteration(self, loop):
            self.report(node)


def _conditional_in(rule: Rule, node: cst.CSTNode, loop: cst.For | cst.While) -> bool:
    for ancestor in rule.names.ancestors(node):
        if ancestor is loop:
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            return True
    return False


def _steps_each_iteration(rule: Rule, loop: cst.For | cst.While) -> bool:
    """The loop's own iterations (not a nested loop's) call ``backward()`` or ``step()``."""
    for node in walk_local(loop.body):
        if not isinstance(node, cst.Call) or innermost_loop(rule.names, node) is not loop:
            continue
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "backward") or \
                optimizer_of_step(rule.names, node) is not None:
            return True
    return False


RULES = [HardCodedCuda, EmptyCacheInLoop]
