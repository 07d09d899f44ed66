"""Functions of the run's files that only print: ``only_prints(qualified)``.

TFC301 runs prints on rank 0 once a script is migrated; a print made by a helper of another
module (``progress_bar(i, len(loader), msg)`` from ``utils``) is not a ``print`` the training
file shows. Its call can go under the same guard only when the helper does nothing the other
processes need: it prints, and every other call in it formats text or reads the clock, it
binds no global, writes no attribute or item, and defines nothing. What one file says is the
list of its module-level functions of that kind, read off the standard ``ast``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.core.ast_walk import walk
from torchfix_codemods.analysis.project.registry import Fact, Question, register

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

NAME = "only-prints"
_TEXT_BUILTINS = frozenset({
    "print", "str", "repr", "format", "len", "int", "float", "round", "abs", "min", "max",
    "sum", "range", "enumerate", "zip",
})
"""Builtins that only compute text or numbers for it."""
_TEXT_METHODS = frozenset({"format", "join", "ljust", "rjust", "center", "strip"})
_STREAM_CALLS = frozenset({"sys.stdout.write", "sys.stdout.flush", "time.time"})


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _verdict(function: ast.FunctionDef, text: set[str], shared: dict[str, set[str]]) -> str | None:
    """``"prints"`` for a function that prints and does nothing else, ``"text"`` for one
    that only computes text (callable from one that prints), None otherwise. ``text`` are the
    module's functions still taken for either; ``shared`` maps each global a function
    declares to the module's functions that use it."""
    printed = False
    local = {t.id for node in walk(function) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    for node in walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Global):
            # A global of its own (a progress bar's last_time): used only by such functions.
            if any(not shared.get(name, set()) <= text for name in node.names):
                return None
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
                      | ast.Nonlocal | ast.Yield | ast.YieldFrom | ast.Await
                      | ast.With | ast.AsyncWith | ast.Import | ast.ImportFrom | ast.Delete):
            return None
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(not isinstance(t, ast.Name) for t in targets):
                return None  # an attribute or an item of something the caller sees
        if isinstance(node, ast.Call):
            func = node.func
            dotted = _dotted(func)
            if isinstance(func, ast.Name):
                if func.id == "print":
                    if any(k.arg == "file" for k in node.keywords):
                        return None  # a file, not the console
                    printed = True
                elif func.id not in _TEXT_BUILTINS and func.id not in text:
                    return None
            elif dotted in _STREAM_CALLS:
                printed = printed or dotted == "sys.stdout.write"
            elif isinstance(func, ast.Attribute) and func.attr in _TEXT_METHODS:
                continue
            elif isinstance(func, ast.Attribute) and func.attr == "append" and \
                    isinstance(func.value, ast.Name) and func.value.id in local:
                continue  # a list of its own (the text it builds)
            else:
                return None
    return "prints" if printed else "text"


def summarize(tree: ast.Module) -> list[str]:
    """The module-level functions of this file that only print: a fixed point, since one
    may call another that only formats text, or share a global with it."""
    functions = {node.name: node for node in tree.body
                 if isinstance(node, ast.FunctionDef) and not node.decorator_list}
    shared: dict[str, set[str]] = {}
    read: set[str] = set()
    for name, function in functions.items():
        for node in walk(function):
            if isinstance(node, ast.Name):
                shared.setdefault(node.id, set()).add(name)
                if isinstance(node.ctx, ast.Load):
                    read.add(node.id)
    declared = {n for f in functions.values() for node in walk(f)
                if isinstance(node, ast.Global) for n in node.names}
    # A global only written (`seen = x`) is kept for someone else to read: not output state.
    shared = {name: users if name in read else {""}
              for name, users in shared.items() if name in declared}
    text = set(functions)
    while True:
        verdicts = {name: _verdict(functions[name], text, shared) for name in sorted(text)}
        kept = {name for name, verdict in verdicts.items() if verdict is not None}
        if kept == text:
            return sorted(name for name, verdict in verdicts.items() if verdict == "prints")
        text = kept


def only_prints(index: ProjectIndex, file: IndexedFile, qualified: str) -> bool | None:
    """True for a function of the run that only prints; False for anything else a file of
    the run defines; None (unknown) when no file of the run defines ``qualified``."""
    found = index.definition(qualified, file)
    if found is None:
        return None
    return found.kind == "function" and \
        found.name in found.file.summary.facts.get(NAME, ())


register(Fact(NAME, summarize, {"only_prints": Question(only_prints)}))
