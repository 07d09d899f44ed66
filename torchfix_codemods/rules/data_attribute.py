"""TFC102-TFC104: ``.data`` on torch tensors, read, written in place, and assigned.

``.data`` is the pre-0.4 way to reach a tensor's storage behind autograd's
back. Each rule acts only on receivers the shared provenance analysis
(:mod:`torchfix_codemods.analysis.facts.tensors`) proves to be torch tensors: a
third of the ``.data`` in real code is something else (``torch.utils.data``,
``args.data``, a dataset's ``.data``, numpy's memoryview).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.analysis.core.statements import consecutive_runs, own_line
from torchfix_codemods.analysis.core.syntax import is_zero_index
from torchfix_codemods.analysis.facts.grad_mode import grad_mode_at
from torchfix_codemods.analysis.facts.tensors import (
    data_use,
    metadata_only,
    one_element_index_reason,
    provenance,
    written_later,
    zero_dim_index_reason,
)
from torchfix_codemods.analysis.facts.values import no_history
from torchfix_codemods.analysis.vocabulary.torch_api import PARAMETER_CLASSES
from torchfix_codemods.edits.expressions import method_call
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import wrapped_in_with
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class DataRead(Rule):
    """## What it does
    Rewrites reads of `t.data` on torch tensors to `t.detach()`.

    ## Why is this bad?
    `.data` is the pre-0.4 way to get a tensor without history. It hides
    in-place changes from autograd (its version counter is separate), so a
    mistake computes wrong gradients silently, where `.detach()` raises.

    ## Example
    ```python
    _, pred = torch.max(logits.data, 1)
    ```

    ## Use instead
    ```python
    _, pred = torch.max(logits.detach(), 1)
    ```

    ## Fix safety
    `x.data[0]` is reported without a fix when nothing shows whether `x` is
    0-dim: on a 0-dim tensor (a loss) `x.detach()[0]` raises `IndexError` like
    the original (measured on torch 2.13), and `x.item()` is the fix (TFC105
    makes it where the 0-dim shape is shown). Otherwise safe when the receiver
    is known to be a torch tensor and the result is only read: `.detach()`
    shares the storage, dtype and device and does not require grad. Unsafe when
    the value is assigned to a name that is later written in place, or kept
    where in-place writes are expected (`nn.Parameter(w.data)`,
    `register_buffer(..., w.data)`, `obj.attr = w.data`): the shared version
    counter can then make a backward raise where `.data` gave wrong gradients.
    Outputs of submodules reached through an instance (`rnd_model.predictor(x)`
    where this file's `RNDModel.__init__` assigns `self.predictor` a module) and
    parameters of layers passed to functions (see TFC103) count as tensors, and
    so does a function's parameter when every call of the function in this file
    passes a tensor and no other file of the run calls it (a function also used
    as a value, `map(f, xs)`, is not followed).
    Never fixed or reported when the receiver is not known to be a tensor:
    `args.data`, a dataset's `.data`, numpy's `arr.data` (a memoryview),
    `PackedSequence.data`, `torch.utils.data`. Where `.detach()` is already
    there (`t.data.detach()`, `t.detach().data`), only `.data` goes:
    `t.detach()`. In a function that TFC202 decorates with `@torch.no_grad()` in
    the same `fix` run, `.data` is left alone from the next round on: the read
    then runs with autograd off. Stays quiet where `.data` hides nothing, so a
    rewrite would be churn: the tensor can carry no autograd history (a gradient
    `p.grad`, an integer or bool tensor such as `argmax` indices, labels or a
    comparison, a fresh factory tensor, a `DataLoader` batch, a value computed
    under `torch.no_grad()`/`inference_mode`); the read itself runs with
    autograd off; the value goes straight into a Python number
    (`loss.data.item()`, `.tolist()`: the same number either way); or the read
    is part of the value of a `t.data = ...` assignment, which TFC104 reports as
    a whole, or an argument of a write through `.data` that TFC103 leaves alone
    (`p.grad.data.add_(wd, p.data)`); or only the tensor's shape, dtype or
    device is read (`y.view_as(w.data)`, `reshape_as`/`expand_as`/`type_as`,
    `w.data.numel()`, `.size()`, `.shape`, `w.data.new(...)`/`new_zeros(...)`,
    `torch.zeros_like(w.data)`), or it is only compared with `None`
    (`m.bias.data is not None`: both spellings are a tensor). Measured on torch 2.13: a gradient filled
    by `backward()` has `requires_grad` False and no `grad_fn` (unless the file
    asks for `create_graph=True`, where the rule still acts); an `argmax` result
    is `int64` and cannot require grad; none of those metadata reads lets a
    gradient reach `w`, and each gives the same shape, dtype, device and
    `requires_grad` through `w.data` as through `w.detach()`. Writes through `.data` are TFC103 and
    TFC104; `loss.data[0]` is TFC105.

    ## References
    - [`torch.Tensor.detach`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    - [Autograd mechanics: in-place correctness checks](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    - [PyTorch 0.4.0 migration guide: what about `.data`?](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    """

    code = "TFC102"
    name = "data-read"
    project_facts = ("module-classes",)
    message = "`.data` bypasses autograd's checks: use `.detach()`"
    safety = Safety.SAFE
    triggers = (".data",)
    needs = Needs.any_of(".data")
    valid = (
        "import torch\nimport torch.utils.data\nloader = torch.utils.data.DataLoader([])\n",
        "import argparse\nargs = argparse.ArgumentParser().parse_args()\nprint(args.data)\n",
        "import numpy as np\narr = np.zeros(3)\nbuf = arr.data\n",
        "import torch\nx = torch.randn(3).detach()\n",
        "def f(batch):\n    return batch.data\n",
    )
    invalid = (
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\nv = w.data\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\nv = w.detach()\n",
        ),
        Example(
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\nout = net(torch.randn(4, 3))\n"
            "_, pred = torch.max(out.data, 1)\n",
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\nout = net(torch.randn(4, 3))\n"
            "_, pred = torch.max(out.detach(), 1)\n",
        ),
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\nv = w.data\nv.add_(1)\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\nv = w.detach()\nv.add_(1)\n",
            unsafe=True,
        ),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data" or self.qualified_name(node) is not None:
            return
        use, _ = data_use(self.names, node)
        if use != "read" or _zero_index_of_scalar(self, node):
            return
        found = provenance(self.names, node.value)
        if not found.is_tensor or _churn(self, node):
            return
        if _indexed_by_zero(self, node):
            # `x.data[0]` whose dimensions are unknown: on a 0-dim tensor (the torch 0.3 way
            # of reading a loss) `x.detach()[0]` raises like the original, and `.item()` is
            # the fix, which only a person who knows the shape can choose.
            self.report(node, self.message + " (`x.data[0]`: if `x` is 0-dim, as a loss is, "
                        "use `x.item()`; `x.detach()[0]` would still raise)", reason=found.reason)
            return
        later = written_later(self.names, node)
        stored = _stored_for_writing(self, node)
        safety = Safety.SAFE if later is False and stored is None else Safety.UNSAFE
        new = _detached(self, node)
        message = self.message
        if safety is Safety.UNSAFE:
            where = stored or "the value is written in place later"
            message += f" (unsafe: {where}; through `.detach()` autograd sees those writes)"
        description = "replace `.data` with `.detach()`"
        self.report(node, message, fix=Fix(safety, description, [(node, new)]),
                    reason=found.reason)


def _churn(rule: Rule, node: cst.Attribute) -> bool:
    """Rewriting this ``t.data`` read changes nothing a reviewer would accept as a fix.

    * ``t`` can carry no autograd history (a gradient, an integer or bool tensor, a fresh
      factory tensor, a loader batch, a value computed under ``no_grad``): ``.data`` hides
      nothing from autograd there;
    * the read runs with autograd off: no graph records what is done with either spelling;
    * the value goes straight into a Python number (``t.data.item()``, ``.tolist()``),
      which is the same float either way;
    * the read is part of the value of a ``x.data = ...`` assignment (TFC104), which stays:
      half a modernised line is churn;
    * only the tensor's metadata is read (``x.view_as(w.data)``, ``w.data.numel()``,
      ``w.data.new(...)``): nothing computed there can carry its history.
    """
    decorators = rule.context.options.inference_decorators
    if metadata_only(rule.names, node) is not None:
        return True
    if not _is_detach_call(node.value) and \
            no_history(rule.names, node.value, decorators) is not None:
        return True  # (`t.detach().data` is not churn: it is `t.detach()` spelled twice)
    if grad_mode_at(rule.names, node, decorators).enabled is False:
        return True
    parent = rule.names.parent(node)
    while isinstance(parent, cst.Subscript) and parent.value is node:
        node, parent = parent, rule.names.parent(parent)  # `out.data[0][0].item()`
    call = rule.names.parent(parent) if isinstance(parent, cst.Attribute) else None
    if isinstance(parent, cst.Attribute) and parent.value is node and \
            parent.attr.value in ("item", "tolist") and isinstance(call, cst.Call) and \
            call.func is parent:
        return True
    return _in_data_assignment(rule, node) or _argument_of_kept_write(rule, node)


def _argument_of_kept_write(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is an argument of an in-place write through ``.data`` into a tensor without
    history (``p.grad.data.add_(wd, p.data)``): TFC103 leaves that write alone, and
    modernising only its argument would be half a line of churn."""
    decorators = rule.context.options.inference_decorators
    for ancestor in rule.names.ancestors(node):
        if isinstance(ancestor, cst.Arg):
            call = rule.names.parent(ancestor)
            func = call.func if isinstance(call, cst.Call) else None
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and \
                    isinstance(func.value, cst.Attribute) and func.value.attr.value == "data":
                return no_history(rule.names, func.value.value, decorators) is not None
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _in_data_assignment(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is inside the value of ``x.data = ...``."""
    child = node
    for ancestor in rule.names.ancestors(node):
        if isinstance(ancestor, cst.Assign):
            return ancestor.value is child and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "data"
                for t in ancestor.targets)
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = ancestor
    return False


def _detached(rule: Rule, node: cst.Attribute) -> cst.BaseExpression:
    """``t.detach()`` for ``t.data``; but ``t`` alone where ``.detach()`` is already
    there (``t.data.detach()``, ``t.detach().data``), which would otherwise read
    ``t.detach().detach()``. The receiver keeps its own parentheses."""
    parent = rule.names.parent(node)
    call = rule.names.parent(parent) if isinstance(parent, cst.Attribute) else None
    if _is_detach_call(node.value) or (isinstance(call, cst.Call) and call.func is parent
                                        and _is_detach_call(call)):
        return node.value
    return method_call(node.value, "detach").with_changes(lpar=node.lpar, rpar=node.rpar)


def _is_detach_call(node: cst.BaseExpression) -> bool:
    return (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "detach")




def _stored_for_writing(rule: Rule, node: cst.Attribute) -> str | None:
    """Why the value read through ``.data`` may be written in place later, else None.

    ``nn.Parameter(w.data)``, ``register_buffer(name, w.data)`` and ``obj.attr = w.data``
    keep the storage somewhere an optimizer or later code updates in place; through
    ``.detach()`` those writes share ``w``'s version counter.
    """
    parent = rule.names.parent(node)
    if isinstance(parent, cst.Arg):
        call = rule.names.parent(parent)
        if isinstance(call, cst.Call):
            func = call.func
            if rule.qualified_name(func) in PARAMETER_CLASSES:
                return "the value becomes an `nn.Parameter`"
            if isinstance(func, cst.Attribute) and func.attr.value in (
                    "register_buffer", "register_parameter"):
                return f"the value is kept by `{func.attr.value}`"
    if isinstance(parent, cst.Assign) and parent.value is node and any(
            not isinstance(target.target, cst.Name) for target in parent.targets):
        return "the value is stored on an object"
    return None


def _indexed_by_zero(rule: Rule, node: cst.Attribute) -> bool:
    """``t.data[0]``: the subscript reads the first element or the first row."""
    parent = rule.names.parent(node)
    return isinstance(parent, cst.Subscript) and parent.value is node and is_zero_index(parent)


def _zero_index_of_scalar(rule: Rule, node: cst.Attribute) -> bool:
    """``loss.data[0]`` on a 0-dim loss: TFC105 rewrites the whole subscript."""
    parent = rule.names.parent(node)
    return (isinstance(parent, cst.Subscript) and parent.value is node and is_zero_index(parent)
            and (zero_dim_index_reason(rule.names, parent) is not None
                 or one_element_index_reason(rule.names, parent) is not None))


class DataInplace(Rule):
    """## What it does
    Rewrites in-place writes through `.data` (`p.data.add_(...)`,
    `m.weight.data.normal_(...)`, `p.grad.data.zero_()`, `t.data[i] = v`,
    `t.data += d`) into the same write on the tensor itself under
    `with torch.no_grad():`. Consecutive such statements share one block.
    `nn.init.normal_(m.weight.data, ...)` becomes `nn.init.normal_(m.weight, ...)`:
    every `torch.nn.init` function already writes under `torch.no_grad()`.

    The receiver must be known to be a tensor: a layer's `.weight`/`.bias`
    where the layer is built from a `torch.nn` class, a loop variable over an
    `nn.ModuleList`/`nn.Sequential` or over `.modules()`, or the parameter `m`
    of an init function handed to `model.apply(...)` (in this file or, through
    the project index, in another; a function defined inside another and applied
    there counts too), or of a function or method every call of which in this
    file passes a module; or a parameter every call of which in this file passes
    a tensor (`init_wt_normal(self.embedding.weight)`), when no other file of
    the run calls the function; or a name unpacked from the tuple a function of
    this file returns, where every `return` puts a tensor at its position
    (`input_param, optimizer = get_input_param_optimizer(img)`).

    ## Why is this bad?
    `.data` hides the write from autograd: where a live graph saved the tensor
    (a GAN stepping D before G's backward), gradients come out silently wrong.
    Under `torch.no_grad()` the write is allowed on a leaf and autograd still
    checks that no saved tensor was changed.

    ## Example
    ```python
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    ```

    ## Use instead
    ```python
    for p in model.parameters():
        with torch.no_grad():
            p.add_(p.grad, alpha=-lr)
    ```

    ## Fix safety
    Unsafe: on init, SGD, EMA and target-network code the results are
    bit-identical, but where a graph saved the tensor the new code raises
    instead of silently computing wrong gradients, which is a change in
    behaviour (the right one). A bare `p.add_()` without `no_grad` raises on a
    leaf, so it is never emitted. Writes nested in a larger expression are
    reported without a fix. Only for receivers known to be tensors.
    Stays quiet where the write hides nothing from autograd: inside an
    existing `no_grad` block or function (an EMA or a manual SGD step already
    written that way), and on a tensor that can carry no history, above all a
    gradient (`p.grad.data.clamp_(-1, 1)`, `p.grad.data.zero_()`): measured on
    torch 2.13, a gradient filled by `backward()` has `requires_grad` False and
    no `grad_fn`, so `.data` changes nothing there (a file that asks for
    `create_graph=True` is the exception, and is still fixed).
    For a `torch.nn.init` call only `.data` is dropped (unsafe for the same
    reason): measured on torch 2.13, `nn.init.normal_(w, 0.0, 0.02)` and
    `nn.init.zeros_`/`constant_` on a layer's parameter give bit-identical
    values to the `.data` spelling with the same seed, and the parameter stays
    a leaf that requires grad (the function runs under `no_grad`); where a live
    graph saved the parameter (`(w * w).sum()`), `backward()` then raises
    "modified by an inplace operation" where the `.data` spelling returned
    wrong gradients silently.

    ## References
    - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [Autograd mechanics: in-place operations with autograd](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    - [PyTorch 0.4.0 migration guide: what about `.data`?](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    - [`torch.nn.init`: "all the functions in this module ... will be used to initialize
      neural network parameters, so they all run in `torch.no_grad()` mode"](https://docs.pytorch.org/docs/stable/nn.init.html)
    """

    code = "TFC103"
    name = "data-inplace"
    project_facts = ("module-classes",)
    message = "in-place write through `.data` hides it from autograd: write under `torch.no_grad()`"
    safety = Safety.UNSAFE
    triggers = (".data",)
    needs = Needs.any_of(".data")
    valid = (
        "import torch\nw = torch.randn(3, requires_grad=True)\nwith torch.no_grad():\n"
        "    w.add_(1)\n",
        "import numpy as np\narr = np.zeros(3)\narr.data\n",
        "class D:\n    def reset(self):\n        self.data.clear()\n",
    )
    invalid = (
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\nw.data.add_(1)\n",
            "import torch\nw = torch.randn(3, requires_grad=True)\nwith torch.no_grad():\n"
            "    w.add_(1)\n",
            unsafe=True,
        ),
        Example(
            "import torch.nn as nn\nm = nn.Linear(3, 2)\nm.weight.data.normal_(0, 0.02)\n"
            "m.bias.data.zero_()\n",
            "import torch.nn as nn\nimport torch\n\nm = nn.Linear(3, 2)\nwith torch.no_grad():\n"
            "    m.weight.normal_(0, 0.02)\n    m.bias.zero_()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nw = torch.randn(3, requires_grad=True)\ny = w.data.mul_(2) + 1\n",
        ),
        Example(
            "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 1)\nnn.init.zeros_(conv.bias.data)\n",
            "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 1)\nnn.init.zeros_(conv.bias)\n",
            unsafe=True,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._pending: list[tuple[cst.Attribute, cst.SimpleStatementLine | None, str]] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data" or self.qualified_name(node) is not None:
            return
        use, outer = data_use(self.names, node)
        if use != "inplace":
            return
        found = provenance(self.names, node.value)
        if not found.is_tensor:
            return
        if self._initialized(node):
            # `nn.init.normal_(w.data, ...)`: every `torch.nn.init` function writes under
            # `torch.no_grad()` itself, so passing the tensor is the whole fix.
            new = node.value.with_changes(lpar=node.lpar, rpar=node.rpar)
            self.report(node, fix=Fix(Safety.UNSAFE, "pass the tensor itself: `torch.nn.init` "
                                      "functions write under `torch.no_grad()`", [(node, new)]),
                        reason=found.reason)
            return
        if self._hides_nothing(node):
            return
        self._pending.append((node, own_line(self.names, outer), found.reason))

    def _hides_nothing(self, node: cst.Attribute) -> bool:
        """The write through ``.data`` hides nothing from autograd: it runs with autograd off
        (a ``no_grad`` block or function, so no graph records it either way), or the tensor
        written can carry no history (a gradient ``p.grad``, an integer tensor, a fresh
        copy made under ``no_grad``). Dropping ``.data`` there is churn."""
        decorators = self.context.options.inference_decorators
        return grad_mode_at(self.names, node, decorators).enabled is False or \
            no_history(self.names, node.value, decorators) is not None

    def _initialized(self, node: cst.Attribute) -> bool:
        """``node`` is the tensor a ``torch.nn.init`` function fills (its first argument)."""
        arg = self.names.parent(node)
        call = self.names.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (isinstance(call, cst.Call) and isinstance(arg, cst.Arg)):
            return False
        qualified = self.qualified_name(call.func) or ""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        first = positional[0] if positional else keyword_arg(call, "tensor")
        return qualified.startswith("torch.nn.init.") and first is arg

    def leave_Module(self, original_node: cst.Module) -> None:
        whole: list[tuple[cst.Attribute, cst.SimpleStatementLine, str]] = []
        for node, line, reason in self._pending:
            if line is None:
                self.report(node, self.message + "; the write is part of a larger expression, "
                            "so no fix: move it to its own statement", reason=reason)
            else:
                whole.append((node, line, reason))
        for group in consecutive_runs(self.names, whole, lambda item: item[1]):
            self._fix_group(group)

    def _fix_group(self, group: list[tuple[cst.Attribute, cst.SimpleStatementLine, str]]) -> None:
        lines: list[cst.SimpleStatementLine] = []
        by_line: dict[int, list[cst.Attribute]] = {}
        for node, line, _ in group:
            if id(line) not in by_line:
                lines.append(line)
                by_line[id(line)] = []
            by_line[id(line)].append(node)
        rewritten = [_drop_data(line, by_line[id(line)]) for line in lines]
        first = lines[0]
        try:
            reference = self.context.imports.reference("torch.no_grad", first)
        except ImportUnavailable as error:
            for node, _, reason in group:
                self.report(node, self.message + f" (no fix: {error})", reason=reason)
            return
        imports = (reference.needs,) if reference.needs else ()
        replacements = wrapped_in_with(lines, cst.Call(func=reference.expression), rewritten)
        fix = Fix(Safety.UNSAFE, "write under `torch.no_grad()` instead of through `.data`",
                  replacements, imports=imports)  # type: ignore[arg-type]
        for node, _, reason in group:
            self.report(node, fix=fix, reason=reason)


class _DropData(cst.CSTTransformer):
    def __init__(self, targets: list[cst.Attribute]) -> None:
        super().__init__()
        self._targets = {id(target) for target in targets}

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute
                        ) -> cst.BaseExpression:
        if id(original_node) in self._targets:
            return updated_node.value
        return updated_node


def _drop_data(line: cst.SimpleStatementLine, targets: list[cst.Attribute]
               ) -> cst.SimpleStatementLine:
    return line.visit(_DropData(targets))  # type: ignore[return-value]


class DataAssign(Rule):
    """## What it does
    Reports `t.data = value` on torch tensors.

    ## Why is this bad?
    Assigning `.data` swaps a parameter's storage behind autograd's and the
    optimizer's back; shape or dtype can change silently.

    ## Example
    ```python
    model.fc.bias.data = torch.zeros_like(model.fc.bias)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        model.fc.bias.copy_(torch.zeros_like(model.fc.bias))
    ```
    or `torch.utils.swap_tensors(p, new)` when the shape changes.

    ## Fix safety
    No fix: there is no mechanical equivalent. `p.detach() = y` is a
    SyntaxError, and a new `nn.Parameter` breaks the optimizer's reference.
    `copy_` needs the same shape, which the tool cannot prove.

    ## References
    - [`torch.Tensor.copy_`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.copy_.html)
    - [`torch.utils.swap_tensors`](https://docs.pytorch.org/docs/stable/generated/torch.utils.swap_tensors.html)
    """

    code = "TFC104"
    name = "data-assign"
    project_facts = ("module-classes",)
    message = ("assigning `.data` swaps storage behind autograd: use `with torch.no_grad(): "
               "t.copy_(value)` for same-shape values, or `torch.utils.swap_tensors`")
    safety = Safety.NONE
    triggers = (".data",)
    needs = Needs.any_of(".data")
    valid = (
        "from torch.utils.data import Dataset\nclass D(Dataset):\n    def __init__(self, x):\n"
        "        self.data = x\n",
        "class Box:\n    pass\nb = Box()\nb.data = 3\n",
    )
    invalid = (
        Example("import torch\nw = torch.randn(3, requires_grad=True)\nw.data = torch.zeros(3)\n"),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data" or self.qualified_name(node) is not None:
            return
        use, _ = data_use(self.names, node)
        if use != "assign":
            return
        found = provenance(self.names, node.value)
        if found.is_tensor:
            self.report(node, reason=found.reason)


RULES = [DataRead, DataInplace, DataAssign]
