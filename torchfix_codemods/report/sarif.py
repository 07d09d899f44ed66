"""``--format sarif``: SARIF 2.1.0 for code-scanning dashboards (GitHub, GitLab, Azure).

Each rule has a ``fullDescription`` (GitHub requires one) and its documentation as
``help.markdown`` with a plain-text ``help.text``; no ``helpUri``, as the project
publishes no documentation site to point at. Artifact URIs are percent-encoded:
relative to the checkout for relative paths, ``file://`` for absolute ones. A
notebook's result has no region (its lines are the cell's, not the JSON file's);
the message names the cell and the line in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from urllib.parse import quote

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
    """A percent-encoded URI reference: relative as given, ``file://`` when absolute."""
    pure = PurePath(path)
    if pure.is_absolute():
        return "file://" + quote(pure.as_posix(), safe="/")
    return quote(pure.as_posix().removeprefix("./"), safe="/")


_LEVELS = {"error": "error", "warning": "warning", "notice": "note"}


def plain_text(markdown: str) -> str:
    """Rule documentation without Markdown syntax, for ``help.text``: headings, emphasis
    and backticks dropped, links written as ``text (url)``, code fences removed."""
    lines = []
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            continue
        line = re.sub(r"^#+\s*", "", line)
        line = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", line)
        line = line.replace("**", "").replace("`", "")
        lines.append(line)
    return "\n".join(lines).strip()


def full_description(documentation: str, fallback: str) -> str:
    """The first paragraph of the documentation's prose (its "What it does")."""
    paragraph: list[str] = []
    for line in documentation.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    return " ".join(plain_text("\n".join(paragraph)).split()) or fallback


def _result(finding: Finding) -> dict[str, object]:
    from torchfix_codemods.report.github import level

    physical: dict[str, object] = {"artifactLocation": {"uri": _uri(finding.path)}}
    text = finding.message + (f" ({finding.reason})" if finding.reason else "")
    if finding.cell is None:
        physical["region"] = {
            "startLine": finding.line, "startColumn": finding.column,
            "endLine": finding.end_line, "endColumn": finding.end_column,
        }
    else:
        text = f"cell {finding.cell}, line {finding.line}: {text}"
    result: dict[str, object] = {
        "ruleId": finding.code,
        "level": _LEVELS[level(finding)],
        "message": {"text": text},
        "locations": [{"physicalLocation": physical}],
    }
    properties: dict[str, object] = {}
    if finding.cell is not None:
        properties["cell"] = finding.cell
        properties["lineInCell"] = finding.line
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
                "fullDescription": {"text": full_description(rule.documentation, rule.message)},
                "help": {"text": plain_text(rule.documentation), "markdown": rule.documentation},
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
