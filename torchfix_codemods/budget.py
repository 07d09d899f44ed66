"""The per-file budget: a file too large or too deep to analyse is skipped with one finding.

Three limits, each a key of ``[tool.torchfix-codemods]``; a file past one of them gets one
``TFC000`` finding naming the limit ("too large to analyse: skipped (...)"), is left
untouched by ``fix``, and makes the run exit 1; the other files are checked and fixed:

* ``max-file-size`` (bytes): checked on the bytes as read, before the project summary, the
  prefilter or LibCST parse anything (a 5 MB generated file took over a minute in the
  summary alone, and LibCST's tree of a 20 MB one 15.8 GB before the workers' memory cap);
* ``max-nesting-depth`` (levels of the syntax tree): proved before LibCST's native parser
  sees the text (:func:`depth_problem`), since LibCST's cost grows faster than the depth
  (a 1,000-term ``1 + 1 + ...`` chain about 2 s, a 5,000-level ``not not ... x`` 13 s of
  parse alone, a 20,000-term chain past a minute) and its parser overflows its stack on
  deep enough input in a thread of ordinary size;
* ``file-timeout`` (seconds of CPU time): the worker running the file stops at that much
  CPU time spent on it (the kernel's ``RLIMIT_CPU``), so a loaded machine, where a file
  waits for a CPU, does not skip it; a worker that spends no CPU yet does not finish (a
  stall) is killed at :data:`WALL_BACKSTOP` times the budget of wall-clock time
  (:mod:`~torchfix_codemods.workers`). Within the budget, ``fix`` starts no round of fixes
  that would not end before it (:func:`cpu_left`): such a file keeps its findings, their
  fixes withheld, and is not written.

A crash of the worker (a segmentation fault in the native parser) or a ``RecursionError``
or ``MemoryError`` in the analysis is reported the same way, with its cause.
"""

from __future__ import annotations

import ast
import json
import re
import time

DEFAULT_MAX_FILE_SIZE = 1 << 20
"""``max-file-size``: the largest of the 1,887 real files of the real-code sets is 224 KB;
dense code costs about 60 ms of CPU a KiB (bench/size_scaling.py), so a file past 1 MiB
would only reach ``file-timeout`` after its seconds were spent."""
DEFAULT_MAX_NESTING_DEPTH = 1500
"""``max-nesting-depth``: the deepest of the 1,887 real files is 29 levels; a 1,000-term
``1 + 1 + ...`` chain (about 1,000 levels) is analysed in about 2 s of CPU, a 2,000-term one
took 7 s and a 5,000-level one minutes: LibCST's cost grows faster than the depth."""
SKIPPED = "skipped"
WALL_BACKSTOP = 10
"""A file's wall-clock limit, in multiples of its CPU budget (``file-timeout``): only a
worker that does not finish without spending CPU (a stall) reaches it; on two cores with a
load of 10, a file gets about a fifth of a CPU."""
_deadline: tuple[float, float] | None = None


def over_time(timeout: float, stalled: bool) -> str:
    """Why a file's worker was stopped at its time budget (``file-timeout``, ``timeout``
    seconds): it spent them in CPU time, or (``stalled``) it did not finish in
    :data:`WALL_BACKSTOP` times that of wall-clock time."""
    if not stalled:
        return f"it took longer than file-timeout = {timeout:g} s of CPU time"
    return (f"it did not finish in {WALL_BACKSTOP} times file-timeout = {timeout:g} s of "
            f"wall-clock time")


def set_cpu_budget(seconds: float | None) -> None:
    """The CPU budget of the file this process starts on now (None: no budget), for
    :func:`cpu_left`; a worker sets it before each file."""
    global _deadline
    _deadline = None if seconds is None else (time.process_time() + seconds, seconds)


def cpu_left() -> tuple[float, float] | None:
    """(CPU seconds left of the current file's budget, the whole budget), or None without
    one (a file analysed in this process: stdin, the language server, tests)."""
    if _deadline is None:
        return None
    return _deadline[0] - time.process_time(), _deadline[1]


