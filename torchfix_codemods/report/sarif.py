"""``--format sarif``: SARIF 2.1.0 for code-scanning dashboards (GitHub, GitLab, Azure)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from torchfix_codemods import __version__
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import remaining

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class RuleInfo:
    """What SARIF shows about a rule (plain data, so reports need not import rules)."""

    code: str
    name: str
    message: str
    documentation: str
    fix: str


def _uri(path: str) -> str:
    return PurePath(path).as_posix().removeprefix("./")


def _result(finding: Finding) -> dict[str, object]:
    region: dict[str, int] = {
        "startLine": finding.line, "startColumn": finding.column,
        "endLine": finding.end_line, "endColumn": finding.end_column,
    }
    location: dict[str, object] = {
        "physicalLocation": {"artifactLocation": {"uri": _uri(finding.path)}, "region": region}
    }
    result: dict[str, object] = {
        "ruleId": finding.code,
        "level": "error" if finding.code == "TFC000" or finding.internal_error else "warning",
        "message": {"text": finding.message + (f" ({finding.reason})" if finding.reason else "")},
        "locations": [location],
    }
    properties: dict[str, object] = {}
    if finding.cell is not None:
        properties["cell"] = finding.cell
    if finding.fix is not None:
        properties["fix"] = {"safety": finding.fix.safety.value,
                             "description": finding.fix.description,
                             "withheld": finding.fix.withheld}
    if properties:
        result["properties"] = properties
    return result


def render_sarif(results: list[FileResult], rules: Sequence[RuleInfo]) -> str:
    findings = sorted((f for r in results for f in remaining(r.findings)), key=Finding.sort_key)
    used = {f.code for f in findings}
    driver = {
        "name": "torchfix-codemods",
        "version": __version__,
        "rules": [
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.message},
                "help": {"text": rule.documentation, "markdown": rule.documentation},
                "properties": {"fix": rule.fix},
            }
            for rule in rules if rule.code in used
        ],
    }
    notifications = [
        {"level": "error", "message": {"text": r.error},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(r.path)}}}]}
        for r in results if r.error
    ]
    run: dict[str, object] = {"tool": {"driver": driver}, "results": [_result(f) for f in findings]}
    if notifications:
        run["invocations"] = [{"executionSuccessful": True,
                               "toolExecutionNotifications": notifications}]
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
