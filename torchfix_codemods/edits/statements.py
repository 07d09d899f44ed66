"""Inserting statements that look as if the user wrote them.

Inserted statements (``model.eval()`` at the start of a function, a
``with torch.no_grad():`` block, ``optimizer.zero_grad()`` before a backward)
must keep the file's indentation, line endings and comments. New statements
are parsed with LibCST's defaults and carry no explicit indentation or newline
of their own, so they render with the module's detected ``default_indent`` and
``default_newline`` (tabs and CRLF files stay tabs and CRLF); existing
statements are moved, never re-rendered by hand. For the same reason inserted
text carries comments, never docstrings: LibCST re-indents statements and
comments, not the inside of a string.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst


def parse_statement(code: str) -> cst.BaseStatement:
    """One statement from source text written with 4-space indents and ``\\n``."""
    return cst.parse_statement(code)


def simple_line(code: str, comment: str | None = None) -> cst.SimpleStatementLine:
    """One simple statement line, optionally with a trailing ``# comment``."""
    line = cst.parse_statement(code)
    if not isinstance(line, cst.SimpleStatementLine):
        raise ValueError(f"not a simple statement: {code!r}")
    if comment is not None:
        line = line.with_changes(trailing_whitespace=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(f"# {comment}")))
    return line


def with_trailing_comment(line: cst.SimpleStatementLine, text: str) -> cst.SimpleStatementLine:
    """``line`` with ``# text`` appended after any comment the user already wrote."""
    existing = line.trailing_whitespace.comment
    comment = f"{existing.value}  # {text}" if existing is not None else f"# {text}"
    return line.with_changes(trailing_whitespace=line.trailing_whitespace.with_changes(
        whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment)))


def with_leading_lines_moved(
    new: cst.BaseStatement, old: cst.BaseStatement,
) -> tuple[cst.BaseStatement, cst.BaseStatement]:
    """Give ``new`` (inserted before ``old``) the comments and blank lines above ``old``."""
    lines = getattr(old, "leading_lines", ())
    if not lines:
        return new, old
    return new.with_changes(leading_lines=lines), old.with_changes(leading_lines=())


def insert_before(old: cst.BaseStatement, *new: cst.BaseStatement) -> cst.FlattenSentinel:
    """The replacement of ``old`` by ``new...`` then ``old``; the comments above ``old`` stay
    above the first inserted statement, where a reader looks for them."""
    first, moved = with_leading_lines_moved(new[0], old)
    return cst.FlattenSentinel([first, *new[1:], moved])


def fresh_name(preferred: str, taken: Iterable[str]) -> str:
    """``preferred``, or ``preferred_2``, ... whichever no existing name uses."""
    used = set(taken)
    if preferred not in used:
        return preferred
    index = 2
    while f"{preferred}_{index}" in used:
        index += 1
    return f"{preferred}_{index}"


def _split_blank_prefix(lines: Sequence[cst.EmptyLine]) -> tuple[list[cst.EmptyLine],
                                                                  list[cst.EmptyLine]]:
    """(the blank lines before the first comment, the rest) of a statement's leading lines."""
    lines = list(lines)
    cut = 0
    while cut < len(lines) and lines[cut].comment is None:
        cut += 1
    return lines[:cut], lines[cut:]


def move_statement(
    statement: cst.BaseStatement,
    target: cst.BaseStatement,
    *,
    after: bool,
    following: cst.BaseStatement | None,
) -> list[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel]]:
    """Replacements that move ``statement`` right before (or after) ``target``.

    The comments written above ``statement`` travel with it; the blank lines above it
    stay where they were, handed to ``following`` (the statement after it in its block),
    so the layout of the code it leaves keeps its paragraphs. Moved before ``target``, it
    goes below the blank lines above ``target`` and above ``target``'s own comments, which
    keep describing ``target``.
    """
    blanks, comments = _split_blank_prefix(getattr(statement, "leading_lines", ()))
    moved = statement.with_changes(leading_lines=comments)
    target_lines = list(getattr(target, "leading_lines", ()))
    if following is target and blanks:
        target_lines = [*blanks, *target_lines]
    if after:
        new_target = target.with_changes(leading_lines=target_lines)
        placed = cst.FlattenSentinel([new_target, moved])
    else:
        target_blanks, target_comments = _split_blank_prefix(target_lines)
        placed = cst.FlattenSentinel([
            moved.with_changes(leading_lines=[*target_blanks, *comments]),
            target.with_changes(leading_lines=target_comments)])
    replacements: list[tuple[cst.CSTNode,
                             cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel]] = [
        (statement, cst.RemovalSentinel.REMOVE), (target, placed)]
    if following is not None and following is not target and blanks:
        replacements.append((following, following.with_changes(
            leading_lines=[*blanks, *getattr(following, "leading_lines", ())])))
    return replacements


def wrapped_in_with(lines: Sequence[cst.SimpleStatementLine], item: cst.BaseExpression,
                    rewritten: Sequence[cst.SimpleStatementLine] | None = None,
                    ) -> list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]]:
    """Replacements that put consecutive ``lines`` of one block into one ``with item:`` block
    (holding ``rewritten``, the lines as a fix changes them, when given).

    The comments and blank lines above the first line stay above the ``with``; comments
    between the lines move into the block with them.
    """
    body = list(rewritten if rewritten is not None else lines)
    block = cst.With(
        items=[cst.WithItem(item)],
        body=cst.IndentedBlock(body=[body[0].with_changes(leading_lines=[]), *body[1:]]),
        leading_lines=lines[0].leading_lines,
    )
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]] = [(lines[0], block)]
    replacements += [(line, cst.RemoveFromParent()) for line in lines[1:]]
    return replacements


def guarded_by_main(statements: Sequence[cst.BaseStatement],
                    ) -> list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]]:
    """Replacements that move consecutive top-level ``statements`` under
    ``if __name__ == "__main__":``; the comments and blank lines above the first stay above
    the ``if``, and the statements keep their own text (LibCST re-indents them)."""
    first = statements[0]
    guard = cst.If(
        test=cst.parse_expression('__name__ == "__main__"'),
        body=cst.IndentedBlock(body=[first.with_changes(leading_lines=[]), *statements[1:]]),
        leading_lines=getattr(first, "leading_lines", ()),
    )
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]] = [(first, guard)]
    replacements += [(statement, cst.RemoveFromParent()) for statement in statements[1:]]
    return replacements
