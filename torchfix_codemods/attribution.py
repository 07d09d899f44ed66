"""Which rule changed which lines, so a reviewer of ``fix --diff`` can tell safe from unsafe.

The engine applies every selected fix to a file together; only it knows which
nodes each fix replaced. For the ``--diff`` hunk labels it hands over, per
rule code, the old lines those nodes span (one codegen pass over the module
for their positions, no extra parse or analysis):

* the nodes a first-round fix replaces, at their original lines;
* for a fix that adds or removes imports, every import statement and the top
  of the file, where imports are added;
* for a fix applied in a later round (two rules fixing one call, or one fixing
  another's output), the same, carried back to the original lines through a
  line diff of that round's text against the original.

The renderer labels a hunk with every code whose lines overlap it, so a label
may name a code too many, never one too few (a change of a code it does not
name would be a review hole). A file fixed by one code needs none of this.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import libcst as cst

from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.walk import walk
from torchfix_codemods.rules.base import Fix
from torchfix_codemods.textdiff import Block, LineMatcher, split_lines

Applied = Sequence[tuple[str, Fix]]
"""The fixes the engine applied in one round, each with its rule code."""


def locate_edits(original: str, rounds: Sequence[tuple[cst.Module, Applied]],
                 maps: Sequence[LineMap | None] = ()) -> dict[str, list[Block]] | None:
    """Old-line ranges (0-based, half-open, in ``original``) each code's applied fixes touch.

    ``rounds`` are the modules the engine fixed, round by round, with the fixes it
    applied to each; ``maps``, where given, the :class:`LineMap` of each later round's
    module that the engine already built (a line diff of a whole file, not made twice).
    None when fewer than two codes fixed the file: every hunk is then that one code's.
    """
    codes = {code for _, applied in rounds for code, _ in applied}
    if len(codes) < 2:
        return None
    edits: dict[str, list[Block]] = {code: [] for code in sorted(codes)}
    for number, (module, applied) in enumerate(rounds):
        located = _located(module, applied)
        if number > 0:
            # A later round fixed the previous round's output: carry its lines back.
            known = maps[number] if number < len(maps) else None
            back = known if known is not None else LineMap(original, module.code)
            located = [(code, back.to_original(block)) for code, block in located]
        for code, block in located:
            edits[code].append(block)
    return edits


def _located(module: cst.Module, applied: Applied) -> list[tuple[str, Block]]:
    """(code, lines of ``module``) for every node the fixes replace, and imports they change."""
    targets = [old for _, fix in applied for old, _ in fix.replacements]
    positions = positions_of(module, targets)
    located: list[tuple[str, Block]] = []
    import_blocks: list[Block] | None = None
    for code, fix in applied:
        for old, new in fix.replacements:
            where = positions.get(id(old))
            if where is not None:
                located.extend((code, block) for block in _changed_lines(
                    module, old, new, (where.start.line - 1, where.end.line)))
        if fix.imports or fix.remove_imports:
            if import_blocks is None:
                import_blocks = _import_blocks(module)
            located.extend((code, block) for block in import_blocks)
    return located


def _changed_lines(module: cst.Module, old: cst.CSTNode, new: object,
                   span: Block) -> list[Block]:
    """The lines of ``span`` (where ``old`` is) that replacing it with ``new`` changes: a
    decorator added to a 40-line function touches its ``def`` line, not the line twenty
    below where another rule fixed a `.data` (whose hunk would otherwise name both).
    The whole span when the two cannot be compared line by line."""
    if not isinstance(new, cst.CSTNode):
        return [span]
    old_lines = split_lines(module.code_for_node(old))
    leading = len(old_lines) - (span[1] - span[0])  # blank lines and comments above `old`
    if leading < 0:
        return [span]
    top = span[0] - leading
    blocks = []
    matcher = difflib.SequenceMatcher(None, old_lines, split_lines(module.code_for_node(new)),
                                      autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            first, last = max(top + i1, span[0]), min(top + max(i2, i1 + 1), span[1])
            blocks.append((first, max(first, last)))
    return blocks or [span]


class LineMap:
    """Lines of a later round's text back to the original text's lines."""

    def __init__(self, original: str, current: str) -> None:
        lines = split_lines(original)
        matcher = LineMatcher(lines, split_lines(current))
        self.opcodes = matcher.get_opcodes()
        self.length = len(lines)

    def to_original(self, block: Block, exact: bool = False) -> Block:
        """Lines ``block`` (0-based, half-open) of the later text: the original lines they are,
        or that the lines a fix wrote there replaced. A hunk label takes in the changes that
        touch the block's edges too (a label may name a code too many, never one too few);
        ``exact`` takes only the lines inside it (where a finding is)."""
        start, end = block
        low, high = None, None
        for tag, i1, i2, j1, j2 in self.opcodes:
            if (j2 <= start or j1 >= end) if exact else (j2 < start or j1 > end):
                continue
            if tag == "equal":
                first = i1 + max(start, j1) - j1
                last = i1 + min(end, j2) - j1
            else:  # lines a fix wrote: the original lines they replaced
                first, last = i1, max(i2, min(i1 + 1, self.length)) if exact else i2
            low = first if low is None else min(low, first)
            high = last if high is None else max(high, last)
        return (low or 0, high if high is not None else 0)


def _import_blocks(module: cst.Module) -> list[Block]:
    """Every import statement, and the top of the file up to its first statement."""
    statements: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            statements.append(node)
            return False
        return not isinstance(node, cst.BaseExpression)

    walk(module, enter, lambda node: None)
    if module.body:
        statements.append(module.body[0])
    positions = positions_of(module, statements)
    blocks = [(where.start.line - 1, where.end.line) for where in positions.values()]
    if module.body:
        first = positions.get(id(module.body[0]))
        if first is not None:
            blocks.append((0, first.start.line - 1))
    return blocks
