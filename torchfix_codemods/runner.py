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
4. the misses are analysed in this process when there are few, else in a pool
   whose workers are forked after the engine is imported and take the largest
   files first, so that no worker is left alone with a big file at the end;
   each worker gets the bytes already read, so no file is read twice;
5. the new results go into the cache, one write per index.

An unexpected failure on one file becomes an error on that file; it never stops
the others.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project import NO_PROJECT, ProjectFacts
from torchfix_codemods.catalog import reads_project
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.options import FileOptions
from torchfix_codemods.settings import Settings

if TYPE_CHECKING:  # concurrent.futures imports logging: ~20 ms a warm run need not pay
    from concurrent.futures import Executor, Future

    from torchfix_codemods.analysis.project_index import ProjectIndex

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
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def analyse(path: str, data: bytes, settings: Settings, mode: Mode,
            project: ProjectFacts = NO_PROJECT) -> FileResult:
    """Everything for one file whose bytes are read: safe to run in a worker process."""
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
        if mode is Mode.FIX and result.changed and result.new_bytes is not None:
            from torchfix_codemods.writing import write_source

            problem = write_source(path, result.new_bytes, data)
            if problem is not None:
                # Nothing was written: the file's findings are those of its bytes as they are,
                # none of them fixed, so that the summary counts no fix that did not happen.
                result = process(unit, settings.options_for(path), apply_fixes=False,
                                 project=project)
                result.findings = [unit.place(finding) for finding in result.findings]
                result.error = problem
        if mode is Mode.DIFF and result.changed and unit.notebook is not None \
                and result.new_bytes is not None:
            result.notebook_json = (data.decode("utf-8", "replace"),
                                    result.new_bytes.decode("utf-8", "replace"))
        if not result.changed:
            result.original = None
            result.fixed = None
        result.new_bytes = None
        return result
    except Exception as error:  # noqa: BLE001 - one file's failure must not stop the run
        return FileResult(path, error=f"internal error: {_describe(error)}")


def _add_noqa(path: str, data: bytes, settings: Settings, project: ProjectFacts) -> FileResult:
    """``check --add-noqa`` on one file: its findings silenced in place, written atomically."""
    from torchfix_codemods.single import noqa_text
    from torchfix_codemods.writing import write_source

    try:
        done = noqa_text(path, data, settings.options_for(path), project=project)
        result = done.result
        if done.new_bytes is not None:
            problem = write_source(path, done.new_bytes, data)
            if problem is not None:
                result.error = problem
            else:
                result.noqa_added = done.noqa_added
        return result
    except Exception as error:  # noqa: BLE001 - one file's failure must not stop the run
        return FileResult(path, error=f"internal error: {_describe(error)}")


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
            with open(path, "rb") as handle:
                data = handle.read()
                identity = _identity(handle.fileno())
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
    project = _project(work, contents, configuration, jobs, project_paths or ())
    store = None
    if mode is Mode.CHECK and any(settings.cache for _, settings in work):
        from torchfix_codemods.cache import Store

        store = Store()
    tasks: list[Task] = []
    for index, (path, settings) in enumerate(work):
        if path not in contents:
            continue
        data, digest = contents[path]
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
    computed = _compute(tasks, mode, jobs, project)
    for task, result in _progress(computed, len(paths), done, show_progress):
        results[task.index] = result
        if (store is not None and task.key is not None and result.error is None
                and result.note is None):
            store.put(task.path, task.settings, task.settings.options_for(task.path), task.key,
                      result.findings)
        emitted.advance()
    if store is not None:
        store.save()
    return results  # type: ignore[return-value]


def _identity(fd: int) -> tuple[int, int]:
    """The file behind a name: a symlink and its target are one file."""
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


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


def _project(work: list[tuple[str, Settings]], contents: dict[str, tuple[bytes, str]],
             configuration: Configuration, jobs: int,
             also: Iterable[str] = ()) -> ProjectIndex | None:
    """The project index, when a rule active for some file reads cross-file facts; over the
    files of the run and ``also`` (read by the index builder, each under its own settings)."""
    from torchfix_codemods.indexing import build_project, index_needed

    if not index_needed(work):
        return None
    readable = [(path, settings) for path, settings in work if path in contents]
    listed = {path for path, _ in readable}
    readable += [(path, configuration.settings_for(path)) for path in also if path not in listed]
    return build_project(readable, configuration.run, jobs, contents)


