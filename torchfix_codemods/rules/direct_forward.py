"""TFC204: ``module.forward(x)`` called directly, which skips the module's hooks."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.modules import init_assignment, module_classes, module_evidence
from torchfix_codemods.analysis.vocabulary.naming import name_tokens
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_HOOK_REGISTRATION = ("register_forward_hook", "register_forward_pre_hook",
                      "register_full_backward_hook", "register_backward_hook",
                      "register_module_forward_hook", "spectral_norm", "weight_norm",
                      "prune.", "parametriz", "quantiz", "fully_shard", "FullyShardedDataParallel")


class DirectForward(Rule):
    """## What it does
    Finds `module.forward(x)` on an `nn.Module` and rewrites it to `module(x)`.

    ## Why is this bad?
    `nn.Module.__call__` runs forward pre-hooks and hooks around `forward`.
    Pruning masks, spectral and weight norm, quantization observers, FSDP's
    parameter gathering and any user hook are all hooks: calling `.forward`
    directly silently skips them.

    ## Example
    ```python
    logits = model.forward(x)
    ```

    ## Use instead
    ```python
    logits = model(x)
    ```

    Only a receiver proven to be an `nn.Module` is reported: built from a
    `torch.nn` class or a subclass in this file, `self` in such a class, a
    submodule assigned one in its `__init__` (and a module wherever else it is
    reassigned, `self.model = nn.DataParallel(self.model)`), a loop variable
    over an `nn.ModuleList`/`nn.Sequential`, a parameter that every call
    passes a module to (calls in this file, or, through the project index,
    calls from the run's other files: `train(model, ...)` in `fc_model.py`
    called from a notebook with `fc_model.Network(...)`). A name is not evidence: many
    objects that are not modules have a `.forward()` (yolov5's
    `DetectMultiBackend` keeps an OpenCV `cv2.dnn.Net` in `self.net`, and
    `self.net.forward()` is its inference call; `self.net()` is a TypeError).

    ## Fix safety
    Safe when this file registers no hook (without hooks both calls are the
    same). Unsafe when the file registers hooks or applies pruning,
    spectral/weight norm, parametrizations, quantization or FSDP (the hooks
    then run: the intended change). Never changed: `super().forward(...)` and
    `Base.forward(self, ...)`, calls inside hooks and inside `forward`/
    `__call__` themselves, and classes that define their own `__call__`.

    ## References
    - [`torch.nn.Module.forward`: call the module instance, which runs the hooks](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.forward)
    - [`torch.nn.Module.register_forward_hook`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook)
    """

    code = "TFC204"
    name = "direct-forward"
    project_facts = ("module-classes",)
    message = "`.forward()` called directly skips the module's hooks: call the module instead"
    safety = Safety.SAFE
    triggers = (".forward(",)
    needs = Needs.any_of(".forward")
    valid = (
        "from torch import nn\nclass A(nn.Linear):\n    def forward(self, x):\n"
        "        return super().forward(x)\n",
        "from torch import nn\nclass A(nn.Linear):\n    def forward(self, x):\n"
        "        return nn.Linear.forward(self, x)\n",
        "import torch\nclass Wrapper:\n    def forward(self, x):\n        return x\n"
        "w = Wrapper()\nw.forward(1)\n",
        "from torch import nn\nm = nn.Linear(2, 2)\ndef hook(mod, inp, out):\n"
        "    return m.forward(inp[0])\n",
        "import torch\ndef run(model, x):\n    return model.forward(x)\n",
    )
    invalid = (
        Example(
            "from torch import nn\nm = nn.Linear(2, 2)\ny = m.forward(1)\n",
            "from torch import nn\nm = nn.Linear(2, 2)\ny = m(1)\n",
        ),
        Example(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.enc = nn.Linear(2, 2)\n"
            "    def forward(self, x):\n        return self.enc.forward(x)\n",
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.enc = nn.Linear(2, 2)\n"
            "    def forward(self, x):\n        return self.enc(x)\n",
        ),
        Example(
            "import torch\nfrom torch import nn\ndef run(model: nn.Module, x):\n"
            "    return model.forward(x)\n",
            "import torch\nfrom torch import nn\ndef run(model: nn.Module, x):\n"
            "    return model(x)\n",
        ),
        Example(
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\nm.register_forward_hook(log)\n"
            "y = m.forward(1)\n",
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\nm.register_forward_hook(log)\n"
            "y = m(1)\n",
            unsafe=True,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        text = self.context.source
        self._hooks = any(marker in text for marker in _HOOK_REGISTRATION)
        self._torch = imports_torch(self.names)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "forward"):
            return
        receiver = func.value
        if not self._torch or isinstance(receiver, cst.Call):
            return  # super().forward(...), make().forward(...)
        first = node.args[0].value if node.args else None
        if isinstance(first, cst.Name) and first.value == "self":
            return  # Base.forward(self, ...): an explicit parent implementation
        if self._in_excluded_function(node, receiver):
            return
        evidence = self._evidence(receiver, node)
        if evidence is None:
            return
        reason, certain = evidence
        safety = Safety.SAFE if certain and not self._hooks else Safety.UNSAFE
        new = node.with_changes(func=receiver)
        self.report(node, self.message, reason=reason,
                    fix=Fix(safety, "call the module instead of `.forward`", [(node, new)]))

    def _in_excluded_function(self, node: cst.CSTNode, receiver: cst.BaseExpression) -> bool:
        """Inside a hook, or ``self.forward`` inside ``forward``/``__call__`` (recursion)."""
        is_self = isinstance(receiver, cst.Name) and receiver.value == "self"
        for ancestor in self.names.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                name = ancestor.name.value
                if is_self and name in ("forward", "__call__", "_call_impl"):
                    return True
                if "hook" in name_tokens(name):
                    return True
            if isinstance(ancestor, cst.Call):
                callee = dotted_name(ancestor.func) or ""
                if "hook" in callee.split(".")[-1]:
                    return True
        return False

    def _evidence(self, receiver: cst.BaseExpression,
                  call: cst.Call) -> tuple[str, bool] | None:
        if isinstance(receiver, cst.Name):
            binding = self.names.binding_of(receiver)
            if binding is not None and binding.kind in ("class", "import", "def"):
                return None
            evidence = module_evidence(self.names, receiver)
            if evidence:
                own = self._own_class(receiver)
                if own is not None and _defines(own, "__call__"):
                    return None
                return evidence.reason, True
            return None
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and \
                receiver.value.value == "self":
            owner = self.names.enclosing(call, cst.ClassDef)
            if owner is None:
                return None
            value = init_assignment(owner, receiver.attr.value)
            if value is not None and module_evidence(self.names, value):
                return f"`self.{receiver.attr.value}` is assigned a module in `__init__`", True
            # Assigned more than once (`self.model = nn.DataParallel(self.model)`): every
            # assignment must be a module.
            evidence = module_evidence(self.names, receiver)
            if evidence is not None:
                return evidence.reason, True
        return None

    def _own_class(self, receiver: cst.Name) -> cst.ClassDef | None:
        binding = self.names.binding_of(receiver)
        if binding is None:
            return None
        if receiver.value == "self":
            return self.names.enclosing(binding.node, cst.ClassDef)
        value = binding.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            return module_classes(self.names).get(value.func.value)
        return None


def _defines(cls: cst.ClassDef, method: str) -> bool:
    return any(isinstance(s, cst.FunctionDef) and s.name.value == method for s in cls.body.body)


RULES = [DirectForward]
