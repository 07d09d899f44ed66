"""Deep code without a crash: a big stack and a high recursion limit for one file's analysis.

LibCST's trees and the rules' walks recurse once per level of nesting, several
Python frames per level: a 1,000-term ``1 + 1 + ...`` chain (a left-leaning tree
1,000 deep) exceeds Python's default limit of 1,000 frames, and the file's other
findings were lost to a ``RecursionError``. Raising the limit alone is not safe:
the main thread's 8 MiB C stack overflows first and the process dies with a
segmentation fault. So the analysis runs in a thread whose stack is
:data:`STACK_BYTES` (reserved, not committed: only the pages used cost memory),
under :data:`RECURSION_LIMIT`.

Measured on CPython 3.11 / LibCST 1.9 (tests/test_isolation.py keeps the cases):
a 1,000-term chain is analysed completely in such a thread; a 100,000-term chain
and 2,000 nested lists are not Python this interpreter can compile (``ast``
refuses them: recursion during AST construction, "too many nested parentheses"),
and LibCST's native parser overflows its stack on 1,500 nested lists
(segmentation fault) in the main thread. Those reach the worker process, whose
crash or time budget (:mod:`~torchfix_codemods.workers`) costs that file alone.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024
"""The analysis thread's stack: address space reserved, touched only as deep as the code is."""
RECURSION_LIMIT = 50_000
"""Python frames allowed in that thread; at well under 10 KiB of C stack per frame, the stack
above holds them."""


_DEEP = threading.local()


def call_deep(function: Callable[[], T]) -> T:
    """``function()`` run in a thread with a deep stack; its exception is raised here.

    Called from such a thread already, it runs ``function`` right there: a worker process
    serves every file from one deep thread, so no second stack is ever reserved while the
    first is still being released (after a ``MemoryError`` near the worker's memory cap, a
    new thread's stack did not fit).
    """
    if getattr(_DEEP, "active", False):
        return function()
    outcome: list[object] = []
    failure: list[BaseException] = []

    def target() -> None:
        _DEEP.active = True
        try:
            outcome.append(function())
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            failure.append(error)

    previous_stack = threading.stack_size()
    previous_limit = sys.getrecursionlimit()
    # The limit is the interpreter's, not the thread's: raised only while the deep thread
    # runs, and the thread that waits here does nothing deep meanwhile.
    sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
    try:
        threading.stack_size(STACK_BYTES)
        try:
            thread = threading.Thread(target=target, name="torchfix-analysis", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous_stack)
        thread.join()
    finally:
        sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return outcome[0]  # type: ignore[return-value]