def _reads_project(options: FileOptions, project: ProjectIndex | None) -> bool:
    return project is not None and reads_project(options.codes)


def _facts(path: str, settings: Settings, project: ProjectIndex | None) -> ProjectFacts:
    """What the rules of this file may know of the others (nothing unless one asks)."""
    if project is None or not _reads_project(settings.options_for(path), project):
        return NO_PROJECT
    return project.view(path)


def _key(path: str, digest: str, settings: Settings, project: ProjectIndex | None) -> str:
    """The cache key; for a file whose rules read the index, it covers what they can read."""
    from torchfix_codemods.cache import entry_key

    options = settings.options_for(path)
    facts = project.fingerprint(path) if project is not None and _reads_project(
        options, project) else ""
    return entry_key(digest, options, facts)


def use_pool(tasks: list[Task], jobs: int) -> bool:
    """Whether analysing ``tasks`` in worker processes beats doing it here."""
    return (jobs > 1 and len(tasks) >= POOL_MIN_FILES
            and sum(len(task.data) for task in tasks) >= POOL_MIN_BYTES)


def _compute(tasks: list[Task], mode: Mode, jobs: int,
             project: ProjectIndex | None) -> Iterator[tuple[Task, FileResult]]:
    if not tasks:
        return
    if not use_pool(tasks, jobs):
        for task in tasks:
            yield task, analyse(task.path, task.data, task.settings, mode,
                                _facts(task.path, task.settings, project))
        return
    yield from _pooled(tasks, mode, min(jobs, len(tasks)), project)


_WORKER: tuple[Mode, ProjectIndex | None] | None = None


def _start_worker(mode: Mode, project: ProjectIndex | None) -> None:
    """Each worker receives the mode and the project index once, not with every file."""
    global _WORKER
    _WORKER = (mode, project)


def _work(task: Task) -> FileResult:
    assert _WORKER is not None
    mode, project = _WORKER
    return analyse(task.path, task.data, task.settings, mode,
                   _facts(task.path, task.settings, project))


def _pooled(tasks: list[Task], mode: Mode, workers: int,
            project: ProjectIndex | None) -> Iterator[tuple[Task, FileResult]]:
    """Results as workers finish them; the largest files are handed out first."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # Imported before the workers start: forked workers inherit LibCST and the rules
    # instead of each importing them again.
    import torchfix_codemods.engine  # noqa: F401
    from torchfix_codemods.rules.registry import all_rules

    all_rules()
    ordered = sorted(tasks, key=lambda task: len(task.data), reverse=True)
    with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker,
                             initargs=(mode, project)) as pool:
        # A few tasks in flight per worker keep them busy without queueing every file's
        # bytes at once.
        backlog = iter(ordered)
        running = {_submit(pool, task): task for task in _take(backlog, workers * 4)}
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                task = running.pop(future)
                for following in _take(backlog, 1):
                    running[_submit(pool, following)] = following
                yield task, _result_of(task, future)


def _submit(pool: Executor, task: Task) -> Future[FileResult]:
    """The task's future; a pool broken by a dead worker fails only the files it still had."""
    from concurrent.futures import Future

    try:
        return pool.submit(_work, task)
    except Exception as error:  # noqa: BLE001 - BrokenProcessPool, or shutting down
        failed: Future[FileResult] = Future()
        failed.set_exception(error)
        return failed


def _take(tasks: Iterator[Task], count: int) -> Iterable[Task]:
    for _ in range(count):
        task = next(tasks, None)
        if task is None:
            return
        yield task


def _result_of(task: Task, future: Future[FileResult]) -> FileResult:
    try:
        return future.result()
    except Exception as error:  # noqa: BLE001 - a worker that died takes only its file down
        return FileResult(task.path, error=f"internal error: {_describe(error)}")


def _describe(error: BaseException) -> str:
    import traceback

    return traceback.format_exception_only(type(error), error)[-1].strip()


def _progress(items: Iterator[tuple[Task, FileResult]], total: int, done: int,
              show: bool) -> Iterator[tuple[Task, FileResult]]:
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
