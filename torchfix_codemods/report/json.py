"""``--format json``: one object, schema version 1 (documented in the README)."""

from __future__ import annotations

import json
from typing import Any

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import summarize

SCHEMA_VERSION = 1


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix = None
    if finding.fix is not None:
        fix = {
            "safety": finding.fix.safety.value,
            "applied": finding.fix.applied,
            "description": finding.fix.description,
            "withheld": finding.fix.withheld,
        }
    return {
        "path": finding.path,
        "cell": finding.cell,
        "line": finding.line,
        "column": finding.column,
        "end_line": finding.end_line,
        "end_column": finding.end_column,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "reason": finding.reason,
        "fix": fix,
    }


def render_json(results: list[FileResult]) -> str:
    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    document = {
        "version": SCHEMA_VERSION,
        "findings": [finding_to_dict(f) for f in findings],
        "errors": [{"path": r.path, "message": r.error} for r in results if r.error],
        "summary": summarize(results).as_dict(),
    }
    return json.dumps(document, indent=2)
