"""Many files: a process pool, atomic writes, and a progress bar on terminals only.

Each worker reads, analyses and (in ``fix`` mode) writes its own file, so the
parent only collects small results. An unexpected failure on one file becomes
an error on that file; it never stops the others.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import stat
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

from torchfix_codemods import cache
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.engine import process, read_unit
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.notebooks import Notebook, NotebookError
from torchfix_codemods.settings import Settings
from torchfix_codemods.source import SourceUnit

# Below this many files a pool costs more (process start, imports) than it saves.
POOL_THRESHOLD = 8


class Mode(str, enum.Enum):
    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def atomic_write(path: str, data: bytes, expected: bytes) -> str | None:
    """Replace ``path`` with ``data`` via a temporary file and a rename, keeping its mode.

    Returns an error message instead of writing when the file changed since it
    was read (an editor saved it meanwhile): nothing is lost.
    """
    try:
        with open(path, "rb") as handle:
            if handle.read() != expected:
                return "file changed on disk while it was being fixed; not written"
        mode = stat.S_IMODE(os.stat(path).st_mode)
        directory = os.path.dirname(os.path.abspath(path))
        fd, temporary = tempfile.mkstemp(prefix=".torchfix-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
    except OSError as error:
        return f"cannot write: {error.strerror or error}"
    return None


def process_path(path: str, settings: Settings, mode: Mode) -> FileResult:
    """Everything for one file, under the settings in force for it; safe in a worker process."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return FileResult(path, error=f"cannot read: {error.strerror or error}")
    key = None
    if mode is Mode.CHECK and settings.cache:
        key = cache.cache_key(path, data, settings.options_for(path))
        cached = cache.load(cache.cache_root(settings), key)
        if cached is not None:
            return FileResult(path, findings=cached)
    result = _process_data(path, data, settings, mode)
    if key is not None and result.error is None:
        cache.store(cache.cache_root(settings), key, result.findings)
    return result


def cached_result(path: str, settings: Settings) -> FileResult | None:
    """The cached ``check`` result for ``path``, if its content was seen before."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    findings = cache.load(cache.cache_root(settings),
                          cache.cache_key(path, data, settings.options_for(path)))
    return None if findings is None else FileResult(path, findings=findings)


def _process_data(path: str, data: bytes, settings: Settings, mode: Mode) -> FileResult:
    try:
        notebook = None
        if path.endswith(".ipynb"):
            try:
                notebook = Notebook.parse(data)
            except NotebookError as error:
                return FileResult(path, error=str(error))
            unit: SourceUnit | Finding = SourceUnit(path, notebook.text)
        else:
            unit = read_unit(path, data)
        if isinstance(unit, Finding):
            return FileResult(path, findings=[unit])
        result = process(unit, settings.options_for(path), apply_fixes=mode is not Mode.CHECK,
                         locate_edits=mode is Mode.DIFF)
        if notebook is not None:
            _to_cells(result, notebook)
        if mode is Mode.FIX and result.changed and result.new_bytes is not None:
            problem = atomic_write(path, result.new_bytes, data)
            if problem is not None:
                result.error = problem
                result.fixed = None
        if not result.changed:
            result.original = None
            result.fixed = None
        result.new_bytes = None
        return result
    except Exception as error:  # noqa: BLE001 - one file's failure must not stop the run
        detail = traceback.format_exception_only(type(error), error)[-1].strip()
        return FileResult(path, error=f"internal error: {detail}")


def _to_cells(result: FileResult, notebook: Notebook) -> None:
    """Findings at cell lines; new bytes as the notebook's JSON with the fixed cells."""
    mapped = []
    for finding in result.findings:
        cell, line = notebook.locate(finding.line)
        _, end_line = notebook.locate(finding.end_line)
        mapped.append(dataclasses.replace(finding, line=line, end_line=end_line, cell=cell))
    result.findings = mapped
    if result.changed and result.fixed is not None:
        result.new_bytes = notebook.render(result.fixed)


def _worker(arguments: tuple[str, Settings, Mode]) -> FileResult:
    return process_path(*arguments)


def run_paths(
    paths: list[str],
    configuration: Configuration,
    mode: Mode,
    on_result: Callable[[FileResult], None] | None = None,
    show_progress: bool | None = None,
) -> list[FileResult]:
    """Process every path, in parallel when it pays, in a stable order; each path under the
    settings in force for it."""
    jobs = configuration.jobs or default_jobs()
    if show_progress is None:
        show_progress = sys.stderr.isatty() and len(paths) > 20
    work = [(path, configuration.settings_for(path)) for path in paths]
    results: list[FileResult] = []
    for result in _progress(_results(work, mode, jobs), len(paths), show_progress):
        if on_result is not None:
            on_result(result)
        results.append(result)
    return results


def _results(work: list[tuple[str, Settings]], mode: Mode, jobs: int) -> Iterator[FileResult]:
    hits: dict[str, FileResult] = {}
    if mode is Mode.CHECK:
        # Cache hits cost a hash each: answer them here instead of starting workers.
        for path, settings in work:
            hit = cached_result(path, settings) if settings.cache else None
            if hit is not None:
                hits[path] = hit
    misses = [(path, settings) for path, settings in work if path not in hits]
    computed = _compute(misses, mode, jobs)
    for path, _ in work:
        yield hits[path] if path in hits else next(computed)


def _compute(work: list[tuple[str, Settings]], mode: Mode, jobs: int) -> Iterator[FileResult]:
    if jobs <= 1 or len(work) < POOL_THRESHOLD:
        for path, settings in work:
            yield process_path(path, settings, mode)
        return
    chunksize = max(1, min(16, len(work) // (jobs * 4)))
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        yield from pool.map(_worker, [(p, s, mode) for p, s in work], chunksize=chunksize)


def _progress(results: Iterator[FileResult], total: int, show: bool) -> Iterator[FileResult]:
    if not show:
        yield from results
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("files", total=total)
        for result in results:
            progress.advance(task)
            yield result
