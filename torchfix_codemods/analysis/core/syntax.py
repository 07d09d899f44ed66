"""Facts read off the syntax alone: a node's text, literals, docstrings, ``[0]``.

No scopes and no names are consulted here (that is :mod:`.names`), so these
answers hold whatever the surrounding code binds.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node`` as it is written (comments and spacing included)."""
    return _EMPTY_MODULE.code_for_node(node)


def literal_bool(node: cst.BaseExpression) -> bool | None:
    """True/False for the literals ``True``/``False``, None for anything else (``None`` too)."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def is_false(node: cst.BaseExpression) -> bool:
    return literal_bool(node) is False


def is_zero_index(subscript: cst.Subscript) -> bool:
    """``x[0]`` (one plain index, the integer literal 0)."""
    if len(subscript.slice) != 1:
        return False
    element = subscript.slice[0].slice
    return (isinstance(element, cst.Index) and isinstance(element.value, cst.Integer)
            and element.value.value == "0")


def is_docstring(node: cst.BaseStatement) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and
            isinstance(node.body[0], cst.Expr) and
            isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def split_docstring(body: Sequence[cst.BaseStatement]) -> tuple[list[cst.BaseStatement],
                                                                 list[cst.BaseStatement]]:
    """(docstring statements, the rest) of a function body."""
    if body and is_docstring(body[0]):
        return [body[0]], list(body[1:])
    return [], list(body)


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not isinstance(test, cst.Comparison):
        return False
    text = code_of(test)
    return "__main__" in text and "__name__" in text
