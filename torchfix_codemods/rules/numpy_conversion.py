"""TFC101: ``.numpy()`` on a torch tensor, which fails when it requires grad or lives on a GPU.

The receiver must be proven a torch tensor by the shared provenance analysis
(:mod:`torchfix_codemods.analysis.facts.tensors`) for a safe fix; its evidence goes
in the finding's ``reason``.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.tensors import Provenance, provenance
from torchfix_codemods.analysis.facts.values import TensorFacts, conversion_facts
from torchfix_codemods.edits.expressions import method_call
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_DETACHED = frozenset({"detach", "data"})


def _is_cpu_call(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "cpu")


def _chain_detached(expr: cst.BaseExpression) -> bool:
    """Whether a ``.detach()`` or ``.data`` occurs in ``expr``'s method/attribute chain."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in _DETACHED:
                return True
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute):
            if expr.attr.value in _DETACHED:
                return True
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            return False


def detach_cpu_numpy(base: cst.BaseExpression) -> cst.Call:
    """``base.detach().cpu().numpy()``."""
    return method_call(method_call(method_call(base, "detach"), "cpu"), "numpy")


def _conversion(receiver: cst.BaseExpression, facts: TensorFacts) -> tuple[cst.Call, str]:
    """``receiver`` with only the missing steps before ``.numpy()``, and what they are.

    A receiver ending in ``.cpu()`` gets ``.detach()`` before it (no grad graph is copied);
    otherwise ``.detach()`` is added only when it may require grad and ``.cpu()`` only when
    it may live on an accelerator.
    """
    if _is_cpu_call(receiver):
        base = receiver.func.value  # type: ignore[attr-defined]
        return detach_cpu_numpy(base), "`.detach()`"
    detach = not facts.requires_grad.is_no
    cpu = not facts.accelerator.is_no
    if detach and cpu:
        return detach_cpu_numpy(receiver), "`.detach().cpu()`"
    step = "detach" if detach else "cpu"
    return method_call(method_call(receiver, step), "numpy"), f"`.{step}()`"


def _why(found: Provenance, facts: TensorFacts) -> str:
    return f"{found.reason}; {' and '.join(facts.risks())}"


def _tier(rule: Rule, found: Provenance) -> Safety | None:
    """Safe for a known tensor; unsafe for an unknown value in a file that imports torch."""
    if found.is_tensor:
        return Safety.SAFE
    if found.kind == "unknown" and imports_torch(rule.names):
        return Safety.UNSAFE
    return None


_MESSAGES = {
    "`.detach().cpu()`": ("`.numpy()` fails on a tensor that requires grad or lives on the GPU: "
                          "use `.detach().cpu().numpy()`"),
    "`.detach()`": ("`.numpy()` fails on a tensor that requires grad: "
                    "use `.detach()` before `.numpy()`"),
    "`.cpu()`": ("`.numpy()` fails on a tensor that lives on the GPU (or another accelerator): "
                 "use `.cpu().numpy()`"),
}


