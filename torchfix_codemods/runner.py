"""Many files: one read and one hash each, the project index, the check cache, a process pool
when it pays, atomic writes, and a progress bar on terminals only.

A run goes in steps, each deciding what the next one can skip (from speed):

1. every file is read once and hashed once, under the settings in force for it;
2. when an active rule reads cross-file facts, the project index is built from
   those bytes, each file's summary cached by the same digest
   (:mod:`~torchfix_codemods.indexing`);
3. for ``check``, a cache hit is answered right there, without importing the
   engine (LibCST, the rules) or starting a process, so a warm run costs little
   more than the interpreter's start-up plus reading and hashing;
4. the misses are analysed in worker processes (one when there are few, else up
   to ``--jobs``), forked after the engine is imported, the largest files
   first, so that no worker is left alone with a big file at the end; each
   worker gets the bytes already read, so no file is read twice;
5. this process writes the fixes and puts the new results into the cache, one
   write per index.

An unexpected failure on one file becomes an error on that file; it never stops
the others. A file that crashes its worker, or that runs past ``file-timeout``
seconds, or that is past ``max-file-size`` or ``max-nesting-depth``, becomes one finding
("too large to analyse: skipped (...)", naming the limit) and is left untouched
(:mod:`~torchfix_codemods.budget`, :mod:`~torchfix_codemods.workers`).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project import NO_PROJECT, ProjectFacts
from torchfix_codemods.budget import (
    TooComplex,
    analysed_size,
    over_time,
    size_problem,
    skipped,
)
from torchfix_codemods.catalog import reads_project
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.options import FileOptions
from torchfix_codemods.settings import Settings

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import ProjectIndex

POOL_MIN_FILES = 8
"""Below this many files to analyse, a pool costs more (forking, shipping results) than it
saves: measured in bench/README.md ("Pool or inline")."""
POOL_MIN_BYTES = 64 * 1024
"""...and below this much source in all (a few small files analyse in tens of milliseconds)."""


class Mode(str, enum.Enum):
    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"
    ADD_NOQA = "add-noqa"


@dataclass(frozen=True)
class Task:
    """One file to analyse: its settings, its bytes as read once, and its cache key when
    ``check`` caches."""

    index: int
    path: str
    settings: Settings
    data: bytes
    key: str | None = None


def default_jobs() -> int:
    from torchfix_codemods.workers import cpu_count

    return cpu_count()


def read_regular(path: str) -> bytes:
    """A regular file's bytes. Opened without blocking and refused unless regular: a path that
    became a FIFO since discovery (which skips them) must not stall the run on ``open``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def analyse(path: str, data: bytes, settings: Settings, mode: Mode,
            project: ProjectFacts = NO_PROJECT) -> FileResult:
    """Everything for one file whose bytes are read, its fix written (in this process)."""
    return write_fixes(compute(path, data, settings, mode, project), data, mode)


def compute(path: str, data: bytes, settings: Settings, mode: Mode,
            project: ProjectFacts = NO_PROJECT) -> FileResult:
    """One file's findings and, for ``fix``/``--diff``, its new bytes; writes nothing, so it
    is safe to run in a worker process that may be killed at any moment."""
    from torchfix_codemods.engine import process, read_unit
    from torchfix_codemods.notebooks import NotebookError, NotebookSkipped

    if mode is Mode.ADD_NOQA:
        return _add_noqa(path, data, settings, project)
    try:
        try:
            unit = read_unit(path, data)
        except NotebookSkipped as error:
            return FileResult(path, note=str(error))
        except NotebookError as error:
            return FileResult(path, error=str(error))
        if isinstance(unit, Finding):  # TFC000: the bytes are not source text
            return FileResult(path, findings=[unit])
        result = process(unit, settings.options_for(path), apply_fixes=mode is not Mode.CHECK,
                         locate_edits=mode is Mode.DIFF, project=project)
        result.findings = [unit.place(finding) for finding in result.findings]
        if mode is Mode.DIFF and result.changed and unit.notebook is not None \
                and result.new_bytes is not None:
            result.notebook_json = (data.decode("utf-8", "replace"),
                                    result.new_bytes.decode("utf-8", "replace"))
        if not result.changed:
            result.original = None
            result.fixed = None
            result.new_bytes = None
        return result
    except TooComplex as error:
        return too_complex(path, settings, error.why)
    except RecursionError:
        return too_complex(path, settings, skipped("nested deeper than the analysis can follow"))
    except MemoryError:
        return too_complex(path, settings, skipped("the analysis ran out of memory"))
    except Exception as error:  # noqa: BLE001 - one file's failure must not stop the run
        return FileResult(path, error=f"internal error: {_describe(error)}")


