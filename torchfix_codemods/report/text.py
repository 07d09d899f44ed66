"""Human output: ``path:line:col: CODE [*] message``, then counts and what ``fix`` would do.

Marks: ``[*]`` a safe fix is available, ``[~]`` an unsafe fix is available
(``--unsafe-fixes``), ``[!]`` a fix exists but was withheld (the reason follows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchfix_codemods.findings import FileResult, Finding, Safety
from torchfix_codemods.report.summary import remaining, summarize

if TYPE_CHECKING:
    from rich.console import Console

    from torchfix_codemods.report.console import PlainConsole


def _mark(finding: Finding) -> str:
    fix = finding.fix
    if fix is None:
        return ""
    if fix.withheld:
        return "[!] "
    return "[*] " if fix.safety is Safety.SAFE else "[~] "


def _fix_line(finding: Finding) -> str | None:
    """``fix (safe): add `weights_only=True``` for ``--show-fixes``; None without a usable fix."""
    if not finding.fixable:
        return None
    return f"    fix ({finding.fix.safety.value}): {finding.fix.description}"  # type: ignore[union-attr]


def _plain_finding(finding: Finding, show_fix: bool = False, quiet: bool = False) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    lines = [f"{finding.path}:{cell}{finding.line}:{finding.column}: {finding.code} "
             f"{_mark(finding)}{finding.message}"]
    if finding.reason and not finding.internal_error and not quiet:
        lines.append(f"    why: {finding.reason}")
    if finding.fix is not None and finding.fix.withheld:
        lines.append(f"    fix withheld: {finding.fix.withheld}")
    fix_line = _fix_line(finding) if show_fix else None
    if fix_line:
        lines.append(fix_line)
    return "\n".join(lines) + "\n"


def render_finding(console: Console | PlainConsole, finding: Finding,
                   show_fix: bool = False, quiet: bool = False) -> None:
    """One finding; ``quiet`` (``-q``) leaves out its ``why:`` line."""
    if not console.is_terminal:
        # Piped output has no colour, and rich's markup parsing costs ~1 ms a line.
        console.file.write(_plain_finding(finding, show_fix, quiet))
        return
    from rich.markup import escape

    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    location = f"{finding.path}:{cell}{finding.line}:{finding.column}:"
    mark = _mark(finding)
    console.print(
        f"[bold]{escape(location)}[/] [red]{finding.code}[/] "
        f"[cyan]{escape(mark)}[/]{escape(finding.message)}",
        highlight=False, soft_wrap=True,
    )
    if finding.reason and not finding.internal_error and not quiet:
        console.print(f"    [dim]why: {escape(finding.reason)}[/]", highlight=False, soft_wrap=True)
    if finding.fix is not None and finding.fix.withheld:
        console.print(f"    [yellow]fix withheld: {escape(finding.fix.withheld)}[/]",
                      highlight=False, soft_wrap=True)
    fix_line = _fix_line(finding) if show_fix else None
    if fix_line:
        console.print(f"[cyan]{escape(fix_line)}[/]", highlight=False, soft_wrap=True)


def render_text(console: Console | PlainConsole, results: list[FileResult], *, fixing: bool,
                unsafe_fixes: bool, show_fixes: bool = False, quiet: bool = False) -> None:
    """Findings still open (fixed ones are counted, not listed), then the summary.

    With ``show_fixes``, each finding that has a fix says what the fix would do;
    ``quiet`` leaves out the ``why:`` lines.
    """
    for result in results:
        for finding in sorted(remaining(result.findings), key=Finding.sort_key):
            render_finding(console, finding, show_fixes, quiet)
        render_problems(console, [result])
    render_summary(console, results, fixing=fixing, unsafe_fixes=unsafe_fixes)


def render_unanalysed(console: Console | PlainConsole, results: list[FileResult]) -> None:
    """The ``TFC000`` finding of each file ``fix --diff`` could not analyse (it does not parse,
    or it is too deep or too large): its diff is missing, and the reader is told which file
    and why rather than only a count."""
    from torchfix_codemods.catalog import SYNTAX_ERROR_CODE

    for result in results:
        for finding in sorted(remaining(result.findings), key=Finding.sort_key):
            if finding.code == SYNTAX_ERROR_CODE:
                render_finding(console, finding, quiet=True)


def render_problems(console: Console | PlainConsole, results: list[FileResult]) -> None:
    """``path: error: why`` for each file that could not be processed (and ``path: note:``
    for each passed over), so that no count of failures comes without its files."""
    for result in results:
        if result.note:
            console.file.write(f"{result.path}: note: {result.note}\n")
        if result.error and not console.is_terminal:
            console.file.write(f"{result.path}: error: {result.error}\n")
        elif result.error:
            from rich.markup import escape

            console.print(f"[bold]{escape(result.path)}:[/] [red]error:[/] {escape(result.error)}",
                          highlight=False, soft_wrap=True)


def render_summary(console: Console | PlainConsole, results: list[FileResult], *, fixing: bool,
                   unsafe_fixes: bool, dry_run: bool = False) -> None:
    summary = summarize(results)
    if dry_run:
        console.print(f"Would fix {summary.fixed} finding(s) in {summary.changed_files} "
                      "file(s).", highlight=False, soft_wrap=True)
    elif fixing and summary.fixed:
        console.print(f"Fixed {summary.fixed} finding(s) in {summary.changed_files} file(s).",
                      highlight=False, soft_wrap=True)
    if summary.findings == 0 and not summary.errors:
        if not (fixing and summary.fixed):
            console.print(f"All checks passed ({summary.files} file(s)).", highlight=False, soft_wrap=True)
        return
    if summary.findings:
        counts = ", ".join(f"{code}: {count}" for code, count in summary.by_code.items())
        if fixing:
            console.print(f"{summary.findings} finding(s) remaining ({counts}).",
                          highlight=False, soft_wrap=True)
        else:
            console.print(f"Found {summary.findings} finding(s) ({counts}).", highlight=False, soft_wrap=True)
    hints = []
    if summary.safe_fixes_available:
        hints.append(f"{summary.safe_fixes_available} fixable with `torchfix-codemods fix`")
    if summary.unsafe_fixes_available:
        if unsafe_fixes:
            hints.append(f"{summary.unsafe_fixes_available} more with unsafe fixes")
        else:
            hints.append(f"{summary.unsafe_fixes_available} more with `fix --unsafe-fixes`")
    if summary.withheld:
        hints.append(f"{summary.withheld} fix(es) withheld")
    if hints:
        console.print("[*] " + "; ".join(hints) + ".", highlight=False, soft_wrap=True)
    if summary.errors:
        console.print(f"{summary.errors} file(s) could not be processed.", highlight=False, soft_wrap=True)
