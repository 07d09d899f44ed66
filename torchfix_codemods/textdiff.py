"""Line diffs drawn the way ``diff -u`` and ``git diff`` draw them.

Shared by the ``--diff`` renderer (which prints hunks) and the fix attribution
(which asks which old lines one rule's fixes touch), so both agree on what a
line and a change are. Lines end at ``\\n`` only, as in git: ``str.splitlines``
would also split at form feeds and other separators that Python source may
contain, and report a line without a newline where there is none.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

Block = tuple[int, int]
"""A changed range of old lines, 0-based and half-open; ``(i, i)`` is an insertion before line i."""

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def split_lines(text: str) -> list[str]:
    """``text`` as lines that keep their ``\\n`` (and ``\\r\\n``); only the last may lack one."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk: its header ranges, its lines with their ``' '``/``-``/``+`` tags."""

    old_start: int
    old_length: int
    new_start: int
    new_length: int
    lines: tuple[tuple[str, str], ...]
    blocks: tuple[Block, ...]
    """The old-line ranges its changes touch (what attribution compares)."""

    def header(self) -> str:
        return f"@@ -{_range(self.old_start, self.old_length)} +{_range(self.new_start, self.new_length)} @@"


def _range(start: int, length: int) -> str:
    """difflib's (and diff's) notation: 1-based start, length omitted when 1."""
    first = start + 1
    if length == 1:
        return str(first)
    if length == 0:
        first -= 1
    return f"{first},{length}"


def change_blocks(old: str, new: str) -> list[Block]:
    """The old-line ranges that differ between two texts."""
    matcher = difflib.SequenceMatcher(None, split_lines(old), split_lines(new), autojunk=False)
    return [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]


def hunks(old: str, new: str, context: int = 3) -> list[Hunk]:
    """The hunks of a unified diff from ``old`` to ``new`` with ``context`` lines around changes."""
    a, b = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    result = []
    for group in matcher.get_grouped_opcodes(context):
        lines: list[tuple[str, str]] = []
        blocks: list[Block] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend((" ", line) for line in a[i1:i2])
                continue
            blocks.append((i1, i2))
            lines.extend(("-", line) for line in a[i1:i2])
            lines.extend(("+", line) for line in b[j1:j2])
        first, last = group[0], group[-1]
        result.append(Hunk(first[1], last[2] - first[1], first[3], last[4] - first[3],
                           tuple(lines), tuple(blocks)))
    return result


def overlaps(first: Block, second: Block) -> bool:
    """Whether two old-line ranges touch; an insertion touches the lines on both sides of it."""
    return first[0] <= second[1] and second[0] <= first[1]


def render_hunk_lines(hunk: Hunk) -> str:
    """The hunk's body lines, with git's marker after a line that has no newline."""
    out = []
    for tag, line in hunk.lines:
        if line.endswith("\n"):
            out.append(tag + line)
        else:
            out.append(tag + line + "\n\\ No newline at end of file\n")
    return "".join(out)