_COMPUTE = compute


def _add_noqa(path: str, data: bytes, settings: Settings, project: ProjectFacts) -> FileResult:
    """``check --add-noqa`` on one file: its findings silenced, the new bytes left for the
    parent process to write (:func:`write_fixes`)."""
    from torchfix_codemods.single import noqa_text

    try:
        done = noqa_text(path, data, settings.options_for(path), project=project)
        result = done.result
        result.new_bytes = done.new_bytes
        if done.new_bytes is not None:
            result.noqa_added = done.noqa_added
        return result
    except Exception as error:  # noqa: BLE001 - one file's failure must not stop the run
        return FileResult(path, error=f"internal error: {_describe(error)}")


def write_fixes(result: FileResult, data: bytes, mode: Mode) -> FileResult:
    """Write a ``fix`` (or ``--add-noqa``) run's new bytes for ``result``, in the parent
    process, never a worker. When nothing could be written, nothing counts as fixed."""
    from torchfix_codemods.writing import write_source

    writes = (mode is Mode.FIX and result.changed) or mode is Mode.ADD_NOQA
    if writes and result.new_bytes is not None:
        problem = write_source(result.path, result.new_bytes, data)
        if problem is not None:
            result.error = problem
            result.fixed = None
            result.noqa_added = 0
            result.findings = [_unapplied(finding) for finding in result.findings]
    result.new_bytes = None
    return result


def _unapplied(finding: Finding) -> Finding:
    """``finding`` as it stands in the unwritten file: its fix, if applied, was not."""
    if finding.fix is None or not finding.fix.applied:
        return finding
    return dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, applied=False))


def too_complex(path: str, settings: Settings, why: str) -> FileResult:
    """One finding for a file past its budget or whose analysis cannot finish (TFC000 when
    it is selected, else an error); ``why`` names the limit (:mod:`~torchfix_codemods.budget`).
    The file is left untouched and the run goes on."""
    return skipped_result(path, settings.options_for(path).codes, why)


def skipped_result(path: str, codes: Iterable[str], why: str) -> FileResult:
    """:func:`too_complex` for the rules ``codes``."""
    from torchfix_codemods.catalog import SYNTAX_ERROR_CODE

    message = f"{why}; file left untouched"
    if SYNTAX_ERROR_CODE not in codes:
        return FileResult(path, error=message)
    from torchfix_codemods.rules.registry import rule_by_code

    rule = rule_by_code(SYNTAX_ERROR_CODE)
    return FileResult(path, findings=[Finding(path, 1, 1, 1, 1, rule.code, rule.name,
                                              message)])


def run_paths(
    paths: list[str],
    configuration: Configuration,
    mode: Mode,
    on_result: Callable[[FileResult], None] | None = None,
    show_progress: bool | None = None,
    project_paths: list[str] | None = None,
) -> list[FileResult]:
    """Process every path, in parallel when it pays; results (and ``on_result`` calls) in the
    order of ``paths``, each path under the settings in force for it.

    ``project_paths``: more files the project index covers (not analysed themselves), so a
    run over a few files reads the same cross-file facts as a run over the whole project
    (``migrate`` fixes one rule's files at a time)."""
    jobs = configuration.jobs or default_jobs()
    if show_progress is None:
        show_progress = sys.stderr.isatty() and len(paths) > 20
    work = [(path, configuration.settings_for(path)) for path in paths]
    results: list[FileResult | None] = [None] * len(paths)
    contents: dict[str, tuple[bytes, str]] = {}
    if work:
        from torchfix_codemods.cache import content_digest
    seen: dict[tuple[int, int], str] = {}
    for index, (path, _) in enumerate(work):
        try:
            data = read_regular(path)
            status = os.stat(path)  # the file behind the name: a symlink and its target are one
            identity = (status.st_dev, status.st_ino)
        except OSError as error:
            results[index] = FileResult(path, error=f"cannot read: {error.strerror or error}")
            continue
        if mode is Mode.FIX and identity in seen:
            # Another name (a symlink) of a file this run fixes already: fixed once, under
            # the first name; a second fix would find the file changed under it.
            results[index] = FileResult(path)
            continue
        seen.setdefault(identity, path)
        contents[path] = (data, content_digest(data))
    for index, (path, settings) in enumerate(work):
        known = contents.get(path)
        problem = (size_problem(analysed_size(path, known[0], settings.max_file_size),
                                settings.max_file_size) if known else None)
        if problem is not None:  # no parser of the run reads it: skipped before the index
            results[index] = too_complex(path, settings, problem)
            del contents[path]
    too_complex_files: dict[str, str] = {}
    spent: dict[str, float] = {}
    project = _project(work, contents, configuration, jobs, too_complex_files, spent,
                       project_paths or ())
    store = None
    if mode is Mode.CHECK and any(settings.cache for _, settings in work):
        from torchfix_codemods.cache import Store

        store = Store()
    tasks: list[Task] = []
    for index, (path, settings) in enumerate(work):
        if path not in contents:
            continue
        data, digest = contents[path]
        if path in too_complex_files:  # its summary did not finish: the analysis would not
            results[index] = too_complex(path, settings, skipped(too_complex_files[path]))
            continue
        key = None
        if store is not None and settings.cache:
            key = _key(path, digest, settings, project)
            findings = store.get(path, settings, settings.options_for(path), key)
            if findings is not None:
                results[index] = FileResult(path, findings=findings)
                continue
        tasks.append(Task(index, path, settings, data, key))
    done = len(paths) - len(tasks)
    emitted = _Emitter(results, on_result)
    emitted.advance()
    computed = _compute(tasks, mode, jobs, project, configuration.run.file_timeout, spent)
    try:
        for task, result, cacheable in _progress(computed, len(paths), done, show_progress):
            results[task.index] = result
            if (store is not None and task.key is not None and result.error is None
                    and cacheable and result.note is None):
                store.put(task.path, task.settings, task.settings.options_for(task.path),
                          task.key, result.findings)
            emitted.advance()
    finally:
        from torchfix_codemods.prefilter import KNOWN_FACTS

        KNOWN_FACTS.clear()
    if store is not None:
        store.save()
    return results  # type: ignore[return-value]


