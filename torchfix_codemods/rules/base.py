"""What a rule is: a LibCST visitor that carries its own code, docs and examples.

A rule sees one parsed module through a :class:`RuleContext` (names, imports,
its options, the project's facts) and calls :meth:`Rule.report`, offering
fixes. It knows nothing of files, processes or output formats, and nothing of
the run's fix policy: it may offer alternative fixes at different safety
tiers (``use_reentrant=False`` unsafe, ``use_reentrant=True`` safe), and the
engine picks the best one the run allows, then decides whether it is applied,
validated, withheld or shown.

Rules define ``visit_<Node>``/``leave_<Node>`` methods like a LibCST visitor;
the engine runs every active rule in one shared traversal, so a rule must not
rely on returning ``False`` to skip children.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.project import ProjectFact, ProjectFacts
from torchfix_codemods.edits.references import ImportRemoval, ImportRequest, Imports
from torchfix_codemods.findings import Safety
from torchfix_codemods.options import RuleOptions
from torchfix_codemods.prefilter import ANY_CODE, Needs

NewNode = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel
"""What a fix puts in place of a node: a node, nothing, or several statements."""
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
    replacements: list[tuple[cst.CSTNode, NewNode]]
    imports: tuple[ImportRequest, ...] = ()
    remove_imports: tuple[ImportRemoval, ...] = ()
    min_torch: TorchVersion | None = None


@dataclass
class NodeFinding:
    """A finding as a rule reports it, still attached to its CST node.

    ``fixes`` are alternatives in order of preference; the engine applies the
    first one the run's policy allows (see ``engine.choose_fix``). The engine
    turns this into a plain :class:`~torchfix_codemods.findings.Finding`.
    """

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fixes: tuple[Fix, ...] = ()
    reason: str | None = None
    withheld: str | None = None
    note: bool = False
    """A remark rather than a problem (style only, "no migration needed"): reports show it
    at a notice level."""


@dataclass
class RuleContext:
    """What a rule may know about the module it is looking at."""

    path: str
    source: str
    module: cst.Module
    names: NameIndex
    imports: Imports
    options: RuleOptions
    findings: list[NodeFinding] = field(default_factory=list)

    @property
    def project(self) -> ProjectFacts:
        """Facts from the run's other files (unknown until the project index exists)."""
        return self.names.project


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
    needs: ClassVar[Needs | None] = None
    """Words the file's code must contain for the rule to report anything in it, read with
    ``ast`` before LibCST parses the file (see :mod:`torchfix_codemods.prefilter`). It must be
    a necessary condition. Every rule states its own (tests/test_prefilter.py), or
    ``ANY_CODE`` on purpose: the rule then runs wherever its triggers occur."""
    valid: ClassVar[Sequence[str]] = ()
    invalid: ClassVar[Sequence[Example]] = ()
    uses_torch_names: ClassVar[bool] = True
    """False for pure-syntax rules (a typo check) that do not need a torch import to match;
    the shared shadowing test then skips the rule."""
    project_facts: ClassVar[tuple[ProjectFact, ...]] = ()
    """Cross-file facts this rule reads from ``context.project``: the runner builds the
    project index only for runs where an active rule asks, and such a rule's results then
    depend on other files (see :mod:`torchfix_codemods.analysis.project`)."""

    def __init__(self, context: RuleContext) -> None:
        self.context = context

    @classmethod
    def wanted_by_project(cls, project: ProjectFacts) -> bool:
        """Whether the project index gives this rule work in a file that its ``triggers`` and
        ``needs`` would skip: the other side of an edit made in two files. A question to
        the index about this file only (a dictionary look-up), so skipped files stay cheap."""
        return False

    @classmethod
    def file_needs(cls) -> Needs:
        """:attr:`needs`; rules whose facts live in data tables derive theirs from the table."""
        return ANY_CODE if cls.needs is None else cls.needs

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
        alternatives: Sequence[Fix] = (),
        reason: str | None = None,
        withheld: str | None = None,
        note: bool = False,
    ) -> None:
        """Report a finding at ``node``, with its ``fix`` and, after it in order of preference,
        ``alternatives`` (a safer fix for runs that do not allow the first)."""
        fixes = (fix, *alternatives) if fix is not None else tuple(alternatives)
        self.context.findings.append(
            NodeFinding(type(self), node, message or self.message, fixes, reason, withheld, note)
        )

    @classmethod
    def documentation(cls) -> str:
        """The rule's docstring in ruff's sections, dedented."""
        return inspect.cleandoc(cls.__doc__ or "")
