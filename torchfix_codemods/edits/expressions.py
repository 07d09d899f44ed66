"""Building expressions: method calls on a receiver, operands, parentheses where Python needs them.

A fix that puts ``a + b`` where a name stood, or calls ``.detach()`` on it, must
add parentheses or change what the code computes: ``a + b.detach()`` detaches
only ``b``; ``n << 1 + 1`` shifts by two. Every rule builds such expressions
through these helpers, so the precedence rules live in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_BINARY = {
    cst.BitOr: 7, cst.BitXor: 8, cst.BitAnd: 9, cst.LeftShift: 10, cst.RightShift: 10,
    cst.Add: 11, cst.Subtract: 11, cst.Multiply: 12, cst.Divide: 12, cst.FloorDivide: 12,
    cst.Modulo: 12, cst.MatrixMultiply: 12, cst.Power: 14,
}
_ATOM = 16
_CONDITIONAL = 2


def precedence(expr: cst.BaseExpression) -> int:
    """How tightly ``expr`` binds, from ``:=`` (0) to atoms and calls (16), as in Python's grammar."""
    if expr.lpar:
        return _ATOM
    if isinstance(expr, cst.NamedExpr):
        return 0
    if isinstance(expr, cst.Lambda):
        return 1
    if isinstance(expr, cst.IfExp):
        return _CONDITIONAL
    if isinstance(expr, cst.BooleanOperation):
        return 3 if isinstance(expr.operator, cst.Or) else 4
    if isinstance(expr, cst.UnaryOperation):
        return 5 if isinstance(expr.operator, cst.Not) else 13
    if isinstance(expr, cst.Comparison):
        return 6
    if isinstance(expr, cst.BinaryOperation):
        return _BINARY[type(expr.operator)]
    if isinstance(expr, cst.Await):
        return 15
    return _ATOM


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``(expr)``, unless it is parenthesised already."""
    if expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def as_left_operand(expr: cst.BaseExpression, operator: cst.BaseBinaryOp) -> cst.BaseExpression:
    """``expr`` ready to stand left of ``operator``: parenthesised when it binds more loosely."""
    needed = _BINARY[type(operator)]
    bound = precedence(expr)
    if bound < needed or (isinstance(operator, cst.Power) and bound == needed):
        return parenthesized(expr)
    return expr


def as_condition(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` ready to be the test of ``a if expr else b``."""
    return parenthesized(expr) if precedence(expr) <= _CONDITIONAL else expr


_RECEIVERS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString)


def as_receiver(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` ready to take ``.method()``: names, attribute chains, calls, subscripts and
    plain strings as they are; anything else parenthesised (numbers too: ``1.real`` does not
    parse, and ``"a" "b".upper()`` would apply to ``"b"`` only)."""
    if isinstance(expr, _RECEIVERS) or expr.lpar:
        return expr
    return parenthesized(expr)


def in_place_of(new: cst.BaseExpression, old: cst.BaseExpression,
                parent: cst.CSTNode | None) -> cst.BaseExpression:
    """``new`` ready to stand where ``old`` stood under ``parent``: parenthesised when it binds
    more loosely than that position needs, so a replacement never changes what the code
    around it computes (``Variable(a if t else b).cuda()`` must become
    ``(a if t else b).cuda()``, not ``a if t else b.cuda()``)."""
    if new.lpar or parent is None:
        return new
    if isinstance(parent, cst.Attribute) and parent.value is old:
        return as_receiver(new)
    needed = _needed_precedence(old, parent)
    bound = precedence(new)
    if bound < needed:
        return parenthesized(new)
    return new


def _needed_precedence(old: cst.BaseExpression, parent: cst.CSTNode) -> int:
    """How tightly an expression must bind to stand as ``old`` does in ``parent``."""
    if isinstance(parent, (cst.Call, cst.Subscript)) and \
            (getattr(parent, "func", None) is old or getattr(parent, "value", None) is old):
        return _ATOM
    if isinstance(parent, cst.Await):
        return _ATOM
    if isinstance(parent, cst.BinaryOperation):
        level = _BINARY[type(parent.operator)]
        if isinstance(parent.operator, cst.Power):
            return level + 1 if parent.left is old else 13  # -x ** -y: the right side is unary
        return level if parent.left is old else level + 1
    if isinstance(parent, cst.UnaryOperation):
        return 5 if isinstance(parent.operator, cst.Not) else 13
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return 7
    if isinstance(parent, cst.BooleanOperation):
        level = 3 if isinstance(parent.operator, cst.Or) else 4
        return level if parent.left is old else level + 1
    if isinstance(parent, cst.IfExp):
        return _CONDITIONAL if parent.orelse is old else _CONDITIONAL + 1
    return 0


def method_call(receiver: cst.BaseExpression, name: str,
                args: Sequence[cst.Arg] = ()) -> cst.Call:
    """``receiver.name(*args)``, the receiver parenthesised where needed."""
    return cst.Call(func=cst.Attribute(value=as_receiver(receiver), attr=cst.Name(name)),
                    args=list(args))


def parse_expression(code: str) -> cst.BaseExpression:
    """One expression from source text (a dotted name, a literal, a small call)."""
    return cst.parse_expression(code)