class _Emitter:
    """Calls ``on_result`` in the order of the paths, as soon as each result and every one
    before it is known (workers finish out of order)."""

    def __init__(self, results: list[FileResult | None],
                 on_result: Callable[[FileResult], None] | None) -> None:
        self._results = results
        self._on_result = on_result
        self._next = 0

    def advance(self) -> None:
        if self._on_result is None:
            return
        while self._next < len(self._results) and self._results[self._next] is not None:
            self._on_result(self._results[self._next])  # type: ignore[arg-type]
            self._next += 1


_STAR_IMPORT = re.compile(rb"\bimport[ \t]+\*")


def _project(work: list[tuple[str, Settings]], contents: dict[str, tuple[bytes, str]],
             configuration: Configuration, jobs: int,
             too_complex_files: dict[str, str], spent: dict[str, float],
             also: Iterable[str] = ()) -> ProjectIndex | None:
    """The project index, when a rule active for some file reads cross-file facts; over the
    files of the run and ``also`` (read by the index builder, each under its own settings)."""
    from torchfix_codemods.indexing import build_project, index_needed

    if not index_needed(work) and not any(
            _STAR_IMPORT.search(data) for data, _ in contents.values()):
        # Star imports are resolved through the index for every rule (what a name means
        # must not depend on the selection), so a run with one builds it.
        return None
    readable = [(path, settings) for path, settings in work if path in contents]
    listed = {path for path, _ in readable}
    readable += [(path, configuration.settings_for(path)) for path in also if path not in listed]
    from torchfix_codemods.prefilter import KNOWN_FACTS

    # The summaries' ast trees give the prefilter its facts too; the analysis workers, forked
    # after this, inherit them (cleared when the run ends: run_paths).
    return build_project(readable, configuration.run, jobs, contents, too_complex_files, spent,
                         KNOWN_FACTS)


def _reads_project(path: str, options: FileOptions, project: ProjectIndex | None) -> bool:
    return project is not None and (reads_project(options.codes) or
                                     project.star_importing(path))


def _facts(path: str, settings: Settings, project: ProjectIndex | None) -> ProjectFacts:
    """What the rules of this file may know of the others (nothing unless one asks, or the
    file star-imports another: what its names mean comes from the index)."""
    if project is None or not _reads_project(path, settings.options_for(path), project):
        return NO_PROJECT
    return project.view(path)


def _key(path: str, digest: str, settings: Settings, project: ProjectIndex | None) -> str:
    """The cache key; for a file whose rules read the index, it covers what they can read."""
    from torchfix_codemods.cache import entry_key

    options = settings.options_for(path)
    facts = project.fingerprint(path) if project is not None and _reads_project(
        path, options, project) else ""
    return entry_key(digest, options, facts)


def use_pool(tasks: list[Task], jobs: int) -> bool:
    """Whether analysing ``tasks`` in several worker processes beats one."""
    return (jobs > 1 and len(tasks) >= POOL_MIN_FILES
            and sum(len(task.data) for task in tasks) >= POOL_MIN_BYTES)


