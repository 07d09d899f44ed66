"""One repository: check it can be migrated, then build its branch in a separate worktree.

The user's checkout is never touched: the work happens in a ``git worktree``
of HEAD (or of the migration branch, when an earlier run made it) in a
temporary directory, and only at the end is the branch pointed at the result.

The branch is built rule by rule: one ``fix`` run over the repository with the
whole selection first gives the reference (the tree a single ``fix`` would
write) and the plan (which codes fix which files). Then each code (or family)
is applied alone, in code order, and committed; passes repeat until no code
changes anything, so fixes that only appear after another rule's fix land
too. The final tree is compared with the reference, and every file where they
differ (other than through a dropped commit) is named in the PR body.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import DiscoveryError, discover
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.migrate import commits, git, style, testsave
from torchfix_codemods.migrate.commits import counted
from torchfix_codemods.migrate.compare import same_program
from torchfix_codemods.migrate.git import GitError
from torchfix_codemods.migrate.model import (
    CommitRecord,
    Dropped,
    MigrateOptions,
    RepoOutcome,
    SuiteOutcome,
)
from torchfix_codemods.migrate.selection import MigrationConfiguration
from torchfix_codemods.migrate.testcmd import comparable, newly_failing, run_tests, versions
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import ConfigError

MAX_PASSES = 3
Progress = Callable[[str, int, int], None]
"""Called with (what is happening, steps done, steps in all)."""


class Refused(Exception):
    """The repository cannot be migrated as asked; the message is one line (exit 2)."""


@dataclass(frozen=True)
class Target:
    """A repository that passed the checks, and where its migration starts."""

    path: str
    """As the user named it (shown in output)."""
    root: str
    subdir: str
    """The part of the repository to migrate, relative to its root (``.`` for all of it)."""
    base: str
    branch_sha: str | None
    start: str
    rebuild: bool
    dirty: int = 0
    """Uncommitted changes left out (``--allow-dirty``)."""


def prepare(path: str, options: MigrateOptions) -> Target:
    """Every check that can refuse a repository, before anything is changed anywhere."""
    if not os.path.isdir(path):
        raise Refused(f"{path}: not a directory")
    try:
        root = git.toplevel(path)
    except GitError:
        raise Refused(f"{path}: not a git repository") from None
    try:
        base = git.head(root)
    except GitError:
        raise Refused(f"{path}: the repository has no commit yet") from None
    branch = options.branch
    if not git.valid_branch_name(root, branch):
        raise Refused(f"--branch: '{branch}' is not a valid branch name")
    dirty = git.dirty_files(root)
    if dirty and not options.allow_dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise Refused(f"{path}: uncommitted changes ({shown}); commit or stash them, "
                      "or pass --allow-dirty to migrate the last commit")
    try:
        Configuration(options.overrides, cwd=os.path.abspath(path))
    except ConfigError as error:
        raise Refused(str(error)) from None
    existing = git.branch_sha(root, branch)
    start, rebuild = base, False
    if existing is not None:
        where = git.checked_out_at(root, branch)
        if where is not None:
            raise Refused(f"{path}: branch '{branch}' is checked out at {where}; "
                          "check out another branch first")
        if git.is_ancestor(root, base, existing):
            start = existing
        elif options.force:
            rebuild = True
        else:
            raise Refused(f"{path}: branch '{branch}' exists and does not contain HEAD "
                          f"({base[:12]}); pass --force to rebuild it from HEAD, or choose "
                          "another --branch")
    subdir = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return Target(path, root, subdir, base, existing, start, rebuild, len(dirty))


def migrate_repository(target: Target, options: MigrateOptions,
                       progress: Progress | None = None) -> RepoOutcome:
    """Build the branch for one prepared repository; errors end up in ``outcome.error``."""
    outcome = RepoOutcome(path=target.path, branch=options.branch, base=target.base,
                          scope=target.subdir.replace(os.sep, "/"))
    parent = tempfile.mkdtemp(prefix="torchfix-migrate-")
    worktree = os.path.join(parent, os.path.basename(target.root.rstrip(os.sep)) or "repo")
    try:
        git.add_worktree(target.root, worktree, target.start)
        try:
            _Migration(target, options, worktree, outcome, progress or _silent).run()
        finally:
            git.remove_worktree(target.root, worktree)
    except (GitError, ConfigError, DiscoveryError, OSError) as error:
        outcome.error = str(error)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    return outcome


def _silent(_what: str, _done: int, _total: int) -> None:
    return None


class _Migration:
    """The steps for one repository, sharing its worktree and settings."""

    def __init__(self, target: Target, options: MigrateOptions, worktree: str,
                 outcome: RepoOutcome, progress: Progress) -> None:
        self.target = target
        self.options = options
        self.worktree = worktree
        self.outcome = outcome
        self.progress = progress
        self.done = 0
        self.total = 2
        self.files: list[str] = []
        self.dropped_labels: set[str] = set()
        self.dropped_paths: set[str] = set()
        self.kept = (testsave.load(target.root, options.branch, options.test_cmd)
                     if options.test_cmd is not None else None)
        """Test runs by the tree they ran on: a replay in another order, or a later
        ``migrate`` that finds the same trees, reads them back instead of running again."""
        self.ran: set[str] = set()
        """The trees this run tested itself."""
        self.style = style.for_repository(worktree)
        outcome.style = self.style

    def step(self, what: str) -> None:
        self.progress(what, self.done, self.total)
        self.done += 1

    def relative(self, path: str) -> str:
        return os.path.relpath(path, self.worktree).replace(os.sep, "/")

    def run(self) -> None:
        scope = os.path.normpath(os.path.join(self.worktree, self.target.subdir))
        settings = MigrationConfiguration(self.options.overrides, self.worktree)
        tracked = git.tracked_files(self.worktree)
        self.files = [f for f in discover([scope], settings) if self.relative(f) in tracked]
        self._read_existing_commits()
        if self.target.dirty:
            self.outcome.notes.append(
                f"The checkout had {self.target.dirty} uncommitted change(s) (--allow-dirty): "
                "the migration starts from the last commit and does not include them.")

        self.step("planning")
        reference = run_paths(self.files, settings, Mode.FIX, show_progress=False)
        self._note_errors(reference)
        changed = [r.path for r in reference if r.changed]
        self._restyle([self.relative(p) for p in changed], record=False)
        fixed_by: dict[str, set[str]] = {}
        for result in reference:
            for finding in _applied(result):
                fixed_by.setdefault(finding.code, set()).add(result.path)
        reference_tree = git.stage_tree(self.worktree, [self.relative(p) for p in changed])
        git.reset_hard(self.worktree, self.target.start)
        plan = commits.groups(fixed_by, self.options.commit_per)
        testing = self.options.test_cmd is not None
        self.total = 2 + len(plan) * (2 if testing else 1) + (1 if testing else 0)

        self._commit_rules(plan, fixed_by, changed, settings)
        final = git.head(self.worktree)
        if testing:
            self._final_tests()
        differs = [p for p in git.changed_paths(self.worktree, reference_tree, final)
                   if p not in self.dropped_paths]
        self.outcome.differs_from_single_run = differs
        self.outcome.keyword_order_only = [
            p for p in differs if same_program(
                p, git.read_blob(self.worktree, reference_tree, p),
                git.read_blob(self.worktree, final, p))]
        self.step("findings left for a person")
        left = run_paths(self.files, settings, Mode.CHECK, show_progress=False)
        self.outcome.remaining = sorted(
            (dataclasses.replace(f, path=self.relative(f.path)) for r in left for f in r.findings),
            key=Finding.sort_key)
        self._update_branch(final)

    # ------------------------------------------------------------------ steps
    def _commit_rules(self, plan: list[tuple[str, tuple[str, ...]]],
                      fixed_by: dict[str, set[str]], changed: list[str],
                      settings: MigrationConfiguration) -> None:
        """A commit per label, in ``plan``'s order; never two for one label.

        Passes repeat while a rule finds more to fix (a fix that needs another rule's fix
        first). When a rule that already has its commit finds more in a later pass, the
        branch is rebuilt from its start with that rule moved after the others, so its
        fixes stay in one commit; a rule committed by an earlier run is never given a
        second commit (its new fixes stay in the checklist, with a note).
        """
        codes_of = dict(plan)
        order = [label for label, _ in plan]
        earlier = list(self.outcome.commits)
        earlier_labels = {c.label for c in earlier}
        left_out: dict[str, int] = {}
        for attempt in range(MAX_PASSES):
            self.outcome.commits = list(earlier)
            made_here: set[str] = set()
            moved = None
            for number in range(MAX_PASSES):
                made = False
                for label in order:
                    if label in self.dropped_labels:
                        continue
                    codes = codes_of[label]
                    # First pass: the files the reference run fixed with these codes. Later
                    # passes: every file it changed (a fix that needs another rule's fix first).
                    paths = (sorted(set().union(*(fixed_by[c] for c in codes))) if number == 0
                             else changed)
                    if number == 0 and attempt == 0:
                        self.step(f"{label}: fixing")
                    applied, touched = self._fix(codes, paths, settings)
                    if not touched:
                        continue
                    if label in earlier_labels or label in made_here:
                        git.reset_hard(self.worktree, "HEAD")  # never a second commit
                        if label in earlier_labels:
                            left_out[label] = len(applied)
                            continue
                        moved = label
                        break
                    record = self._commit(label, codes, applied, touched)
                    if self.options.test_cmd is not None and not self._keep(record, touched):
                        self.dropped_labels.add(label)
                        continue
                    self.outcome.commits.append(record)
                    made_here.add(label)
                    made = True
                if moved is not None or not made:
                    break
            if moved is None:
                break
            if attempt == MAX_PASSES - 1:
                self.outcome.notes.append(
                    f"{moved} finds more to fix after other rules' commits even when applied "
                    "last; those fixes are left for a person (one commit per rule).")
                break
            order = [label for label in order if label != moved] + [moved]
            git.reset_hard(self.worktree, self.target.start)
        for label, count in sorted(left_out.items()):
            self.outcome.notes.append(
                f"{label} has {counted(count, 'fix', 'fixes')} more than its commit on the "
                "branch (code added since, or another torchfix-codemods version); the branch "
                "keeps one commit per rule, so they are listed below: delete the branch and "
                "run again to include them.")

    def _read_existing_commits(self) -> None:
        if self.target.start == self.target.base:
            return
        theirs = 0
        for sha, text in git.log_messages(self.target.root, self.target.base, self.target.start):
            record = commits.parse(sha, text)
            if record is None:
                theirs += 1
            else:
                self.outcome.commits.append(record)
        if theirs:
            self.outcome.notes.append(
                f"The branch also has {theirs} commit(s) not made by torchfix-codemods.")

    def _note_errors(self, results: list[FileResult]) -> None:
        for result in results:
            if result.error:
                self.outcome.notes.append(f"`{self.relative(result.path)}`: {result.error}")

    def _fix(self, codes: tuple[str, ...], paths: list[str],
             settings: MigrationConfiguration) -> tuple[list[Finding], list[str]]:
        """Apply ``codes`` alone to ``paths`` (uncommitted); the fixes and the files changed.

        The project index covers every file of the migration, as in one ``fix`` run, so
        a fix that reads another file's facts is made whatever files it is applied to."""
        results = run_paths(paths, settings.narrowed(codes), Mode.FIX, show_progress=False,
                            project_paths=self.files)
        touched = [self.relative(r.path) for r in results if r.changed]
        applied = [dataclasses.replace(f, path=self.relative(f.path))
                   for r in results if r.changed for f in _applied(r)]
        self._restyle(touched)
        return applied, touched

    def _restyle(self, touched: list[str], record: bool = True) -> None:
        """The repository's import sorter and formatter over the files just fixed (see
        :mod:`~torchfix_codemods.migrate.style`); ``record``: count it for the PR body."""
        if not self.style.tools:
            return
        ran, skipped, checked = self.style.ran, self.style.skipped, self.style.checked
        if not record:  # the reference run: styled the same way, not reported
            self.style.ran, self.style.skipped, self.style.checked = {}, {}, {}
        try:
            for relative in touched:
                if not relative.endswith(".py"):
                    continue
                path = os.path.join(self.worktree, relative)
                original = git.read_blob(self.worktree, "HEAD", relative)
                with open(path, encoding="utf-8", newline="") as handle:
                    fixed = handle.read()
                text = (original or b"").decode("utf-8", errors="replace")
                styled = self.style.apply(path, relative, text, fixed)
                if styled != fixed:
                    with open(path, "w", encoding="utf-8", newline="") as handle:
                        handle.write(styled)
        finally:
            if not record:
                self.style.ran, self.style.skipped, self.style.checked = ran, skipped, checked

    def _commit(self, label: str, codes: tuple[str, ...], applied: list[Finding],
                touched: list[str]) -> CommitRecord:
        used = tuple(c for c in codes if any(f.code == c for f in applied))
        kinds = {path: commits.launch_kind(path, self._text(path))
                 for path in commits.launched_scripts(applied)}
        launch = tuple(p for p, kind in kinds.items() if kind == commits.SCRIPT)
        imported = tuple(p for p, kind in kinds.items() if kind == commits.MODULE)
        text = commits.message(label, used, applied, len(touched), launch, imported)
        sha = git.commit(self.worktree, touched, text)
        safety = Counter(f.fix.safety.value for f in applied if f.fix is not None)
        return CommitRecord(sha, label, used, text.splitlines()[0], len(touched), len(applied),
                            dict(sorted(safety.items())), commits.changes(applied),
                            launch, imported)

    def _text(self, relative: str) -> str:
        try:
            with open(os.path.join(self.worktree, relative), encoding="utf-8",
                      errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    def _tests(self, what: str) -> SuiteOutcome:
        """The test command's outcome on HEAD's tree: run, or read back when this tree was
        tested already (in this run, or an earlier one with the same command)."""
        assert self.kept is not None
        tree = git.tree_of(self.worktree, "HEAD")
        if tree in self.kept.runs:
            if tree not in self.ran:
                self.outcome.tests_reused += 1
            return self.kept.runs[tree]
        self.step(what)
        assert self.options.test_cmd is not None
        outcome = run_tests(self.options.test_cmd, self.worktree, self.options.test_timeout)
        git.reset_hard(self.worktree, "HEAD")  # tests may rewrite tracked files
        self.kept.runs[tree] = outcome
        self.ran.add(tree)
        return outcome

    def _base_tests(self) -> SuiteOutcome:
        """The tests on the base, run once, when a commit is first to be checked."""
        if self.outcome.tests_before is None:
            assert self.options.test_cmd is not None and self.kept is not None
            here = git.head(self.worktree)
            git.reset_hard(self.worktree, self.target.base)
            self.outcome.tests_before = self._tests("tests on the base")
            if self.kept.versions is None or git.tree_of(self.worktree, "HEAD") in self.ran:
                self.kept.versions = versions(self.options.test_cmd, self.worktree)
            self.outcome.test_versions = self.kept.versions
            git.reset_hard(self.worktree, here)
            self.outcome.untested = comparable(self.outcome.tests_before)
        return self.outcome.tests_before

    def _keep(self, record: CommitRecord, touched: list[str]) -> bool:
        """Run the tests after ``record``; drop it (and say why) when they fail in a way the
        base did not. Kept untested when the base run cannot be compared with."""
        before = self._base_tests()
        if self.outcome.untested is not None:
            return True
        after = self._tests(f"{record.label}: testing")
        reason = newly_failing(before, after)
        if reason is None:
            return True
        git.reset_hard(self.worktree, "HEAD~1")
        self.dropped_paths.update(touched)
        if all(d.label != record.label for d in self.outcome.dropped):
            self.outcome.dropped.append(Dropped(record.label, record.codes, record.subject,
                                                reason, after.tail))
        return False

    def _final_tests(self) -> None:
        """The tests on the branch as it ends (read back when that tree was tested), and
        every run kept for the next ``migrate``."""
        assert self.kept is not None
        if self.outcome.commits:
            before = self._base_tests()
            if before.returncode is not None:  # a base that timed out is not run again
                self.outcome.tests_after = self._tests("tests on the branch")
        testsave.save(self.target.root, self.options.branch, self.kept)

    def _update_branch(self, final: str) -> None:
        if final != self.target.branch_sha and (self.target.branch_sha is not None
                                                 or final != self.target.base):
            git.update_branch(self.target.root, self.options.branch, final,
                              self.target.branch_sha)
        if not self.outcome.commits:
            self.outcome.notes.append("Nothing to fix: no branch was created."
                                      if self.target.branch_sha is None else
                                      "Nothing to fix: the branch has no commit over HEAD.")
        elif not self.outcome.new_commits:
            self.outcome.notes.append("The branch was already up to date: no new commit.")


def _applied(result: FileResult) -> list[Finding]:
    return [f for f in result.findings if f.fix is not None and f.fix.applied]
