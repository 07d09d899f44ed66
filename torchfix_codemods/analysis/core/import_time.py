"""Which code runs when the file is imported, rather than only when it is run as a script.

A worker started with the ``spawn`` or ``forkserver`` method re-imports the main script as
``__mp_main__``: everything at module level runs again, except the body of
``if __name__ == "__main__":``. That includes the functions this code calls (a bare
``main()`` at the bottom of the file runs all of ``main``). Python does not re-run a
package's ``__main__.py`` in its workers, so such files have no import-time problem.

This module answers: is a node import-time code (module level, not under the guard, not in a
``def``; or in a function of this file that import-time code calls, transitively), and what
the module's script tail is (the statements after its last ``def``/``class``/``import``, the
part that can move under a guard without moving anything other modules import).

## References
- https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods
- https://docs.python.org/3/library/__main__.html#idiomatic-usage
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import called_functions
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.syntax import is_main_guard
from torchfix_codemods.analysis.core.walk import children

_DEFINITIONS = (cst.FunctionDef, cst.ClassDef)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def guarded_suite(statement: cst.BaseStatement) -> cst.BaseSuite | None:
    """The suite of a top-level ``if __name__ == "__main__":`` that runs only as a script (the
    ``else`` of ``if __name__ != "__main__":``), or None for any other statement."""
    if not (isinstance(statement, cst.If) and is_main_guard(statement.test)):
        return None
    test = statement.test
    assert isinstance(test, cst.Comparison)
    if all(isinstance(c.operator, cst.Equal) for c in test.comparisons):
        return statement.body
    if all(isinstance(c.operator, cst.NotEqual) for c in test.comparisons) and \
            isinstance(statement.orelse, cst.Else):
        return statement.orelse.body
    return None


def has_main_guard(module: cst.Module) -> bool:
    return any(guarded_suite(statement) is not None for statement in module.body)


_FUNCTIONS: Slot[dict[int, cst.FunctionDef]] = Slot("import_time.functions")


def import_time_functions(names: NameIndex) -> dict[int, cst.FunctionDef]:
    """The functions of this file that run when it is imported, by ``id``."""
    if _FUNCTIONS in names.memo:
        return names.memo[_FUNCTIONS]
    assert names.module_scope is not None
    module = names.module_scope.node
    assert isinstance(module, cst.Module)
    found: dict[int, cst.FunctionDef] = {}
    todo: list[cst.CSTNode] = [s for s in module.body if not isinstance(s, _DEFINITIONS)]
    while todo:
        node = todo.pop()
        for child in _runs(node):
            if not isinstance(child, cst.Call):
                continue
            for function in called_functions(names, child):
                if id(function) not in found:
                    found[id(function)] = function
                    todo.append(function.body)
    names.memo[_FUNCTIONS] = found
    return found


def _runs(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes under ``node`` that run with it: no nested ``def``/``class``/``lambda`` body,
    no suite under a ``__main__`` guard."""
    result: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.If) and guarded_suite(current) is not None:
            stack.append(current.test)
            guarded = guarded_suite(current)
            if guarded is current.body:
                if current.orelse is not None:
                    stack.append(current.orelse)
            else:
                stack.append(current.body)
            continue
        result.append(current)
        stack.extend(c for c in children(current) if not isinstance(c, _SCOPES))
    return result


def runs_on_import(names: NameIndex, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs when the file is imported (see the module's docstring)."""
    child: cst.CSTNode = node
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.Module):
            return not (isinstance(child, cst.BaseStatement) and
                        guarded_suite(child) is not None and _inside_guarded(names, node, child))
        if isinstance(ancestor, cst.FunctionDef):
            return id(ancestor) in import_time_functions(names)
        if isinstance(ancestor, cst.Lambda):
            return False
        child = ancestor
    return False


def _inside_guarded(names: NameIndex, node: cst.CSTNode, statement: cst.BaseStatement) -> bool:
    guarded = guarded_suite(statement)
    return guarded is not None and any(a is guarded for a in names.ancestors(node))


def script_tail(module: cst.Module) -> list[cst.BaseStatement]:
    """The statements after the module's last ``def``, ``class`` or import (empty when the file
    ends with one)."""
    body = list(module.body)
    start = len(body)
    while start > 0 and not _defines(body[start - 1]):
        start -= 1
    return body[start:]


def _defines(statement: cst.BaseStatement) -> bool:
    """A ``def``, ``class`` or import, also inside a top-level ``if``/``try`` (``try: import
    apex`` / ``except ImportError:``)."""
    stack: list[cst.CSTNode] = [statement]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom)):
            return True
        if not isinstance(current, cst.BaseExpression):
            stack.extend(children(current))
    return False


def reaches(names: NameIndex, statement: cst.BaseStatement, targets: set[int]) -> bool:
    """Whether running the top-level ``statement`` runs one of the nodes whose ``id`` is in
    ``targets``, itself or through the functions of this file it calls."""
    if isinstance(statement, _DEFINITIONS):
        return False
    seen: set[int] = set()
    todo: list[cst.CSTNode] = [statement]
    while todo:
        for node in _runs(todo.pop()):
            if id(node) in targets:
                return True
            if isinstance(node, cst.Call):
                for function in called_functions(names, node):
                    if id(function) not in seen:
                        seen.add(id(function))
                        todo.append(function.body)
    return False
