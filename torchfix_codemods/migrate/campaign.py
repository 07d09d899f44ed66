"""Several repositories in one call: checked first, then migrated in parallel processes.

Every repository is checked before any is changed, so a dirty one stops the
run before work starts elsewhere. The engine is pure Python, so parallelism
comes from processes: one per repository (up to ``jobs``), each running the
engine with its share of the cores. Progress travels back through a queue.
Past one machine, run one job per repository in CI (README, "Campaigns").
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from torchfix_codemods.migrate.model import MigrateOptions, RepoOutcome
from torchfix_codemods.migrate.publish import publish
from torchfix_codemods.migrate.repository import Refused, Target, migrate_repository, prepare
from torchfix_codemods.runner import default_jobs

OnProgress = Callable[[int, str, int, int], None]
"""Called with (repository index, what is happening, steps done, steps in all)."""


def prepare_all(paths: list[str], options: MigrateOptions) -> tuple[list[Target], list[str]]:
    """The repositories that can be migrated, and one line for each that cannot."""
    targets, refusals = [], []
    for path in paths:
        try:
            targets.append(prepare(path, options))
        except Refused as refusal:
            refusals.append(str(refusal))
    return targets, refusals


def migrate_all(targets: list[Target], options: MigrateOptions,
                on_progress: OnProgress) -> list[RepoOutcome]:
    """Migrate and publish each repository; outcomes in the order given.

    ``--jobs`` (or the CPU count) is shared: that many repositories at once, each
    engine run with the cores left over for it.
    """
    with _terminated_cleanly():
        return _migrate_all(targets, options, on_progress)


@contextlib.contextmanager
def _terminated_cleanly() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, ``timeout``) unwinds like Ctrl-C: every ``finally``
    runs, so no temporary worktree is left registered in the user's repository."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _migrate_all(targets: list[Target], options: MigrateOptions,
                 on_progress: OnProgress) -> list[RepoOutcome]:
    cores = options.overrides.jobs or default_jobs()
    if len(targets) <= 1 or cores <= 1:
        return [_migrate(target, options, lambda *step, i=i: on_progress(i, *step))
                for i, target in enumerate(targets)]
    workers = min(len(targets), cores)
    options = dataclasses.replace(options, overrides=dataclasses.replace(
        options.overrides, jobs=max(1, cores // workers)))
    # spawn: the parent may run a progress-bar thread, which fork must not copy half-way.
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(workers, mp_context=context) as pool:
        events = manager.Queue()
        futures = {pool.submit(_worker, target, options, events, i): i
                   for i, target in enumerate(targets)}
        outcomes: dict[int, RepoOutcome] = {}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(events, on_progress)
            for future in done:
                outcomes[futures[future]] = future.result()
        _drain(events, on_progress)
    return [outcomes[i] for i in range(len(targets))]


def _drain(events: queue.Queue[tuple[int, str, int, int]], on_progress: OnProgress) -> None:
    while True:
        try:
            on_progress(*events.get_nowait())
        except queue.Empty:
            return


def _worker(target: Target, options: MigrateOptions,
            events: queue.Queue[tuple[int, str, int, int]], index: int) -> RepoOutcome:
    return _migrate(target, options, lambda *step: events.put((index, *step)))


def _migrate(target: Target, options: MigrateOptions,
             progress: Callable[[str, int, int], None]) -> RepoOutcome:
    outcome = migrate_repository(target, options, progress)
    progress("publishing" if options.push else "writing the PR body", 1, 1)
    publish(outcome, target, options)
    progress(finished(outcome), 1, 1)  # a repository done early must not look busy
    return outcome


def finished(outcome: RepoOutcome) -> str:
    """The last progress line of a repository: how it ended."""
    if outcome.error is not None:
        return "failed"
    new = len(outcome.new_commits)
    what = f"done: {new} new commit{'' if new == 1 else 's'}"
    return what + (", pushed" if outcome.pushed else "")


__all__ = ["Refused", "migrate_all", "prepare_all"]