class NumpyOnTensor(Rule):
    """## What it does
    Finds `t.numpy()`, `t.cpu().numpy()`, `np.asarray(t)` and `np.array(t)` on
    torch tensors that may require grad or live on an accelerator, and adds
    what is missing: `t.detach().cpu().numpy()`, or only `.detach()` /
    only `.cpu()` when the other cannot be needed (plus `.copy()` for
    `np.array`).

    ## Why is this bad?
    `.numpy()` raises `RuntimeError: Can't call numpy() on Tensor that requires
    grad` on a model output or a parameter, and `TypeError: can't convert cuda:0
    device type tensor to numpy` on the GPU. Code that works in a CPU notebook
    under `no_grad` breaks the day it trains or moves to a GPU.

    ## Example
    ```python
    probs = model(x).softmax(1).cpu().numpy()
    ids = model(x).argmax(1).numpy()
    ```

    ## Use instead
    ```python
    probs = model(x).softmax(1).detach().cpu().numpy()
    ids = model(x).argmax(1).cpu().numpy()  # integer ids never require grad
    ```

    ## When it reports
    Only when `.numpy()` can fail: what the analysis knows of the value
    (shown after `why:`) must leave open
    that it requires grad or lives on an accelerator. No finding for a tensor
    that provably does neither, measured on torch 2.13: computed under
    `torch.no_grad()`/`inference_mode()` (a `with`, a decorator, or a configured
    `inference-decorators` entry: an op there gives `requires_grad=False`),
    integer or bool results (`argmax`/`argmin`/`argsort`, `max(x, 1)[1]`,
    `topk(...)[1]`, `.long()`, comparisons: `requires_grad=False` even on a
    parameter's values), `.detach()`/`.data`, `torch.from_numpy` and factories
    without `requires_grad=True` (CPU, no grad), DataLoader batches (CPU, no
    grad), and the `else` of `if t.requires_grad:` — each combined with `.cpu()`,
    `.to("cpu")`, `from_numpy`, a factory without `device=` or a batch for the
    device. A parameter itself (`nn.Parameter`, `.weight`) still requires grad
    under `no_grad`, but torch checks grad only while grad mode is on
    (`nn.Parameter(...).numpy()` works under `no_grad`/`inference_mode`): a
    conversion that itself runs with autograd off cannot fail for grad.

    The facts must also *show* one of the two risks: the value requires grad (a
    module's output with autograd on, a parameter, `requires_grad=True`), lives
    on an accelerator (`.cuda()`, `device="cuda"`), or was moved to a device
    chosen at run time (`.to(device)`, a module's device). A value the analysis
    knows nothing about (a function parameter no call in the file explains) is
    not a finding: in real training and evaluation code such a `.numpy()` was
    found receiving values computed under `no_grad` or already on the CPU.
    A module's output is not on an accelerator when its input was converted
    with `.numpy()` on an earlier line that runs on every path here (directly,
    or by a function of the file that converts that parameter before it can
    return): the input is a CPU tensor, a module on a GPU raises a RuntimeError on
    a CPU input (`Linear`, `Conv2d`), so this `.numpy()` is never the first line
    to fail (timm's
    `onnx_export` checks `original_out.numpy()` after converting
    `example_input` in `onnx_forward`). The earlier conversion counts only where
    it is not a device finding itself, so fixing one line never changes another.
    Nor is anything on an accelerator in a program that places nothing: a file
    with a `__main__` block that imports only the standard library and
    libraries that make no GPU objects unasked (torch, torchvision, numpy, gym,
    ...; no module of its own project), and names no device, `.cuda()`,
    `.to(...)` or `load`: torch makes its tensors and parameters on the CPU and
    nothing there moves them (an RL script's `Categorical(p).sample().numpy()`).

    ## Fix safety
    Safe when the receiver is known to be a torch tensor (the finding's reason
    says why): a CPU tensor without grad gives the same array sharing the same
    memory, and the two errors above become the intended result. Unsafe when the
    receiver is unknown (it might be another library's tensor with no
    `.detach()`). No finding when it is known not to be a torch tensor, or in a
    file that imports TensorFlow, Keras, JAX or Paddle. `np.asarray`/`np.array`
    are rewritten only for known tensors. `t.detach().cpu().numpy()`,
    `t.data.cpu().numpy()` and `t.numpy(force=True)` are left alone. The fix adds
    only the missing steps: `t.cpu().float().numpy()` becomes
    `t.cpu().float().detach().numpy()`, never `...detach().cpu()` twice.

    ## References
    - [`torch.Tensor.numpy` (and its `force=` argument)](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
    - [`torch.Tensor.detach`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    """

    code = "TFC101"
    name = "numpy-on-tensor"
    project_facts = ("module-classes",)
    message = ("`.numpy()` fails on a tensor that requires grad or lives on the GPU: "
               "use `.detach().cpu().numpy()`")
    safety = Safety.SAFE
    triggers = ("numpy", "asarray", "array")
    # `.numpy()`, or the last part of `numpy.asarray`/`numpy.array` (attribute, import or star)
    needs = Needs.any_of(".numpy", names=("asarray", "array"))
    valid = (
        "import torch\ny = torch.randn(3).detach().cpu().numpy()\n",
        "import torch\ny = torch.randn(3).numpy(force=True)\n",
        "import numpy as np\na = np.zeros(3)\nb = np.asarray(a)\n",
        "import tensorflow as tf\nimport torch\nt = tf.constant([1.0])\ny = t.numpy()\n",
        "import pandas as pd\ndf = pd.DataFrame()\ny = df.to_numpy()\n",
        "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\nwith torch.no_grad():\n"
        "    y = net(torch.randn(1, 3)).cpu().numpy()\n",
        "import numpy as np\nimport torch\nt = torch.from_numpy(np.ones(3))\ny = t.numpy()\n",
        "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\n"
        "ids = net(torch.randn(1, 3)).argmax(1).cpu().numpy()\n",
        # nothing shows a risk: a parameter no call in the file explains
        "import torch\ndef f(out):\n    return out.numpy()\n",
    )
    invalid = (
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\ny = w.numpy()\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\ny = w.detach().numpy()\n",
        ),
        Example(
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\n"
            "y = net(torch.randn(1, 3)).cpu().numpy()\n",
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\n"
            "y = net(torch.randn(1, 3)).detach().cpu().numpy()\n",
        ),
        Example(
            "import torch\nimport numpy as np\nw = torch.ones(2, requires_grad=True)\n"
            "a = np.array(w)\n",
            "import torch\nimport numpy as np\nw = torch.ones(2, requires_grad=True)\n"
            "a = w.detach().numpy().copy()\n",
        ),
        Example(
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2).cuda()\n"
            "ids = net(torch.randn(1, 3).cuda()).argmax(1).numpy()\n",
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2).cuda()\n"
            "ids = net(torch.randn(1, 3).cuda()).argmax(1).cpu().numpy()\n",
        ),
        Example(
            "import torch\ndef f(out, device):\n    return out.to(device).numpy()\n",
            "import torch\ndef f(out, device):\n    return out.to(device).detach().cpu().numpy()\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy":
            if node.args:
                return
            self._numpy_method(node, func.value)
            return
        qualified = self.qualified_name(func)
        if qualified in ("numpy.asarray", "numpy.array") and len(node.args) == 1 \
                and node.args[0].keyword is None and not node.args[0].star:
            self._numpy_function(node, node.args[0].value, copy=qualified == "numpy.array")

    def _facts(self, receiver: cst.BaseExpression) -> TensorFacts:
        return conversion_facts(self.names, receiver, self.context.options.inference_decorators)

    def _numpy_method(self, call: cst.Call, receiver: cst.BaseExpression) -> None:
        if _chain_detached(receiver):
            return
        base = receiver.func.value if _is_cpu_call(receiver) else receiver  # type: ignore[attr-defined]
        found = provenance(self.names, base)
        tier = _tier(self, found)
        if tier is None:
            return
        facts = self._facts(receiver)
        if not facts.numpy_can_fail:
            return
        if facts.requires_grad.is_no and self._other_branch_moves_to_cpu(call, receiver):
            return
        new, added = _conversion(receiver, facts)
        fix = Fix(tier, f"call {added} before `.numpy()`",
                  [(call, new.with_changes(lpar=call.lpar, rpar=call.rpar))])
        message = _MESSAGES[added]
        if tier is Safety.UNSAFE:
            message += " (unsafe: the receiver is not known to be a torch tensor)"
        self.report(call, message, fix=fix, reason=_why(found, facts))

    def _other_branch_moves_to_cpu(self, call: cst.Call, receiver: cst.BaseExpression) -> bool:
        """``t.numpy() if not on_gpu else t.cpu().numpy()`` (or the same as an ``if``
        statement): the code already chose the branch by device, so the device is no risk
        here (udacity's CIFAR notebook)."""
        written = code_of(receiver)
        for ancestor in self.names.ancestors(call):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(ancestor, (cst.IfExp, cst.If)):
                branches: list[cst.CSTNode] = [ancestor.body]
                if ancestor.orelse is not None:
                    branches.append(ancestor.orelse)
                others = [b for b in branches if not any(a is b for a in self.names.ancestors(call))
                          and b is not call]
                return any(isinstance(node, cst.Call) and _is_cpu_call(node) and
                           code_of(node.func.value) == written  # type: ignore[attr-defined]
                           for branch in others for node in (branch, *walk_local(branch)))
        return False

    def _numpy_function(self, call: cst.Call, value: cst.BaseExpression, *, copy: bool) -> None:
        if _chain_detached(value):
            return
        base = value.func.value if _is_cpu_call(value) else value  # type: ignore[attr-defined]
        found = provenance(self.names, base)
        if not found.is_tensor:
            return
        facts = self._facts(value)
        if not facts.numpy_can_fail:
            return
        converted, added = _conversion(value, facts)
        new: cst.BaseExpression = converted
        if copy:
            new = method_call(new, "copy")
        name = "np.array" if copy else "np.asarray"
        shown = code_of(new) if isinstance(value, cst.Name) else f"t{code_of(new)[len(code_of(value)):]}"
        fix = Fix(Safety.SAFE, f"replace `{name}(t)` with `{shown}`",
                  [(call, new.with_changes(lpar=call.lpar, rpar=call.rpar))])
        self.report(call, f"`{name}` on a tensor calls `.numpy()`, which fails on a tensor that "
                    "requires grad or lives on the GPU", fix=fix, reason=_why(found, facts))


RULES = [NumpyOnTensor]
