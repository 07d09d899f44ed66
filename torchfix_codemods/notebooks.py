"""Jupyter notebooks in and out: code cells become one source unit, magics kept.

A notebook's cells share one namespace (``import torch`` in the first cell is
what ``torch.load`` in the fifth refers to), so the code cells are joined into
one unit, separated by marker comments, and analysed as a module. IPython
syntax that is not Python (``%matplotlib inline``, ``!pip install``, ``x?``) is
turned into marker comments of the same line count and turned back after
fixing; where a comment would leave a block empty (``if logger == "Comet":``
over an indented ``%pip install comet_ml``, as in yolov5's tutorials) the
magic becomes a marked ``pass`` at its own indentation instead. Cells run by a
cell magic (``%%time``) are left out entirely. Findings
are mapped back to their cell and line; a fixed unit is split back into the
cells it came from, and only the changed cells' sources are rewritten.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from torchfix_codemods.analysis.core.cells import CELL_MARKER

MAGIC_MARKER = "#torchfix-codemods-magic:"
PASS_MARKER = "pass  " + MAGIC_MARKER
"""An indented magic hidden as a statement: ``<indent>pass  #torchfix-codemods-magic:%pip ...``."""
_LINE_MAGIC = re.compile(r"^\s*(%|!|\?)|^[^#]*\?\s*$"
                         # ``files = !ls``, ``t = %timeit -o f()``: an assignment magic.
                         r"|^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")


class NotebookError(Exception):
    """Not a notebook this tool can read; the message says why."""


class NotebookSkipped(NotebookError):
    """A notebook whose code is not Python (an R or Julia kernel): passed over with a note."""


@dataclass
class Notebook:
    """A parsed notebook and the mapping between its code cells and one source text."""

    document: dict[str, Any]
    cells: list[int]
    """Indices (in ``document["cells"]``) of the code cells in the joined text."""
    starts: list[int]
    """1-based line in the joined text where each joined cell's first line is."""
    text: str
    indent: int | None
    raw: str = ""
    """The notebook's JSON text as read, into which changed sources are spliced."""

    @classmethod
    def parse(cls, data: bytes) -> Notebook:
        try:
            raw = data.decode("utf-8")
            document = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise NotebookError(f"not a readable notebook: {error}") from None
        if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
            raise NotebookError("not a notebook: no 'cells' list (nbformat 4 is supported)")
        language = _language(document)
        if language is not None and "python" not in language:  # "python", "python3"
            raise NotebookSkipped(f"skipped: a notebook in {language}, not Python")
        indent = _indent_of(data)
        cells: list[int] = []
        starts: list[int] = []
        parts: list[str] = []
        line = 1
        for index, cell in enumerate(document["cells"]):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = _source_text(cell.get("source", ""))
            if source.lstrip().startswith("%%"):
                continue  # a cell magic: the body may not even be Python
            body = _hide_magics(source)
            if not body.endswith("\n"):
                body += "\n"
            marker = f"{CELL_MARKER}{index}\n"
            parts.append(marker + body)
            cells.append(index)
            starts.append(line + 1)
            line += 1 + body.count("\n")
        return cls(document, cells, starts, "".join(parts), indent, raw)

    def locate(self, line: int) -> tuple[int, int]:
        """(1-based cell number as Jupyter shows it, line within that cell) for a joined line."""
        position = 0
        for i, start in enumerate(self.starts):
            if start <= line:
                position = i
        cell_index = self.cells[position] if self.cells else 0
        return cell_index + 1, max(1, line - self.starts[position] + 1) if self.starts else line

    def render(self, fixed: str) -> bytes:
        """The notebook's bytes with the fixed joined text split back into its cells.

        Only the changed cells' ``source`` values are rewritten, spliced into the
        original JSON text in its own layout (see :mod:`torchfix_codemods.notebook_json`):
        every other byte (indentation, separators, escapes, line endings, key order)
        stays as the file had it, so a migration's diff shows the fixed cells alone.
        """
        from torchfix_codemods.notebook_json import render_sources

        changed: dict[int, str | list[str]] = {}
        for index, _, new in split_cells(fixed):
            source = self.document["cells"][index].get("source", "")
            original = _source_text(source)
            if not original.endswith("\n") and new.endswith("\n"):
                new = new[:-1]
            if new != original:
                changed[index] = _source_lines(new) if isinstance(source, list) else new
        return render_sources(self.raw, self.document, changed, self.indent)


