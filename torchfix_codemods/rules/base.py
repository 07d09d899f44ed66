"""What a rule is: a LibCST visitor that carries its own code, docs and examples.

A rule sees one parsed module through a :class:`RuleContext` (names, imports,
the target torch release) and calls :meth:`Rule.report` with an optional
:class:`Fix`. It knows nothing of files, processes or output formats; the
engine decides whether a fix is applied, validated, withheld or shown.

Rules define ``visit_<Node>``/``leave_<Node>`` methods like a LibCST visitor;
the engine runs every active rule in one shared traversal, so a rule must not
rely on returning ``False`` to skip children.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from torchfix_codemods.analysis.imports import ImportRemoval, ImportRequest, Imports
from torchfix_codemods.analysis.names import NameIndex
from torchfix_codemods.model import Safety

if TYPE_CHECKING:
    from torchfix_codemods.settings import Settings

Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel
TorchVersion = tuple[int, int]


@dataclass(frozen=True)
class Example:
    """An inline example: ``before`` is flagged; ``after`` is its rewrite.

    ``after`` is None for report-only findings. ``unsafe`` says the rewrite
    needs ``--unsafe-fixes``.
    """

    before: str
    after: str | None = None
    unsafe: bool = False


@dataclass
class Fix:
    """Node replacements plus the imports they need and may leave unused."""

    safety: Safety
    description: str
    replacements: list[tuple[cst.CSTNode, Replacement]]
    imports: tuple[ImportRequest, ...] = ()
    remove_imports: tuple[ImportRemoval, ...] = ()
    min_torch: TorchVersion | None = None


@dataclass
class Report:
    """A finding as a rule produced it, still attached to its CST node."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: Fix | None = None
    reason: str | None = None
    withheld: str | None = None


@dataclass
class RuleContext:
    """What a rule may know about the module it is looking at."""

    path: str
    source: str
    module: cst.Module
    names: NameIndex
    imports: Imports
    settings: Settings
    reports: list[Report] = field(default_factory=list)

    @property
    def target_torch(self) -> TorchVersion | None:
        return self.settings.target_torch


class Rule:
    """Base class of every rule. Subclasses set the class attributes below."""

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    safety: ClassVar[Safety] = Safety.NONE
    default_enabled: ClassVar[bool] = True
    min_torch: ClassVar[TorchVersion | None] = None
    triggers: ClassVar[tuple[str, ...]] = ()
    """Substrings of which at least one must occur in a file for the rule to run."""
    valid: ClassVar[Sequence[str]] = ()
    invalid: ClassVar[Sequence[Example]] = ()
    uses_torch_names: ClassVar[bool] = True
    """False for pure-syntax rules (a typo check) that do not need a torch import to match;
    the shared shadowing test then skips the rule."""

    def __init__(self, context: RuleContext) -> None:
        self.context = context

    @property
    def names(self) -> NameIndex:
        return self.context.names

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        return self.context.names.qualified_name(node)

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: Fix | None = None,
        reason: str | None = None,
        withheld: str | None = None,
    ) -> None:
        self.context.reports.append(
            Report(type(self), node, message or self.message, fix, reason, withheld)
        )

    @classmethod
    def documentation(cls) -> str:
        """The rule's docstring in ruff's sections, dedented."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        return cls.message
