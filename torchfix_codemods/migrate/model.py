"""Plain data of a migration: what was asked, what each repository got.

Picklable on purpose: repositories are migrated in worker processes and their
outcomes travel back to the parent, which prints the table or the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchfix_codemods.findings import Finding
from torchfix_codemods.settings import Overrides

DEFAULT_BRANCH = "torchfix-codemods/migrate"
JUNIT = "junit"
"""Outcomes read test by test from the JUnit XML report pytest wrote for us."""
EXIT_STATUS = "exit status"
"""No report: the command's exit status is all that was read."""
COMMIT_PER = ("rule", "family", "all")


@dataclass(frozen=True)
class MigrateOptions:
    """Everything ``migrate`` was told, the same for every repository of one run."""

    overrides: Overrides = Overrides()
    branch: str = DEFAULT_BRANCH
    commit_per: str = "rule"
    test_cmd: str | None = None
    test_timeout: float = 1800.0
    allow_dirty: bool = False
    force: bool = False
    push: str | None = None
    open_pr: bool = False
    reproduce: str = "torchfix-codemods migrate"
    """The command that reproduces this migration, without the path (``RepoOutcome.scope``)."""


@dataclass(frozen=True)
class SuiteOutcome:
    """One run of the repository's test command."""

    passed: bool
    returncode: int | None
    """None when the command ran past its time limit and was stopped."""
    seconds: float
    failed: tuple[str, ...]
    """Ids (``classname::name``) of the test cases the JUnit report lists as failed or in
    error, collection errors included (empty without a report)."""
    tail: str
    """The last lines of its output."""
    reader: str = EXIT_STATUS
    """How the outcome was read: :data:`JUNIT` or :data:`EXIT_STATUS`."""
    tests: int | None = None
    """Test cases in the report (None without one)."""
    passing: tuple[str, ...] = ()
    """Ids of the test cases the report lists as passed (an expected failure, ``xfail``,
    counts: it ran and ended as the test says it should); empty without a report."""


@dataclass(frozen=True)
class Change:
    """``count`` fixes of ``code`` with one description and safety, in one commit."""

    count: int
    description: str
    code: str
    safety: str


@dataclass(frozen=True)
class CommitRecord:
    """A commit on the migration branch, read back from its trailers."""

    sha: str
    label: str
    """``TFC001`` (one per rule), ``TFC1xx`` (per family) or ``all``."""
    codes: tuple[str, ...]
    subject: str
    files: int
    fixes: int
    safety: dict[str, int]
    """Fix count per safety, e.g. ``{"safe": 10, "unsafe": 2}``."""
    changes: tuple[Change, ...] = ()
    """What its fixes did, counted."""
    launch: tuple[str, ...] = ()
    """Scripts this commit migrated to DistributedDataParallel (TFC301): start them with torchrun."""
    imported: tuple[str, ...] = ()
    """Modules it migrated (not scripts, not tests): the scripts using them start with torchrun."""
    new: bool = True
    """Made by this run (False: already on the branch from an earlier run)."""


@dataclass(frozen=True)
class Dropped:
    """A commit the test check removed from the branch."""

    label: str
    codes: tuple[str, ...]
    subject: str
    reason: str
    tail: str


@dataclass
class RepoOutcome:
    """What ``migrate`` did to one repository."""

    path: str
    branch: str
    base: str | None = None
    scope: str = "."
    """The part of the repository migrated, relative to its root."""
    commits: list[CommitRecord] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    tests_before: SuiteOutcome | None = None
    tests_after: SuiteOutcome | None = None
    test_versions: str | None = None
    """The Python and torch versions the tests ran on, as the test interpreter reports them."""
    untested: str | None = None
    """Why the commits could not be checked against the tests (None: they were)."""
    style: Any = None
    """The repository's style tools and what they did (:class:`~.style.Style`)."""
    tests_reused: int = 0
    """Test runs read back from an earlier run on the same tree instead of run again."""
    differs_from_single_run: list[str] = field(default_factory=list)
    """Files whose migrated text is not what one ``fix`` run gives, not counting dropped commits."""
    keyword_order_only: list[str] = field(default_factory=list)
    """Those of them that differ only in the order of a call's keyword arguments."""
    notes: list[str] = field(default_factory=list)
    pr_body: str | None = None
    pr_body_path: str | None = None
    pushed: bool = False
    pr_url: str | None = None
    pr_command: str | None = None
    """The ``gh pr create`` command to run when ``gh`` could not open the PR itself."""
    error: str | None = None
    link_base: str | None = None
    """``https://github.com/owner/repo/blob/<sha>/`` when the remote is on GitHub."""

    @property
    def fixes(self) -> int:
        return sum(c.fixes for c in self.commits)

    @property
    def new_commits(self) -> list[CommitRecord]:
        return [c for c in self.commits if c.new]
