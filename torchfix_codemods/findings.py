"""Findings as plain data: what crosses the engine/runner/cache/report boundary.

A finding is born in a rule as a :class:`~torchfix_codemods.rules.base.NodeFinding`
(still attached to its CST node); the engine locates it, decides its fix and
turns it into a :class:`Finding` here. Nothing in this module knows LibCST, so
findings travel across worker processes, into the cache and into reports as
simple values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Safety(str, enum.Enum):
    """How much a fix can be trusted.

    ``SAFE``: behaviour is the same, or an error becomes the intended result;
    applied by ``fix``. ``UNSAFE``: behaviour changes on purpose, or the fix is
    right only under conditions the tool cannot prove; applied only with
    ``--unsafe-fixes``. ``NONE``: report only.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    NONE = "none"


@dataclass(frozen=True)
class FixInfo:
    """What is known about one finding's fix.

    ``applied`` is true when the fix was written (or shown in a diff);
    ``withheld`` holds the reason when the engine refused to apply it.
    """

    safety: Safety
    description: str
    applied: bool = False
    withheld: str | None = None


@dataclass(frozen=True)
class Finding:
    """One diagnostic at one place in one file."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    fix: FixInfo | None = None
    reason: str | None = None
    internal_error: bool = False
    cell: int | None = None
    """For notebooks: the 1-based cell number; ``line`` is then the line within the cell."""
    note: bool = False
    """A remark rather than a problem (style only, "no migration needed")."""

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.withheld is None

    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Path, then a notebook's cell (cell 1's findings before cell 2's), line, column."""
        return (self.path, self.cell or 0, self.line, self.column, self.code)


@dataclass
class FileResult:
    """Everything the engine learned about one source unit."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    original: str | None = None
    fixed: str | None = None
    new_bytes: bytes | None = None
    error: str | None = None
    note: str | None = None
    """Why the file was passed over without being an error (a notebook of another language)."""
    edits_by_code: dict[str, list[tuple[int, int]]] | None = None
    """For ``--diff`` of a file fixed by several codes: the old-line ranges (0-based,
    half-open) each code's fixes touch (see ``attribution``)."""
    notebook_json: tuple[str, str] | None = None
    """For ``--diff`` of a changed notebook: its JSON before and after, the text a patch
    must apply to (the cells' sources are what a person reads)."""
    noqa_added: int = 0
    """For ``check --add-noqa``: how many lines got a noqa comment."""

    @property
    def changed(self) -> bool:
        return self.fixed is not None and self.fixed != self.original