def _compute(tasks: list[Task], mode: Mode, jobs: int, project: ProjectIndex | None,
             timeout: float, spent: dict[str, float] | None = None,
             ) -> Iterator[tuple[Task, FileResult, bool]]:
    """(task, result, whether the result may be cached) as the files are done.

    A file's budget is ``timeout`` seconds of CPU time in all: what its project summary took
    (``spent``) is taken off its analysis' share, at least a second being left.

    Each file is analysed in a forked worker (:mod:`~torchfix_codemods.workers`) under the
    time budget, so that a crash or a stall costs that file alone; where this platform cannot
    fork, here, in a deep-stack thread without a budget.
    """
    if not tasks:
        return
    from torchfix_codemods.workers import Failure, can_fork, run_isolated

    global _WORKER
    if not can_fork():  # pragma: no cover - Windows
        for task in tasks:
            yield task, write_fixes(_work(task, (mode, project)), task.data, mode), True
        return
    # Imported before the workers start: forked workers inherit LibCST and the rules
    # instead of each importing them again.
    import torchfix_codemods.engine  # noqa: F401
    from torchfix_codemods.rules.registry import all_rules

    all_rules()
    _warm_up(mode)
    _WORKER = (mode, project)
    workers = jobs if use_pool(tasks, jobs) else 1
    # The largest files first, so that no worker is left alone with a big file at the end.
    ordered = sorted(tasks, key=lambda task: len(task.data), reverse=True)
    try:
        def budget(task: Task) -> float:
            return max(1.0, timeout - (spent or {}).get(task.path, 0.0))

        for task, outcome in run_isolated(ordered, _work, workers, budget):
            if isinstance(outcome, Failure):
                why = (over_time(timeout, outcome.stalled) if outcome.timed_out
                       else outcome.detail)
                yield task, too_complex(task.path, task.settings, skipped(why)), False
            else:
                yield task, write_fixes(outcome, task.data, mode), True
    finally:
        _WORKER = None


_WARM_UP = """\
import torch
from torch import nn
from torch.utils.data import DataLoader


def main(path, data):
    model = nn.DataParallel(nn.Linear(3, 1))
    state = torch.load(path)
    loader = DataLoader(data, batch_size=4, num_workers=2)
    with torch.cuda.amp.autocast():
        for x in loader:
            y = model(x)
            print(y.data.numpy(), y.cpu().numpy())
    model.eval()
    torch.save(model.state_dict(), path)
"""
"""Code that most rules look at: analysed once in this process before the first fork."""
_warmed = False


def _warm_up(mode: Mode) -> None:
    """Analyse :data:`_WARM_UP` here, once per process, before forking workers.

    Rules and LibCST load modules and fill caches on first use; a forked worker inherits
    them from this process, or pays for them again in every run. For the CLI (one run) the
    cost only moves here; for a process that runs many times (tests, ``migrate``) it was
    paid by every run (about 150 ms of a 5 ms check, measured)."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    from torchfix_codemods.catalog import entries_by_code
    from torchfix_codemods.indexing import summarize_bytes

    settings = Settings(enabled=frozenset(entries_by_code()), unsafe_fixes=True)
    try:
        summarize_bytes("warm_up.py", _WARM_UP.encode())
        # Through the module's own function: a test may replace ``compute`` to make the
        # workers fail, which must not make this process fail.
        _COMPUTE("warm_up.py", _WARM_UP.encode(), settings, Mode.DIFF)
    except Exception:  # noqa: BLE001 - only a cache warmer: the real files report for real
        pass


_WORKER: tuple[Mode, ProjectIndex | None] | None = None
"""The run's mode and project index, which forked workers inherit instead of receiving."""


def _work(task: Task, worker: tuple[Mode, ProjectIndex | None] | None = None) -> FileResult:
    from torchfix_codemods.isolation import call_deep

    mode, project = worker or _WORKER  # type: ignore[misc]
    return call_deep(lambda: compute(task.path, task.data, task.settings, mode,
                                     _facts(task.path, task.settings, project)))


def _describe(error: BaseException) -> str:
    import traceback

    return traceback.format_exception_only(type(error), error)[-1].strip()


def _progress(items: Iterator[tuple[Task, FileResult, bool]], total: int, done: int,
              show: bool) -> Iterator[tuple[Task, FileResult, bool]]:
    if not show:
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from torchfix_codemods.report.console import rich_console

    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(),
                  console=rich_console(stderr=True), transient=True) as progress:
        task = progress.add_task("files", total=total, completed=done)
        for item in items:
            progress.advance(task)
            yield item
