"""TFC106-TFC107: pre-0.4 autograd idioms that now cost memory or copy for nothing.

``Variable`` and accumulating a loss tensor both come from code written when
a loss was a 1-element ``Variable``. The facts are in RULES.md (TFC1xx).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.calls import keyword_arg, positional_args
from torchfix_codemods.analysis.imports import ImportRemoval
from torchfix_codemods.analysis.names import NameIndex, Scope
from torchfix_codemods.analysis.tensors import in_no_grad, provenance, scalar_reason
from torchfix_codemods.model import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.tensors import _atom, _method

VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Factories that return a fresh leaf without grad: `Variable(torch.zeros(3))` is `torch.zeros(3)`.
_FRESH = frozenset({
    "tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
    "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like",
    "full_like", "rand_like", "randn_like", "randint_like", "FloatTensor", "LongTensor",
    "DoubleTensor", "IntTensor", "ByteTensor", "BoolTensor", "HalfTensor", "Tensor",
})


class VariableWrapper(Rule):
    """## What it does
    Removes `torch.autograd.Variable(x)`: `x.detach()` in general, `x` itself
    when `x` is a fresh tensor from a factory, `x.detach().requires_grad_()`
    for `requires_grad=True`. Removes the `Variable` import when it is left
    unused.

    ## Why is this bad?
    Since torch 0.4 tensors and Variables are one type. `Variable(x)` is not a
    no-op: it returns a new leaf, detached from `x`'s graph, which readers do
    not expect; the wrapper is dead weight that hides what happens.

    ## Example
    ```python
    from torch.autograd import Variable
    images = Variable(images.to(device))
    ```

    ## Use instead
    ```python
    images = images.to(device).detach()
    ```

    ## Fix safety
    Safe: `Variable(x)` accepts only tensors and returns exactly
    `x.detach()` (same storage, `requires_grad` from its argument, a leaf).
    `volatile=True` was removed in 0.4 and is ignored with a warning: reported
    without a fix, use `with torch.no_grad():`. Other arguments (positional
    flags, `*args`) are reported without a fix.
    """

    code = "TFC106"
    name = "variable-wrapper"
    message = "`Variable` is a no-longer-needed wrapper that detaches: use the tensor"
    safety = Safety.SAFE
    triggers = ("Variable",)
    valid = (
        "import torch\nx = torch.randn(3).detach()\n",
        "import tensorflow as tf\nv = tf.Variable(1.0)\n",
        "from torch.autograd import Variable\nok = isinstance(x, Variable)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.autograd import Variable\ny = torch.randn(3) * 2\n"
            "x = Variable(y)\n",
            "import torch\ny = torch.randn(3) * 2\nx = y.detach()\n",
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n"
            "x = Variable(torch.zeros(3), requires_grad=True)\n",
            "import torch\nx = torch.zeros(3).requires_grad_()\n",
        ),
        Example(
            "import torch\nw = torch.autograd.Variable(torch.ones(2) + 1)\n",
            "import torch\nw = (torch.ones(2) + 1).detach()\n",
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n"
            "x = Variable(torch.zeros(3), volatile=True)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified not in VARIABLE:
            return
        removal = self._import_removal(node.func)
        positional = positional_args(node)
        data = keyword_arg(node, "data") or (positional[0] if positional else None)
        volatile = keyword_arg(node, "volatile")
        requires = keyword_arg(node, "requires_grad")
        known = {"data", "volatile", "requires_grad"}
        extra = [a for a in node.args if a.star or (a.keyword is not None
                                                    and a.keyword.value not in known)]
        if volatile is not None:
            self.report(node, "`Variable(..., volatile=True)` was removed in torch 0.4 and is "
                        "ignored: run inference under `with torch.no_grad():`")
            return
        if data is None or extra or len(positional) > 1:
            self.report(node, self.message + " (no fix: arguments the tool does not rewrite)")
            return
        value = data.value
        new: cst.BaseExpression = _atom(value)
        fresh = _is_fresh(self.names, value)
        if not fresh:
            new = _method(new, "detach")
        if requires is not None:
            flag = requires.value
            if isinstance(flag, cst.Name) and flag.value == "True":
                new = _method(new, "requires_grad_")
            elif not (isinstance(flag, cst.Name) and flag.value == "False"):
                new = cst.Call(func=cst.Attribute(value=new, attr=cst.Name("requires_grad_")),
                               args=[cst.Arg(flag)])
        description = "replace `Variable(x)` with " + ("`x`" if fresh else "`x.detach()`")
        fix = Fix(Safety.SAFE, description,
                  [(node, new.with_changes(lpar=node.lpar, rpar=node.rpar)
                    if not isinstance(new, cst.Name) or node.lpar else new)],
                  remove_imports=removal)
        reason = ("the argument is a fresh tensor from a factory" if fresh
                  else "`Variable(x)` returns `x.detach()`")
        self.report(node, fix=fix, reason=reason)

    def _import_removal(self, func: cst.BaseExpression) -> tuple[ImportRemoval, ...]:
        if not isinstance(func, cst.Name):
            return ()
        binding = self.names.binding_of(func)
        if binding is None or not binding.qualified or func.value != "Variable":
            return ()
        module, _, name = binding.qualified.rpartition(".")
        return (ImportRemoval(module, name),)


def _is_fresh(names: NameIndex, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call) or keyword_arg(value, "requires_grad") is not None:
        return False
    qualified = names.qualified_name(value.func) or ""
    return qualified.count(".") == 1 and qualified.startswith("torch.") and \
        qualified.split(".")[1] in _FRESH


# ------------------------------------------------------------------- TFC107
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
    under `no_grad` (no graph to keep). `.item()` is used when every later use
    of the total is numeric (printing, formatting, `float()`, numpy); else
    `.detach()`, which keeps it a tensor.
    """

    code = "TFC107"
    name = "accumulate-loss-tensor"
    message = ("accumulating a loss tensor keeps every step's autograd graph alive: "
               "accumulate `.item()` or `.detach()`")
    safety = Safety.SAFE
    triggers = ("+=", "append")
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
        if in_no_grad(names, node) or not _in_loop(names, node):
            return
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
        if not _has_other_backward(names, function or names.module_scope.node, reads):
            return
        if any(_differentiated(names, read, 0) for read in reads):
            return
        numeric = all(_numeric_use(names, read, is_list=is_list) for read in reads)
        method = "item" if numeric else "detach"
        new = _method(_atom(value), method)
        fix = Fix(Safety.SAFE, f"accumulate `.{method}()`", [(value, new)])
        self.report(node, fix=fix, reason=f"a scalar loss tensor: {scalar}")


