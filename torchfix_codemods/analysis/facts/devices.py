"""Devices: which expressions name a CUDA device, which calls do CUDA work, and whether a file
falls back to the CPU when there is no GPU.

Evidence only: ``"cuda"``/``"cuda:0"``/``f"cuda:{rank}"``, ``torch.device("cuda", ...)``,
``x.cuda()``, a torch factory's ``device="cuda"``, ``torch.cuda.*`` calls that initialise
CUDA, and a name bound only to one of these. ``device`` passed in from elsewhere is unknown,
never CUDA. ``torch.cuda.is_available()``, ``device_count()`` and ``is_initialized()`` do not
initialise a CUDA context (torch 2.13's ``torch/cuda/__init__.py``), so they are not CUDA
work; they are what a CPU fallback is made of.

## References
- https://docs.pytorch.org/docs/stable/notes/cuda.html
- https://docs.pytorch.org/docs/stable/tensor_attributes.html#torch-device
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, calls_by_name, keyword_arg
from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.walk import children, walk_local
from torchfix_codemods.analysis.vocabulary.torch_api import (
    ACCELERATOR_QUERIES,
    CUDA_QUERIES,
    names_cuda_device,
)

_DEVICE_FLAGS = ("cuda", "cpu", "gpu", "device")
_MAX_DEPTH = 4
_DEVICE: Slot[Evaluation[str | None]] = Slot("devices.cuda_device")


def cuda_device(names: NameIndex, expr: cst.BaseExpression, depth: int = 0) -> str | None:
    """Why ``expr`` names a CUDA device, or None without evidence."""
    evaluation = module_evaluation(names.memo, _DEVICE, _MAX_DEPTH, cycle=None, too_deep=None)
    return evaluation(expr, depth, lambda e, d: _device(names, e, d))


def _device(names: NameIndex, expr: cst.BaseExpression, depth: int) -> str | None:
    """One step of :func:`cuda_device`; ``depth`` already counts it."""
    if isinstance(expr, cst.SimpleString):
        text = expr.evaluated_value
        if isinstance(text, str) and names_cuda_device(text):
            return f"`{expr.value}`"
        return None
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda"):
            return "an f-string naming a CUDA device"
        return None
    if isinstance(expr, cst.Call) and names.qualified_name(expr.func) == "torch.device":
        first = argument(expr, "type", 0)
        if first is not None and cuda_device(names, first.value, depth):
            return "`torch.device(\"cuda\")`"
        return None
    if isinstance(expr, cst.IfExp):
        if cuda_device(names, expr.body, depth) and _queries_cuda(names, expr.test):
            return "CUDA when `torch.cuda.is_available()`"
        return None
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        if len(bindings) == 1 and bindings[0].kind in ("assign", "annassign") and \
                bindings[0].value is not None:
            return cuda_device(names, bindings[0].value, depth)
    return None


def _queries_cuda(names: NameIndex, test: cst.BaseExpression) -> bool:
    return any(isinstance(node, cst.Call) and names.qualified_name(node.func) in CUDA_QUERIES
               for node in _calls_in(test))


def _calls_in(expr: cst.BaseExpression) -> list[cst.Call]:
    return [node for node in (expr, *walk_local(expr)) if isinstance(node, cst.Call)]


def cuda_work(names: NameIndex, call: cst.Call) -> str | None:
    """Why ``call`` initialises or uses CUDA, or None: ``x.cuda()``, ``x.to(<cuda>)``, a torch
    function called with ``device=<cuda>``, a ``torch.cuda`` call other than the queries."""
    func = call.func
    qualified = names.qualified_name(func)
    if qualified is None and isinstance(func, cst.Attribute):
        if func.attr.value == "cuda":
            return "`.cuda()`"
        if func.attr.value == "to":
            target = argument(call, "device", 0)
            why = cuda_device(names, target.value) if target is not None else None
            if why is not None:
                return f"`.to()` a CUDA device ({why})"
        return None
    if qualified is None:
        return None
    if qualified.startswith("torch.cuda.") and qualified not in CUDA_QUERIES and \
            qualified.split(".")[2][:1].islower():
        return f"`{qualified}()`"
    if qualified.startswith("torch."):
        device = keyword_arg(call, "device")
        why = cuda_device(names, device.value) if device is not None else None
        if why is not None:
            return f"`{qualified}(..., device=...)` on a CUDA device ({why})"
    return None


_FALLBACK: Slot[bool] = Slot("devices.fallback")
_USES_CUDA: Slot[bool] = Slot("devices.uses_cuda")


def has_cpu_fallback(names: NameIndex) -> bool:
    """The file can run without CUDA: it asks whether a GPU is there
    (``torch.cuda.is_available()``, MPS, ``torch.accelerator``), chooses between a device and
    ``"cpu"`` (``"cuda" if args.cuda else "cpu"``), or takes a device/CUDA option on its
    command line."""
    if _FALLBACK in names.memo:
        return names.memo[_FALLBACK]
    found = any(names.qualified_name(call.func) in ACCELERATOR_QUERIES or _device_option(call)
                for call in calls_by_name(names))
    if not found:
        assert names.module_scope is not None
        found = any(isinstance(node, cst.IfExp) and _names_cpu(node)
                    for node in walk_local(names.module_scope.node))
    names.memo[_FALLBACK] = found
    return found


def _device_option(call: cst.Call) -> bool:
    """``parser.add_argument("--device", ...)``, ``"--no-cuda"``, ``"--cpu"``..."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
        return False
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            text = arg.value.evaluated_value
            if isinstance(text, str) and any(flag in text.lower() for flag in _DEVICE_FLAGS):
                return True
    return False


def _names_cpu(choice: cst.IfExp) -> bool:
    """``"cuda" if ... else "cpu"``: one branch is the CPU."""
    return any(isinstance(branch, cst.SimpleString) and branch.evaluated_value == "cpu"
               for branch in (choice.body, choice.orelse))


def uses_cuda(names: NameIndex) -> bool:
    """Some call of the file does CUDA work, or some string names a CUDA device."""
    if _USES_CUDA in names.memo:
        return names.memo[_USES_CUDA]
    assert names.module_scope is not None
    found = False
    stack: list[cst.CSTNode] = [names.module_scope.node]
    while stack and not found:
        node = stack.pop()
        if isinstance(node, cst.Call):
            found = cuda_work(names, node) is not None
        elif isinstance(node, (cst.SimpleString, cst.FormattedString)):
            found = cuda_device(names, node) is not None
        stack.extend(children(node))
    names.memo[_USES_CUDA] = found
    return found
