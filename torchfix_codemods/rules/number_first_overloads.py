"""TFC413: the torch 0.3 argument order of ``add``/``sub``/``addcmul``/``addcdiv``.

``x.add_(-lr, grad)`` and ``exp_avg_sq.addcmul_(1 - beta2, grad, grad)``, the
spelling of every hand-written optimizer of the 0.3 era (and of BERT's
``AdamW``), are overloads torch keeps only as deprecated: the number now goes
last, by keyword (``alpha=`` / ``value=``). Each warns once per process
(measured in ``rules/data/legacy_inventory.json``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import methods_of
from torchfix_codemods.analysis.core.calls import positional_args
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.tensors import provenance
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    NUMBER_FIRST_FUNCTIONS,
    NUMBER_FIRST_MATRIX_METHODS,
    NUMBER_FIRST_METHODS,
)
from torchfix_codemods.edits.arguments import as_keyword, with_layout
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

METHODS = NUMBER_FIRST_METHODS
FUNCTIONS = NUMBER_FIRST_FUNCTIONS
MATRIX_METHODS = NUMBER_FIRST_MATRIX_METHODS
UNUSUAL_NAMES = (frozenset(METHODS) - {"add", "sub"}) | MATRIX_METHODS
"""Names that only torch tensors answer to with these arguments: on a receiver the code does
not type, the rewrite is still offered (unsafe). ``meter.add(value, n)`` is common outside
torch, so ``add``/``sub`` need a receiver known to be a tensor."""


class NumberFirstOverload(Rule):
    """## What it does
    Moves the number of torch 0.3's `x.add_(number, other)`,
    `x.sub_(number, other)`, `x.addcmul_(number, t1, t2)` and
    `x.addcdiv_(number, t1, t2)` (and `add`, `sub`, `addcmul`, `addcdiv`,
    `torch.add(x, number, other)`...) to the keyword it has been since torch
    0.4: `x.add_(other, alpha=number)`, `x.addcmul_(t1, t2, value=number)`.
    The matrix products' overloads with `beta` (and `alpha`) first move the
    same way: `dist.addmm_(1, -2, x, y.t())` becomes
    `dist.addmm_(x, y.t(), beta=1, alpha=-2)` (`addmm`, `addmv`, `addr`,
    `addbmm`, `baddbmm` and their in-place forms).

    ## Why is this bad?
    These are deprecated overloads, kept for old code: the first call in a
    process warns (`This overload of add_ is deprecated: add_(Number alpha,
    Tensor other)`, measured on torch 2.13) and names the signature to use.
    The number-first order is the one of every hand-written 0.3-era optimizer
    (`p.data.add_(-group['lr'], d_p)`, Adam's
    `exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)`).

    ## Example
    ```python
    exp_avg.mul_(beta1).add_(1 - beta1, grad)
    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
    ```

    ## Use instead
    ```python
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    ```

    ## Fix safety
    Safe where the receiver is known to be a tensor (and for the `torch.*`
    functions): with that many positional arguments only the deprecated
    overload matches, since `alpha`/`value` are keyword-only (measured: the
    other order, `x.add_(y, 0.5)`, raises `TypeError`), and it is exactly the
    new signature with the number by keyword (measured bitwise equal on torch
    2.13 for each method, a 0-dim tensor as the number included). The same
    holds for the matrix products with three or four positional arguments:
    each warns as deprecated, is bitwise equal to the keyword form, and the
    numbers-last order raises `TypeError` (measured on torch 2.13,
    `docs/measurements/number_first_matrix_overloads.txt`). Unsafe where
    the receiver is not typed by the code (`state['exp_avg']`): `add_`, `sub_`,
    `addcmul(_)` and `addcdiv(_)` with these arguments are torch's in practice,
    but not provably; `add`/`sub` of an untyped receiver are not reported
    (`meter.add(value, n)`), and neither is a method a class of the same file
    defines. The number moves after the tensors, so it is
    evaluated last: where both it and a tensor argument call something, the
    call is reported without a fix.

    ## References
    - [`torch.Tensor.add_`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.add_.html)
    - [`torch.addcmul`](https://docs.pytorch.org/docs/stable/generated/torch.addcmul.html)
    """

    code = "TFC413"
    name = "number-first-overload"
    message = ("deprecated torch 0.3 overload with the number first: it goes last, by "
               "keyword (`x.add_(other, alpha=number)`)")
    safety = Safety.SAFE
    triggers = ("add", "sub")
    needs = Needs.any_of(*METHODS, *MATRIX_METHODS)
    valid = (
        "import torch\nx = torch.ones(3)\nx.add_(torch.ones(3), alpha=0.5)\n",
        "import torch\nx = torch.ones(3)\ny = x.add(1)\n",
        "import torch\nmeter.add(loss.item(), 8)\n",
        "import numpy as np\nz = np.add(a, 0.5, out)\n",
        "import torch\ntorch.add(x, y, alpha=2)\n",
    )
    invalid = (
        Example(
            "import torch\nx = torch.ones(3)\ng = torch.ones(3)\nx.add_(-0.1, g)\n",
            "import torch\nx = torch.ones(3)\ng = torch.ones(3)\nx.add_(g, alpha=-0.1)\n",
        ),
        Example(
            "import torch\ns = torch.zeros(3)\ng = torch.ones(3)\ns.mul_(0.9).addcmul_(0.1, g, g)\n",
            "import torch\ns = torch.zeros(3)\ng = torch.ones(3)\ns.mul_(0.9).addcmul_(g, g, value=0.1)\n",
        ),
        Example(
            "import torch\ny = torch.add(x, 2, z)\n",
            "import torch\ny = torch.add(x, z, alpha=2)\n",
        ),
        Example(
            "import torch\ndef step(state, grad, lr):\n    state['v'].add_(-lr, grad)\n",
            "import torch\ndef step(state, grad, lr):\n    state['v'].add_(grad, alpha=-lr)\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.qualified_name(func)
        if isinstance(func, cst.Attribute) and func.attr.value in MATRIX_METHODS and \
                qualified is None:
            self._matrix(node, func)
            return
        if qualified in FUNCTIONS:
            count, keyword = FUNCTIONS[qualified]
            first = 1  # the input tensor stays first
            safety, reason = Safety.SAFE, f"`{qualified}`"
        elif isinstance(func, cst.Attribute) and func.attr.value in METHODS:
            count, keyword = METHODS[func.attr.value]
            first = 0
            found = self._receiver_tier(func)
            if found is None:
                return
            safety, reason = found
        else:
            return
        positional = positional_args(node)
        if len(positional) != count or len(positional) != len(node.args) - (
                1 if qualified in FUNCTIONS and _only_out_keyword(node) else 0):
            return
        number, tensors = positional[first], positional[first + 1:]
        name = qualified if qualified in FUNCTIONS else f"x.{func.attr.value}"  # type: ignore[attr-defined]
        message = (f"`{name}(number, {', '.join(['tensor'] * len(tensors))})` is a deprecated "
                   f"overload (the torch 0.3 order): pass the number last, as `{keyword}=`")
        if _calls(number.value) and any(_calls(arg.value) for arg in tensors):
            self.report(node, message + " (no fix: moving the number after the tensors would "
                        "change the order its calls run in)", reason=reason)
            return
        moved = [*positional[:first], *tensors, as_keyword(number, keyword)]
        keywords = [arg for arg in node.args if arg.keyword is not None]
        new = node.with_changes(args=with_layout(node, [*moved, *keywords]))
        self.report(node, message, fix=Fix(safety, f"pass the number as `{keyword}=`",
                                           [(node, new)]), reason=reason)

    def _matrix(self, node: cst.Call, func: cst.Attribute) -> None:
        """``dist.addmm_(1, -2, x, y.t())``: ``beta`` (and ``alpha``) before the two tensors."""
        positional = positional_args(node)
        if len(positional) not in (3, 4) or len(positional) != len(node.args):
            return
        found = self._receiver_tier(func)
        if found is None:
            return
        safety, reason = found
        numbers, tensors = positional[:-2], positional[-2:]
        keywords = ("beta", "alpha")[:len(numbers)]
        message = (f"`x.{func.attr.value}({', '.join(keywords)}, tensor, tensor)` is a "
                   "deprecated overload (the torch 0.3 order): pass the numbers last, as "
                   f"{' and '.join(f'`{k}=`' for k in keywords)}")
        if any(_calls(n.value) for n in numbers) and any(_calls(t.value) for t in tensors):
            self.report(node, message + " (no fix: moving the numbers after the tensors would "
                        "change the order their calls run in)", reason=reason)
            return
        moved = [*tensors, *(as_keyword(n, k) for n, k in zip(numbers, keywords, strict=True))]
        new = node.with_changes(args=with_layout(node, moved))
        fix = Fix(safety, f"pass the numbers as {', '.join(f'`{k}=`' for k in keywords)}",
                  [(node, new)])
        self.report(node, message, fix=fix, reason=reason)

    def _receiver_tier(self, func: cst.Attribute) -> tuple[Safety, str] | None:
        """The fix's tier from what the receiver is; None when it is no finding."""
        if not imports_torch(self.names):
            return None
        found = provenance(self.names, func.value)
        if found.is_tensor:
            return Safety.SAFE, f"the receiver is a tensor ({found.reason})"
        if found.is_not_tensor or func.attr.value not in UNUSUAL_NAMES or \
                func.attr.value in _methods_defined_in(self.names):
            return None
        return Safety.UNSAFE, (f"`{func.attr.value}` with a number first is torch's deprecated "
                               f"overload, but the receiver is not known to be a tensor "
                               f"({found.reason})")


def _methods_defined_in(names: NameIndex) -> frozenset[str]:
    """The names of the methods the classes of this file define (``def add_`` of a queue):
    a receiver the code does not type may be one of those objects. Read from the name index's
    class scopes (no walk of the module), once per module."""
    if _OWN_METHODS in names.memo:
        return names.memo[_OWN_METHODS]
    found = frozenset(name for scope in names.all_scopes
                      if scope.kind == "class" and isinstance(scope.node, cst.ClassDef)
                      for name in methods_of(scope.node) if name in METHODS or name in MATRIX_METHODS)
    names.memo[_OWN_METHODS] = found
    return found


_OWN_METHODS: Slot[frozenset[str]] = Slot("number_first_overloads.own_methods")


def _only_out_keyword(call: cst.Call) -> bool:
    """The keywords of ``call`` are exactly one ``out=`` (what the function overloads take)."""
    keywords = [arg for arg in call.args if arg.keyword is not None or arg.star]
    return len(keywords) == 1 and keywords[0].keyword is not None and \
        keywords[0].keyword.value == "out"


class _HasCall(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = True
        return False

    def visit_Await(self, node: cst.Await) -> bool:
        self.found = True
        return False

    def visit_Yield(self, node: cst.Yield) -> bool:
        self.found = True
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        self.found = True
        return False


def _calls(expr: cst.BaseExpression) -> bool:
    """Whether evaluating ``expr`` may do something (a call, an ``await``, a ``yield``, an
    assignment expression); names, attributes, subscripts and arithmetic do not."""
    visitor = _HasCall()
    expr.visit(visitor)
    return visitor.found


RULES = [NumberFirstOverload]
