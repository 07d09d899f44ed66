"""TFC501-TFC502: losses fed probabilities where they expect logits.

Cross-entropy applies ``log_softmax`` itself and ``BCEWithLogitsLoss`` applies
the sigmoid itself, stably; feeding them a softmax or a sigmoid computes it
twice, or in the unstable order.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument
from torchfix_codemods.analysis.core.usage import assigned_name, describe_use, reads_of_assigned
from torchfix_codemods.analysis.facts.modules import init_assignment
from torchfix_codemods.analysis.vocabulary.torch_api import (
    BCE_FUNCTION,
    BCE_MODULES,
    CE_FUNCTIONS,
    CE_MODULES,
    LOG_FUNCTIONS,
    NLL_FUNCTIONS,
    NLL_MODULES,
    SIGMOID_FUNCTIONS,
    SIGMOID_MODULES,
    SOFTMAX_FUNCTIONS,
    SOFTMAX_MODULES,
)
from torchfix_codemods.edits.references import ImportRequest, ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class _LossRule(Rule):
    """Shared: which calls are a given loss, and what their input is."""

    def _constructor(self, expr: cst.BaseExpression) -> str | None:
        """``torch.nn.CrossEntropyLoss`` when ``expr`` is (bound to) such an instance."""
        if isinstance(expr, cst.Call):
            return self.qualified_name(expr.func)
        value: cst.BaseExpression | None = None
        if isinstance(expr, cst.Name):
            binding = self.names.binding_of(expr)
            if binding is not None and binding.kind in ("assign", "annassign"):
                value = binding.value
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and \
                expr.value.value == "self":
            owner = self.names.enclosing(expr, cst.ClassDef)
            if owner is not None:
                value = init_assignment(owner, expr.attr.value)
        if isinstance(value, cst.Call):
            return self.qualified_name(value.func)
        return None

    def _loss_kind(self, call: cst.Call, functions: frozenset[str],
                   modules: frozenset[str]) -> bool:
        qualified = self.qualified_name(call.func)
        if qualified in functions:
            return True
        return self._constructor(call.func) in modules

    def _input(self, call: cst.Call) -> cst.Arg | None:
        """The prediction argument of a loss call (``input=`` or the first positional)."""
        return argument(call, "input", 0)

    def _activation_input(self, expr: cst.BaseExpression, functions: frozenset[str] | dict,
                          modules: frozenset[str] | dict,
                          method: str) -> cst.BaseExpression | None:
        """``x`` when ``expr`` is ``softmax(x, ...)``, ``x.softmax(...)`` or ``Softmax(...)(x)``."""
        if not isinstance(expr, cst.Call) or expr.lpar:
            return None
        func = expr.func
        qualified = self.qualified_name(func)
        if qualified in functions:
            first = argument(expr, "input", 0)
            return first.value if first is not None and not first.star else None
        if isinstance(func, cst.Call) and self.qualified_name(func.func) in modules:
            first = argument(expr, "input", 0)
            return first.value if first is not None and not first.star else None
        if qualified is None and isinstance(func, cst.Attribute) and func.attr.value == method:
            receiver = func.value
            if self.qualified_name(receiver) is None:
                return receiver
        return None


class SoftmaxIntoCrossEntropy(_LossRule):
    """## What it does
    Finds `cross_entropy` (functional or an `nn.CrossEntropyLoss` instance)
    fed the output of a softmax, and drops the softmax. Also
    `nll_loss(torch.log(softmax(x)))` -> `nll_loss(log_softmax(x))`.

    ## Why is this bad?
    Cross-entropy applies `log_softmax` itself. Fed probabilities, it computes
    a softmax of a softmax: a perfect prediction still has a loss of about
    0.55 for two classes, gradients shrink, training is slow and unstable.
    `log(softmax(x))` underflows to `-inf` where `log_softmax` does not.

    ## Example
    ```python
    loss = F.cross_entropy(F.softmax(logits, dim=1), target)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(logits, target)
    ```

    ## Fix safety
    Unsafe: the loss and its gradients change on purpose (predicted classes,
    and so accuracy, do not). A softmax computed into a variable first is
    reported without a fix: the variable may be used elsewhere.

    ## References
    - [`torch.nn.CrossEntropyLoss`: the input is expected to be unnormalized logits](https://docs.pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    - [`torch.nn.functional.log_softmax`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html)
    """

    code = "TFC501"
    name = "softmax-into-cross-entropy"
    message = "cross-entropy applies log-softmax itself: pass the logits, not softmax probabilities"
    safety = Safety.UNSAFE
    triggers = ("softmax", "Softmax")
    needs = Needs.any_of(fragments=("softmax", "Softmax")) & Needs.any_of(
        *(name.rsplit(".", 1)[-1] for name in CE_FUNCTIONS | CE_MODULES | NLL_FUNCTIONS
          | NLL_MODULES))
    """A softmax, and a cross-entropy or NLL loss named where it is built or called."""
    valid = (
        "import torch.nn.functional as F\nloss = F.cross_entropy(logits, y)\n",
        "import torch.nn.functional as F\nloss = F.nll_loss(F.log_softmax(x, dim=1), y)\n",
        "import torch.nn.functional as F\nprobs = F.softmax(x, dim=1)\n"
        "loss = F.mse_loss(probs, y)\n",
    )
    invalid = (
        Example(
            "import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(x, dim=1), y)\n",
            "import torch.nn.functional as F\nloss = F.cross_entropy(x, y)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch import nn\ncriterion = nn.CrossEntropyLoss()\n"
            "loss = criterion(x.softmax(dim=-1), y)\n",
            "import torch\nfrom torch import nn\ncriterion = nn.CrossEntropyLoss()\n"
            "loss = criterion(x, y)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\n"
            "loss = F.nll_loss(torch.log(F.softmax(x, dim=1)), y)\n",
            "import torch\nimport torch.nn.functional as F\n"
            "loss = F.nll_loss(F.log_softmax(x, dim=1), y)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\nprobs = torch.softmax(x, 1)\n"
            "loss = F.cross_entropy(probs, y)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self._loss_kind(node, CE_FUNCTIONS, CE_MODULES):
            self._cross_entropy(node)
        elif self._loss_kind(node, NLL_FUNCTIONS, NLL_MODULES):
            self._nll(node)

    def _cross_entropy(self, call: cst.Call) -> None:
        arg = self._input(call)
        if arg is None:
            return
        inner = self._softmax_input(arg.value)
        if inner is not None:
            fix = Fix(Safety.UNSAFE, "drop the softmax, pass the logits",
                      [(arg.value, inner)])
            self.report(arg.value, self.message, fix=fix)
            return
        if isinstance(arg.value, cst.Name) and self._bound_to_softmax(arg.value):
            self.report(arg.value, self.message + f" (`{arg.value.value}` holds softmax "
                        "probabilities; no fix, it may be used elsewhere)")

    def _softmax_input(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        return self._activation_input(expr, SOFTMAX_FUNCTIONS, SOFTMAX_MODULES, "softmax")

    def _bound_to_softmax(self, name: cst.Name) -> bool:
        binding = self.names.binding_of(name)
        return binding is not None and binding.value is not None and \
            self._softmax_input(binding.value) is not None

    def _nll(self, call: cst.Call) -> None:
        arg = self._input(call)
        if arg is None or not isinstance(arg.value, cst.Call):
            return
        log_call = arg.value
        softmax: cst.BaseExpression | None = None
        if self.qualified_name(log_call.func) in LOG_FUNCTIONS and log_call.args:
            softmax = log_call.args[0].value
        elif isinstance(log_call.func, cst.Attribute) and log_call.func.attr.value == "log" \
                and not log_call.args and self.qualified_name(log_call.func) is None:
            softmax = log_call.func.value
        if not isinstance(softmax, cst.Call) or self._softmax_input(softmax) is None:
            return
        message = ("`nll_loss(log(softmax(x)))` underflows to -inf: use `log_softmax(x)`")
        try:
            replacement, needs = self._log_softmax(softmax)
        except ImportUnavailable as error:
            self.report(log_call, f"{message} (no fix: {error})")
            return
        fix = Fix(Safety.UNSAFE, "use `log_softmax`", [(log_call, replacement)],
                  imports=(needs,) if needs else ())
        self.report(log_call, message, fix=fix)

    def _log_softmax(self, softmax: cst.Call) -> tuple[cst.Call, ImportRequest | None]:
        func = softmax.func
        if isinstance(func, cst.Call):  # nn.Softmax(dim=1)(x) -> nn.LogSoftmax(dim=1)(x)
            target = SOFTMAX_MODULES[self.qualified_name(func.func) or ""]
            new_func, needs = self._renamed(func.func, target, softmax)
            return softmax.with_changes(func=func.with_changes(func=new_func)), needs
        qualified = self.qualified_name(func)
        if qualified is None:  # x.softmax(1) -> x.log_softmax(1)
            assert isinstance(func, cst.Attribute)
            return softmax.with_changes(func=func.with_changes(attr=cst.Name("log_softmax"))), None
        new_func, needs = self._renamed(func, SOFTMAX_FUNCTIONS[qualified], softmax)
        return softmax.with_changes(func=new_func), needs

    def _renamed(self, func: cst.BaseExpression, target: str,
                 at: cst.CSTNode) -> tuple[cst.BaseExpression, ImportRequest | None]:
        """``F.softmax`` -> ``F.log_softmax`` in the file's own spelling."""
        if isinstance(func, cst.Attribute):
            return func.with_changes(attr=cst.Name(target.split(".")[-1])), None
        reference = self.context.imports.reference(target, at=at)
        return reference.expression, reference.needs


class SigmoidIntoBCE(_LossRule):
    """## What it does
    Finds binary cross-entropy (`F.binary_cross_entropy` or an `nn.BCELoss`
    instance) fed `sigmoid(x)`, and switches to the logits version:
    `F.binary_cross_entropy_with_logits(x, ...)` / `nn.BCEWithLogitsLoss()`.

    ## Why is this bad?
    `sigmoid` saturates to exactly 0 or 1 in float32 for |x| > ~17, where
    `BCELoss` clamps the log to -100: the gradient vanishes and the loss is
    wrong. The logits version uses the log-sum-exp trick and stays exact.

    ## Example
    ```python
    criterion = nn.BCELoss()
    loss = criterion(torch.sigmoid(logits), target)
    ```

    ## Use instead
    ```python
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(logits, target)
    ```

    ## Fix safety
    Unsafe: the loss is numerically different (better) for large logits. An
    `nn.BCELoss` instance is rewritten only when it is a plain variable and
    every call of it in the file gets a sigmoid; otherwise report only.
    Arguments keep their positions (`weight`, `reduction` mean the same).

    ## References
    - [`torch.nn.BCEWithLogitsLoss`: more numerically stable than a sigmoid followed by `BCELoss`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    """

    code = "TFC502"
    name = "sigmoid-into-bce"
    message = "binary cross-entropy on `sigmoid(x)`: use the `with_logits` version on `x`"
    safety = Safety.UNSAFE
    triggers = ("sigmoid", "Sigmoid", "expit")
    needs = Needs.any_of(fragments=("sigmoid", "Sigmoid", "expit")) & Needs.any_of(
        *(name.rsplit(".", 1)[-1] for name in {BCE_FUNCTION} | BCE_MODULES))
    """A sigmoid, and a BCE loss named where it is built or called."""
    valid = (
        "import torch.nn.functional as F\nloss = F.binary_cross_entropy_with_logits(x, y)\n",
        "import torch\nfrom torch import nn\ncrit = nn.BCELoss()\nloss = crit(probs, y)\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\n"
            "loss = F.binary_cross_entropy(torch.sigmoid(x), y, reduction='sum')\n",
            "import torch\nimport torch.nn.functional as F\n"
            "loss = F.binary_cross_entropy_with_logits(x, y, reduction='sum')\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch import nn\ncrit = nn.BCELoss()\n"
            "loss = crit(torch.sigmoid(x), y)\n",
            "import torch\nfrom torch import nn\ncrit = nn.BCEWithLogitsLoss()\n"
            "loss = crit(x, y)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch import nn\ncrit = nn.BCELoss()\n"
            "loss = crit(torch.sigmoid(x), y)\nother = crit(p, y)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) == BCE_FUNCTION:
            self._functional(node)
        elif self._constructor(node.func) in BCE_MODULES:
            self._instance(node)

    def _sigmoid_input(self, call: cst.Call) -> tuple[cst.Arg, cst.BaseExpression] | None:
        arg = self._input(call)
        if arg is None:
            return None
        inner = self._activation_input(arg.value, SIGMOID_FUNCTIONS, SIGMOID_MODULES, "sigmoid")
        return (arg, inner) if inner is not None else None

    def _functional(self, call: cst.Call) -> None:
        found = self._sigmoid_input(call)
        if found is None:
            return
        arg, inner = found
        func = call.func
        target = BCE_FUNCTION + "_with_logits"
        needs = None
        if isinstance(func, cst.Attribute):
            new_func: cst.BaseExpression = func.with_changes(
                attr=cst.Name("binary_cross_entropy_with_logits"))
        else:
            try:
                reference = self.context.imports.reference(target, at=call)
            except ImportUnavailable as error:
                self.report(call, f"{self.message} (no fix: {error})")
                return
            new_func, needs = reference.expression, reference.needs
        new = call.with_changes(func=new_func, args=[
            a.with_changes(value=inner) if a is arg else a for a in call.args])
        self.report(call, self.message, fix=Fix(
            Safety.UNSAFE, "use `binary_cross_entropy_with_logits` on the logits",
            [(call, new)], imports=(needs,) if needs else ()))

    def _instance(self, call: cst.Call) -> None:
        found = self._sigmoid_input(call)
        if found is None:
            return
        func = call.func
        if isinstance(func, cst.Call):  # nn.BCELoss()(torch.sigmoid(x), y)
            arg, inner = found
            new_ctor = self._with_logits_ctor(func)
            if new_ctor is None:
                self.report(call, self.message)
                return
            new = call.with_changes(func=new_ctor, args=[
                a.with_changes(value=inner) if a is arg else a for a in call.args])
            self.report(call, self.message, fix=Fix(
                Safety.UNSAFE, "use `BCEWithLogitsLoss` on the logits", [(call, new)]))
            return
        if isinstance(func, cst.Name):
            fix = self._instance_fix(func)
            if fix is not None:
                self.report(call, self.message, fix=fix)
                return
        self.report(call, self.message + " (no fix: the loss object is also used elsewhere)")

    def _with_logits_ctor(self, ctor: cst.Call) -> cst.Call | None:
        if isinstance(ctor.func, cst.Attribute):
            return ctor.with_changes(func=ctor.func.with_changes(attr=cst.Name("BCEWithLogitsLoss")))
        return None

    def _instance_fix(self, name: cst.Name) -> Fix | None:
        binding = self.names.binding_of(name)
        if binding is None or not isinstance(binding.value, cst.Call) or \
                not isinstance(binding.node, cst.Assign):
            return None
        target = assigned_name(self.names, binding.value)
        if target is None:
            return None
        reads = reads_of_assigned(self.names, target)
        if not reads:
            return None
        new_ctor = self._with_logits_ctor(binding.value)
        if new_ctor is None:
            return None
        replacements: list[tuple[cst.CSTNode, cst.CSTNode]] = [(binding.value, new_ctor)]
        for read in reads:
            use = describe_use(self.names, read)
            if use.kind != "called" or use.call is None:
                return None
            found = self._sigmoid_input(use.call)
            if found is None:
                return None
            arg, inner = found
            replacements.append((arg.value, inner))
        return Fix(Safety.UNSAFE, "use `BCEWithLogitsLoss` and pass the logits", replacements)


RULES = [SoftmaxIntoCrossEntropy, SigmoidIntoBCE]
