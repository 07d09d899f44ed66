"""Which bindings of a name can reach one read of it: source order inside a function.

:class:`~torchfix_codemods.analysis.core.names.NameIndex` is flow-insensitive: it
knows every binding of ``images`` in a scope, not which one a given read sees.
Training code rebinds names all the time (``images = images.to(device)``,
``action = action.cpu().numpy()``), and a fact about a value is only as good as
the binding it comes from. This module answers "which bindings may reach this
read" the way a reader of straight-line code would:

* the *dominating* binding is the latest one that certainly ran before the
  read: an earlier statement of a block the read is in (or of the body of a
  ``with`` before it: ``with torch.no_grad(): y = f(x)`` binds ``y`` for what
  follows), the ``for``/``with``/``except`` whose body holds the read, or a
  parameter;
* bindings after it and before the read in nested blocks (an ``if`` branch, a
  ``try`` body) may reach too;
* inside a loop that does not hold the dominating binding, bindings later in
  the loop body reach the read on the next iteration;
* a binding in one branch of an ``if`` never reaches a read in another branch of it
  (``if gpu: s = s.cpu().numpy() else: s = s.numpy()``), unless a loop inside the
  scope holds that ``if``;
* an ``if`` before the read whose every branch binds the name (``if fix: samples =
  G(z) else: samples = G(z2)``) dominates like one binding: what the branches bind
  reaches the read, and bindings after the read (``samples = samples.numpy()``) do not.

Without a dominating binding (a read before any binding, a read in a nested
function of a name bound in the enclosing one) every binding may reach, which
is what the flow-insensitive index says.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex, dotted_name
from torchfix_codemods.analysis.core.walk import walk

_BLOCKS = (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_LOOPS = (cst.For, cst.While)


@dataclass
class _Order:
    """Preorder number of every node, and the last number inside its subtree."""

    first: dict[int, int]
    last: dict[int, int]


_ORDER: Slot[_Order] = Slot("flow.order")


def _order(names: NameIndex) -> _Order:
    if _ORDER in names.memo:
        return names.memo[_ORDER]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    counter = 0

    def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        nonlocal counter
        first[id(node)] = counter
        counter += 1
        return True

    def leave(node: cst.CSTNode) -> None:
        last[id(node)] = counter - 1

    assert names.module_scope is not None
    walk(names.module_scope.node, enter, leave)
    order = _Order(first, last)
    names.memo[_ORDER] = order
    return order


def reaching_bindings(names: NameIndex, read: cst.Name) -> list[Binding]:
    """The bindings of ``read`` that may give it its value, in source order."""
    found = names.lookup(read.value, names.scope_of(read))
    if found is None:
        return []
    scope, bindings = found
    if len(bindings) < 2 or not _inline_scope(names, read, scope.node):
        return list(bindings)
    order = _order(names)
    at = order.first.get(id(read))
    if at is None:
        return list(bindings)
    ancestors = {id(a) for a in names.ancestors(read)}
    effects = [(_effect(names, order, b), b) for b in bindings]
    before = [(effect, b) for effect, b in effects if effect is not None and effect <= at
              and not _other_branch(names, b, ancestors, scope.node)]
    dominating = [(effect, b) for effect, b in before if _dominates(names, b, ancestors)]
    covering = _covering_branches(names, order, bindings, ancestors, at)
    if covering is not None and (not dominating or
                                 covering[0] > max(effect for effect, _ in dominating)):
        start, chosen_statement = covering
        low, high = order.first[id(chosen_statement)], order.last[id(chosen_statement)]
        reaching = [b for effect, b in before if effect > start or low < effect <= high + 1]
    elif not dominating:
        return list(bindings)
    else:
        start, chosen = max(dominating, key=lambda item: item[0])
        reaching = [chosen] + [b for effect, b in before if effect > start and b is not chosen]
        chosen_statement = _statement(names, chosen)
    for loop in names.ancestors(read):
        if loop is scope.node:
            break
        if not isinstance(loop, _LOOPS) or id(loop) in _ancestor_ids(names, chosen_statement):
            continue
        low, high = order.first[id(loop)], order.last[id(loop)]
        reaching += [b for effect, b in effects
                     if effect is not None and effect > at and low <= effect <= high + 1
                     and b not in reaching]
    return reaching


def _other_branch(names: NameIndex, binding: Binding, ancestors: set[int],
                  owner: cst.CSTNode) -> bool:
    """``binding`` is in one branch of an ``if`` and the read (whose ancestors are
    ``ancestors``) in another, and no loop of the scope runs that ``if`` twice."""
    child: cst.CSTNode = _statement(names, binding)
    for node in names.ancestors(child):
        if node is owner:
            return False
        if id(node) in ancestors:
            if not isinstance(node, cst.If) or id(child) in ancestors:
                return False
            if child is not node.body and child is not node.orelse:
                return False
            for outer in names.ancestors(node):
                if outer is owner:
                    return True
                if isinstance(outer, _LOOPS):
                    return False
            return False
        child = node
    return False


def _covering_branches(names: NameIndex, order: _Order, bindings: list[Binding],
                       ancestors: set[int], at: int) -> tuple[int, cst.If] | None:
    """The latest ``if`` that ends before the read, in a block the read is in, whose every
    branch (``else`` included) binds the name in its own block: (where it ends, the ``if``)."""
    blocks = {id(names.parent(_statement(names, b))) for b in bindings
              if b.kind == "assign" and isinstance(b.node, (cst.Assign, cst.AnnAssign))}
    found: tuple[int, cst.If] | None = None
    for binding in bindings:
        for node in names.ancestors(binding.node):
            if not isinstance(node, cst.If) or isinstance(names.parent(node), cst.If):
                continue  # an `elif` is judged with the `if` that holds it
            block = names.parent(node)
            end = order.last.get(id(node), at) + 1
            if id(block) in ancestors and end <= at and _every_branch_binds(node, blocks) \
                    and (found is None or end > found[0]):
                found = (end, node)
    return found


def _every_branch_binds(statement: cst.If, blocks: set[int]) -> bool:
    def binds(block: cst.BaseSuite) -> bool:
        return id(block) in blocks or any(
            isinstance(inner, cst.If) and _every_branch_binds(inner, blocks)
            for inner in getattr(block, "body", ()))

    orelse = statement.orelse
    if orelse is None or not binds(statement.body):
        return False
    if isinstance(orelse, cst.If):
        return _every_branch_binds(orelse, blocks)
    return binds(orelse.body)


def _inline_scope(names: NameIndex, read: cst.Name, owner: cst.CSTNode) -> bool:
    """The read runs where it is written, in ``owner``'s scope (comprehensions run inline)."""
    scope = names.scope_of(read)
    while scope.node is not owner:
        if not isinstance(scope.node, _COMPREHENSIONS) or scope.parent is None:
            return False
        scope = scope.parent
    return True


