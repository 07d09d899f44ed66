"""One evidence type: an answer to a yes/no question about the code, and why.

Every value analysis answers "yes", "no" or "unknown" and keeps a reason a reviewer can read
(a finding's message quotes it). The questions differ in what they add to that: whether a
value is a tensor adds whether it is a number or a literal (``x += 1`` keeps ``x``'s kind),
whether it may require grad adds whether an unknown is suspected. Those add fields to this
type (:class:`~..facts.tensors.Provenance`, :class:`~..facts.values.Fact`); the answer and
its reason are spelled once.

The per-expression questions whose only answers are "yes, because ..." and "not known"
(``leaf_requiring_grad``, ``cuda_device``) return the reason or None: their "no" is never
asked for, and a ``str | None`` says exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Answer = Literal["yes", "no", "unknown"]


@dataclass(frozen=True)
class Evidence:
    """One answer and the evidence for it."""

    answer: Answer
    reason: str

    @property
    def is_yes(self) -> bool:
        return self.answer == "yes"

    @property
    def is_no(self) -> bool:
        return self.answer == "no"

    @property
    def is_unknown(self) -> bool:
        return self.answer == "unknown"
