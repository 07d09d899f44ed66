"""TFC512: gradient accumulation over k micro-batches whose mean loss is not divided by k."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.amp import scaler_of_backward
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.modules import self_assignments
from torchfix_codemods.analysis.facts.optimizers import optimizer_of_step
from torchfix_codemods.analysis.facts.training import Event, iteration_events
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

Loop = cst.For | cst.While

_MEAN_LOSSES = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
})
"""``torch.nn.functional`` losses whose default reduction is the mean over the batch."""


def _mean_keywords(call: cst.Call) -> bool:
    """No reduction argument, or ``reduction="mean"``."""
    if any(keyword_arg(call, k) is not None for k in ("reduce", "size_average")) or \
            any(a.star for a in call.args):
        return False
    reduction = keyword_arg(call, "reduction")
    return reduction is None or (isinstance(reduction.value, cst.SimpleString) and
                                 reduction.value.evaluated_value == "mean")


class AccumulationWithoutLossDivision(Rule):
    """## What it does
    Finds gradient accumulation (a `backward()` every iteration, the optimizer
    step every k iterations under `if (i + 1) % k == 0:`) whose loss is a batch
    mean not divided by k, and divides the loss handed to `backward()` by k.

    ## Why is this bad?
    Gradients add up over the k backward calls, so the step applies the sum of
    k mean gradients: k times the gradient of the large batch the accumulation
    stands for. The effective learning rate is k times the one configured.
    Measured on torch 2.13: with k = 2 the accumulated gradient was exactly
    2.0 times the gradient of the same 8 samples in one batch, and 1.0 times
    with the loss divided by 2.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: every step becomes k times smaller, on purpose (measured on torch
    2.13: the fixed loop ends with the weights of the loop that divides the
    loss, bit for bit). The division is written into the `backward()` call
    (`scaler.scale(loss / k)` with a `GradScaler`) rather than as `loss = loss
    / k`, so what the loop logs from `loss` stays the per-batch mean. A
    finding needs proof that the loss is a mean: a `torch.nn.functional` loss
    or an `nn.*Loss` module built in the file (`criterion = nn.MSELoss()`,
    `self.criterion = ...` in the class), without a `reduction` other than
    `"mean"`, or `.mean()`. Not a finding: a loss already divided (any
    `/` in its assignment, `loss /= k`), k used anywhere else in the loop, a
    `reduction="sum"` loss with its own normaliser, a `zero_grad()` every
    iteration (nothing accumulates), several backward calls.

    ## References
    - [AMP examples: gradient accumulation](https://docs.pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation)
    - [`torch.Tensor.backward` (gradients are accumulated in the leaves)](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    """

    code = "TFC512"
    name = "accumulation-without-loss-division"
    message = ("gradients are accumulated over k iterations from a mean loss not divided by k: "
               "each step is k times too large")
    safety = Safety.UNSAFE
    triggers = ("backward",)
    needs = Needs.any_of("backward") & Needs.any_of("step")
    valid = (
        "import torch\nimport torch.nn.functional as F\nfor i, (x, y) in enumerate(data):\n"
        "    loss = F.mse_loss(model(x), y) / k\n    loss.backward()\n"
        "    if (i + 1) % k == 0:\n        opt.step()\n        opt.zero_grad()\n",
        "import torch\nimport torch.nn.functional as F\nfor i, (x, y) in enumerate(data):\n"
        "    loss = F.mse_loss(model(x), y, reduction='sum') / n\n    loss.backward()\n"
        "    if (i + 1) % k == 0:\n        opt.step()\n        opt.zero_grad()\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\nfor i, (x, y) in enumerate(data):\n"
            "    loss = F.mse_loss(model(x), y)\n    loss.backward()\n"
            "    if (i + 1) % k == 0:\n        opt.step()\n        opt.zero_grad()\n",
            "import torch\nimport torch.nn.functional as F\nfor i, (x, y) in enumerate(data):\n"
            "    loss = F.mse_loss(model(x), y)\n    (loss / k).backward()\n"
            "    if (i + 1) % k == 0:\n        opt.step()\n        opt.zero_grad()\n",
            unsafe=True,
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\nfor i, (x, y) in enumerate(data):\n"
            "    loss = F.mse_loss(model(x), y)\n    loss.backward()\n"
            "    if (i + 1) % k == 0 or (i + 1) % n == 0:\n        opt.step()\n"
            "        opt.zero_grad()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loops: dict[int, Loop] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if optimizer_of_step(self.names, node) is None:
            return
        loop = innermost_loop(self.names, node)
        if loop is not None:
            self._loops[id(loop)] = loop

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._loops or not imports_torch(self.names):
            return
        for loop in self._loops.values():
            self._check(loop)

    def _check(self, loop: Loop) -> None:
        events = [e for e in iteration_events(self.names, loop) if not e.nested]
        backwards = [e for e in events if e.kind == "backward"]
        steps = [e for e in events if e.kind == "step"]
        if len(backwards) != 1 or not steps or self._conditional(backwards[0].call, loop):
            return
        conditions = [self._condition(s.call, loop) for s in steps]
        block = conditions[0]
        if block is None or any(c is not block for c in conditions):
            return  # a step every iteration (no accumulation), or steps under several tests
        test = block.test
        if any(e.kind == "zero_grad" and not self._inside(e.call, block) for e in events):
            return  # gradients reset every iteration: nothing accumulates
        divisors = {code_of(d): d for d in self._modulo_divisors(test)}
        backward = backwards[0]
        loss = self._loss_name(backward)
        if loss is None or not divisors:
            return
        assignments = self._assignments(loop, loss.value)
        if len(assignments) != 1 or not self._mean_loss(assignments[0]):
            return
        if len(divisors) != 1:
            self.report(backward.call, self.message + " (no fix: the condition has several "
                        "moduli)")
            return
        k_code, k = next(iter(divisors.items()))
        if self._used_elsewhere(loop, test, k_code):
            return  # k scales something else in the loop (the loss, the gradients, the lr)
        message = (f"gradients are accumulated over `{k_code}` iterations from a mean loss not "
                   f"divided by `{k_code}`: each step is `{k_code}` times too large")
        divided = cst.BinaryOperation(
            left=loss, operator=cst.Divide(whitespace_before=cst.SimpleWhitespace(" "),
                                           whitespace_after=cst.SimpleWhitespace(" ")),
            right=k.deep_clone())
        if scaler_of_backward(backward.call) is None:
            divided = divided.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.report(backward.call, message, fix=Fix(
            Safety.UNSAFE, f"divide the loss by `{k_code}` in the backward",
            [(loss, divided)]))

    def _inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return any(a is container for a in self.names.ancestors(node))

    def _conditional(self, node: cst.CSTNode, loop: Loop) -> bool:
        for ancestor in self.names.ancestors(node):
            if ancestor is loop:
                return False
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.Try)):
                return True
        return False

    def _condition(self, node: cst.CSTNode, loop: Loop) -> cst.If | None:
        """The innermost ``if`` in ``loop`` around ``node`` when its test holds a ``% k``
        compared with ``== 0``."""
        for ancestor in self.names.ancestors(node):
            if ancestor is loop:
                return None
            if isinstance(ancestor, cst.If):
                return ancestor if self._modulo_divisors(ancestor.test) else None
        return None

    def _modulo_divisors(self, test: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The ``k`` of every ``(...) % k == 0`` in ``test``."""
        found = []
        for node in (test, *walk_local(test)):
            if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and \
                    isinstance(node.comparisons[0].operator, cst.Equal) and \
                    isinstance(node.comparisons[0].comparator, cst.Integer) and \
                    node.comparisons[0].comparator.value == "0" and \
                    isinstance(node.left, cst.BinaryOperation) and \
                    isinstance(node.left.operator, cst.Modulo):
                k = node.left.right
                if isinstance(k, cst.Integer) or dotted_name(k) is not None:
                    found.append(k)
        return found

    def _loss_name(self, backward: Event) -> cst.Name | None:
        """``loss`` of ``loss.backward()`` or ``scaler.scale(loss).backward()``."""
        func = backward.call.func
        assert isinstance(func, cst.Attribute)
        receiver = func.value
        if scaler_of_backward(backward.call) is not None:
            assert isinstance(receiver, cst.Call)
            if len(receiver.args) != 1 or receiver.args[0].keyword is not None:
                return None
            receiver = receiver.args[0].value
        if backward.call.args or not isinstance(receiver, cst.Name):
            return None
        return receiver

    def _assignments(self, loop: Loop, name: str) -> list[cst.CSTNode]:
        found: list[cst.CSTNode] = []
        for node in walk_local(loop.body):
            if isinstance(node, cst.Assign) and any(
                    name in {n.value for n in (t.target, *walk_local(t.target))
                            if isinstance(n, cst.Name)}
                    for t in node.targets):
                found.append(node)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and \
                    isinstance(node.target, cst.Name) and node.target.value == name:
                found.append(node)
        return found

    def _mean_loss(self, assignment: cst.CSTNode) -> bool:
        """An assignment ``loss = <a batch-mean loss>`` with no division in it."""
        if not isinstance(assignment, cst.Assign) or len(assignment.targets) != 1 or \
                not isinstance(assignment.targets[0].target, cst.Name):
            return False
        value = assignment.value
        if any(isinstance(n, cst.BinaryOperation) and
               isinstance(n.operator, (cst.Divide, cst.FloorDivide, cst.Multiply))
               for n in (value, *walk_local(value))):
            return False
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "mean" and not value.args:
            return True
        qualified = self.qualified_name(func) or ""
        if qualified.startswith("torch.nn.functional."):
            return qualified.rsplit(".", 1)[-1] in _MEAN_LOSSES and _mean_keywords(value)
        constructs = self._constructors(func)
        if len(constructs) != 1 or not isinstance(constructs[0], cst.Call):
            return False
        construct = constructs[0]
        built = self.qualified_name(construct.func) or ""
        return built.startswith("torch.nn.") and built.endswith("Loss") and \
            built.rsplit(".", 1)[-1] not in ("CTCLoss", "TripletMarginLoss") and \
            _mean_keywords(construct)

    def _constructors(self, func: cst.BaseExpression) -> list[cst.BaseExpression | None]:
        """What the callable ``criterion`` / ``self.criterion`` was assigned, everywhere."""
        if isinstance(func, cst.Name):
            return [b.value for b in self.names.bindings_of(func)]
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == "self":
            owner = self.names.enclosing(func, cst.ClassDef)
            if owner is None:
                return []
            return [value for statement in owner.body.body
                    if isinstance(statement, cst.FunctionDef)
                    for value in self_assignments(statement, func.attr.value)]
        return []

    def _used_elsewhere(self, loop: Loop, test: cst.BaseExpression, k_code: str) -> bool:
        """``k`` read anywhere in the loop outside the step's condition."""
        for node in walk_local(loop.body):
            if isinstance(node, (cst.Name, cst.Attribute)) and code_of(node) == k_code and \
                    not self._inside(node, test):
                return True
        return False


RULES = [AccumulationWithoutLossDivision]