def _in_loop(names: NameIndex, node: cst.CSTNode) -> bool:
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, (cst.For, cst.While)):
            return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
    return False



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


class _FindBackward(cst.CSTVisitor):
    def __init__(self, names: NameIndex, excluded: set[int]) -> None:
        super().__init__()
        self.names = names
        self.excluded = excluded
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            if not (set(id(a) for a in _subtree_names(func.value)) & self.excluded):
                self.found = True


def _subtree_names(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(_Collect())
    return found


def _has_other_backward(names: NameIndex, where: cst.CSTNode, reads: list[cst.Name]) -> bool:
    """A ``.backward()`` in the function on something other than the accumulator."""
    finder = _FindBackward(names, {id(read) for read in reads})
    where.visit(finder)
    return finder.found


def _differentiated(names: NameIndex, read: cst.CSTNode, depth: int) -> bool:
    """Whether ``read`` flows into ``.backward()``/``autograd.grad`` (one name hop at most)."""
    for ancestor in names.ancestors(read):
        if isinstance(ancestor, cst.Call):
            func = ancestor.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "scale"):
                return True
            qualified = names.qualified_name(func) or ""
            if qualified in ("torch.autograd.grad", "torch.autograd.backward"):
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


RULES = [VariableWrapper, AccumulateLossTensor]
