"""What ``check`` does once its arguments are parsed, without typer.

Two front ends call into this module (from speed): the typer application in
:mod:`torchfix_codemods.cli`, and :mod:`torchfix_codemods.entry`, which runs
``check`` without importing typer (typer imports pydantic and builds a validator
per parameter: ~200 ms on every start, ten times the interpreter's). So nothing
here imports typer, rich, LibCST or a rule at module level; the reports and the
engine are imported where they are used.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import DiscoveryError, discover
from torchfix_codemods.findings import FileResult
from torchfix_codemods.report.console import console
from torchfix_codemods.report.summary import summarize
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import ConfigError, Overrides

if TYPE_CHECKING:
    from torchfix_codemods.report.sarif import RuleInfo

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad paths or configuration: the message is the one line the user sees (exit 2)."""


def print_usage_error(message: str) -> None:
    console(stderr=True, plain_when_piped=True).print(
        f"torchfix-codemods: error: {message}", soft_wrap=True, markup=False)


def split_codes(values: list[str] | None) -> tuple[str, ...] | None:
    """``["TFC1,TFC2", "TFC3"]`` -> ``("TFC1", "TFC2", "TFC3")``; None when not given."""
    if values is None:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def overrides_for(select: list[str] | None, ignore: list[str] | None,
                  extend_select: list[str] | None, output_format: str | None,
                  target_torch: str | None, jobs: int | None, exclude: list[str] | None,
                  extend_exclude: list[str] | None, config: str | None,
                  unsafe_fixes: bool | None = None) -> Overrides:
    return Overrides(
        select=split_codes(select), ignore=split_codes(ignore),
        extend_select=split_codes(extend_select),
        exclude=tuple(exclude) if exclude else None,
        extend_exclude=tuple(extend_exclude) if extend_exclude else None,
        target_torch=target_torch, unsafe_fixes=unsafe_fixes, output_format=output_format,
        jobs=jobs, config=config,
    )


def prepare(paths: list[str] | None, overrides: Overrides) -> tuple[list[str], Configuration]:
    """The files to look at and their configuration; :class:`UsageError` when impossible."""
    given = paths or ["."]
    for path in given:
        if not Path(path).exists():
            raise UsageError(f"{path}: no such file or directory")
    try:
        configuration = Configuration(overrides)
        notes: list[str] = []
        files = discover(given, configuration, notes)
    except (ConfigError, DiscoveryError) as error:
        raise UsageError(str(error)) from None
    for note in notes:
        print(f"torchfix-codemods: note: {note}", file=sys.stderr)
    return files, configuration


def statistics_format_error(statistics: bool, output_format: str) -> str | None:
    if statistics and output_format not in ("text", "json"):
        return f"--statistics: supports text and json output, got {output_format!r}"
    return None


def rule_infos() -> list[RuleInfo]:
    from torchfix_codemods.report.sarif import RuleInfo
    from torchfix_codemods.rules.registry import all_rules

    return [RuleInfo(r.code, r.name, r.message, r.documentation(), r.safety.value)
            for r in all_rules()]


def emit(results: list[FileResult], output_format: str, *, fixing: bool,
         unsafe_fixes: bool, statistics: bool = False, show_fixes: bool = False) -> None:
    """Findings in the chosen format on stdout (rich only for text on a terminal)."""
    out = console(plain_when_piped=True)
    if statistics:
        from torchfix_codemods.report.statistics import render_statistics

        render_statistics(out, results, output_format)
    elif output_format == "json":
        from torchfix_codemods.report.json import render_json

        out.file.write(render_json(results) + "\n")
    elif output_format == "sarif":
        from torchfix_codemods.report.sarif import render_sarif

        out.file.write(render_sarif(results, rule_infos()) + "\n")
    elif output_format == "github":
        from torchfix_codemods.report.github import render_github

        text = render_github(results)
        if text:
            out.file.write(text + "\n")
    else:
        from torchfix_codemods.report.text import render_text

        if fixing and show_fixes:
            from torchfix_codemods.report.statistics import render_fixes

            render_fixes(out, results, dry_run=False)
        render_text(out, results, fixing=fixing, unsafe_fixes=unsafe_fixes,
                    show_fixes=show_fixes and not fixing)


def exit_code(findings: bool, exit_zero: bool) -> int:
    """1 when findings remain (or a diff is not empty), unless ``--exit-zero``."""
    return EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN


def check_command(
    paths: list[str] | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    extend_select: list[str] | None = None,
    output_format: str | None = None,
    target_torch: str | None = None,
    jobs: int | None = None,
    exclude: list[str] | None = None,
    extend_exclude: list[str] | None = None,
    config: str | None = None,
    no_cache: bool = False,
    statistics: bool = False,
    show_fixes: bool = False,
    exit_zero: bool = False,
) -> int:
    """``check``: report findings; the exit code (1 when there are any, 2 on bad usage).

    Its parameters are the typer command's, by name (tests/test_speed.py).
    """
    overrides = overrides_for(select, ignore, extend_select, output_format, target_torch, jobs,
                              exclude, extend_exclude, config)
    if no_cache:
        overrides = dataclasses.replace(overrides, cache=False)
    try:
        files, configuration = prepare(paths, overrides)
        problem = statistics_format_error(statistics, configuration.output_format)
        if problem is not None:
            raise UsageError(problem)
    except UsageError as error:
        print_usage_error(str(error))
        return EXIT_USAGE
    results = run_paths(files, configuration, Mode.CHECK)
    emit(results, configuration.output_format, fixing=False,
         unsafe_fixes=configuration.unsafe_fixes, statistics=statistics,
         show_fixes=show_fixes)
    summary = summarize(results)
    return exit_code(bool(summary.findings or summary.errors), exit_zero)
