"""TFC001-TFC003: loading and saving checkpoints with ``torch.load`` and ``torch.save``.

The docstrings below are what ``torchfix-codemods explain`` prints.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
    keyword_arg,
)
from torchfix_codemods.analysis.modules import module_evidence, named_like_model
from torchfix_codemods.analysis.usage import (
    Use,
    assigned_name,
    describe_use,
    reads_of_assigned,
)
from torchfix_codemods.edits.arguments import add_keyword
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule

TORCH_LOAD = "torch.load"
TORCH_SAVE = "torch.save"

# Methods only an nn.Module has: a loaded object used like this is a whole pickled model.
MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children",
    "named_children", "forward", "state_dict", "load_state_dict", "buffers", "named_buffers",
    "zero_grad", "register_forward_hook", "register_forward_pre_hook", "apply",
})
def _result_uses(rule: Rule, call: cst.Call) -> tuple[cst.Name | None, list[Use] | None]:
    """The name a call's result is assigned to and every use of it (None: not followable)."""
    names = rule.names
    target = assigned_name(names, call)
    if target is None:
        return None, [describe_use(names, call)]
    reads = reads_of_assigned(names, target)
    if reads is None:
        return target, None
    return target, [describe_use(names, read) for read in reads]


def _is_state_dict_sink(use: Use) -> bool:
    """``x.load_state_dict(value)`` without ``assign=True`` (which keeps the loaded tensors)."""
    if use.kind != "argument" or use.call is None or use.arg is None:
        return False
    func = use.call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict"):
        return False
    if use.arg.keyword is not None and use.arg.keyword.value != "state_dict":
        return False
    assign = keyword_arg(use.call, "assign")
    return assign is None or (isinstance(assign.value, cst.Name) and assign.value.value == "False")


def _used_as_module(uses: list[Use] | None) -> bool:
    if not uses:
        return False
    for use in uses:
        if use.kind == "called":
            return True
        if use.kind == "method" and use.attr in MODULE_ONLY_METHODS:
            return True
    return False


