"""The last gate before anything is written: does the new text still work?

A rewritten file must parse, ``compile()``, must not read a name that the
original did not already leave undefined, and must not read a name where it
may not be bound yet. The undefined-name check uses the standard library's
``symtable`` (the compiler's own scope analysis), which is fast and exact about
Python's scoping rules but blind to order; the order check follows each
scope's statements through their branches
(:mod:`torchfix_codemods.analysis.core.definite`): a name bound only later, or only
in one branch of an ``if``, is not available. Both compare the rewrite with the
original, so only what the fix adds counts.
"""

from __future__ import annotations

import builtins
import symtable
import sys
from collections.abc import Callable
from typing import TypeVar

from torchfix_codemods.analysis.core.cells import CELL_MARKER
from torchfix_codemods.analysis.core.definite import flow_of
from torchfix_codemods.notebooks import cell_order

_MODULE_NAMES = frozenset(
    {"__file__", "__name__", "__doc__", "__package__", "__spec__", "__loader__",
     "__builtins__", "__path__", "__annotations__", "__cached__", "__debug__"}
)
_BUILTINS = frozenset(dir(builtins)) | _MODULE_NAMES
T = TypeVar("T")


def undefined_names(text: str, path: str = "<fixed>") -> set[str]:
    """Names read as globals that nothing in the module binds."""
    table = symtable.symtable(text, path, "exec")
    bound: set[str] = set()
    read: set[str] = set()

    def walk(scope: symtable.SymbolTable, is_module: bool) -> None:
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if is_module:
                if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
                    bound.add(name)
                if symbol.is_referenced() and not symbol.is_assigned():
                    read.add(name)
            else:
                if symbol.is_declared_global() and symbol.is_assigned():
                    bound.add(name)
                if symbol.is_global() and symbol.is_referenced():
                    read.add(name)
        for child in scope.get_children():
            walk(child, False)

    walk(table, True)
    return read - bound - _BUILTINS


def uncompilable(text: str, path: str) -> str | None:
    """Why this Python cannot compile the file as it is (syntax of a newer Python, nesting
    past the parser's limits), or None when it can. LibCST parses such files, so rules
    find things in them; but no fix can be checked here, so none is applied."""
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        detail = getattr(error, "msg", None) or str(error) or type(error).__name__
        line = getattr(error, "lineno", None)
        where = f", line {line}" if line else ""
        return (f"Python {version} cannot compile this file as it is ({detail}{where}), so "
                "the fix cannot be checked here: run under the Python the code is written for")
    return None


def check_rewrite(before: str, after: str, path: str) -> str | None:
    """Why ``after`` must not replace ``before``, or None when it may."""
    if CELL_MARKER in before and cell_order(after) != cell_order(before):
        return "the fix would move code across notebook cells"
    try:
        compile(after, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        original = uncompilable(before, path)
        if original is not None:  # the fix is not to blame
            return original
        return f"the fixed code does not compile ({error.__class__.__name__}: {error})"
    try:
        added = _remembered(undefined_names, after, path) - _remembered(undefined_names, before,
                                                                          path)
    except SyntaxError:  # pragma: no cover - compile() above already passed
        return "the fixed code cannot be analysed"
    if added:
        names = ", ".join(sorted(added))
        return f"the fix would read undefined name(s): {names}"
    return _unbound_reads_added(before, after)


_RECENT: dict[tuple[object, ...], object] = {}
_RECENT_SIZE = 8
"""The latest analyses of texts :func:`check_rewrite` compared: a fix round's rewrite is the
next round's original, so each text of a file's rounds is analysed once, not twice."""


def _remembered(analysis: Callable[..., T], text: str, *args: str) -> T:
    """``analysis(text, *args)``, computed once for the last few texts (none of its callers
    changes the result). A failure is not remembered: it is raised again."""
    key = (analysis, text, *args)
    if key in _RECENT:
        return _RECENT[key]  # type: ignore[return-value]
    result = analysis(text, *args)
    if len(_RECENT) >= _RECENT_SIZE:
        del _RECENT[next(iter(_RECENT))]
    _RECENT[key] = result
    return result


def _unbound_reads_added(before: str, after: str) -> str | None:
    """Why ``after`` reads a name before it is bound where ``before`` did not, or None.

    ``before`` is analysed only when ``after`` reads a name unbound somewhere: a rewrite
    with no such read (three in four on real files) has nothing the original must excuse,
    and the original's analysis was half of this check's cost."""
    try:
        new = _remembered(flow_of, after)
        if not new.unbound_reads:
            return None
        old = _remembered(flow_of, before)
    except SyntaxError:  # the original itself is past Python's parser: nothing to compare
        return None
    problems = []
    for key, count in sorted(new.unbound_reads.items()):
        if count <= old.unbound_reads.get(key, 0):
            continue
        _, name = key
        lines = sorted(set(new.unbound_lines[key]) - set(old.unbound_lines.get(key, ())))
        where = f" (line {', '.join(map(str, lines))})" if lines else ""
        problems.append(f"`{name}`{where}")
    if not problems:
        return None
    return ("the fix would read " + ", ".join(problems) +
            " where it may not be bound yet (bound only later, only in some branches, or only "
            "when the file runs as a script)")
