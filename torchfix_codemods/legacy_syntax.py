"""Parse repair: old keyword arguments that stopped being Python before LibCST sees a file.

``async`` became a reserved word in Python 3.7, so torch 0.3/0.4 code written as
``x.cuda(async=True)`` or ``x.to(device, async=True)`` is a ``SyntaxError`` today:
the whole file used to disappear behind one TFC000 and none of its other
mistakes was found. torch 0.4 renamed the argument ``non_blocking`` (same
meaning), so the repair is mechanical and made on tokens, which still read the
file when the parser no longer does.

Only the exact form is repaired: the NAME ``async`` directly followed by the
OP ``=`` with a call of ``.cuda``/``.to``/``.type``/``.copy_`` as the innermost
open bracket (not a ``def``/``class``/``lambda`` parameter, not ``async ==``,
not an ``async def``, not a call of another function).
The engine asks for a repair only when the file does not parse as it is, and
keeps the repair only when the repaired text parses; the repaired text then
goes through the ordinary engine, and a file that still does not parse keeps
its bytes and its TFC000 (see :func:`torchfix_codemods.engine.process`).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from torchfix_codemods import catalog
from torchfix_codemods.analysis.vocabulary.tensor_methods import NON_BLOCKING_METHODS
from torchfix_codemods.findings import FileResult, Finding, FixInfo, Safety
from torchfix_codemods.noqa import is_silenced, noqa_lines
from torchfix_codemods.source import SourceUnit

CODE = catalog.LEGACY_KEYWORD_CODE
MESSAGE = ("`async=` is a syntax error since Python 3.7 (torch 0.4 renamed it): "
           "use `non_blocking=`")
FIX_DESCRIPTION = "rename `async=` to `non_blocking=`"

OLD_KEYWORD = "async"
NEW_KEYWORD = "non_blocking"
_CANDIDATE = re.compile(r"\basync\s*=(?!=)")
"""A cheap text test first: most files never mention ``async=``, and tokenizing costs."""
RECEIVING_METHODS = NON_BLOCKING_METHODS
"""The tensor methods that took ``async=`` and take ``non_blocking=`` now. A call of
anything else keeps its ``async=`` and the file its TFC000: renaming an argument of an
unknown function would only move the error to run time."""


@dataclass(frozen=True)
class KeywordRepair:
    """One ``async=`` renamed: where it was (1-based line, 0-based column, as tokenize says)."""

    line: int
    column: int


@dataclass(frozen=True)
class Repaired:
    """A text that parses after renaming every ``async=`` keyword argument."""

    text: str
    repairs: tuple[KeywordRepair, ...]

    def original_column(self, line: int, column: int) -> int:
        """A 1-based ``column`` of the repaired text, as it was in the original line."""
        shift = len(NEW_KEYWORD) - len(OLD_KEYWORD)
        on_line = sorted(r.column for r in self.repairs if r.line == line)
        # Where each repair sits in the repaired line: after the earlier ones' growth.
        repaired_at = [column_ + shift * index for index, column_ in enumerate(on_line)]
        before = sum(1 for at in repaired_at if at + 1 < column)
        return column - shift * before


def _parses(text: str, path: str) -> bool:
    try:
        ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return False
    return True


def _async_keywords(text: str) -> list[KeywordRepair]:
    """Every NAME ``async`` followed by OP ``=`` whose innermost open bracket is a call's."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return []
    found: list[KeywordRepair] = []
    brackets: list[bool] = []  # one per open bracket: a call of one of RECEIVING_METHODS?
    for index, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            brackets.append(token.string == "(" and _calls_receiving_method(tokens, index))
        elif token.type == tokenize.OP and token.string in ")]}":
            if brackets:
                brackets.pop()
        elif (token.type == tokenize.NAME and token.string == OLD_KEYWORD and brackets
              and brackets[-1] and index + 1 < len(tokens)
              and tokens[index + 1].type == tokenize.OP and tokens[index + 1].string == "="
              and index > 0 and tokens[index - 1].string in ("(", ",")):
            found.append(KeywordRepair(*token.start))
    return found


