"""Worker processes that one file can crash or stall without costing the run.

Every file of a run is analysed in a forked worker, one at a time per worker.
What a bad file can do to a worker, and what the run sees instead:

* the parser overflows its stack (2,000 nested lists kill LibCST's native
  parser with a segmentation fault): the worker dies, the parent sees its pipe
  close, reports that file alone and forks a fresh worker for the rest;
* the analysis runs past the time budget (``file-timeout``, a 5 MB generated
  file): the budget is CPU time, which the kernel enforces (``RLIMIT_CPU``: the worker
  ends with SIGXCPU), so a file that waits for a CPU on a loaded machine is not cut
  short; a worker that neither finishes nor spends CPU is killed (SIGKILL) at a
  wall-clock backstop (``budget.WALL_BACKSTOP`` times the budget); the parent then
  does the same;
* ``RecursionError``/``MemoryError`` inside the analysis are caught in the worker,
  whose address space is capped (:func:`memory_budget`) so that a huge file ends in
  ``MemoryError`` there rather than in the machine's out-of-memory killer.

``concurrent.futures.ProcessPoolExecutor`` cannot do this: a dead worker breaks
the whole pool (``BrokenProcessPool`` failed every other file), and a task cannot
be cancelled once it runs. Workers only compute; the parent writes files, so a
worker killed at any point leaves no file half-written.

Workers never outlive the run: each asks the kernel for SIGKILL when its parent
dies (``PR_SET_PDEATHSIG`` on Linux) and also polls its parent's pid, and the
parent kills them when the run ends, normally or not. Workers ignore SIGINT: a
Ctrl-C reaches the whole process group, and only the parent reports it. A run
forks no more workers than it has files, nor more than the machine has CPUs.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from torchfix_codemods.budget import WALL_BACKSTOP, set_cpu_budget

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

T = TypeVar("T")
R = TypeVar("R")

PARENT_POLL_SECONDS = 1.0
"""How often a worker checks that its parent is alive where the kernel cannot tell it."""


def can_fork() -> bool:
    """Whether workers can be forked here (not on Windows)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Failure:
    """Why a worker gave no result for an item: it died (``signal``/``exit code``) or ran
    past its budget (``timed_out``: of CPU time, or with ``stalled`` of wall-clock time)."""

    timed_out: bool
    detail: str
    stalled: bool = False


@dataclass
class _Worker(Generic[T]):
    process: BaseProcess
    connection: Connection
    item: T | None = None
    deadline: float = 0.0


