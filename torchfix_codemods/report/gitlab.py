"""``--format gitlab``: GitLab's Code Quality report (a JSON array of issues).

Each issue's ``fingerprint`` hashes the code, the path and the message, plus a
counter for identical ones, not the line: an unrelated edit above a finding
leaves it the same issue in the merge request widget. A notebook's issue names
its cell in the description (Code Quality has no cells); ``lines.begin`` is the
line within that cell.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import remaining

SYNTAX_ERROR_CODE = "TFC000"


def _path(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else os.path.normpath(path)
    return relative.replace(os.sep, "/")


def _issue(finding: Finding, occurrence: int) -> dict[str, object]:
    path = _path(finding.path)
    cell = f" (cell {finding.cell})" if finding.cell is not None else ""
    key = "\0".join((finding.code, path, str(finding.cell), finding.message, str(occurrence)))
    severity = "critical" if finding.code == SYNTAX_ERROR_CODE or finding.internal_error \
        else "major"
    return {
        "description": f"{finding.code} {finding.message}{cell}",
        "check_name": finding.code,
        "fingerprint": hashlib.sha256(key.encode()).hexdigest(),
        "severity": severity,
        "location": {"path": path, "lines": {"begin": finding.line, "end": finding.end_line}},
    }


def render_gitlab(results: list[FileResult]) -> str:
    issues = []
    seen: Counter[tuple[str, str, int | None, str]] = Counter()
    for finding in sorted((f for r in results for f in remaining(r.findings)),
                          key=Finding.sort_key):
        identity = (finding.code, finding.path, finding.cell, finding.message)
        issues.append(_issue(finding, seen[identity]))
        seen[identity] += 1
    for result in results:
        if result.error:
            key = "\0".join(("error", _path(result.path), result.error))
            issues.append({
                "description": f"cannot be processed: {result.error}",
                "check_name": "error",
                "fingerprint": hashlib.sha256(key.encode()).hexdigest(),
                "severity": "critical",
                "location": {"path": _path(result.path), "lines": {"begin": 1}},
            })
    return json.dumps(issues, indent=2)
