"""``fix --diff``: a unified diff per changed file, coloured on a terminal, plain when piped.

Each hunk header names the rule codes that produced it and their fix safety
(``@@ -3,7 +3,7 @@ TFC001 (safe), TFC201 (unsafe)``), the way ruff's
``--show-fixes`` names each fix, so a reviewer can tell safe changes from
unsafe ones; ``patch`` and ``git apply`` ignore the text after the second
``@@``. Piped, a notebook's diff is of its JSON, so ``git apply`` takes it too,
each hunk naming its cells (``@@ ... @@ cell 2: TFC001 (safe)``); on a terminal
it shows each changed cell's source under a ``## cell N`` header (nbdime's
style). Neither shows the joined form the engine reads. A path with whitespace
ends with a tab on the ``---``/``+++`` lines, which GNU ``patch`` and ``git apply``
read as the end of the name.
"""

from __future__ import annotations

from rich.console import Console
from rich.syntax import Syntax

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.notebooks import split_cells
from torchfix_codemods.textdiff import (
    Block,
    Hunk,
    hunks,
    overlaps,
    render_hunk_lines,
)


def _label(side: str, path: str) -> str:
    """git-style ``a/`` and ``b/`` prefixes for relative paths; absolute paths as they are;
    a tab after a name with whitespace, so that ``patch`` does not cut it at the space."""
    posix = path.replace("\\", "/")
    label = posix if posix.startswith("/") else f"{side}/{posix}"
    return label + "\t" if any(char.isspace() for char in label) else label


class _Attribution:
    """Which codes, at which safety, made a hunk of one file."""

    def __init__(self, result: FileResult) -> None:
        self.applied = [f for f in result.findings if f.fix is not None and f.fix.applied]
        self.codes = sorted({f.code for f in self.applied})
        self.edits = result.edits_by_code

    def label(self, hunk: Hunk, cell: int | None, offset: int) -> str:
        """``TFC001 (safe), TFC002 (unsafe)`` for a hunk whose old lines start at ``offset``."""
        return _format(self.safeties(hunk, cell, offset))

    def safeties(self, hunk: Hunk, cell: int | None, offset: int) -> dict[str, set[str]]:
        """The codes that made ``hunk`` (of ``cell``'s source, whose first line is line
        ``offset`` of the text the engine read), each with the safeties of its fixes there."""
        blocks = [(start + offset, end + offset) for start, end in hunk.blocks]
        codes = self._codes(blocks)
        first, last = hunk.old_start + 1, hunk.old_start + max(hunk.old_length, 1)
        found: dict[str, set[str]] = {}
        for code in codes:
            of_code = [f for f in self.applied if f.code == code]
            here = [f for f in of_code if f.cell == cell and _spans(f, first, last)]
            # A code with fixes of both safeties in this file, none of them located in
            # this hunk (an import it added), names both: never call an unsafe change safe.
            found[code] = {f.fix.safety.value for f in here or of_code}  # type: ignore[union-attr]
        return found

    def cell_codes(self, cells: list[int]) -> str:
        """``TFC001 (safe)`` for the fixes applied in these notebook cells."""
        here = [f for f in self.applied if f.cell in cells]
        parts = []
        for code in sorted({f.code for f in here}):
            safeties = sorted({f.fix.safety.value for f in here if f.code == code})  # type: ignore[union-attr]
            parts.append(f"{code} ({', '.join(safeties)})")
        return ", ".join(parts)

    def _codes(self, blocks: list[Block]) -> list[str]:
        if self.edits is None:
            return self.codes
        found = [code for code in self.codes
                 if any(overlaps(mine, theirs) for mine in blocks for theirs in self.edits[code])]
        # Edits only the codes together produce (a fix applied to another fix's output).
        return found or self.codes


def _format(safeties: dict[str, set[str]]) -> str:
    return ", ".join(f"{code} ({', '.join(sorted(safeties[code]))})" for code in sorted(safeties))


def _spans(finding: Finding, first: int, last: int) -> bool:
    return finding.line <= last and finding.end_line >= first


def _hunks_text(old: str, new: str, attribution: _Attribution, cell: int | None,
                offset: int) -> str:
    out = []
    for hunk in hunks(old, new):
        label = attribution.label(hunk, cell, offset)
        out.append(f"{hunk.header()} {label}\n" if label else f"{hunk.header()}\n")
        out.append(render_hunk_lines(hunk))
    return "".join(out)


