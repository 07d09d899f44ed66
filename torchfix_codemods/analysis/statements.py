"""The statement that holds a node, and the statements around it.

Two questions rules keep asking:

* *Which statement is this part of?* (:func:`enclosing_statement`): the
  innermost simple line or compound statement, to tell whether two nodes
  share a line or to compare positions.
* *Where can a statement be inserted next to this node?*
  (:func:`statement_line`): the line holding the node, when that line sits in
  a block. A node inside a compound statement's header (``for x in f(node):``),
  a one-line suite (``if c: node``) or a lambda has no such line: a statement
  put before its line would run at the wrong time or not parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import libcst as cst

from torchfix_codemods.analysis.names import NameIndex

T = TypeVar("T")


def enclosing_statement(names: NameIndex, node: cst.CSTNode) -> cst.BaseStatement | None:
    """``node`` itself when it is a statement, else its innermost enclosing statement."""
    for candidate in (node, *names.ancestors(node)):
        if isinstance(candidate, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return candidate
    return None


def statement_line(names: NameIndex, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The line holding ``node`` when statements can be inserted before and after it."""
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.SimpleStatementLine):
            return ancestor
        if isinstance(ancestor, (cst.BaseCompoundStatement, cst.SimpleStatementSuite, cst.Lambda)):
            return None
    return None


def own_line(names: NameIndex, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The line that ``node`` makes up alone, else None: a call that is a whole statement,
    an assignment (or its one target), an augmented assignment; on a line of its own (no
    ``;``). What a fix can wrap in a block without moving anything else into it."""
    statement: cst.CSTNode | None = node
    if isinstance(node, cst.Call):
        statement = names.parent(node)
        if not isinstance(statement, cst.Expr):
            return None
    elif isinstance(node, cst.AssignTarget):
        statement = names.parent(node)
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            return None
    elif not isinstance(node, (cst.Assign, cst.AugAssign)):
        return None
    line = names.parent(statement) if statement is not None else None
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def next_statement(names: NameIndex, statement: cst.BaseStatement) -> cst.BaseStatement | None:
    """The statement right after ``statement`` in the same block, or None at its end."""
    parent = names.parent(statement)
    body = getattr(parent, "body", None)
    if not isinstance(body, (list, tuple)):
        return None
    for index, sibling in enumerate(body):
        if sibling is statement:
            return body[index + 1] if index + 1 < len(body) else None
    return None


def consecutive_runs(names: NameIndex, items: Sequence[T],
                     line_of: Callable[[T], cst.BaseStatement]) -> list[list[T]]:
    """``items`` (in source order) split into runs whose lines follow each other in one block
    (items on the same line share a run): what one ``with`` block can wrap."""
    runs: list[list[T]] = []
    for item in items:
        line = line_of(item)
        last = line_of(runs[-1][-1]) if runs else None
        if last is not None and (last is line or next_statement(names, last) is line):
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