def _statement(names: NameIndex, binding: Binding) -> cst.CSTNode:
    node = binding.node
    if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Import, cst.ImportFrom,
                         cst.NamedExpr)):
        parent = names.parent(node)
        return parent if parent is not None else node
    return node


def _ancestor_ids(names: NameIndex, node: cst.CSTNode) -> set[int]:
    return {id(node), *(id(a) for a in names.ancestors(node))}


def _effect(names: NameIndex, order: _Order, binding: Binding) -> int | None:
    """The preorder number from which the binding holds (reads at or after it may see it)."""
    node = binding.node
    if binding.kind == "param":
        return -1
    if isinstance(node, (cst.For, cst.With)):
        return order.first.get(id(node.body))
    if isinstance(node, cst.WithItem):
        owner = names.parent(node)
        return order.first.get(id(owner.body)) if isinstance(owner, cst.With) else None
    if isinstance(node, cst.ExceptHandler):
        return order.first.get(id(node.body))
    if isinstance(node, cst.CompFor):
        return None
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        last = order.last.get(id(node))
        return None if last is None else last + 1
    last = order.last.get(id(_statement(names, binding)))
    if isinstance(node, cst.NamedExpr):
        last = order.last.get(id(node))
    return None if last is None else last + 1


def _dominates(names: NameIndex, binding: Binding, ancestors: set[int]) -> bool:
    """Whether ``binding`` certainly ran before a read whose ancestors are ``ancestors``."""
    node = binding.node
    if binding.kind == "param":
        return True
    if binding.kind == "augassign":
        return False  # `x += y` extends the value that reaches it, it does not replace it
    if isinstance(node, (cst.For, cst.ExceptHandler)):
        return id(node.body) in ancestors
    if isinstance(node, cst.WithItem):
        owner = names.parent(node)
        return isinstance(owner, cst.With) and id(owner.body) in ancestors
    if isinstance(node, cst.NamedExpr):
        return False
    statement = _statement(names, binding)
    block = names.parent(statement)
    while isinstance(block, cst.IndentedBlock) and id(block) not in ancestors:
        owner = names.parent(block)
        if not (isinstance(owner, cst.With) and owner.body is block and _runs_whole(names, owner)):
            return False
        block = names.parent(owner)  # a `with` body runs whole: its bindings hold after it
    return isinstance(block, _BLOCKS) and id(block) in ancestors


def _runs_whole(names: NameIndex, statement: cst.With) -> bool:
    """A ``with`` whose context managers are not known to swallow exceptions (``suppress``,
    an ``ExitStack`` whose callbacks may)."""
    for item in statement.items:
        target = item.item.func if isinstance(item.item, cst.Call) else item.item
        spelled = names.qualified_name(target) or dotted_name(target)
        if spelled is None or spelled.rsplit(".", 1)[-1] in ("suppress", "ExitStack"):
            return False
    return True
