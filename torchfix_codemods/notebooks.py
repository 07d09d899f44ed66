"""Jupyter notebooks in and out: code cells become one source unit, magics kept.

A notebook's cells share one namespace (``import torch`` in the first cell is
what ``torch.load`` in the fifth refers to), so the code cells are joined into
one unit, separated by marker comments, and analysed as a module. IPython
syntax that is not Python (``%matplotlib inline``, ``!pip install``, ``x?``) is
turned into marker comments of the same line count and turned back after
fixing; cells run by a cell magic (``%%time``) are left out entirely. Findings
are mapped back to their cell and line; a fixed unit is split back into the
cells it came from, and only the changed cells' sources are rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

CELL_MARKER = "# torchfix-codemods: cell "
MAGIC_MARKER = "#torchfix-codemods-magic:"
_LINE_MAGIC = re.compile(r"^\s*(%|!|\?)|^[^#]*\?\s*$")


class NotebookError(Exception):
    """Not a notebook this tool can read; the message says why."""


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

    @classmethod
    def parse(cls, data: bytes) -> Notebook:
        try:
            document = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise NotebookError(f"not a readable notebook: {error}") from None
        if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
            raise NotebookError("not a notebook: no 'cells' list (nbformat 4 is supported)")
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
        return cls(document, cells, starts, "".join(parts), indent)

    def locate(self, line: int) -> tuple[int, int]:
        """(1-based cell number as Jupyter shows it, line within that cell) for a joined line."""
        position = 0
        for i, start in enumerate(self.starts):
            if start <= line:
                position = i
        cell_index = self.cells[position] if self.cells else 0
        return cell_index + 1, max(1, line - self.starts[position] + 1) if self.starts else line

    def render(self, fixed: str) -> bytes:
        """The notebook's bytes with the fixed joined text split back into its cells."""
        document = json.loads(json.dumps(self.document))
        for index, _, new in split_cells(fixed):
            cell = document["cells"][index]
            original = _source_text(cell.get("source", ""))
            if not original.endswith("\n") and new.endswith("\n"):
                new = new[:-1]
            if new != original:
                cell["source"] = _source_lines(new)
        return (json.dumps(document, indent=self.indent, ensure_ascii=False) + "\n").encode()


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
    lines = source.splitlines(keepends=True)
    hidden = []
    for line in lines:
        if _LINE_MAGIC.match(line):
            ending = "\n" if line.endswith("\n") else ""
            hidden.append(MAGIC_MARKER + line.rstrip("\n") + ending)
        else:
            hidden.append(line)
    return "".join(hidden)


def _show_magics(text: str) -> str:
    restored = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        # A fix may have re-indented the block a magic sits in; the magic keeps its own text.
        restored.append(stripped[len(MAGIC_MARKER):] if stripped.startswith(MAGIC_MARKER) else line)
    return "".join(restored)
