"""One bounded, memoised, cycle-guarded evaluation of a question over a module's expressions.

The value analyses (is it a tensor, may it require grad...) answer by following names to
their bindings and calls to their definitions. Three guards keep that finite and cheap,
and they were written out once per analysis: answers are remembered per expression for
the whole module (``x = x + y`` a hundred times would otherwise cost exponential time), an
expression met again while it is being evaluated is a cycle, and past a depth bound the
answer is "not known". :class:`Evaluation` holds the three once; an analysis gives it the
step that answers one expression and the answers for a cycle and for too deep.

Every value analysis walks through it: ``tensors`` and ``values`` (one :class:`Evaluation`
per question, the memo shared), and the smaller questions asked of one expression at a
time (``leaves``, ``layout``, ``devices``, ``modules``, ``compat``, ``callees``' class of an
instance), which keep theirs in the module's memo with :func:`module_evaluation`. Each
question keeps its own depth bound: how far a chain of names is worth following differs (a
device string four steps, a rank sixteen), and changing a bound changes answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import libcst as cst

from torchfix_codemods.analysis.core.memo import ModuleMemo, Slot

T = TypeVar("T")
N = TypeVar("N", bound=cst.CSTNode)


class Evaluation(Generic[T]):
    """Answers of one question for one module's nodes (expressions, or the classes a class
    question walks), by ``id`` of the node."""

    def __init__(self, memo: dict[int, T], max_depth: int, *, cycle: T, too_deep: T) -> None:
        self.memo = memo
        """Shared by every evaluation of the same question on the same module (see
        :class:`~.memo.ModuleMemo`): a finished answer does not depend on the asker."""
        self.max_depth = max_depth
        self.cycle = cycle
        self.too_deep = too_deep
        self.active: set[int] = set()

    def __call__(self, expr: N, depth: int, step: Callable[[N, int], T]) -> T:
        """``step(expr, depth + 1)``, unless known, cyclic or too deep."""
        known = self.memo.get(id(expr))
        if known is not None:
            return known
        if id(expr) in self.active:
            return self.cycle
        if depth > self.max_depth:
            return self.too_deep
        self.active.add(id(expr))
        try:
            found = step(expr, depth + 1)
        finally:
            self.active.discard(id(expr))
        self.memo[id(expr)] = found
        return found


def module_evaluation(memo: ModuleMemo, slot: Slot[Evaluation[T]], max_depth: int, *,
                      cycle: T, too_deep: T) -> Evaluation[T]:
    """The module's one :class:`Evaluation` of the question ``slot`` names, made on first use.

    For questions asked as plain functions (``rank_of(names, expr)``): the answers, and the
    expressions being evaluated, live with the module, so a question that reaches itself
    through another (``module_evidence`` through ``parameter_evidence``) meets its own cycle.
    """
    found = memo.get(slot)
    if found is None:
        found = Evaluation({}, max_depth, cycle=cycle, too_deep=too_deep)
        memo[slot] = found
    return found
