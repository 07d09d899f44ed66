"""TFC301's step for objects that write files for as long as they live: a file opened outside a
``with`` (a log, a ``csv.writer``'s file), a logging ``FileHandler``, a TensorBoard
``SummaryWriter``, an object of a project class that only writes files (a training
``Logger`` that keeps ``log.txt`` open). Guarding the line that makes one is not enough
(every later use would need the guard too), so the other processes get an object that writes
nowhere: the file is opened at ``os.devnull``, and a writer is replaced by
``_DDPNoWriter()``, whose every method does nothing. Rank 0 writes what the original wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import children
from torchfix_codemods.analysis.vocabulary.torch_api import SUMMARY_WRITERS
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import with_trailing_comment

if TYPE_CHECKING:
    from torchfix_codemods.rules.data_parallel.migration import _Migration

FILE_HANDLERS = frozenset({"logging.FileHandler", "logging.handlers.RotatingFileHandler"})
"""Handlers whose first argument is the file they append to."""
DEVNULL_COMMENT = "TFC301: rank 0 writes the file, the other processes os.devnull"
NO_WRITER_COMMENT = "TFC301: rank 0 writes the logs, the other processes nothing"


def quiet_writers(migration: _Migration, calls: list[cst.Call],
                  guarded: list[cst.CSTNode]) -> set[int]:
    """Makes each writer of ``calls`` write on rank 0 only, where the rewrite is known to keep
    the program's meaning; returns the ids of those rewritten (the others stay reported).
    ``guarded`` are the statements already moved under ``if _ddp_is_main():``."""
    names = migration.names
    done: set[int] = set()
    for call in calls:
        if any(a is g for g in guarded for a in (call, *names.ancestors(call))):
            done.add(id(call))  # runs on rank 0 only already
            continue
        qualified = names.qualified_name(call.func)
        if qualified in SUMMARY_WRITERS or id(call) in migration.writer_objects:
            if _no_writer(migration, call):
                done.add(id(call))
        elif _devnull(migration, call, qualified):
            done.add(id(call))
    return done


def _devnull(migration: _Migration, call: cst.Call, qualified: str | None) -> bool:
    """``open(path, "a")`` -> ``open(path if _ddp_is_main() else os.devnull, "a")`` (likewise
    a ``FileHandler``'s file): the other processes keep a real file object, so every later
    use (``f.write``, ``csv.writer(f)``, ``handler.setFormatter``) works unchanged. Not for
    mode ``x`` (``os.devnull`` exists), a mode not written out, or a path the file also
    opens for reading (the other processes would read rank 0's file while it is written)."""
    if qualified in FILE_HANDLERS:
        path, mode = argument(call, "filename", 0), argument(call, "mode", 1)
        default = "a"
    else:
        path, mode = argument(call, "file", 0), argument(call, "mode", 1)
        default = "r"
    if path is None:
        return False
    text = mode.value.evaluated_value if mode is not None and isinstance(
        mode.value, cst.SimpleString) else (default if mode is None else None)
    if not isinstance(text, str) or "x" in text or not set("wa") & set(text):
        return False
    if _read_elsewhere(migration, call, code_of(path.value)):
        return False
    try:
        devnull = migration.context.imports.reference("os.devnull", call, "os")
    except ImportUnavailable:
        return False
    migration.imports.extend(r for r in [devnull.needs] if r)
    value = path.value
    if isinstance(value, cst.IfExp | cst.Lambda | cst.NamedExpr) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    chosen = cst.IfExp(test=cst.parse_expression("_ddp_is_main()"), body=value,
                       orelse=devnull.expression)
    migration.edits.rewrite(path.value, lambda _: chosen)
    _comment(migration, call, DEVNULL_COMMENT)
    return True


def _read_elsewhere(migration: _Migration, writer: cst.Call, path: str) -> bool:
    """Another ``open(path)`` of the same path text that does not write: a read-back."""
    for node in _every_node(migration.context.module):
        if not isinstance(node, cst.Call) or node is writer or not (
                isinstance(node.func, cst.Name) and node.func.value == "open"):
            continue
        first, mode = argument(node, "file", 0), argument(node, "mode", 1)
        if first is None or code_of(first.value) != path:
            continue
        text = mode.value.evaluated_value if mode is not None and isinstance(
            mode.value, cst.SimpleString) else ("r" if mode is None else "")
        if not isinstance(text, str) or "r" in text or "+" in text:
            return True
    return False


def _no_writer(migration: _Migration, call: cst.Call) -> bool:
    """``writer = SummaryWriter(...)`` -> ``... if _ddp_is_main() else _DDPNoWriter()``, where
    every use of ``writer`` in the file is a method call whose result is not used
    (``writer.add_scalar(...)``, ``writer.close()``): those are all a ``_DDPNoWriter`` does.
    ``writer`` may be a name bound once, or ``self.writer`` in one class."""
    names = migration.names
    line = statement_line(names, call)
    if line is None or len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return False
    assign = line.body[0]
    if assign.value is not call or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    if isinstance(target, cst.Name):
        def same(node: cst.CSTNode) -> bool:
            return isinstance(node, cst.Name) and node.value == target.value
    elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
            target.value.value == "self":
        def same(node: cst.CSTNode) -> bool:
            return isinstance(node, cst.Attribute) and node.attr.value == target.attr.value
    else:
        return False
    for node in _every_node(migration.context.module):
        if node is target or not same(node) or _bound_alike(names, node, call):
            continue
        if isinstance(node, cst.Name) and isinstance(names.parent(node), cst.Attribute) and \
                names.parent(node).attr is node:  # type: ignore[union-attr]
            continue  # `x.writer` is an attribute named like the writer: seen as the attribute
        if isinstance(node, cst.Attribute) and names.qualified_name(node) is not None:
            continue  # `csv.writer`: a module's function, not this object
        if not _method_statement(names, node):
            return False
    migration.no_writer = True
    chosen = cst.IfExp(test=cst.parse_expression("_ddp_is_main()"), body=call,
                       orelse=cst.parse_expression("_DDPNoWriter()"))
    migration.edits.rewrite(call, lambda new: chosen.with_changes(body=new))
    _comment(migration, call, NO_WRITER_COMMENT)
    return True


def _bound_alike(names, node: cst.CSTNode, call: cst.Call) -> bool:  # noqa: ANN001 (NameIndex)
    """``node`` is the target of another ``name = <the same class>(...)`` (pytorch-classification:
    ``logger = Logger(path, resume=True)`` in one branch, ``logger = Logger(path)`` in the
    other): each such line is rewritten the same way."""
    target = names.parent(node)
    assign = names.parent(target) if isinstance(target, cst.AssignTarget) else None
    return isinstance(assign, cst.Assign) and len(assign.targets) == 1 and \
        isinstance(assign.value, cst.Call) and code_of(assign.value.func) == code_of(call.func)


def _method_statement(names, node: cst.CSTNode) -> bool:  # noqa: ANN001 (NameIndex)
    """``node.method(...)`` as a statement of its own, its result unused; for ``self.writer``
    also ``node`` read through ``self``."""
    if isinstance(node, cst.Attribute) and not (
            isinstance(node.value, cst.Name) and node.value.value == "self"):
        return False
    method = names.parent(node)
    call = names.parent(method) if isinstance(method, cst.Attribute) else None
    return isinstance(method, cst.Attribute) and method.value is node and \
        isinstance(call, cst.Call) and call.func is method and \
        isinstance(names.parent(call), cst.Expr)


def _every_node(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``root``, nested functions and classes included."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


def _comment(migration: _Migration, call: cst.Call, text: str) -> None:
    line = statement_line(migration.names, call)
    if line is not None:
        migration.edits.rewrite(line, lambda node: with_trailing_comment(node, text))
