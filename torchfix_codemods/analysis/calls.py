"""Reading and editing call arguments without disturbing the user's formatting.

Many fixes add or rename one keyword (``weights_only=True``,
``map_location="cpu"``, ``use_reentrant=True``). Doing it by hand per rule is
how tools end up with doubled arguments or broken multi-line calls, so it is
done once here: the new argument copies the separator style of its neighbours,
a trailing comma stays trailing, comments are never duplicated.
"""

from __future__ import annotations

import libcst as cst


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star == "*" for arg in call.args)


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def argument(call: cst.Call, name: str, position: int | None) -> cst.Arg | None:
    """The argument bound to parameter ``name`` (by keyword or by position)."""
    found = keyword_arg(call, name)
    if found is not None or position is None:
        return found
    positional = positional_args(call)
    if has_star_args(call) and len(positional) <= position:
        return None
    return positional[position] if len(positional) > position else None


def _without_comments(ws: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def add_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``f(a)`` -> ``f(a, name=value)``, keeping one-line and multi-line layouts."""
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        previous = args[-2].comma
        separator = cst.Comma(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=_without_comments(previous.whitespace_after),
        )
    elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        separator = cst.Comma(whitespace_after=_without_comments(call.whitespace_before_args))
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    arg_line = separator.whitespace_after
    closing = _closing_whitespace(last)
    if closing is not None and isinstance(arg_line, cst.ParenthesizedWhitespace):
        # One argument per line, closing parenthesis on its own line: the old last
        # argument keeps its comment, the new one goes on a line of its own.
        moved = closing.with_changes(indent=arg_line.indent, last_line=arg_line.last_line)
        bare_closing = closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        if isinstance(last.comma, cst.Comma):
            last = last.with_changes(comma=last.comma.with_changes(whitespace_after=moved))
            new_arg = new_arg.with_changes(comma=cst.Comma(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=bare_closing))
        else:
            last = last.with_changes(
                comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=moved),
                whitespace_after_arg=cst.SimpleWhitespace(""))
            new_arg = new_arg.with_changes(whitespace_after_arg=bare_closing)
        return call.with_changes(args=[*args[:-1], last, new_arg])
    if closing is not None:
        # Arguments on one line but the parenthesis closed on the next: keep that layout.
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    last = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args[:-1], last, new_arg])


def _closing_whitespace(last: cst.Arg) -> cst.ParenthesizedWhitespace | None:
    """The line break before ``)`` when it follows the last argument, else None."""
    if isinstance(last.comma, cst.Comma):
        after = last.comma.whitespace_after
    else:
        after = last.whitespace_after_arg
    return after if isinstance(after, cst.ParenthesizedWhitespace) else None


def remove_arg(call: cst.Call, target: cst.Arg) -> cst.Call:
    """Drop one argument; the previous argument inherits the removed one's comma."""
    args = list(call.args)
    index = next(i for i, arg in enumerate(args) if arg is target)
    removed = args.pop(index)
    if index == len(args) and index > 0:
        args[index - 1] = args[index - 1].with_changes(
            comma=removed.comma, whitespace_after_arg=removed.whitespace_after_arg
        )
    return call.with_changes(args=args)
