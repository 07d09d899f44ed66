"""Line diffs drawn the way ``diff -u`` and ``git diff`` draw them.

Shared by the ``--diff`` renderer (which prints hunks) and the fix attribution
(which asks which old lines one rule's fixes touch), so both agree on what a
line and a change are. Lines end at ``\\n`` only, as in git: ``str.splitlines``
would also split at form feeds and other separators that Python source may
contain, and report a line without a newline where there is none.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

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


EXACT_COST = 20_000_000
"""Above this estimate of difflib's work (pairs of equal lines, times the changed lines: its
longest-match search visits every pair of equal lines once per changed region), a line diff
is anchored on lines unique to both texts first (:func:`_anchored_blocks`). difflib's cost is
quadratic in the lines that repeat (blank lines, ``)``): on a 100 KiB generated file with a
fix every few lines one diff took 6.5 CPU s, on 300 KiB minutes. Real files stay far below it
(and get difflib's exact answer, as before)."""


class LineMatcher(difflib.SequenceMatcher):
    """difflib's line matcher (no junk), but linear on long texts with many changes.

    Within :data:`EXACT_COST` it is ``difflib.SequenceMatcher(None, a, b, autojunk=False)``;
    past it, its matching blocks come from :func:`_anchored_blocks`, which matches only equal
    lines too, so every alignment it gives is a true one (lines it calls equal are equal)."""

    def __init__(self, a: Sequence[str], b: Sequence[str]) -> None:
        super().__init__(None, a, b, autojunk=False)

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None and estimated_cost(self.a, self.b) > EXACT_COST:
            self.matching_blocks = [difflib.Match(*block)
                                    for block in _anchored_blocks(self.a, self.b)]
        return super().get_matching_blocks()


def estimated_cost(a: Sequence[str], b: Sequence[str]) -> int:
    """difflib's work on ``a`` and ``b``, roughly: pairs of equal lines times changed lines."""
    count_a, count_b = Counter(a), Counter(b)
    pairs = sum(count * count_b[line] for line, count in count_a.items())
    changed = sum(((count_a - count_b) + (count_b - count_a)).values())
    return pairs * (changed + 1)


def _anchored_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, n) of ``a`` and ``b``, sorted, adjacent ones merged, ending with
    difflib's sentinel ``(len(a), len(b), 0)``: the common head and tail of a range are
    matched, then the lines that occur once in each side of it, in the longest run of them
    in the same order (patience diff's anchors); the ranges between anchors are matched the
    same way, and by difflib itself once its cost there is within :data:`EXACT_COST`."""
    found: list[tuple[int, int, int]] = []
    ranges = [(0, len(a), 0, len(b))]
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        if head:
            found.append((alo, blo, head))
            alo, blo = alo + head, blo + head
        tail = 0
        while ahi - tail > alo and bhi - tail > blo and a[ahi - tail - 1] == b[bhi - tail - 1]:
            tail += 1
        if tail:
            found.append((ahi - tail, bhi - tail, tail))
            ahi, bhi = ahi - tail, bhi - tail
        if alo == ahi or blo == bhi:
            continue
        if estimated_cost(a[alo:ahi], b[blo:bhi]) <= EXACT_COST:
            inner = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            found.extend((alo + i, blo + j, n) for i, j, n in inner.get_matching_blocks() if n)
            continue
        anchors = _unique_in_order(a, alo, ahi, b, blo, bhi)
        for i, j in anchors:
            found.append((i, j, 1))
        # The ranges between anchors; with none, the range is one change.
        edges = [(alo - 1, blo - 1), *anchors, (ahi, bhi)] if anchors else []
        for (i1, j1), (i2, j2) in pairwise(edges):
            if i1 + 1 < i2 and j1 + 1 < j2:
                ranges.append((i1 + 1, i2, j1 + 1, j2))
    found.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, n in found:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + n)
        else:
            merged.append((i, j, n))
    merged.append((len(a), len(b), 0))
    return merged


def _unique_in_order(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int,
                     bhi: int) -> list[tuple[int, int]]:
    """(i, j) of the lines that occur once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``, the
    longest subsequence of them increasing in both (patience sorting, O(n log n))."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if count_b[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi)
             if count_a[a[i]] == 1 and a[i] in where_b]
    tops: list[int] = []  # the smallest last j of an increasing run of each length
    ends: list[int] = []  # the index in ``pairs`` of that run's last pair
    previous: list[int] = []
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tops, j)
        if length == len(tops):
            tops.append(j)
            ends.append(index)
        else:
            tops[length] = j
            ends[length] = index
        previous.append(ends[length - 1] if length else -1)
    run: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    return run[::-1]


def change_blocks(old: str, new: str) -> list[Block]:
    """The old-line ranges that differ between two texts."""
    matcher = LineMatcher(split_lines(old), split_lines(new))
    return [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]


def hunks(old: str, new: str, context: int = 3) -> list[Hunk]:
    """The hunks of a unified diff from ``old`` to ``new`` with ``context`` lines around changes."""
    a, b = split_lines(old), split_lines(new)
    matcher = LineMatcher(a, b)
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
