"""Source units: decoded text with everything needed to write it back byte-exact.

The engine's unit of work is a *source text with a path*, not a file, so that
notebook cells (or stdin) can be units too. :func:`load_source` is the one
place a file's bytes become a unit, for ``.py`` files and notebooks alike (the
runner and the project index both read files through it). Decoding honours
PEP 263 cookies and a UTF-8 BOM; encoding restores both, so bytes outside an
edit never change. A notebook's unit is its code cells joined (see
:mod:`torchfix_codemods.notebooks`); encoding writes the notebook's JSON back
with only the changed cells, and :meth:`SourceUnit.place` moves a finding from
the joined text to its cell.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import tokenize
from dataclasses import dataclass, field

from torchfix_codemods.findings import Finding
from torchfix_codemods.notebooks import Notebook

NOTEBOOK_SUFFIX = ".ipynb"


class UndecodableSource(Exception):
    """The bytes are not text in the encoding the file declares."""


def load_source(path: str, data: bytes) -> SourceUnit:
    """A file's bytes as a unit: a notebook's code cells, or decoded Python.

    Raises :class:`~torchfix_codemods.notebooks.NotebookError` for a notebook
    that cannot be read and :class:`UndecodableSource` for Python that cannot
    be decoded.
    """
    if path.endswith(NOTEBOOK_SUFFIX):
        notebook = Notebook.parse(data)
        return SourceUnit(path, notebook.text, notebook=notebook)
    return SourceUnit.from_bytes(path, data)


@dataclass(frozen=True)
class SourceUnit:
    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    notebook: Notebook | None = field(default=None, compare=False, repr=False)
    """The notebook the text was joined from, for writing it back and placing findings."""

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> SourceUnit:
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as error:
            raise UndecodableSource(str(error)) from error
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        body = data[len(codecs.BOM_UTF8):] if bom else data
        try:
            text = body.decode(encoding)
        except (UnicodeDecodeError, LookupError) as error:
            raise UndecodableSource(f"cannot decode as {encoding}: {error}") from error
        return cls(path, text, encoding, bom)

    def encode(self, text: str) -> bytes:
        """The file's new bytes for a new ``text`` (a notebook's JSON with the fixed cells)."""
        if self.notebook is not None:
            return self.notebook.render(text)
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data

    def place(self, finding: Finding) -> Finding:
        """``finding`` located as the user sees the file: a notebook's cell and line in it."""
        if self.notebook is None:
            return finding
        cell, line = self.notebook.locate(finding.line)
        _, end_line = self.notebook.locate(finding.end_line)
        return dataclasses.replace(finding, line=line, end_line=end_line, cell=cell)
