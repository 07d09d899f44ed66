"""Adding ``# noqa: CODE`` comments: how a large codebase adopts the tool in one commit.

A comment goes on the line :mod:`torchfix_codemods.noqa` reads it from for a
finding: its first line, or its last when the first line ends inside a string
(a triple-quoted argument) or with a backslash continuation, where a comment
would change the code or break it. An existing ``# noqa: A`` on that line gains
the new codes (``# noqa: A, TFC001``); a bare ``# noqa`` already silences
everything; another comment keeps its text and gets ``  # noqa: CODE`` after it.
Adding is idempotent: a finding silenced once is not reported again.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable

from torchfix_codemods.noqa import NOQA


def comment_lines(text: str) -> set[int] | None:
    """The 1-based lines whose end is outside any string and not continued with a
    backslash (a comment may go there); None when the text does not tokenize."""
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                lines.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return None
    return lines


def target_line(first: int, last: int, commentable: set[int]) -> int | None:
    """Where a finding spanning ``first``..``last`` takes its noqa, None when nowhere."""
    for line in (first, last):
        if line in commentable:
            return line
    return None


def add_noqa(text: str, findings: Iterable[tuple[int, int, str]]) -> tuple[str, int]:
    """``text`` with a noqa for every (first line, last line, code); and how many lines
    changed. Findings with no line a comment can go on are left as they are."""
    commentable = comment_lines(text)
    if commentable is None:
        return text, 0
    wanted: dict[int, list[str]] = {}
    for first, last, code in findings:
        line = target_line(first, last, commentable)
        if line is not None and code not in wanted.setdefault(line, []):
            wanted[line].append(code)
    if not wanted:
        return text, 0
    lines = text.splitlines(keepends=True)
    changed = 0
    for number, codes in wanted.items():
        if number > len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        new = with_codes(body, codes)
        if new != body:
            lines[number - 1] = new + line[len(body):]
            changed += 1
    return "".join(lines), changed


def with_codes(line: str, codes: list[str]) -> str:
    """One line (without its end) with a noqa that names ``codes`` too."""
    match = NOQA.search(line)
    if match is not None:
        present = match.group("codes")
        if present is None:
            return line  # a bare noqa silences every code already
        known = [c for c in present.replace(",", " ").split() if c]
        missing = [c for c in codes if c.upper() not in {k.upper() for k in known}]
        if not missing:
            return line
        start, end = match.span("codes")
        return line[:start] + ", ".join(known + missing) + line[end:]
    return line.rstrip(" \t") + "  # noqa: " + ", ".join(codes)
