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


def _only_prints(function: ast.FunctionDef) -> bool:
    printed = False
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
                      | ast.Global | ast.Nonlocal | ast.Yield | ast.YieldFrom | ast.Await
                      | ast.With | ast.AsyncWith | ast.Import | ast.ImportFrom | ast.Delete):
            return False
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(not isinstance(t, ast.Name) for t in targets):
                return False  # an attribute or an item of something the caller sees
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                if func.id not in _TEXT_BUILTINS:
                    return False
                printed = printed or func.id == "print"
                if func.id == "print" and any(k.arg == "file" for k in node.keywords):
                    return False  # a file, not the console
            elif not (isinstance(func, ast.Attribute) and func.attr in _TEXT_METHODS
                      or _dotted(func) in _STREAM_CALLS):
                return False
    return printed


def summarize(tree: ast.Module) -> list[str]:
    """The module-level functions of this file that only print."""
    return sorted(node.name for node in tree.body
                  if isinstance(node, ast.FunctionDef) and not node.decorator_list
                  and _only_prints(node))


def only_prints(index: ProjectIndex, file: IndexedFile, qualified: str) -> bool | None:
    """True for a function of the run that only prints; False for anything else a file of
    the run defines; None (unknown) when no file of the run defines ``qualified``."""
    found = index.definition(qualified, file)
    if found is None:
        return None
    return found.kind == "function" and \
        found.name in found.file.summary.facts.get(NAME, ())


register(Fact(NAME, summarize, {"only_prints": Question(only_prints)}))