class TorchLoadWithoutWeightsOnly(Rule):
    """## What it does
    Finds `torch.load(...)` calls that do not say `weights_only=`, and adds
    `weights_only=True`.

    ## Why is this bad?
    With `weights_only=False`, loading a checkpoint runs arbitrary pickled
    code: a downloaded `.pt` file can execute anything. torch 2.6 made `True`
    the default, but code that runs on torch 1.13-2.5 still loads with full
    pickle, and an explicit argument documents the intent everywhere.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", weights_only=True)
    ```

    ## Fix safety
    Safe: on torch >= 2.6 `True` is already the default, so nothing changes;
    before that it pins the safe loader (the argument exists since 1.13).
    Unsafe when `encoding=` is passed (ignored with a warning under
    `weights_only=True`). No fix, only a report, when:
    - `pickle_module=` is passed (combining it with `weights_only=True` raises);
    - arguments come from `**kwargs` or `*args` (they may already set it);
    - the loaded object is used as a whole `nn.Module` (called, `.eval()`,
      `.parameters()`, ...) or assigned to a model-like name, or the same file
      saves a whole module: `weights_only=True` cannot unpickle a module. Use
      `weights_only=False` for files you trust, or save a `state_dict()`.
    An explicit `weights_only=False` is the user's decision and is left alone.

    ## References
    - [`torch.load`](https://docs.pytorch.org/docs/stable/generated/torch.load.html)
    - [Serialization semantics: `weights_only`](https://docs.pytorch.org/docs/stable/notes/serialization.html)
    - [pytorch/pytorch#86812: add `weights_only` to `torch.load`](https://github.com/pytorch/pytorch/pull/86812)
    """

    code = "TFC001"
    name = "torch-load-without-weights-only"
    project_facts = ("module-classes", "checkpoints")
    message = "`torch.load` without `weights_only`: add `weights_only=True` so loading runs no pickled code"
    safety = Safety.SAFE
    min_torch = (1, 13)
    triggers = ("load",)
    valid = (
        "import torch\nstate = torch.load('m.pt', weights_only=True)\n",
        "import torch\nobj = torch.load('m.pt', weights_only=False)\n",
        "import pickle\nobj = pickle.load(open('m.pkl', 'rb'))\n",
        "def load(p):\n    return p\nload('m.pt')\n",
    )
    invalid = (
        Example(
            "import torch\nstate = torch.load('m.pt')\n",
            "import torch\nstate = torch.load('m.pt', weights_only=True)\n",
        ),
        Example(
            "from torch import load as L\nsd = L('m.pt', map_location='cpu')\n",
            "from torch import load as L\nsd = L('m.pt', map_location='cpu', weights_only=True)\n",
        ),
        Example("import torch\nmodel = torch.load('whole.pt')\nmodel.eval()\n"),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loads: list[cst.Call] = []
        self._saves_module = False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified == TORCH_LOAD:
            if keyword_arg(node, "weights_only") is None:
                self._loads.append(node)
        elif qualified == TORCH_SAVE:
            saved = argument(node, "obj", 0)
            if saved is not None and module_evidence(self.names, saved.value):
                self._saves_module = True

    def leave_Module(self, original_node: cst.Module) -> None:
        for call in self._loads:
            self._check(call)

    def _check(self, call: cst.Call) -> None:
        if has_star_kwargs(call) or has_star_args(call):
            self.report(call, "`torch.load` without an explicit `weights_only`; it may come "
                        "from `*args`/`**kwargs`, so no fix: pass `weights_only=True` explicitly")
            return
        if argument(call, "pickle_module", 2) is not None:
            self.report(call, "`torch.load` with `pickle_module=` runs pickled code; "
                        "`weights_only=True` cannot be combined with it, so no fix: load only "
                        "files you trust, or save tensors/state dicts and drop `pickle_module`")
            return
        target, uses = _result_uses(self, call)
        # A model-like name is no proof, but enough to *not* add weights_only=True (which
        # could then fail to load a whole pickled module): report instead.
        whole_module = _used_as_module(uses) or (
            target is not None and named_like_model(target.value))
        if whole_module or self._saves_module:
            why = ("the loaded object is used as a whole `nn.Module`" if whole_module
                   else "this file saves a whole `nn.Module` with `torch.save`")
            self.report(call, f"`torch.load` without `weights_only`, but {why}, which "
                        "`weights_only=True` cannot load: pass `weights_only=False` for trusted "
                        "files, or save and load a `state_dict()`")
            return
        unsafe = keyword_arg(call, "encoding") is not None
        fix = Fix(
            Safety.UNSAFE if unsafe else Safety.SAFE,
            "add `weights_only=True`",
            [(call, add_keyword(call, "weights_only", cst.Name("True")))],
            min_torch=(1, 13),
        )
        message = self.message
        if unsafe:
            message += " (`encoding=` is ignored with a warning under `weights_only=True`)"
        self.report(call, message, fix=fix)


class TorchLoadWithoutMapLocation(Rule):
    """## What it does
    Finds `torch.load(...)` without `map_location` and adds one:
    `map_location="cpu"`, or `map_location=device` when a variable named
    `device` is in scope.

    ## Why is this bad?
    A checkpoint saved from GPU tensors records their device. Loading it on a
    machine without that GPU fails with `RuntimeError: Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is
    False`, and on a multi-GPU host every process loads onto GPU 0.

    ## Example
    ```python
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location="cpu"))
    ```

    ## Fix safety
    Safe when the loaded object only goes into `load_state_dict` (a model's or
    an optimizer's), directly or through a name or string keys of it:
    `load_state_dict` copies values onto the parameters' own device anyway.
    Unsafe otherwise (loaded tensors used directly, `assign=True`, a whole
    model with no `.to()`), because where they live changes.

    ## References
    - [`torch.load`, `map_location`](https://docs.pytorch.org/docs/stable/generated/torch.load.html)
    - [Saving and loading models across devices](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
    """

    code = "TFC002"
    name = "torch-load-without-map-location"
    project_facts = ("module-classes", "checkpoints")
    message = "`torch.load` without `map_location` fails on a host without the GPU it was saved from"
    safety = Safety.SAFE
    triggers = ("load",)
    valid = (
        "import torch\nsd = torch.load('m.pt', map_location='cpu')\n",
        "import torch\nsd = torch.load('m.pt', 'cpu')\n",
        "import numpy as np\narr = np.load('a.npy')\n",
    )
    invalid = (
        Example(
            "import torch\nmodel.load_state_dict(torch.load('m.pt'))\n",
            "import torch\nmodel.load_state_dict(torch.load('m.pt', map_location=\"cpu\"))\n",
        ),
        Example(
            "import torch\nckpt = torch.load('m.pt')\nema = ckpt['ema']\n",
            "import torch\nckpt = torch.load('m.pt', map_location=\"cpu\")\nema = ckpt['ema']\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != TORCH_LOAD:
            return
        if argument(node, "map_location", 1) is not None:
            return
        if has_star_kwargs(node) or has_star_args(node):
            self.report(node, self.message + "; arguments come from `*args`/`**kwargs`, so "
                        "no fix: pass `map_location=` explicitly")
            return
        _, uses = _result_uses(self, node)
        safe = bool(uses) and all(self._into_state_dict(use) for use in uses or ())
        device = self._device_name(node)
        value: cst.BaseExpression = cst.Name(device) if device else cst.SimpleString('"cpu"')
        shown = device or '"cpu"'
        fix = Fix(
            Safety.SAFE if safe else Safety.UNSAFE,
            f"add `map_location={shown}`",
            [(node, add_keyword(node, "map_location", value))],
        )
        reason = ("the result only goes into `load_state_dict`, which copies to the "
                  "parameters' device" if safe else
                  "loaded tensors are used directly, so their device would change")
        self.report(node, self.message, fix=fix, reason=reason)

    def _into_state_dict(self, use: Use) -> bool:
        if _is_state_dict_sink(use):
            return True
        if use.kind == "subscript" and use.key is not None:
            return _is_state_dict_sink(describe_use(self.names, use.node))
        return False

    def _device_name(self, node: cst.Call) -> str | None:
        found = self.names.lookup("device", self.names.scope_of(node))
        if found is None:
            return None
        _, bindings = found
        if any(b.kind == "import" for b in bindings):
            return None
        return "device"


class SaveWholeModule(Rule):
    """## What it does
    Finds `torch.save(model, path)` where `model` is an `nn.Module` instance,
    which pickles the whole object.

    ## Why is this bad?
    A pickled module stores the import path of its class. Rename or move the
    class, or load the file in another project, and loading fails; loading it
    also needs `weights_only=False`, which runs pickled code. A `state_dict()`
    holds only tensors and loads anywhere with `weights_only=True`.

    ## Example
    ```python
    torch.save(model, "model.pt")
    model = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Fix safety
    Report only, unless the same file also loads it back into a model it has
    already built (`model = Net(...)` ... `model = torch.load(path)`). Then
    both sites are rewritten together, as an unsafe fix: the loaded weights go
    into the existing object instead of replacing it, and files saved earlier
    in the old format no longer load through the new code.

    ## References
    - [Saving and loading models: `state_dict` vs the entire model](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
    - [Serialization semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html)
    """

    code = "TFC003"
    name = "save-whole-module"
    project_facts = ("module-classes", "checkpoints", "checkpoint-pairs")
    message = "`torch.save` of a whole `nn.Module` pickles its class path; save `state_dict()` instead"
    safety = Safety.UNSAFE
    triggers = ("save",)
    valid = (
        "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m.state_dict(), 'm.pt')\n",
        "import torch\ntorch.save({'epoch': 1}, 'c.pt')\n",
    )
    invalid = (
        Example("import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m, 'm.pt')\n"),
        Example(
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m, 'm.pt')\n"
            "m = nn.Linear(2, 2)\nm = torch.load('m.pt')\n",
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\n"
            "torch.save(m.state_dict(), 'm.pt')\nm = nn.Linear(2, 2)\n"
            "m.load_state_dict(torch.load('m.pt'))\n",
            unsafe=True,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._saves: list[tuple[cst.Call, cst.Arg, str]] = []
        self._loads: list[tuple[cst.Assign, cst.Name, cst.Call]] = []

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified == TORCH_SAVE:
            saved = argument(node, "obj", 0)
            if saved is None:
                return
            evidence = module_evidence(self.names, saved.value)
            if evidence:
                self._saves.append((node, saved, evidence.reason))
        elif qualified == TORCH_LOAD:
            target = assigned_name(self.names, node)
            statement = self.names.parent(node)
            if target is not None and isinstance(statement, cst.Assign):
                self._loads.append((statement, target, node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for call, saved, evidence in self._saves:
            fix = self._paired_fix(call, saved)
            self.report(call, self.message, fix=fix, reason=evidence)

    def _paired_fix(self, call: cst.Call, saved: cst.Arg) -> Fix | None:
        """Rewrite save and load together when the load goes back into a built model."""
        if not isinstance(saved.value, cst.Name):
            return None
        name = saved.value.value
        pairs = []
        for statement, target, load in self._loads:
            if target.value != name:
                continue
            scope = self.names.scope_of(target)
            built = [b for b in scope.bindings.get(name, [])
                     if b.value is not None and b.value is not load
                     and module_evidence(self.names, b.value)]
            if built:
                pairs.append((statement, target, load))
        if len(pairs) != 1:
            return None
        statement, target, load = pairs[0]
        state_dict = cst.Call(func=cst.Attribute(value=saved.value, attr=cst.Name("state_dict")))
        new_save = call.with_changes(args=[
            arg.with_changes(value=state_dict) if arg is saved else arg for arg in call.args
        ])
        new_load = cst.Expr(cst.Call(
            func=cst.Attribute(value=cst.Name(target.value), attr=cst.Name("load_state_dict")),
            args=[cst.Arg(load)],
        ))
        return Fix(
            Safety.UNSAFE,
            "save `state_dict()` and load it into the model this file already builds",
            [(call, new_save), (statement, new_load)],
        )


RULES = [TorchLoadWithoutWeightsOnly, TorchLoadWithoutMapLocation, SaveWholeModule]
