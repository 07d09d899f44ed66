"""Is a rule-by-rule result the same program as one ``fix`` run's, up to keyword order?

Two rules that each add a keyword to the same call (TFC001 ``weights_only=``,
TFC002 ``map_location=``) add them in the order they run: commit by commit
that is code order, in one ``fix`` run it is the engine's. The calls are the
same; the PR body says so instead of asking for a careful review.
"""

from __future__ import annotations

import ast
from typing import Any

from torchfix_codemods.notebooks import MAGIC_MARKER, Notebook, NotebookError


def _plain(value: ast.expr) -> bool:
    """A constant, a name or an attribute read of one: evaluating it in another order is the same."""
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, (ast.Constant, ast.Name))


class _SortKeywords(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        # ``**kwargs`` or a computed value among them: their order is part of the call
        # (which duplicate wins, what is evaluated first).
        if all(k.arg is not None and _plain(k.value) for k in node.keywords):
            node.keywords.sort(key=lambda keyword: keyword.arg or "")
        return node


def _normal_form(source: bytes) -> str | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return ast.dump(_SortKeywords().visit(tree))


def same_but_keyword_order(first: bytes | None, second: bytes | None) -> bool:
    """True when both parse and differ at most in the order of calls' keyword arguments."""
    if first is None or second is None:
        return False
    normal = _normal_form(first)
    return normal is not None and normal == _normal_form(second)


def _code_free(document: dict[str, Any]) -> list[Any]:
    """A notebook's cells without the code cells' sources (outputs, markdown, metadata stay)."""
    return [{k: v for k, v in cell.items() if not (k == "source" and cell.get("cell_type") == "code")}
            if isinstance(cell, dict) else cell for cell in document.get("cells", [])]


def _magics(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith(MAGIC_MARKER)]


def same_program(path: str, first: bytes | None, second: bytes | None) -> bool:
    """``same_but_keyword_order`` for a ``.py`` file, or for a notebook's code cells
    (its other cells, its outputs and its magics must be equal)."""
    if not path.endswith(".ipynb"):
        return path.endswith(".py") and same_but_keyword_order(first, second)
    if first is None or second is None:
        return False
    try:
        one, two = Notebook.parse(first), Notebook.parse(second)
    except NotebookError:
        return False
    if _code_free(one.document) != _code_free(two.document):
        return False
    if {k: v for k, v in one.document.items() if k != "cells"} != {
            k: v for k, v in two.document.items() if k != "cells"}:
        return False
    return (_magics(one.text) == _magics(two.text)
            and same_but_keyword_order(one.text.encode(), two.text.encode()))