def unified_diff(result: FileResult, *, cells: bool = False) -> str:
    """The file's diff. A notebook's is of its JSON (what a patch applies to), or with
    ``cells``, one section per changed cell's source (what a person reads)."""
    assert result.original is not None and result.fixed is not None
    header = f"--- {_label('a', result.path)}\n+++ {_label('b', result.path)}\n"
    attribution = _Attribution(result)
    if not result.path.endswith(".ipynb"):
        return header + _hunks_text(result.original, result.fixed, attribution, None, 0)
    before = {index: (start, source) for index, start, source in split_cells(result.original)}
    changed = []
    for index, _, source in split_cells(result.fixed):
        start, old = before.get(index, (0, ""))
        if source != old:
            changed.append((index, start, old, source))
    if cells or result.notebook_json is None:
        return header + "".join(
            f"## cell {index + 1}\n" + _hunks_text(old, source, attribution, index + 1, start)
            for index, start, old, source in changed)
    return header + _json_hunks(result.notebook_json, changed, attribution)


def _json_hunks(json_texts: tuple[str, str], changed: list[tuple[int, int, str, str]],
                attribution: _Attribution) -> str:
    """Hunks of the notebook's JSON, each labelled with the cells whose lines it changes."""

    old_json, new_json = json_texts
    out = []
    for hunk in hunks(old_json, new_json):
        edited = "".join(text for tag, text in hunk.lines if tag != " ")
        numbers = [index + 1 for index, _, old, new in changed
                   if any(_in_json(line, edited)
                          for line in _changed_lines(old, new) if line.strip())]
        codes = _json_hunk_codes(edited, changed, numbers, attribution)
        label = ""
        if numbers:
            label = " cell " + ", ".join(map(str, numbers)) + (": " + codes if codes else "")
        out.append(f"{hunk.header()}{label}\n")
        out.append(render_hunk_lines(hunk))
    return "".join(out)


def _in_json(line: str, edited: str) -> bool:
    """Does the JSON text ``edited`` hold ``line`` as a whole string of a cell's source
    (``"    return x\\n",``), not only as the tail of a longer line?"""
    import json

    body = line.rstrip("\r\n")
    for ascii_only in (True, False):
        opened = json.dumps(body, ensure_ascii=ascii_only)[:-1]
        if any(opened + end in edited for end in ('"', '\\n"', '\\r\\n"', '\\r"')):
            return True
    return False


def _changed_lines(old: str, new: str) -> list[str]:
    """The lines a cell's change removes or adds: a JSON hunk is that cell's when it holds
    one of them. (Any line of the cell would do, but a line the cell shares unchanged with
    others, such as `    return x`, then names cells the hunk never touches.)"""
    return [text for cell_hunk in hunks(old, new, context=0)
            for tag, text in cell_hunk.lines if tag != " "]


def _json_hunk_codes(edited: str, changed: list[tuple[int, int, str, str]],
                     numbers: list[int], attribution: _Attribution) -> str:
    """The codes (with their safeties) of the cell-source changes a JSON hunk holds: each
    changed cell's own hunks whose changed lines all appear in the JSON hunk are labelled
    the way a ``.py`` hunk is (by the edits that overlap them), so an added decorator is
    not also put down to another rule's fix twenty lines below in the same cell. The
    whole cell's codes when no such hunk is recognised."""

    found: dict[str, set[str]] = {}
    for index, start, old, new in changed:
        if index + 1 not in numbers:
            continue
        for cell_hunk in hunks(old, new, context=0):
            texts = [text for tag, text in cell_hunk.lines if tag != " " and text.strip()]
            if texts and all(_in_json(text, edited) for text in texts):
                for code, safeties in attribution.safeties(cell_hunk, index + 1,
                                                           start).items():
                    found.setdefault(code, set()).update(safeties)
    return _format(found) if found else attribution.cell_codes(numbers)


def render_diff(console: Console, results: list[FileResult]) -> int:
    """Print every changed file's diff; return how many files would change."""
    changed = 0
    for result in results:
        if not result.changed:
            continue
        changed += 1
        text = unified_diff(result, cells=console.is_terminal)
        if console.is_terminal:
            console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
        else:
            console.file.write(text)
    console.file.flush()
    return changed
