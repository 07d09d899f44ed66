"""TFC101-TFC105: `.numpy()` and `.data` on torch tensors.

Each rule rewrites only what the shared provenance analysis
(:mod:`torchfix_codemods.analysis.tensors`) proves is a torch tensor, and puts
its evidence in the finding's ``reason``. The facts behind every decision are
in RULES.md (TFC1xx).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.imports import ImportUnavailable
from torchfix_codemods.analysis.tensors import (
    Provenance,
    data_use,
    imports_torch,
    in_no_grad,
    provenance,
    scalar_reason,
    written_later,
)
from torchfix_codemods.model import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule

_DETACHED = frozenset({"detach", "data"})


def _method(receiver: cst.BaseExpression, name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)))


def _atom(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` ready to take ``.method()``: parenthesised unless it already binds tightly."""
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString)):
        return expr
    if expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


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
    return _method(_method(_method(_atom(base), "detach"), "cpu"), "numpy")


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
    """

    code = "TFC101"
    name = "numpy-on-tensor"
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
            new = _method(new, "copy")
        name = "np.array" if copy else "np.asarray"
        fix = Fix(Safety.SAFE, f"replace `{name}(t)` with `t.detach().cpu().numpy()`"
                  + (".copy()" if copy else ""),
                  [(call, new.with_changes(lpar=call.lpar, rpar=call.rpar))])
        self.report(call, f"`{name}` on a tensor calls `.numpy()`, which fails on a tensor that "
                    "requires grad or lives on the GPU", fix=fix, reason=found.reason)


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
    Safe when the receiver is known to be a torch tensor and the result is only
    read: `.detach()` shares the storage, dtype and device and does not require
    grad. Unsafe when the value is assigned to a name that is later written in
    place, or kept where in-place writes are expected (`nn.Parameter(w.data)`,
    `register_buffer(..., w.data)`, `obj.attr = w.data`): the shared version
    counter can then make a backward raise where `.data` gave wrong gradients.
    Never fixed or reported when the receiver is not known to be a tensor:
    `args.data`, a dataset's `.data`, numpy's `arr.data` (a memoryview),
    `PackedSequence.data`, `torch.utils.data`.
    Writes through `.data` are TFC103 and TFC104; `loss.data[0]` is TFC105.
    """

    code = "TFC102"
    name = "data-read"
    message = "`.data` bypasses autograd's checks: use `.detach()`"
    safety = Safety.SAFE
    triggers = (".data",)
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
        if not found.is_tensor:
            return
        later = written_later(self.names, node)
        stored = _stored_for_writing(self, node)
        safety = Safety.SAFE if later is False and stored is None else Safety.UNSAFE
        new = _method(_atom(node.value), "detach").with_changes(lpar=node.lpar, rpar=node.rpar)
        message = self.message
        if safety is Safety.UNSAFE:
            where = stored or "the value is written in place later"
            message += f" (unsafe: {where}; through `.detach()` autograd sees those writes)"
        self.report(node, message, fix=Fix(safety, "replace `.data` with `.detach()`",
                                           [(node, new)]), reason=found.reason)


_KEEPERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


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
            if rule.qualified_name(func) in _KEEPERS:
                return "the value becomes an `nn.Parameter`"
            if isinstance(func, cst.Attribute) and func.attr.value in (
                    "register_buffer", "register_parameter"):
                return f"the value is kept by `{func.attr.value}`"
    if isinstance(parent, cst.Assign) and parent.value is node and any(
            not isinstance(target.target, cst.Name) for target in parent.targets):
        return "the value is stored on an object"
    return None


def _zero_index_of_scalar(rule: Rule, node: cst.Attribute) -> bool:
    """``loss.data[0]`` on a 0-dim loss: TFC105 rewrites the whole subscript."""
    parent = rule.names.parent(node)
    return (isinstance(parent, cst.Subscript) and _is_zero_index(parent)
            and scalar_reason(rule.names, node.value) is not None)


