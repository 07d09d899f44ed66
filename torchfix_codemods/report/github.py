"""``--format github``: workflow commands that annotate a pull request's diff."""

from __future__ import annotations

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import remaining


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape(value).replace(":", "%3A").replace(",", "%2C")


def render_github(results: list[FileResult]) -> str:
    lines = []
    findings = sorted((f for r in results for f in remaining(r.findings)), key=Finding.sort_key)
    for f in findings:
        lines.append(
            f"::error title={_escape_property(f.code + ' ' + f.name)},"
            f"file={_escape_property(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column}::{_escape(f.message)}"
        )
    for r in results:
        if r.error:
            lines.append(f"::error file={_escape_property(r.path)}::{_escape(r.error)}")
    return "\n".join(lines)