def _calls_receiving_method(tokens: list[tokenize.TokenInfo], index: int) -> bool:
    """Whether the ``(`` at ``index`` calls ``<something>.cuda`` (or another of
    RECEIVING_METHODS): it follows ``.`` and the method's name. A ``def cuda(`` has no dot."""
    if index < 2:
        return False
    name, dot = tokens[index - 1], tokens[index - 2]
    return (name.type == tokenize.NAME and name.string in RECEIVING_METHODS
            and dot.type == tokenize.OP and dot.string == ".")


def repair(text: str, path: str) -> Repaired | None:
    """The text with ``async=`` keyword arguments renamed ``non_blocking=``, when the
    original does not parse and the repaired text compiles; otherwise None. A line
    that silences TFC004 (``# noqa``) keeps its ``async=``, and so the file its TFC000."""
    if _CANDIDATE.search(text) is None or _parses(text, path):
        return None
    found = _async_keywords(text)
    silenced = noqa_lines(text)
    if not found or any(is_silenced(silenced, CODE, where.line) for where in found):
        return None
    lines = io.StringIO(text).readlines()  # the lines tokenize numbered
    for where in sorted(found, key=lambda r: (r.line, -r.column)):
        line = lines[where.line - 1]
        if line[where.column:where.column + len(OLD_KEYWORD)] != OLD_KEYWORD:
            return None  # pragma: no cover - tokenize and readlines agree on lines
        lines[where.line - 1] = (line[:where.column] + NEW_KEYWORD
                                 + line[where.column + len(OLD_KEYWORD):])
    repaired = "".join(lines)
    try:
        compile(repaired, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return Repaired(repaired, tuple(found))


def repair_unit(unit: SourceUnit, codes: Iterable[str]) -> tuple[SourceUnit, Repaired] | None:
    """The unit to analyse in place of ``unit`` (its text repaired), when TFC004 runs and
    repairs it; the repaired unit writes back like the original (encoding, BOM, cells:
    the repair changes no line count)."""
    if CODE not in codes:
        return None
    repaired = repair(unit.text, unit.path)
    if repaired is None:
        return None
    return dataclasses.replace(unit, text=repaired.text), repaired


def with_repair(unit: SourceUnit, repaired: Repaired, result: FileResult,
                apply_fixes: bool) -> FileResult:
    """The result of the repaired unit, told about the original: one TFC004 finding per
    renamed keyword (applied when fixing), other findings' columns as in the original
    lines, and the repair written even when no other fix is."""
    entry = catalog.entry(CODE)
    own = [
        Finding(unit.path, r.line, r.column + 1, r.line, r.column + 1 + len(OLD_KEYWORD),
                CODE, entry.name, MESSAGE,
                FixInfo(Safety.SAFE, FIX_DESCRIPTION, applied=apply_fixes),
                reason="`async` is a keyword since Python 3.7: the file did not parse")
        for r in repaired.repairs
    ]
    moved = []
    for finding in result.findings:
        column = repaired.original_column(finding.line, finding.column)
        end = repaired.original_column(finding.end_line, finding.end_column)
        moved.append(dataclasses.replace(finding, column=column, end_column=end)
                     if (column, end) != (finding.column, finding.end_column) else finding)
    result.findings = sorted(own + moved, key=Finding.sort_key)
    result.original = unit.text
    if apply_fixes:
        if result.fixed is None:
            result.fixed = repaired.text
            result.new_bytes = unit.encode(repaired.text)
        if result.edits_by_code is not None:
            lines = sorted({r.line for r in repaired.repairs})  # blocks are 0-based, half-open
            result.edits_by_code.setdefault(CODE, []).extend((line - 1, line) for line in lines)
    return result


def explain_unselected(unit: SourceUnit, codes: Iterable[str], result: FileResult) -> FileResult:
    """A TFC000 that TFC004 would repair says so when TFC004 is not selected
    (``--select TFC301`` on a 0.3-era file), instead of a bare "invalid syntax"."""
    if CODE in codes or not any(f.code == catalog.SYNTAX_ERROR_CODE for f in result.findings):
        return result
    if repair(unit.text, unit.path) is None:
        return result
    hint = f" (an `async=` keyword argument: {CODE}, not selected here, repairs it)"
    result.findings = [
        dataclasses.replace(f, message=f.message.replace("; file left untouched",
                                                         hint + "; file left untouched", 1))
        if f.code == catalog.SYNTAX_ERROR_CODE else f
        for f in result.findings
    ]
    return result
