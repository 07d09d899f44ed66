"""What one training loop does per iteration: backward calls, optimizer steps, gradient resets.

TFC503 asks it of every loop that steps an optimizer: a loop that calls
``backward()`` and ``step()`` and never resets gradients accumulates them. A
reset may be spelled many ways (``optimizer.zero_grad()``, ``model.zero_grad()``,
``p.grad = None``, ``p.grad.zero_()``, a helper of this file that does one of
these), and any of them counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchfix_codemods.analysis.callees import local_function
from torchfix_codemods.analysis.names import NameIndex
from torchfix_codemods.analysis.optimizers import optimizer_of_step
from torchfix_codemods.analysis.syntax import code_of
from torchfix_codemods.analysis.walk import walk_local


@dataclass
class LoopFacts:
    """What one training loop does per iteration."""

    loop: cst.For | cst.While
    backwards: list[cst.Call] = field(default_factory=list)
    steps: list[tuple[cst.Call, cst.BaseExpression]] = field(default_factory=list)
    zeroes_grads: bool = False
    conditional_step: bool = False

    @property
    def optimizers(self) -> set[str]:
        return {code_of(optimizer) for _, optimizer in self.steps}


_ZERO_MARKERS = ("zero_grad", "set_to_none", ".grad = None", ".grad=None", ".grad.zero_()",
                 "grad.zero_", "grad.detach_")


def loop_facts(names: NameIndex, loop: cst.For | cst.While) -> LoopFacts:
    """Backwards, optimizer steps and gradient resets inside ``loop`` (any depth)."""
    facts = LoopFacts(loop)
    for node in walk_local(loop.body):
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                facts.backwards.append(node)
            if isinstance(func, cst.Attribute) and func.attr.value in ("zero_grad", "zero_"):
                facts.zeroes_grads = True
            optimizer = optimizer_of_step(names, node)
            if optimizer is not None:
                facts.steps.append((node, optimizer))
                if any(isinstance(a, (cst.If, cst.IfExp)) and _inside(names, a, loop)
                       for a in names.ancestors(node)):
                    facts.conditional_step = True
            called = local_function(names, node)
            if called is not None and any(m in code_of(called) for m in _ZERO_MARKERS):
                facts.zeroes_grads = True
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            if any(marker in code_of(node) for marker in _ZERO_MARKERS):
                facts.zeroes_grads = True
    return facts


def _inside(names: NameIndex, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in names.ancestors(node))
