"""``--format junit``: one failed test case per finding, for CI systems that show JUnit XML.

A file that cannot be processed is an ``error`` case; a run with no findings is a
suite of zero cases, which every JUnit reader shows as passing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.report.summary import remaining


def _where(finding: Finding) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.path}:{cell}{finding.line}:{finding.column}"


def render_junit(results: list[FileResult]) -> str:
    findings = sorted((f for r in results for f in remaining(r.findings)), key=Finding.sort_key)
    errors = [r for r in results if r.error]
    suites = ElementTree.Element("testsuites", name="torchfix-codemods")
    suite = ElementTree.SubElement(
        suites, "testsuite", name="torchfix-codemods", tests=str(len(findings) + len(errors)),
        failures=str(len(findings)), errors=str(len(errors)))
    for finding in findings:
        case = ElementTree.SubElement(suite, "testcase", classname=finding.path,
                                      name=f"{finding.code} {_where(finding)}")
        failure = ElementTree.SubElement(case, "failure", message=finding.message,
                                         type=finding.code)
        failure.text = f"{_where(finding)}: {finding.code} {finding.message}"
        if finding.reason and not finding.internal_error:
            failure.text += f"\nwhy: {finding.reason}"
    for result in errors:
        case = ElementTree.SubElement(suite, "testcase", classname=result.path,
                                      name=f"{result.path}: error")
        error = ElementTree.SubElement(case, "error", message=result.error or "")
        error.text = result.error
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(
        suites, encoding="unicode")
