"""Findings and rewritten texts as LSP values (positions in UTF-16 code units, 0-based)."""

from __future__ import annotations

from lsprotocol import types

from torchfix_codemods.findings import Finding, Safety

SOURCE = "torchfix-codemods"
SYNTAX_ERROR_CODE = "TFC000"


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position(lines: list[str], line: int, column: int) -> types.Position:
    """The LSP position of 1-based ``line`` and code-point ``column`` (1-based)."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    return types.Position(line=index, character=_utf16(text[: max(column - 1, 0)]))


def diagnostic(lines: list[str], finding: Finding) -> types.Diagnostic:
    start = position(lines, finding.line, finding.column)
    end = position(lines, finding.end_line, finding.end_column)
    message = finding.message
    if finding.reason and not finding.internal_error:
        message += f"\nwhy: {finding.reason}"
    if finding.fix is not None and finding.fix.withheld:
        message += f"\nfix withheld: {finding.fix.withheld}"
    severity = (types.DiagnosticSeverity.Error if finding.code == SYNTAX_ERROR_CODE
                or finding.internal_error else types.DiagnosticSeverity.Warning)
    data = None
    if finding.fixable:
        data = {"fix": finding.fix.safety.value}  # type: ignore[union-attr]
    return types.Diagnostic(range=types.Range(start=start, end=end), message=message,
                            severity=severity, code=finding.code, source=SOURCE, data=data)


def whole_text_edit(old: str, new: str) -> types.TextEdit:
    """One edit turning ``old`` into ``new``: the span between their common prefix and
    suffix, so the editor keeps the cursor and folds outside it."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return types.TextEdit(range=types.Range(start=_offset_position(old, start),
                                            end=_offset_position(old, end_old)),
                          new_text=new[start:end_new])


def _offset_position(text: str, offset: int) -> types.Position:
    before = text[:offset]
    line = before.count("\n")
    column_text = before[before.rfind("\n") + 1:]
    return types.Position(line=line, character=_utf16(column_text))


def fix_title(finding: Finding) -> str:
    fix = finding.fix
    assert fix is not None
    tier = "safe" if fix.safety is Safety.SAFE else "unsafe: changes behaviour, review it"
    return f"Fix {finding.code} ({tier}): {fix.description}"
