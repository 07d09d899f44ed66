"""Adding and re-spelling call arguments without disturbing the user's formatting.

Many fixes add or rename one keyword (``weights_only=True``,
``map_location="cpu"``, ``use_reentrant=True``) or move arguments between a
positional and a keyword spelling. Doing it by hand per rule is how tools end
up with doubled arguments or broken multi-line calls, so it is done once here:
a new argument copies the separator style of its neighbours, a trailing comma
stays trailing, comments are never duplicated.
"""

from __future__ import annotations

import libcst as cst


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """A new ``name=value`` argument, spelled without spaces around ``=``."""
    return cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))


def as_keyword(arg: cst.Arg, name: str, value: cst.BaseExpression | None = None) -> cst.Arg:
    """The same argument (its comments kept) passed as ``name=value``."""
    equal = arg.equal if isinstance(arg.equal, cst.AssignEqual) else cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return arg.with_changes(keyword=cst.Name(name), equal=equal,
                            value=arg.value if value is None else value)


def as_positional(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)


def with_layout(original: cst.Call, new_args: list[cst.Arg]) -> list[cst.Arg]:
    """Give the new arguments the separators of the old ones, position by position.

    Keeps multi-line calls multi-line and a trailing comma trailing.
    """
    old = list(original.args)
    separators = [arg.comma for arg in old[:-1] if isinstance(arg.comma, cst.Comma)]
    template = separators[0] if separators else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if not separators and isinstance(original.whitespace_before_args, cst.ParenthesizedWhitespace):
        template = cst.Comma(whitespace_after=original.whitespace_before_args)
    result = []
    for index, arg in enumerate(new_args):
        last = index == len(new_args) - 1
        if last:
            comma = old[-1].comma if old else cst.MaybeSentinel.DEFAULT
        elif index < len(old) - 1 and isinstance(old[index].comma, cst.Comma):
            comma = old[index].comma
        else:
            comma = template
        result.append(arg.with_changes(comma=comma))
    return result


def _without_comments(ws: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def add_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``f(a)`` -> ``f(a, name=value)``, keeping one-line and multi-line layouts."""
    new_arg = keyword(name, value)
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


def remove_argument(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``f(a, flag=False)`` -> ``f(a)``: drop one argument, the separator before it going
    with it when it was last (so no dangling comma appears), the layout otherwise kept."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    del args[index]
    if args and index == len(args):
        # The dropped argument was last: the new last one takes its trailing comma (or none).
        args[-1] = args[-1].with_changes(comma=arg.comma,
                                         whitespace_after_arg=arg.whitespace_after_arg)
    elif not args:
        return call.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))
    return call.with_changes(args=args)