def cell_order(text: str) -> list[str]:
    """The cell markers of a joined text, in order: a fix that indents one (wrapping the
    statements of later cells into a block of an earlier one) merges cells, and the text
    no longer splits back into the notebook it came from."""
    return re.findall(r"(?m)^" + re.escape(CELL_MARKER) + r"(\d+)$", text)


def split_cells(text: str) -> list[tuple[int, int, str]]:
    """A joined text back as ``(cell index, 0-based line where its source starts, source)``.

    Sources have their magics shown again. Lines above the first marker (imports a
    fix added) belong to the first cell, which then starts at line 0.
    """
    pieces = re.split(r"(?m)^" + re.escape(CELL_MARKER) + r"(\d+)\n", text)
    preamble = pieces[0]
    line = preamble.count("\n")
    cells = []
    for position in range(1, len(pieces), 2):
        body = pieces[position + 1]
        start = line + 1
        line = start + body.count("\n")
        if position == 1 and preamble.strip():
            body, start = preamble + body, 0
        cells.append((int(pieces[position]), start, _show_magics(body)))
    return cells


def _language(document: dict[str, Any]) -> str | None:
    """The notebook's language as its metadata names it (lower case), None when it does not."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(field_name), str):
            return table[field_name].strip().lower()
    return None


def _indent_of(data: bytes) -> int | None:
    lines = data.split(b"\n", 2)
    if len(lines) < 2:
        return None
    second = lines[1]
    return len(second) - len(second.lstrip(b" ")) or None


def _source_text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _source_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _hide_magics(source: str) -> str:
    """The cell with its magics hidden: as comments, or, where a comment would leave a block
    without a statement (the cell no longer parses), indented magics as marked ``pass``."""
    as_comments = _hidden(source, statements=False)
    if not _parses(as_comments):
        as_statements = _hidden(source, statements=True)
        if _parses(as_statements):
            return as_statements
    return as_comments


def _hidden(source: str, *, statements: bool) -> str:
    hidden = []
    state = _Continuation()
    for line in source.splitlines(keepends=True):
        if state.open or not _LINE_MAGIC.match(line):
            # A line inside brackets, a string or after a backslash continues a statement:
            # ``% (epoch,)`` there is the formatting operator, not a magic.
            state.feed(line)
            hidden.append(line)
            continue
        ending = "\n" if line.endswith("\n") else ""
        text = line.rstrip("\n")
        indent = text[: len(text) - len(text.lstrip())]
        if statements and indent:
            hidden.append(indent + PASS_MARKER + text[len(indent):] + ending)
        else:
            hidden.append(MAGIC_MARKER + text + ending)
    return "".join(hidden)


class _Continuation:
    """Whether the lines read so far leave a statement open: an unclosed bracket, an
    unfinished triple-quoted string, or a trailing backslash (a light scan, no tokenizer,
    since the cell is not Python until its magics are hidden)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None
        self.backslash = False

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.quote is not None or self.backslash

    def feed(self, line: str) -> None:
        position, length = 0, len(line)
        self.backslash = False
        while position < length:
            char = line[position]
            if self.quote is not None:
                if char == "\\":
                    position += 2
                    continue
                if line.startswith(self.quote, position):
                    position += len(self.quote)
                    self.quote = None
                    continue
                if char == "\n" and len(self.quote) == 1:
                    self.quote = None  # an unterminated short string ends with its line
                position += 1
                continue
            if char == "#":
                break
            if char in "\"'":
                triple = line[position:position + 3]
                self.quote = triple if triple in ('"""', "'''") else char
                position += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and line[position + 1:].strip() == "":
                self.backslash = True
            position += 1


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _show_magics(text: str) -> str:
    restored = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(PASS_MARKER):
            # A statement: it moves with its block, so the magic takes the indentation it has.
            indent = line[: len(line) - len(stripped)]
            restored.append(indent + stripped[len(PASS_MARKER):])
        elif stripped.startswith(MAGIC_MARKER):
            # A fix may have re-indented the block a comment sits in; the magic keeps its text.
            restored.append(stripped[len(MAGIC_MARKER):])
        else:
            restored.append(line)
    return "".join(restored)