class TooComplex(Exception):
    """The engine's answer for a file past its nesting budget: ``why`` is the message."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def skipped(detail: str) -> str:
    """The message for a file whose analysis could not finish, for a cause that names no
    single limit (its worker crashed, ran out of memory or of time)."""
    return f"too large or too deep to analyse: {SKIPPED} ({detail})"
_TOKENS = re.compile(
    "[rRbBuUfF]{0,2}(?:'{3}[\\s\\S]*?'{3}|\"{3}[\\s\\S]*?\"{3}"
    "|'(?:\\\\.|[^'\\\\\\n])*'|\"(?:\\\\.|[^\"\\\\\\n])*\")"
    "|#[^\\n]*|[][(){}]|\\\\\\r?\\n|\\n")
"""What the logical-line scan reads: string literals (with their prefix), comments, brackets,
escaped and plain newlines."""
STATEMENT_MARGIN = 250
"""Levels of the syntax tree that statements can add above one logical line's expressions:
Python refuses more than 100 levels of indentation, and a block adds two levels (its
statement and the one inside) at most."""


def analysed_size(path: str, data: bytes, limit: int) -> int:
    """The bytes of ``path`` a parser would read: for a notebook, its code cells' sources
    (outputs, embedded images and metadata are never parsed, and a notebook of a few
    plots is often past 1 MiB with a few KiB of code); for any other file, all of it.

    A notebook within ``limit`` as a whole is within it without being decoded (its code is
    never longer than its JSON); one that is not a readable notebook counts whole.
    """
    if len(data) <= limit or not path.endswith(".ipynb"):
        return len(data)
    try:
        document = json.loads(data)
        cells = document["cells"]
        return sum(len(_source(cell.get("source", "")).encode("utf-8")) for cell in cells
                   if isinstance(cell, dict) and cell.get("cell_type") == "code")
    except (ValueError, TypeError, KeyError, AttributeError):
        return len(data)


def _source(source: object) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def size_problem(size: int, limit: int) -> str | None:
    """Why a file of ``size`` bytes is skipped, or None when it is within ``limit``."""
    if size <= limit:
        return None
    return (f"too large to analyse: {SKIPPED} ({size:,} bytes, over max-file-size = "
            f"{limit:,})")


def depth_problem(text: str, limit: int) -> str | None:
    """Why ``text`` is skipped as too deep, or None when its syntax tree is at most ``limit``
    levels deep (or it does not parse: that is the engine's TFC000, with its line).

    Every level of an expression takes at least one character of its logical line (an
    operator, a dot, a bracket, a keyword), so a file whose longest logical line is shorter
    than ``limit`` less :data:`STATEMENT_MARGIN` is within the limit without being parsed:
    a scan of its brackets and newlines. Only other files are parsed with :mod:`ast` and
    their tree measured, without recursion.
    """
    if longest_logical_line(text) + STATEMENT_MARGIN <= limit:
        return None
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError):
        # CPython's own parser gave up ("too complex", or recursion while building the tree).
        return (f"too deep to analyse: {SKIPPED} (nested deeper than Python compiles, "
                f"over max-nesting-depth = {limit:,})")
    except (SyntaxError, ValueError):
        return None
    depth = tree_depth(tree, limit)
    if depth <= limit:
        return None
    return (f"too deep to analyse: {SKIPPED} (more than {limit:,} levels of nesting, "
            f"over max-nesting-depth = {limit:,})")


def longest_logical_line(text: str) -> int:
    """An upper bound on the levels of expression one logical line of ``text`` can hold: its
    length in characters, newlines inside brackets or after a backslash not ending it, a
    comment counting for nothing and a string literal for one character (a leaf; an f-string
    counts in full: it holds expressions). Brackets in strings and comments are skipped with
    them; an unbalanced one elsewhere only lengthens a line (the tree is then measured)."""
    if len(text) < 64 or "\n" not in text:
        return len(text)
    depth = 0
    start = 0
    saved = 0  # characters of the current line that strings and comments do not count
    longest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if first in "([{":
            depth += 1
        elif first in ")]}":
            depth = max(0, depth - 1)
        elif first == "#":
            saved += len(token)
        elif first == "\\":
            continue
        elif first == "\n":
            if depth == 0:
                end = match.start()
                if end - start - saved > longest:
                    longest = end - start - saved
                start = match.end()
                saved = 0
        elif "f" not in token[:3].split(token[-1])[0].lower():
            saved += len(token) - 1
    return max(longest, len(text) - start - saved)


def tree_depth(tree: ast.AST, stop: int) -> int:
    """The depth of ``tree`` (the root is level 1), walked without recursion; the walk ends
    as soon as a node lies deeper than ``stop``."""
    deepest = 0
    stack = [(tree, 1)]
    children = ast.iter_child_nodes
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                return deepest
        stack.extend((child, depth + 1) for child in children(node))
    return deepest
