"""Many edits inside one another, turned into replacements the engine can apply.

The engine replaces nodes by identity and never looks inside a replacement, so
a fix whose edits nest (a ``print`` guarded for rank 0 inside the epoch loop
that also gets a statement inserted before it) must compose them itself.
:class:`NestedEdits` collects, per node, statements to put before and after it
and rewrites of the node itself, then renders each outermost edited node with
every edit beneath it applied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

Rewrite = Callable[[cst.CSTNode], cst.CSTNode | cst.FlattenSentinel]


@dataclass
class _Edit:
    """What happens to one node: statements around it and rewrites of the node itself."""

    node: cst.CSTNode
    before: list[cst.BaseStatement] = field(default_factory=list)
    after: list[cst.BaseStatement] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)

    def render(self, updated: cst.CSTNode) -> cst.CSTNode | cst.FlattenSentinel:
        for rewrite in self.rewrites:
            updated = rewrite(updated)  # type: ignore[assignment]
        # A statement's last rewrite may split it in several (a FlattenSentinel).
        nodes = list(updated.nodes) if isinstance(updated, cst.FlattenSentinel) else [updated]
        if self.before or self.after or len(nodes) != 1:
            return cst.FlattenSentinel([*self.before, *nodes, *self.after])  # type: ignore[list-item]
        return updated


class _ApplyInner(cst.CSTTransformer):
    """Applies the edits below one outermost edited node (the node itself is rendered last)."""

    def __init__(self, edits: dict[int, _Edit], outer: cst.CSTNode) -> None:
        super().__init__()
        self._edits = edits
        self._outer = outer

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        edit = self._edits.get(id(original_node))
        if edit is None or original_node is self._outer:
            return updated_node
        return edit.render(updated_node)


class NestedEdits:
    """Edits on possibly nested nodes; :meth:`replacements` gives them as a fix's replacements.

    ``ancestors`` yields a node's ancestors, innermost first (the rule's name index).
    """

    def __init__(self, ancestors: Callable[[cst.CSTNode], Iterable[cst.CSTNode]]) -> None:
        self._edits: dict[int, _Edit] = {}
        self._ancestors = ancestors

    def _get(self, node: cst.CSTNode) -> _Edit:
        return self._edits.setdefault(id(node), _Edit(node))

    def before(self, node: cst.BaseStatement, *statements: cst.BaseStatement) -> None:
        """Insert ``statements`` right before the statement ``node``."""
        self._get(node).before.extend(statements)

    def after(self, node: cst.BaseStatement, *statements: cst.BaseStatement) -> None:
        """Insert ``statements`` right after the statement ``node``."""
        self._get(node).after.extend(statements)

    def rewrite(self, node: cst.CSTNode, function: Rewrite) -> None:
        """Replace ``node`` by ``function(node)``, where ``node`` has its inner edits applied."""
        self._get(node).rewrites.append(function)

    def inserts_around(self, node: cst.CSTNode) -> bool:
        """Whether statements are inserted before or after ``node``."""
        edit = self._edits.get(id(node))
        return edit is not None and bool(edit.before or edit.after)

    def nodes(self) -> list[cst.CSTNode]:
        """Every node that has an edit, in the order edits were first made."""
        return [edit.node for edit in self._edits.values()]

    def replacements(self) -> list[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel]]:
        result = []
        for edit in self._edits.values():
            if any(id(a) in self._edits for a in self._ancestors(edit.node)):
                continue
            updated = edit.node.visit(_ApplyInner(self._edits, edit.node))
            assert isinstance(updated, cst.CSTNode)
            result.append((edit.node, edit.render(updated)))
        return result
