"""TFC101: ``.numpy()`` on a torch tensor, which fails when it requires grad or lives on a GPU.

The receiver must be proven a torch tensor by the shared provenance analysis
(:mod:`torchfix_codemods.analysis.tensors`) for a safe fix; its evidence goes
in the finding's ``reason``.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.frameworks import imports_torch
from torchfix_codemods.analysis.tensors import Provenance, provenance
from torchfix_codemods.edits.expressions import method_call
from torchfix_codemods.findings import Safety
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


def _tier(rule: Rule, found: Provenance) -> Safety | None:
    """Safe for a known tensor; unsafe for an unknown value in a file that imports torch."""
    if found.is_tensor:
        return Safety.SAFE
    if found.kind == "unknown" and imports_torch(rule.names):
        return Safety.UNSAFE
    return None


class NumpyOnTensor(Rule):
    """## What it does
    Rewrites `t.numpy()`, `t.cpu().numpy()`, `np.asarray(t)` and `np.array(t)`
    on torch tensors to `t.detach().cpu().numpy()` (plus `.copy()` for
    `np.array`).

    ## Why is this bad?
    `.numpy()` raises `RuntimeError: Can't call numpy() on Tensor that requires
    grad` on a model output or a parameter, and `TypeError: can't convert cuda:0
    device type tensor to numpy` on the GPU. Code that works in a CPU notebook
    under `no_grad` breaks the day it trains or moves to a GPU.

    ## Example
    ```python
    preds = model(x).argmax(1).cpu().numpy()
    ```

    ## Use instead
    ```python
    preds = model(x).argmax(1).detach().cpu().numpy()
    ```

    ## Fix safety
    Safe when the receiver is known to be a torch tensor (the finding's reason
    says why): a CPU tensor without grad gives the same array sharing the same
    memory, and the two errors above become the intended result. Unsafe when the
    receiver is unknown (it might be another library's tensor with no
    `.detach()`). No finding when it is known not to be a torch tensor, or in a
    file that imports TensorFlow, Keras, JAX or Paddle. `np.asarray`/`np.array`
    are rewritten only for known tensors. `t.detach().cpu().numpy()`,
    `t.data.cpu().numpy()` and `t.numpy(force=True)` are left alone.

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
    valid = (
        "import torch\ny = torch.randn(3).detach().cpu().numpy()\n",
        "import torch\ny = torch.randn(3).numpy(force=True)\n",
        "import numpy as np\na = np.zeros(3)\nb = np.asarray(a)\n",
        "import tensorflow as tf\nimport torch\nt = tf.constant([1.0])\ny = t.numpy()\n",
        "import pandas as pd\ndf = pd.DataFrame()\ny = df.to_numpy()\n",
    )
    invalid = (
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\ny = w.numpy()\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\ny = w.detach().cpu().numpy()\n",
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
            "a = w.detach().cpu().numpy().copy()\n",
        ),
        Example(
            "import torch\ndef f(out):\n    return out.numpy()\n",
            "import torch\ndef f(out):\n    return out.detach().cpu().numpy()\n",
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

    def _numpy_method(self, call: cst.Call, receiver: cst.BaseExpression) -> None:
        if _chain_detached(receiver):
            return
        base = receiver.func.value if _is_cpu_call(receiver) else receiver  # type: ignore[attr-defined]
        found = provenance(self.names, base)
        tier = _tier(self, found)
        if tier is None:
            return
        fix = Fix(tier, "call `.detach().cpu()` before `.numpy()`",
                  [(call, detach_cpu_numpy(base).with_changes(lpar=call.lpar, rpar=call.rpar))])
        message = self.message
        if tier is Safety.UNSAFE:
            message += " (unsafe: the receiver is not known to be a torch tensor)"
        self.report(call, message, fix=fix, reason=found.reason)

    def _numpy_function(self, call: cst.Call, value: cst.BaseExpression, *, copy: bool) -> None:
        if _chain_detached(value):
            return
        base = value.func.value if _is_cpu_call(value) else value  # type: ignore[attr-defined]
        found = provenance(self.names, base)
        if not found.is_tensor:
            return
        new: cst.BaseExpression = detach_cpu_numpy(base)
        if copy:
            new = method_call(new, "copy")
        name = "np.array" if copy else "np.asarray"
        fix = Fix(Safety.SAFE, f"replace `{name}(t)` with `t.detach().cpu().numpy()`"
                  + (".copy()" if copy else ""),
                  [(call, new.with_changes(lpar=call.lpar, rpar=call.rpar))])
        self.report(call, f"`{name}` on a tensor calls `.numpy()`, which fails on a tensor that "
                    "requires grad or lives on the GPU", fix=fix, reason=found.reason)


RULES = [NumpyOnTensor]
