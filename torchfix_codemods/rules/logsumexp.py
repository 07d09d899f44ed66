"""TFC108: ``torch.log(torch.sum(torch.exp(x), dim))``, the overflowing spelling of logsumexp."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, has_star_args, has_star_kwargs
from torchfix_codemods.analysis.core.syntax import is_none
from torchfix_codemods.analysis.facts.numerics import shifted_by_own_max
from torchfix_codemods.edits.arguments import with_layout
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


def _is_int_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _literal_dim(node: cst.BaseExpression) -> bool:
    """``1``, ``-1``, ``(0, 1)``, ``[0, 1]``: a dim that is certainly not None."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return bool(node.elements) and all(
            isinstance(e, cst.Element) and _is_int_literal(e.value) for e in node.elements)
    return _is_int_literal(node)


class LogOfSumOfExp(Rule):
    """## What it does
    Finds `torch.log(torch.sum(torch.exp(x), dim))` and rewrites it to
    `torch.logsumexp(x, dim)` (with `keepdim` carried over).

    ## Why is this bad?
    `exp` overflows for inputs above about 88 in float32 (11 in float16) and
    underflows to zero below about -103: the spelled-out form returns `inf`
    or `-inf` where the answer is an ordinary number. `torch.logsumexp`
    subtracts the maximum first and stays finite. Measured on torch 2.13:
    for `x + 100` the spelled-out form gave `[inf, inf, inf, inf]` and
    `logsumexp` gave `[101.36, 102.28, 102.83, 102.71]`; for `x - 120` it
    gave `-inf` against `-118.64...`; in float16, `x + 10` already overflowed.

    ## Example
    ```python
    y = torch.log(torch.sum(torch.exp(x), dim=1, keepdim=True))
    ```

    ## Use instead
    ```python
    y = torch.logsumexp(x, dim=1, keepdim=True)
    ```

    ## Fix safety
    Unsafe: on ordinary inputs the values agree to rounding (measured: at
    most 1.2e-7 apart in float32, gradients 6e-8 apart), not bit for bit, and
    where the old form overflowed the new one returns a finite number, on
    purpose. Integer inputs give the same result (both promote to float).
    Never a finding when `dim` is missing or None: `torch.logsumexp` has no
    all-dimensions form (`torch.logsumexp(x)` and `torch.logsumexp(x, None)`
    raise `TypeError` on torch 2.13; pytorch/pytorch#144339). Report only when
    `dim` is not a literal (a variable that may hold None at run time), when
    `torch.sum` gets `dtype=`, or when any call has `out=` or `*args`. Not a
    finding where the exponent is already shifted by its own maximum
    (`m, _ = torch.max(y, dim=1)`; `y = y - m.view(-1, 1)`): every term is at
    most 0 and the sum lies in [1, n], so the written-out form cannot overflow
    (measured: identical results, `docs/measurements/shifted_logsumexp.py`).

    ## References
    - [`torch.logsumexp`](https://docs.pytorch.org/docs/stable/generated/torch.logsumexp.html)
    - [pytorch/pytorch#144339: logsumexp with `dim=None`](https://github.com/pytorch/pytorch/issues/144339)
    - [TorchFix TOR108](https://github.com/pytorch-labs/torchfix)
    """

    code = "TFC108"
    name = "log-of-sum-of-exp"
    message = "`log(sum(exp(x)))` overflows: use the numerically stable `torch.logsumexp`"
    safety = Safety.UNSAFE
    triggers = ("exp",)
    needs = (Needs.any_of(names=("log",)) & Needs.any_of(names=("sum",))
             & Needs.any_of(names=("exp",)))  # the last parts of the three torch names
    valid = (
        "import torch\ny = torch.logsumexp(x, 1)\n",
        "import torch\ny = torch.log(torch.sum(torch.exp(x)))\n",
        "import torch\ny = torch.log(torch.sum(torch.exp(x), None, keepdim=True))\n",
        "import torch\ny = torch.log(torch.sum(torch.exp(x), 1) + 2.5)\n",
        "import numpy as np\ny = np.log(np.sum(np.exp(x), 1))\n",
    )
    invalid = (
        Example(
            "import torch\ny = torch.log(torch.sum(torch.exp(x), dim=1, keepdim=True))\n",
            "import torch\ny = torch.logsumexp(x, dim=1, keepdim=True)\n",
            unsafe=True,
        ),
        Example(
            "import torch as T\ny = T.log(T.sum(T.exp(2.5 + x), -1))\n",
            "import torch as T\ny = T.logsumexp(2.5 + x, -1)\n",
            unsafe=True,
        ),
        Example("import torch\ny = torch.log(torch.sum(torch.exp(x), dim))\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != "torch.log" or not node.args:
            return
        total = node.args[0].value
        if node.args[0].keyword is not None or not isinstance(total, cst.Call) or \
                self.qualified_name(total.func) != "torch.sum" or not total.args:
            return
        exp = total.args[0].value
        if total.args[0].keyword is not None or not isinstance(exp, cst.Call) or \
                self.qualified_name(exp.func) != "torch.exp":
            return
        if has_star_args(total) or has_star_kwargs(total):
            self.report(node, f"{self.message} (no fix: `torch.sum` gets `*args`/`**kwargs`)")
            return
        dim = argument(total, "dim", 1)
        if dim is None or is_none(dim.value):
            return  # logsumexp has no all-dims form (pytorch/pytorch#144339)
        if exp.args and shifted_by_own_max(self.names, exp.args[0].value, dim.value):
            return  # `y - max(y, dim)`: every term at most 0, one of them 0: the sum is in [1, n]
        why = self._no_fix(node, total, exp, dim)
        if why is not None:
            self.report(node, f"{self.message} (no fix: {why})")
            return
        try:
            reference = self.context.imports.reference("torch.logsumexp", at=node)
        except ImportUnavailable as error:
            self.report(node, f"{self.message} (no fix: {error})")
            return
        value = exp.args[0].value
        args = [cst.Arg(value), *total.args[1:]]
        new = total.with_changes(func=reference.expression, args=with_layout(total, args),
                                 lpar=node.lpar, rpar=node.rpar)
        fix = Fix(Safety.UNSAFE, f"use `{reference.code}`", [(node, new)],
                  imports=(reference.needs,) if reference.needs else ())
        self.report(node, self.message, fix=fix)

    @staticmethod
    def _no_fix(log: cst.Call, total: cst.Call, exp: cst.Call, dim: cst.Arg) -> str | None:
        if len(log.args) != 1 or len(exp.args) != 1 or exp.args[0].keyword is not None or \
                exp.args[0].star:
            return "`torch.log` or `torch.exp` gets more than the one tensor"
        allowed = {"dim", "keepdim", None}
        if any(arg.keyword is not None and arg.keyword.value not in allowed for arg in total.args):
            return "`torch.sum` gets arguments `torch.logsumexp` does not take"
        if len([a for a in total.args if a.keyword is None]) > 3:
            return "`torch.sum` gets arguments `torch.logsumexp` does not take"
        if not _literal_dim(dim.value):
            return "`dim` is not a literal and may be None at run time"
        return None


RULES = [LogOfSumOfExp]
