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
* *Can this statement move there?* (:func:`movable_statement`,
  :func:`interferes`): source order within an iteration (:func:`spans`), the
  statement that moves as a whole, and whether the code it would cross uses what
  it reads or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import libcst as cst

from torchfix_codemods.analysis.core.cells import CELL_MARKER
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.walk import children, names_in, walk_local

T = TypeVar("T")


def starts_a_cell(statement: cst.BaseStatement) -> bool:
    """Is ``statement`` the first of a notebook cell? Its leading comment lines hold the
    cell's marker. Code that moves statements into one block (a ``with`` around several)
    must not reach across it: the cells would be merged."""
    return any(line.comment is not None and line.comment.value.startswith(CELL_MARKER.rstrip())
               for line in getattr(statement, "leading_lines", ()))


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


# ------------------------------------------------------------------ order and moves
# The training-loop rules (TFC505-TFC507) move one statement within an iteration:
# a `zero_grad()` before the backward, a clip before the step, a scheduler step after
# the optimizer's. Three facts decide whether that is possible: the order nodes run in
# within the iteration, the statement that can be moved as a whole, and whether the
# code it is moved across reads what it writes or writes what it reads.

Span = tuple[int, int]


_SPANS: Slot[dict[int, Span]] = Slot("statements.spans")


def spans(names: NameIndex) -> dict[int, Span]:
    """``id(node) -> (first, last)``: the node's pre-order number and its last descendant's.

    Pre-order is source order, so within one iteration of a loop ``first`` orders the
    statements as they run; ``a`` is inside ``b`` when ``b``'s span contains ``a``'s first.
    Built once per module.
    """
    if _SPANS in names.memo:
        return names.memo[_SPANS]
    assert names.module_scope is not None
    found: dict[int, Span] = {}
    counter = 0
    stack: list[tuple[cst.CSTNode, bool]] = [(names.module_scope.node, False)]
    firsts: dict[int, int] = {}
    while stack:
        node, done = stack.pop()
        if done:
            found[id(node)] = (firsts[id(node)], counter - 1)
            continue
        firsts[id(node)] = counter
        counter += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children(node)))
    names.memo[_SPANS] = found
    return found


