"""``--statistics`` (a count per rule code) and ``--show-fixes`` (what was fixed), as in ruff."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchfix_codemods.findings import FileResult, Finding, Safety
from torchfix_codemods.report.summary import remaining

if TYPE_CHECKING:
    from rich.console import Console

    from torchfix_codemods.report.console import PlainConsole


@dataclass(frozen=True)
class CodeCount:
    code: str
    name: str
    count: int
    fix: str | None
    """``safe`` when a safe fix is available for some of them, else ``unsafe``, else None."""

    @property
    def mark(self) -> str:
        return {"safe": "[*]", "unsafe": "[~]"}.get(self.fix or "", "   ")


def code_counts(results: list[FileResult]) -> list[CodeCount]:
    """Open findings per code, most frequent first (ties by code)."""
    open_findings = [f for r in results for f in remaining(r.findings)]
    counts = Counter(f.code for f in open_findings)
    names = {f.code: f.name for f in open_findings}
    safeties: dict[str, set[Safety]] = defaultdict(set)
    for finding in open_findings:
        if finding.fixable:
            safeties[finding.code].add(finding.fix.safety)  # type: ignore[union-attr]
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        fix = ("safe" if Safety.SAFE in safeties[code]
               else "unsafe" if Safety.UNSAFE in safeties[code] else None)
        rows.append(CodeCount(code, names[code], count, fix))
    return rows


def render_statistics(console: Console | PlainConsole, results: list[FileResult], output_format: str) -> None:
    """ruff's table: ``count<TAB>code<TAB>mark name``, or a JSON list of the same."""
    rows = code_counts(results)
    if output_format == "json":
        console.file.write(json.dumps([{"code": r.code, "name": r.name, "count": r.count,
                                        "fix": r.fix} for r in rows], indent=2) + "\n")
        return
    width = max((len(str(r.count)) for r in rows), default=1)
    for row in rows:
        console.file.write(f"{row.count:>{width}}\t{row.code}\t{row.mark} {row.name}\n")
    for result in results:
        if result.error:
            console.file.write(f"{result.path}: error: {result.error}\n")


def render_fixes(console: Console | PlainConsole, results: list[FileResult], *, dry_run: bool) -> None:
    """Every applied (or, for ``--diff``, would-be applied) fix, counted per file and code."""
    fixed: dict[str, Counter[tuple[str, str, str]]] = {}
    for result in results:
        applied = [f for f in result.findings if f.fix is not None and f.fix.applied]
        if applied:
            fixed[result.path] = Counter(_fix_key(f) for f in applied)
    if not fixed:
        return
    total = sum(sum(counts.values()) for counts in fixed.values())
    verb = "Would fix" if dry_run else "Fixed"
    lines = [f"{verb} {total} finding(s):"]
    for path, counts in fixed.items():
        lines.append(f"- {path}:")
        for (code, name, safety), count in sorted(counts.items()):
            lines.append(f"    {count} \u00d7 {code} ({name}, {safety})")
    console.print("\n".join(lines), highlight=False, soft_wrap=True, markup=False)


def _fix_key(finding: Finding) -> tuple[str, str, str]:
    assert finding.fix is not None
    return finding.code, finding.name, finding.fix.safety.value
