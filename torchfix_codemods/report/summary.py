"""Counts shared by every output format."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from torchfix_codemods.findings import FileResult, Finding, Safety


@dataclass(frozen=True)
class Summary:
    files: int
    findings: int
    by_code: dict[str, int]
    fixed: int
    safe_fixes_available: int
    unsafe_fixes_available: int
    withheld: int
    errors: int
    changed_files: int

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "findings": self.findings,
            "by_code": self.by_code,
            "fixed": self.fixed,
            "fixable": self.safe_fixes_available,
            "fixable_with_unsafe": self.unsafe_fixes_available,
            "withheld": self.withheld,
            "errors": self.errors,
            "changed_files": self.changed_files,
        }


def remaining(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if not (f.fix is not None and f.fix.applied)]


def summarize(results: list[FileResult]) -> Summary:
    findings = [f for r in results for f in r.findings]
    open_findings = remaining(findings)
    by_code = Counter(f.code for f in open_findings)
    safe = sum(1 for f in open_findings if f.fixable and f.fix.safety is Safety.SAFE)  # type: ignore[union-attr]
    unsafe = sum(1 for f in open_findings if f.fixable and f.fix.safety is Safety.UNSAFE)  # type: ignore[union-attr]
    return Summary(
        files=len(results),
        findings=len(open_findings),
        by_code=dict(sorted(by_code.items())),
        fixed=sum(1 for f in findings if f.fix is not None and f.fix.applied),
        safe_fixes_available=safe,
        unsafe_fixes_available=unsafe,
        withheld=sum(1 for f in open_findings if f.fix is not None and f.fix.withheld),
        errors=sum(1 for r in results if r.error),
        changed_files=sum(1 for r in results if r.changed),
    )