def comes_before(names: NameIndex, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """``first`` starts before ``second`` in source order (so runs first in one iteration)."""
    order = spans(names)
    return order[id(first)][0] < order[id(second)][0]


def contains(names: NameIndex, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """``inner`` is ``outer`` or lies inside it."""
    order = spans(names)
    start, end = order[id(outer)]
    return start <= order[id(inner)][0] <= end


def block_of(names: NameIndex, statement: cst.BaseStatement) -> list[cst.BaseStatement] | None:
    """The statements of the block ``statement`` sits in (module, indented block), or None."""
    parent = names.parent(statement)
    body = getattr(parent, "body", None)
    if isinstance(parent, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
        return list(body)
    return None


def movable_statement(names: NameIndex, call: cst.Call) -> cst.BaseStatement | None:
    """The statement to move to move ``call``: its own line, or the ``if`` it is alone in.

    The line must hold nothing but the call (as an expression or the value of an
    assignment): a statement that also does other work cannot move without it.
    ``if args.clip: clip_grad_norm_(...)`` moves as the whole ``if`` (without
    ``else``). None when moving would leave a block empty or the call sits in a
    compound statement's header.
    """
    line = statement_line(names, call)
    if line is None or len(line.body) != 1:
        return None
    small = line.body[0]
    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if value is not call:
        return None
    unit: cst.BaseStatement = line
    block = block_of(names, unit)
    parent = names.parent(unit)
    owner = names.parent(parent) if parent is not None else None
    if block is not None and len(block) == 1 and isinstance(owner, cst.If) and \
            owner.orelse is None and owner.body is parent:
        unit = owner
        block = block_of(names, unit)
    if block is None or len(block) < 2:
        return None
    return unit


def _root(expr: cst.BaseExpression) -> cst.Name | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _target_roots(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_roots(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return _target_roots(target.value)
    root = _root(target)
    return {root.value} if root is not None else set()


def written_names(node: cst.CSTNode) -> set[str]:
    """Names (roots of ``a.b``/``a[i]`` targets) that ``node`` assigns, binds or deletes."""
    written: set[str] = set()
    for part in (node, *walk_local(node)):
        if isinstance(part, cst.Assign):
            for target in part.targets:
                written |= _target_roots(target.target)
        elif isinstance(part, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            written |= _target_roots(part.target)
        elif isinstance(part, cst.NamedExpr):
            written |= _target_roots(part.target)
        elif isinstance(part, cst.WithItem) and part.asname is not None:
            written |= _target_roots(part.asname.name)
        elif isinstance(part, cst.Del):
            written |= _target_roots(part.target)
    return written


def read_names(names: NameIndex, node: cst.CSTNode) -> set[str]:
    """Variables ``node`` reads (``a`` of ``a.b`` included, attribute names not)."""
    return {name.value for name in names_in(node) if names.is_read(name)}


def _acted_on(names: NameIndex, node: cst.CSTNode) -> set[str]:
    """Objects whose methods ``node``'s own statements call, as written (``scheduler`` of
    ``scheduler.step()``, ``self.opt`` of ``self.opt.zero_grad()``): the call may change
    them. A module path (``nn.utils`` of ``nn.utils.clip_grad_norm_(...)``) is no object."""
    acted: set[str] = set()
    for part in (node, *walk_local(node)):
        if isinstance(part, (cst.Expr, cst.Assign, cst.AnnAssign)) and \
                isinstance(part.value, cst.Call) and isinstance(part.value.func, cst.Attribute):
            receiver = part.value.func.value
            dotted = dotted_name(receiver)
            if dotted is not None and names.qualified_name(receiver) is None:
                acted.add(dotted)
    return acted


def _chains(node: cst.CSTNode, exempt: set[int]) -> set[str]:
    """Every ``a.b.c`` (and bare name) ``node`` mentions outside the ``exempt`` nodes,
    longest chains only."""
    found: set[str] = set()
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, inside_chain = stack.pop()
        if id(current) in exempt:
            continue
        if isinstance(current, (cst.Attribute, cst.Name)) and not inside_chain:
            dotted = dotted_name(current)
            if dotted is not None:
                found.add(dotted)
        chain_value = current.value if isinstance(current, cst.Attribute) else None
        stack.extend((child, child is chain_value) for child in children(current))
    return found


def _overlap(first: str, second: str) -> bool:
    return first == second or first.startswith(second + ".") or second.startswith(first + ".")


def interferes(names: NameIndex, moved: cst.CSTNode, across: list[cst.CSTNode],
               exempt: Collection[cst.CSTNode] = ()) -> bool:
    """Moving ``moved`` past the nodes ``across`` could change what either computes:
    they assign a name it reads, read or assign a name it assigns, or use an object whose
    methods it calls (``scheduler.step()`` changes what ``scheduler.get_last_lr()`` reads),
    except in the ``exempt`` calls, the ones the move reorders it with on purpose."""
    skip = {id(node) for node in exempt}
    reads = read_names(names, moved)
    writes = written_names(moved)
    acted = _acted_on(names, moved)
    for node in across:
        written = written_names(node)
        if written & reads or written & writes:
            return True
        if writes and read_names(names, node) & writes:
            return True
        if acted and any(_overlap(chain, target) for chain in _chains(node, skip)
                         for target in acted):
            return True
    return False


def nodes_between(names: NameIndex, scope: cst.CSTNode, after: int, before: int
                  ) -> list[cst.CSTNode]:
    """The outermost nodes under ``scope`` whose span lies strictly between two pre-order
    numbers: the statements (and headers of the compound statements entered on the way)
    that run between two points of one iteration."""
    order = spans(names)
    found: list[cst.CSTNode] = []

    def visit(node: cst.CSTNode) -> None:
        for child in children(node):
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            start, end = order[id(child)]
            if end <= after or start >= before:
                continue
            if start > after and end < before:
                found.append(child)
                continue
            visit(child)

    visit(scope)
    return found


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


def exclusive(names: NameIndex, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """``first`` and ``second`` lie in different branches of one ``if``/``else`` (or
    conditional expression): one run of the code reaches at most one of them, so neither
    comes "after" the other although one follows the other in the source."""
    second_line = [second, *names.ancestors(second)]
    where = {id(node): index for index, node in enumerate(second_line)}
    previous = first
    for ancestor in names.ancestors(first):
        if id(ancestor) in where:
            index = where[id(ancestor)]
            if index == 0 or not isinstance(ancestor, (cst.If, cst.IfExp)):
                return False
            other = second_line[index - 1]
            branches = (ancestor.body, ancestor.orelse)
            return (any(previous is b for b in branches) and any(other is b for b in branches)
                    and previous is not other)
        previous = ancestor
    return False


def leaves_its_branch(names: NameIndex, unit: cst.CSTNode, target: cst.CSTNode,
                      within: cst.CSTNode) -> bool:
    """Moving ``unit`` next to ``target`` takes it out of a branch (an ``if``/``else``,
    ``try``/``except`` or loop body inside ``within``) that ``target`` is not in: it would
    then run where its condition, or the name that condition binds, does not hold."""
    for ancestor in names.ancestors(unit):
        if ancestor is within:
            return False
        if (isinstance(ancestor, cst.IndentedBlock)
                and not isinstance(names.parent(ancestor), cst.With)
                and not contains(names, ancestor, target)):
            return True
    return False
