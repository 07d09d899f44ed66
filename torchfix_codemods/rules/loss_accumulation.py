"""TFC107: a loss tensor accumulated over a training loop, keeping every step's graph alive.

``total += loss`` and ``losses.append(loss)`` come from code written when a
loss was a 1-element ``Variable``; today each ``loss`` carries its whole
autograd graph, and the total keeps them all.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import NameIndex, Scope
from torchfix_codemods.analysis.core.walk import names_in, walk
from torchfix_codemods.analysis.facts.grad_mode import in_no_grad
from torchfix_codemods.analysis.facts.tensors import provenance, scalar_reason
from torchfix_codemods.analysis.facts.values import tensor_facts
from torchfix_codemods.analysis.vocabulary.torch_api import AUTOGRAD_CALLS
from torchfix_codemods.edits.expressions import method_call
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_NUMERIC_SINKS = frozenset({"print", "float", "int", "round", "str", "len", "format", "repr",
                            "abs"})
_NUMERIC_MODULES = ("numpy.", "statistics.", "math.")


class AccumulateLossTensor(Rule):
    """## What it does
    Finds `total += loss` and `losses.append(loss)` in a training loop, where
    `loss` is a scalar loss tensor, and accumulates `loss.item()` (or
    `loss.detach()` when the total is used as a tensor later).

    ## Why is this bad?
    Each `loss` carries its whole autograd graph. Adding it to a running total
    or a list keeps every step's graph alive until the total is dropped:
    memory grows with the epoch (measured: 144 graph nodes against 0), and on
    the GPU training runs out of memory after some hundred steps.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        total += loss
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        total += loss.item()
    ```

    ## Fix safety
    Safe under these conditions, otherwise nothing is reported: the loss is a
    scalar tensor (a reducing loss, `.mean()`/`.sum()`), the accumulation is in
    a loop of a function that calls `.backward()` (a training loop, so the
    total is for logging), the total is never differentiated (no `.backward()`
    or `autograd.grad` on it or on a value computed from it), and it is not
    under `no_grad` nor provably free of grad (computed from `.detach()`ed
    values, integer results, data), since then there is no graph to keep.
    `.item()` is used when every later use of the total is numeric (printing,
    formatting, `float()`, numpy); else `.detach()`, which keeps it a tensor.

    ## References
    - [PyTorch FAQ: don't accumulate history across your training loop](https://docs.pytorch.org/docs/stable/notes/faq.html)
    - [`torch.Tensor.item`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.item.html)
    """

    code = "TFC107"
    name = "accumulate-loss-tensor"
    project_facts = ("module-classes",)
    message = ("accumulating a loss tensor keeps every step's autograd graph alive: "
               "accumulate `.item()` or `.detach()`")
    safety = Safety.SAFE
    triggers = ("+=", "append")
    needs = Needs.any_of("+=", ".append") \
        & Needs.any_of(".backward")  # `_has_other_backward`: it reports only beside one
    valid = (
        "import torch.nn.functional as F\ndef train(model, loader, opt):\n    total = 0\n"
        "    for x, y in loader:\n        loss = F.mse_loss(model(x), y)\n        total += loss\n"
        "    total.backward()\n",
        "import torch.nn.functional as F\ndef compute(outs, ys):\n    total = 0\n"
        "    for o, y in zip(outs, ys):\n        total += F.mse_loss(o, y)\n    return total\n",
        "import torch.nn.functional as F\ndef train(model, loader):\n    total = 0\n"
        "    for x, y in loader:\n        loss = F.mse_loss(model(x), y, reduction='none')\n"
        "        loss.sum().backward()\n        total += loss\n",
    )
    invalid = (
        Example(
            "import torch.nn.functional as F\ndef train(model, loader):\n    total = 0\n"
            "    for x, y in loader:\n        loss = F.mse_loss(model(x), y)\n"
            "        loss.backward()\n        total += loss\n    print(total)\n",
            "import torch.nn.functional as F\ndef train(model, loader):\n    total = 0\n"
            "    for x, y in loader:\n        loss = F.mse_loss(model(x), y)\n"
            "        loss.backward()\n        total += loss.item()\n    print(total)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\ndef train(model, loader):\n"
            "    losses = []\n    for x, y in loader:\n        loss = F.mse_loss(model(x), y)\n"
            "        loss.backward()\n        losses.append(loss)\n    return torch.stack(losses)\n",
            "import torch\nimport torch.nn.functional as F\ndef train(model, loader):\n"
            "    losses = []\n    for x, y in loader:\n        loss = F.mse_loss(model(x), y)\n"
            "        loss.backward()\n        losses.append(loss.detach())\n"
            "    return torch.stack(losses)\n",
        ),
    )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._check(node, node.target, node.value, is_list=False)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "append"
                and isinstance(func.value, cst.Name) and len(node.args) == 1
                and node.args[0].keyword is None and not node.args[0].star):
            parent = self.names.parent(node)
            if isinstance(parent, cst.Expr):
                self._check(node, func.value, node.args[0].value, is_list=True)

    def _check(self, node: cst.CSTNode, accumulator: cst.Name, value: cst.BaseExpression,
               *, is_list: bool) -> None:
        names = self.names
        scalar = scalar_reason(names, value)
        if scalar is None or not provenance(names, value).is_tensor:
            return
        if in_no_grad(names, node) or innermost_loop(names, node) is None:
            return
        if tensor_facts(names, value, self.context.options.inference_decorators) \
                .requires_grad.is_no:
            return  # no graph to keep (computed from detached values, under no_grad...)
        function = names.enclosing(node, cst.FunctionDef)
        scope = names.scope_of(node)
        found = names.lookup(accumulator.value, scope)
        if found is None or found[0] is not scope:
            return
        owner_scope, bindings = found
        if not _initial_ok(bindings, is_list=is_list):
            return
        reads = [read for read in names.loads_in(owner_scope, accumulator.value)
                 if not _is_self_update(names, read, node)]
        if not _has_other_backward(function or names.module_scope.node, reads):
            return
        if any(_differentiated(names, read, 0) for read in reads):
            return
        numeric = all(_numeric_use(names, read, is_list=is_list) for read in reads)
        method = "item" if numeric else "detach"
        new = method_call(value, method)
        fix = Fix(Safety.SAFE, f"accumulate `.{method}()`", [(value, new)])
        self.report(node, fix=fix, reason=f"a scalar loss tensor: {scalar}")


def _initial_ok(bindings: list, *, is_list: bool) -> bool:
    """``total = 0`` / ``losses = []``: every binding is that or the accumulation itself."""
    initial = [b for b in bindings if b.kind in ("assign", "annassign")]
    others = [b for b in bindings if b.kind not in ("assign", "annassign", "augassign")]
    if others or not initial:
        return False
    for binding in initial:
        value = binding.value
        if is_list:
            if not (isinstance(value, cst.List) and not value.elements):
                return False
        elif not isinstance(value, (cst.Integer, cst.Float)):
            return False
    return True


def _is_self_update(names: NameIndex, read: cst.Name, node: cst.CSTNode) -> bool:
    if isinstance(node, cst.AugAssign):
        return read is node.target
    parent = names.parent(read)
    return isinstance(node, cst.Call) and parent is node.func


def _has_other_backward(where: cst.CSTNode, reads: list[cst.Name]) -> bool:
    """A ``.backward()`` in ``where`` (nested functions included) on something other than
    the accumulator."""
    excluded = {id(read) for read in reads}
    found = False

    def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        nonlocal found
        func = node.func if isinstance(node, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "backward" and \
                not any(id(name) in excluded for name in names_in(func.value)):
            found = True
        return not found

    walk(where, enter, lambda node: None)
    return found


def _differentiated(names: NameIndex, read: cst.CSTNode, depth: int) -> bool:
    """Whether ``read`` flows into ``.backward()``/``autograd.grad`` (one name hop at most)."""
    for ancestor in names.ancestors(read):
        if isinstance(ancestor, cst.Call):
            func = ancestor.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "scale"):
                return True
            qualified = names.qualified_name(func) or ""
            if qualified in AUTOGRAD_CALLS:
                return True
        if isinstance(ancestor, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            target = None
            if isinstance(ancestor, cst.Assign) and len(ancestor.targets) == 1:
                target = ancestor.targets[0].target
            elif isinstance(ancestor, (cst.AnnAssign, cst.AugAssign)):
                target = ancestor.target
            if not isinstance(target, cst.Name):
                return isinstance(ancestor, cst.Assign)  # stored somewhere: be conservative
            if depth >= 2:
                return True
            scope: Scope = names.scope_of(target)
            return any(_differentiated(names, other, depth + 1)
                       for other in names.loads_in(scope, target.value) if other is not target)
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
    return False


def _numeric_use(names: NameIndex, read: cst.CSTNode, *, is_list: bool) -> bool:
    """A use that is the same for a float total: printing, formatting, ``float()``, numpy."""
    current = read
    while True:
        parent = names.parent(current)
        if isinstance(parent, cst.BinaryOperation) and not is_list:
            if isinstance(parent.operator, cst.Modulo) and parent.right is current:
                return True
            current = parent
            continue
        if isinstance(parent, cst.FormattedStringExpression):
            return not is_list
        if isinstance(parent, cst.Element) or isinstance(parent, cst.Tuple):
            grand = names.parent(parent)
            if isinstance(grand, cst.Tuple):
                container = names.parent(grand)
                if isinstance(container, cst.BinaryOperation) and isinstance(
                        container.operator, cst.Modulo) and container.right is grand:
                    return not is_list
            return False
        if isinstance(parent, cst.Arg):
            call = names.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            func = call.func
            if isinstance(func, cst.Name) and func.value in _NUMERIC_SINKS:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value == "format":
                return not is_list
            qualified = names.qualified_name(func) or ""
            return qualified.startswith(_NUMERIC_MODULES)
        return False


RULES = [AccumulateLossTensor]
