"""The ``torchfix-codemods`` command: flags -> Settings -> runner -> report.

Kept thin on purpose: everything a test might want to call lives in the
modules below it. Exit codes: 0 nothing found or everything fixed,
1 findings remain or the diff is not empty, 2 bad usage or configuration.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from torchfix_codemods import __version__
from torchfix_codemods.catalog import UnknownRuleCode
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import DiscoveryError, discover
from torchfix_codemods.findings import FileResult, Safety
from torchfix_codemods.report.diff import render_diff
from torchfix_codemods.report.github import render_github
from torchfix_codemods.report.json import render_json
from torchfix_codemods.report.sarif import RuleInfo, render_sarif
from torchfix_codemods.report.summary import summarize
from torchfix_codemods.report.text import render_summary, render_text
from torchfix_codemods.rules.registry import all_rules, rule_by_code
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import OUTPUT_FORMATS, ConfigError, Overrides

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

app = typer.Typer(
    name="torchfix-codemods",
    help="Find the mistakes PyTorch code keeps making, and rewrite them safely.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


def fail(message: str) -> typer.Exit:
    stderr.print(f"torchfix-codemods: error: {escape(message)}", soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


def _version(value: bool) -> None:
    if value:
        stdout.print(f"torchfix-codemods {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """Find the mistakes PyTorch code keeps making, and rewrite them safely."""


PathsArg = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads the annotation at runtime
    typer.Argument(help="Files or directories to check (default: the current directory).",
                   show_default=False),
]
SelectOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--select", help="Only these rule codes or prefixes (comma-separated, "
                 "repeatable), e.g. TFC1 or TFC001,TFC002.", show_default=False),
]
IgnoreOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--ignore", help="Skip these rule codes or prefixes.", show_default=False),
]
ExtendSelectOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--extend-select", help="Add these rule codes or prefixes to the selection.",
                 show_default=False),
]
FormatOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--format", help=f"Output format: {', '.join(OUTPUT_FORMATS)}.",
                 show_default=False),
]
TargetOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--target-torch", help="Oldest torch release the code must run on, e.g. 2.4; "
                 "no fix needs a newer one.", show_default=False),
]
JobsOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count).",
                 show_default=False),
]
ExcludeOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--exclude", help="Gitignore-style patterns to skip, replacing the defaults.",
                 show_default=False),
]
ExtendExcludeOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--extend-exclude", help="Patterns to skip in addition to the defaults.",
                 show_default=False),
]
ConfigOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--config", help="Read settings for every file from this pyproject.toml "
                 "instead of each file's nearest one.", show_default=False),
]


def _split(values: list[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _prepare(paths: list[str] | None, overrides: Overrides) -> tuple[list[str], Configuration]:
    given = paths or ["."]
    for path in given:
        if not Path(path).exists():
            raise fail(f"{path}: no such file or directory")
    try:
        settings = Configuration(overrides)
        files = discover(given, settings)
    except (ConfigError, DiscoveryError) as error:
        raise fail(str(error)) from None
    return files, settings


def _overrides(select: list[str] | None, ignore: list[str] | None,
               extend_select: list[str] | None, output_format: str | None,
               target_torch: str | None, jobs: int | None, exclude: list[str] | None,
               extend_exclude: list[str] | None, config: str | None,
               unsafe_fixes: bool | None = None) -> Overrides:
    return Overrides(
        select=_split(select), ignore=_split(ignore), extend_select=_split(extend_select),
        exclude=tuple(exclude) if exclude else None,
        extend_exclude=tuple(extend_exclude) if extend_exclude else None,
        target_torch=target_torch, unsafe_fixes=unsafe_fixes, output_format=output_format,
        jobs=jobs, config=config,
    )


def _rule_infos() -> list[RuleInfo]:
    return [RuleInfo(r.code, r.name, r.message, r.documentation(), r.safety.value)
            for r in all_rules()]


def _emit(results: list[FileResult], output_format: str, *, fixing: bool,
          unsafe_fixes: bool) -> None:
    if output_format == "json":
        stdout.file.write(render_json(results) + "\n")
    elif output_format == "sarif":
        stdout.file.write(render_sarif(results, _rule_infos()) + "\n")
    elif output_format == "github":
        text = render_github(results)
        if text:
            stdout.file.write(text + "\n")
    else:
        render_text(stdout, results, fixing=fixing, unsafe_fixes=unsafe_fixes)


@app.command()
def check(
    paths: PathsArg = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    extend_select: ExtendSelectOpt = None,
    output_format: FormatOpt = None,
    target_torch: TargetOpt = None,
    jobs: JobsOpt = None,
    exclude: ExcludeOpt = None,
    extend_exclude: ExtendExcludeOpt = None,
    config: ConfigOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the "
                                           "result cache (.torchfix_cache).")] = False,
) -> None:
    """Report findings; exit 1 when there are any. Writes nothing but its cache."""
    overrides = _overrides(select, ignore, extend_select, output_format, target_torch, jobs,
                           exclude, extend_exclude, config)
    if no_cache:
        overrides = dataclasses.replace(overrides, cache=False)
    files, settings = _prepare(paths, overrides)
    results = run_paths(files, settings, Mode.CHECK)
    _emit(results, settings.output_format, fixing=False, unsafe_fixes=settings.unsafe_fixes)
    summary = summarize(results)
    raise typer.Exit(EXIT_FINDINGS if summary.findings or summary.errors else EXIT_CLEAN)


@app.command()
def fix(
    paths: PathsArg = None,
    diff: Annotated[bool, typer.Option("--diff", help="Show the changes as a unified diff and "
                                       "write nothing; exit 1 when the diff is not empty.")] = False,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that "
                                               "change behaviour on purpose (see `explain`).")
                            ] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    extend_select: ExtendSelectOpt = None,
    output_format: FormatOpt = None,
    target_torch: TargetOpt = None,
    jobs: JobsOpt = None,
    exclude: ExcludeOpt = None,
    extend_exclude: ExtendExcludeOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Apply safe fixes in place (with --unsafe-fixes, also unsafe ones); report the rest."""
    overrides = _overrides(select, ignore, extend_select, output_format, target_torch, jobs,
                           exclude, extend_exclude, config, unsafe_fixes or None)
    files, settings = _prepare(paths, overrides)
    mode = Mode.DIFF if diff else Mode.FIX
    results = run_paths(files, settings, mode)
    unsafe = settings.unsafe_fixes
    fmt = settings.output_format
    if diff:
        if fmt == "json":
            stdout.file.write(render_json(results) + "\n")
            changed = sum(1 for r in results if r.changed)
        else:
            changed = render_diff(stdout, results)
            render_summary(stderr, results, fixing=True, unsafe_fixes=unsafe, dry_run=True)
        raise typer.Exit(EXIT_FINDINGS if changed else EXIT_CLEAN)
    _emit(results, fmt, fixing=True, unsafe_fixes=unsafe)
    summary = summarize(results)
    raise typer.Exit(EXIT_FINDINGS if summary.findings or summary.errors else EXIT_CLEAN)