def _is_zero_index(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    element = subscript.slice[0].slice
    return (isinstance(element, cst.Index) and isinstance(element.value, cst.Integer)
            and element.value.value == "0")


class DataInplace(Rule):
    """## What it does
    Rewrites in-place writes through `.data` (`p.data.add_(...)`,
    `m.weight.data.normal_(...)`, `p.grad.data.zero_()`, `t.data[i] = v`,
    `t.data += d`) into the same write on the tensor itself under
    `with torch.no_grad():`. Consecutive such statements share one block.

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
    leaf, so it is never emitted; inside an existing `no_grad` block or
    function only `.data` is dropped. Writes nested in a larger expression are
    reported without a fix. Only for receivers known to be tensors.
    """

    code = "TFC103"
    name = "data-inplace"
    message = "in-place write through `.data` hides it from autograd: write under `torch.no_grad()`"
    safety = Safety.UNSAFE
    triggers = (".data",)
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
        self._pending.append((node, _whole_statement(self, outer), found.reason))

    def leave_Module(self, original_node: cst.Module) -> None:
        groups: list[list[tuple[cst.Attribute, cst.SimpleStatementLine, str]]] = []
        for node, line, reason in self._pending:
            if line is None:
                self.report(node, self.message + "; the write is part of a larger expression, "
                            "so no fix: move it to its own statement", reason=reason)
                continue
            last = groups[-1][-1][1] if groups else None
            if last is not None and (last is line or _next_sibling(self, last) is line) \
                    and in_no_grad(self.names, line) == in_no_grad(self.names, last):
                groups[-1].append((node, line, reason))
            else:
                groups.append([(node, line, reason)])
        for group in groups:
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
        replacements: list[tuple[cst.CSTNode, object]]
        imports = ()
        if in_no_grad(self.names, first):
            replacements = list(zip(lines, rewritten, strict=True))
            description = "drop `.data` (already under `no_grad`)"
        else:
            try:
                reference = self.context.imports.reference("torch.no_grad", first)
            except ImportUnavailable as error:
                for node, _, reason in group:
                    self.report(node, self.message + f" (no fix: {error})", reason=reason)
                return
            imports = (reference.needs,) if reference.needs else ()
            block = cst.With(
                items=[cst.WithItem(cst.Call(func=reference.expression))],
                body=cst.IndentedBlock(body=[line.with_changes(leading_lines=[])
                                             if i else line.with_changes(leading_lines=[])
                                             for i, line in enumerate(rewritten)]),
                leading_lines=first.leading_lines,
            )
            replacements = [(first, block)]
            replacements += [(line, cst.RemoveFromParent()) for line in lines[1:]]
            description = "write under `torch.no_grad()` instead of through `.data`"
        fix = Fix(Safety.UNSAFE, description, replacements, imports=imports)  # type: ignore[arg-type]
        for node, _, reason in group:
            self.report(node, fix=fix, reason=reason)


def _whole_statement(rule: Rule, outer: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The one-statement line that ``outer`` makes up entirely, else None."""
    statement = rule.names.parent(outer)
    if isinstance(outer, cst.Call):
        if not isinstance(statement, cst.Expr):
            return None
    elif isinstance(outer, cst.AssignTarget):
        statement = rule.names.parent(outer)
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            return None
    elif isinstance(outer, cst.AugAssign):
        statement = outer
    else:
        return None
    line = rule.names.parent(statement)  # type: ignore[arg-type]
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def _next_sibling(rule: Rule, line: cst.SimpleStatementLine) -> cst.CSTNode | None:
    parent = rule.names.parent(line)
    body = getattr(parent, "body", None)
    if not isinstance(body, (list, tuple)):
        return None
    for index, statement in enumerate(body):
        if statement is line:
            return body[index + 1] if index + 1 < len(body) else None
    return None


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
    """

    code = "TFC104"
    name = "data-assign"
    message = ("assigning `.data` swaps storage behind autograd: use `with torch.no_grad(): "
               "t.copy_(value)` for same-shape values, or `torch.utils.swap_tensors`")
    safety = Safety.NONE
    triggers = (".data",)
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


class IndexZeroDim(Rule):
    """## What it does
    Rewrites `loss.data[0]` and `loss[0]` on a 0-dim tensor to `loss.item()`.

    ## Why is this bad?
    Before torch 0.4 a loss was a 1-element tensor; since then it is 0-dim and
    indexing it raises `IndexError: invalid index of a 0-dim tensor`.

    ## Example
    ```python
    print(loss.data[0])
    ```

    ## Use instead
    ```python
    print(loss.item())
    ```

    ## Fix safety
    Safe: only applied where the receiver is known to be 0-dim (the output of
    a reducing loss, `F.*_loss` without `reduction='none'`, a full `.sum()` or
    `.mean()`, or arithmetic of these with plain numbers), where the original
    always raises. Without that evidence nothing is reported.
    """

    code = "TFC105"
    name = "index-zero-dim"
    message = "indexing a 0-dim tensor raises `IndexError`: use `.item()`"
    safety = Safety.SAFE
    triggers = ("[0]",)
    valid = (
        "import torch\nx = torch.randn(3)\ny = x[0]\n",
        "import torch.nn as nn\ncrit = nn.CrossEntropyLoss(reduction='none')\n"
        "loss = crit(a, b)\nprint(loss.data[0])\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\nloss = F.mse_loss(torch.zeros(2), "
            "torch.ones(2))\nprint(loss.data[0])\n",
            "import torch\nimport torch.nn.functional as F\nloss = F.mse_loss(torch.zeros(2), "
            "torch.ones(2))\nprint(loss.item())\n",
        ),
        Example(
            "import torch\nx = torch.randn(3)\ns = x.sum()\nv = s[0]\n",
            "import torch\nx = torch.randn(3)\ns = x.sum()\nv = s.item()\n",
        ),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not _is_zero_index(node):
            return
        parent = self.names.parent(node)
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                isinstance(parent, cst.AugAssign) and parent.target is node):
            return
        receiver = node.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
            receiver = receiver.value
        reason = scalar_reason(self.names, receiver)
        if reason is None:
            return
        new = _method(_atom(receiver), "item").with_changes(lpar=node.lpar, rpar=node.rpar)
        self.report(node, fix=Fix(Safety.SAFE, "replace `[0]` with `.item()`", [(node, new)]),
                    reason=reason)


RULES = [NumpyOnTensor, DataRead, DataInplace, DataAssign, IndexZeroDim]
