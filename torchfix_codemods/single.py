"""One source text, not read from disk: what stdin and the language server analyse.

The same steps as a file of a run (:func:`torchfix_codemods.runner.analyse`),
but the new bytes are returned instead of written, and an editor may ask for one
finding's fix alone (``only``) or for noqa comments. Every guarantee of the engine
holds: a fix whose result does not compile, or reads a new undefined name, is
withheld.
"""

from __future__ import annotations

import dataclasses
import io
import tokenize
from dataclasses import dataclass

from torchfix_codemods.analysis.project import NO_PROJECT, ProjectFacts
from torchfix_codemods.budget import TooComplex
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.options import FileOptions

SYNTAX_ERROR_CODE = "TFC000"


def declared_encoding(text: str) -> str:
    """The encoding a Python text declares (PEP 263), so that its bytes in that encoding
    decode back to the text (an editor or flake8 hands over text, the engine reads bytes)."""
    head = "".join(text.splitlines(keepends=True)[:2]).encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError:
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


def text_bytes(text: str) -> bytes:
    """``text`` as the bytes of a file that declares what it declares."""
    return text.encode(declared_encoding(text), "surrogatepass")


Target = tuple[int, int, str]
"""One finding as the user sees it: (line, column, code), 1-based; in a notebook ``line`` is
the line within the finding's cell (see :func:`run_text`'s ``cell``)."""


def _joined(unit: object, only: Target | None, cell: int | None) -> Target | None:
    """``only`` located in the text the engine reads (a notebook's joined cells)."""
    notebook = getattr(unit, "notebook", None)
    if only is None or notebook is None or cell is None:
        return only
    try:
        position = notebook.cells.index(cell - 1)
    except ValueError:
        return None
    line, column, code = only
    return notebook.starts[position] + line - 1, column, code


@dataclass
class TextResult:
    """Findings as the user sees the file (a notebook's cells), and the new bytes if any."""

    result: FileResult
    new_bytes: bytes | None = None
    noqa_added: int = 0


def run_text(path: str, data: bytes, options: FileOptions, *, apply_fixes: bool = False,
             project: ProjectFacts = NO_PROJECT, locate_edits: bool = False,
             only: Target | None = None, cell: int | None = None) -> TextResult:
    """Analyse ``data`` as the file ``path`` (its suffix says notebook or Python); with
    ``only``, apply that finding's fix alone (in a notebook, the finding of cell ``cell``)."""
    from torchfix_codemods.engine import process, read_unit
    from torchfix_codemods.notebooks import NotebookError
    from torchfix_codemods.runner import skipped_result

    too_large = _too_large(path, data, options)
    if too_large is not None:
        return too_large
    try:
        unit = read_unit(path, data)
    except NotebookError as error:
        return TextResult(FileResult(path, error=str(error)))
    if isinstance(unit, Finding):
        return TextResult(FileResult(path, findings=[unit]))
    try:
        result = process(unit, options, apply_fixes=apply_fixes, project=project,
                         locate_edits=locate_edits, only=_joined(unit, only, cell))
    except TooComplex as error:
        return TextResult(skipped_result(path, options.codes, error.why))
    result.findings = [unit.place(finding) for finding in result.findings]
    new_bytes = result.new_bytes if result.changed else None
    result.new_bytes = None
    if locate_edits and unit.notebook is not None and new_bytes is not None:
        result.notebook_json = (data.decode("utf-8", "replace"),
                                new_bytes.decode("utf-8", "replace"))
    return TextResult(result, new_bytes)


def _too_large(path: str, data: bytes, options: FileOptions) -> TextResult | None:
    """The one finding for a text past ``max-file-size``, as the runner gives a file: a
    text from stdin or an editor is skipped before anything parses it, too."""
    from torchfix_codemods.budget import analysed_size, size_problem
    from torchfix_codemods.runner import skipped_result

    problem = size_problem(analysed_size(path, data, options.max_file_size),
                           options.max_file_size)
    if problem is None:
        return None
    return TextResult(skipped_result(path, options.codes, problem))


def noqa_text(path: str, data: bytes, options: FileOptions, *,
              project: ProjectFacts = NO_PROJECT,
              only: Target | None = None, cell: int | None = None) -> TextResult:
    """``data`` with ``# noqa: CODE`` on each line with a finding (or only on ``only``'s).

    Syntax errors (TFC000) and internal errors are not silenced: they are not findings
    about the code a person would accept. The new text must still compile, as any fix's.
    """
    from torchfix_codemods.add_noqa import add_noqa
    from torchfix_codemods.engine import process, read_unit
    from torchfix_codemods.notebooks import NotebookError
    from torchfix_codemods.runner import skipped_result
    from torchfix_codemods.validation import check_rewrite

    too_large = _too_large(path, data, options)
    if too_large is not None:
        return too_large
    try:
        unit = read_unit(path, data)
    except NotebookError as error:
        return TextResult(FileResult(path, error=str(error)))
    if isinstance(unit, Finding):
        return TextResult(FileResult(path, findings=[unit]))
    try:
        result = process(unit, options, apply_fixes=False, project=project)
    except TooComplex as error:
        return TextResult(skipped_result(path, options.codes, error.why))
    target = _joined(unit, only, cell)
    wanted = [(f.line, f.end_line, f.code) for f in result.findings
              if f.code != SYNTAX_ERROR_CODE and not f.internal_error
              and (target is None or (f.line, f.column, f.code) == target)]
    new_text, added = add_noqa(unit.text, wanted)
    placed = [unit.place(finding) for finding in result.findings]
    if not added:
        return TextResult(dataclasses.replace(result, findings=placed, original=None))
    problem = check_rewrite(unit.text, new_text, path)
    if problem is not None:
        return TextResult(dataclasses.replace(
            result, findings=placed, original=None, error=f"noqa comments not added: {problem}"))
    return TextResult(dataclasses.replace(result, findings=placed, original=None),
                      unit.encode(new_text), added)