def run_isolated(items: list[T], work: Callable[[T], R], workers: int,
                 timeout: float | Callable[[T], float]) -> Iterator[tuple[T, R | Failure]]:
    """``work(item)`` for every item in forked workers, each item given ``timeout`` seconds
    of CPU time (or ``timeout(item)``), and :data:`~torchfix_codemods.budget.WALL_BACKSTOP`
    times that of wall-clock time; results as they come. An item whose worker dies or runs
    late yields a :class:`Failure`.

    ``work`` is not pickled (the workers are forked with it); items and results are.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pending: deque[T] = deque(items)
    count = max(1, min(workers, len(items), cpu_count()))
    pool: list[_Worker[T]] = []
    parent = os.getpid()
    memory = memory_budget(count)
    try:
        while pending or any(worker.item is not None for worker in pool):
            while pending and len(pool) < count:
                pool.append(_start(context, work, parent, pool, memory))
            for worker in pool:
                if worker.item is None and pending:
                    worker.item = pending.popleft()
                    seconds = timeout(worker.item) if callable(timeout) else timeout
                    worker.deadline = time.monotonic() + WALL_BACKSTOP * seconds
                    try:
                        worker.connection.send((worker.item, seconds))
                    except OSError:
                        pass  # died before reading: reported below, as any dead worker
            yield from _collect(pool)
    finally:
        for worker in pool:
            _stop(worker)


def _collect(pool: list[_Worker[T]]) -> Iterator[tuple[T, R | Failure]]:
    """Wait for the next results (or deadline); replace workers that died or ran late."""
    from multiprocessing.connection import wait

    busy = [worker for worker in pool if worker.item is not None]
    if not busy:
        return
    now = time.monotonic()
    wait([item for worker in busy for item in (worker.connection, worker.process.sentinel)],
         timeout=max(0.0, min(worker.deadline for worker in busy) - now))
    now = time.monotonic()
    for worker in busy:
        item = worker.item
        assert item is not None
        outcome: R | Failure | None = None
        if worker.connection.poll():
            try:
                outcome = worker.connection.recv()
            except (EOFError, OSError):
                outcome = _death(worker)
        elif not worker.process.is_alive():
            outcome = _death(worker)
        elif now >= worker.deadline:
            outcome = Failure(True, "", stalled=True)
        if outcome is None:
            continue
        worker.item = None
        if isinstance(outcome, Failure):
            _stop(worker)  # a fresh one is forked if items are left
            pool.remove(worker)
        yield item, outcome


def _death(worker: _Worker[T]) -> Failure:
    worker.process.join(timeout=5)
    code = worker.process.exitcode
    if code == -getattr(signal, "SIGXCPU", 0):  # its CPU budget, set in _serve
        return Failure(True, "")
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return Failure(False, f"the analysis crashed ({name})")
    return Failure(False, f"the analysis process ended (exit code {code})")


def _start(context: object, work: Callable[[T], R], parent: int,
           pool: list[_Worker[T]], memory: int) -> _Worker[T]:
    for stream in (sys.stdout, sys.stderr):  # else the child may print their buffers again
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    ours, theirs = context.Pipe()  # type: ignore[attr-defined]
    inherited = [worker.connection for worker in pool] + [ours]
    process = context.Process(  # type: ignore[attr-defined]
        target=_serve, args=(theirs, work, parent, inherited, memory), daemon=True,
        name="torchfix-worker")
    # SIGINT is blocked across the fork: the child ignores it before unblocking, so a Ctrl-C
    # can never reach a worker that has not yet said it ignores it; here it arrives after.
    blocked = hasattr(signal, "pthread_sigmask")
    if blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        process.start()
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    theirs.close()
    return _Worker(process, ours)


def _stop(worker: _Worker[T]) -> None:
    try:
        worker.connection.close()
    except OSError:  # pragma: no cover - already closed
        pass
    if worker.process.is_alive():
        worker.process.kill()
    worker.process.join(timeout=5)


def _serve(connection: Connection, work: Callable[[T], R], parent: int,
           inherited: list[Connection], memory: int) -> None:
    """A worker's life: compute each item it receives until its pipe closes."""
    for other in inherited:
        other.close()  # the parent's ends: only the parent may hold them
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with(parent)
    _limit_memory(memory)
    _collect_less()
    from torchfix_codemods.isolation import call_deep

    def serve() -> None:
        while True:
            try:
                item, seconds = connection.recv()
            except (EOFError, OSError):
                return
            _limit_cpu(seconds)
            set_cpu_budget(seconds)
            try:
                connection.send(work(item))
            except BaseException:  # noqa: BLE001 - out of memory pickling a result, closed pipe
                os._exit(WORKER_FAILED)  # the parent reports the file, without a traceback

    # Every item in one deep-stack thread (see isolation.call_deep), reserved once.
    call_deep(serve)


GC_THRESHOLDS = (10000, 50, 50)
"""The garbage collector's thresholds in a worker (CPython's default: 700, 10, 10)."""


def _collect_less() -> None:
    """Let the cyclic garbage collector run less often in a worker.

    Parsing a file allocates hundreds of thousands of LibCST nodes, none of them garbage
    until the file is done (the trees hold no cycles, reference counting frees them), yet at
    the default thresholds every 700 allocations started a collection and every hundredth of
    those scanned the whole heap, inherited modules included: 6 to 12% of a cold check's
    CPU time (in one process over the 187 benchmark files, medians of interleaved runs).
    What the worker inherited is moved out of the collector's sight (``gc.freeze``): it
    lives as long as the worker, and is then not touched (nor copied) by every collection."""
    import gc

    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _limit_cpu(seconds: float) -> None:
    """End this worker (SIGXCPU) once it has spent ``seconds`` more of CPU time, on the
    item it starts now; without a core dump (the default action of SIGXCPU dumps one)."""
    try:
        import resource

        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = used.ru_utime + used.ru_stime
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        limit = math.ceil(spent + seconds)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, OSError, ValueError, AttributeError):  # pragma: no cover - no limit
        pass


WORKER_FAILED = 70
"""A worker's exit code when it could not hand its result back."""


def memory_budget(workers: int) -> int:
    """Bytes of address space a worker may add to what it inherits: the machine's memory
    shared between the workers, and never less than 2 GiB (the analysis of a large real
    file takes a few hundred MiB; a 20 MB generated one took 15.8 GB before this limit)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 0
    return max(2 << 30, physical // max(1, workers))


def _limit_memory(budget: int) -> None:
    """Cap this worker's address space at its current size plus ``budget``: a file that needs
    more ends in ``MemoryError`` (or the parser's abort) in this worker alone, instead of
    pushing the machine into swap or its out-of-memory killer."""
    if budget <= 0:
        return
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + budget
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError, StopIteration):  # not Linux: no cap
        pass


def _die_with(parent: int) -> None:
    """Make this process end when ``parent`` does, even if that one is SIGKILLed."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
            pass
    if os.getppid() != parent:  # it died before the request above took hold
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="torchfix-parent-watch", daemon=True).start()