@app.command("rules")
def list_rules(
    output_format: FormatOpt = None,
) -> None:
    """List every rule: code, name, fix safety, on by default."""
    rules = all_rules()
    if output_format == "json":
        import json

        stdout.file.write(json.dumps([{
            "code": r.code, "name": r.name, "fix": r.safety.value,
            "default": r.default_enabled, "message": r.message,
        } for r in rules], indent=2) + "\n")
        raise typer.Exit(EXIT_CLEAN)
    if output_format not in (None, "text"):
        raise fail(f"--format: 'rules' supports text and json, got {output_format!r}")
    table = Table(box=None, pad_edge=False)
    for column in ("code", "name", "fix", "default"):
        table.add_column(column, no_wrap=True)
    table.add_column("what it finds", overflow="fold")
    for rule in rules:
        fix_label = {Safety.SAFE: "safe", Safety.UNSAFE: "unsafe", Safety.NONE: "-"}[rule.safety]
        table.add_row(rule.code, rule.name, fix_label, "yes" if rule.default_enabled else "no",
                      escape(rule.message))
    stdout.print(table)


@app.command()
def explain(
    code: Annotated[str, typer.Argument(help="A rule code, e.g. TFC001.")],
) -> None:
    """Print one rule's documentation: what it finds, why, examples, fix safety."""
    from rich.markdown import Markdown

    try:
        rule = rule_by_code(code.strip().upper())
    except UnknownRuleCode:
        raise fail(f"unknown rule code '{code}' (see `torchfix-codemods rules`)") from None
    header = f"# {rule.code} {rule.name}\n\nFix: **{rule.safety.value}**"
    if not rule.default_enabled:
        header += " · off by default"
    if rule.min_torch:
        header += f" · fix needs torch >= {'.'.join(map(str, rule.min_torch))}"
    stdout.print(Markdown(header + "\n\n" + rule.documentation()))


@app.command()
def verify(
    paths: Annotated[list[str], typer.Argument(help="Fixture files or directories with "
                                               "executable fixtures (defining run(device)).")],
    jobs: JobsOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds each run of a "
                                           "fixture may take.")] = 120.0,
) -> None:
    """Execute before/after fixtures and compare their results (needs torch)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise fail("verify needs torch: pip install 'torchfix-codemods[verify]'")
    from torchfix_codemods.verify import run_verify

    raise typer.Exit(run_verify(paths, jobs=jobs, timeout=timeout))


def main() -> None:
    app()
