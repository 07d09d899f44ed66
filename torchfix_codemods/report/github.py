"""``--format github``: workflow commands that annotate a pull request's diff.

Levels: ``error`` for a file that cannot be parsed or analysed (TFC000, an internal
error), ``notice`` for remarks (style only, "no migration needed"), ``warning`` for
every other finding. A notebook's annotation names its cell in the title and carries
no line: GitHub would read the line within the cell as a line of the notebook's JSON.
"""

from __future__ import annotations

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import remaining

SYNTAX_ERROR_CODE = "TFC000"


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape(value).replace(":", "%3A").replace(",", "%2C")


def level(finding: Finding) -> str:
    """``error``, ``warning`` or ``notice`` (shared with SARIF's error/warning/note)."""
    if finding.code == SYNTAX_ERROR_CODE or finding.internal_error:
        return "error"
    return "notice" if finding.note else "warning"


def _annotation(f: Finding) -> str:
    title = f"{f.code} {f.name}"
    if f.cell is not None:
        title += f" (cell {f.cell}, line {f.line})"
        where = f"file={_escape_property(f.path)}"
    else:
        where = (f"file={_escape_property(f.path)},line={f.line},col={f.column},"
                 f"endLine={f.end_line},endColumn={f.end_column}")
    return f"::{level(f)} title={_escape_property(title)},{where}::{_escape(f.message)}"


def render_github(results: list[FileResult]) -> str:
    lines = []
    findings = sorted((f for r in results for f in remaining(r.findings)), key=Finding.sort_key)
    for f in findings:
        lines.append(_annotation(f))
    for r in results:
        if r.error:
            lines.append(f"::error file={_escape_property(r.path)}::{_escape(r.error)}")
    return "\n".join(lines)
