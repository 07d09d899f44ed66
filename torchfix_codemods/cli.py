"""The ``torchfix-codemods`` command: flags -> Settings -> runner -> report.

Kept thin on purpose: everything a test might want to call lives in the
modules below it. Exit codes: 0 nothing found or everything fixed,
1 findings remain or the diff is not empty, 2 bad usage or configuration.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from torchfix_codemods import __version__
from torchfix_codemods.catalog import UnknownRuleCode
from torchfix_codemods.commands import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_USAGE,
    UsageError,
    check_command,
    emit,
    exit_code,
    inline_setting,
    output_to,
    overrides_for,
    prepare,
    statistics_format_error,
)
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.findings import Safety
from torchfix_codemods.migrate.model import DEFAULT_BRANCH
from torchfix_codemods.report.console import rich_console
from torchfix_codemods.report.diff import render_diff
from torchfix_codemods.report.json import render_json
from torchfix_codemods.report.statistics import render_fixes, render_statistics
from torchfix_codemods.report.summary import summarize
from torchfix_codemods.report.text import render_problems, render_summary, render_unanalysed
from torchfix_codemods.rules.registry import all_rules, rule_by_code
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import OUTPUT_FORMATS, ConfigError, Overrides

app = typer.Typer(
    name="torchfix-codemods",
    help="Find the mistakes PyTorch code keeps making, and rewrite them safely.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
stdout = rich_console()
stderr = rich_console(stderr=True)


def fail(message: str) -> typer.Exit:
    stderr.print(f"torchfix-codemods: error: {escape(message)}", soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


def _version(value: bool) -> None:
    # ``is True``: with click >= 8.2 under an older typer, an option not given reaches its
    # callback as click's truthy UNSET sentinel, and every command printed the version.
    if value is True:
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
ConfigValuesOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--config", help="A pyproject.toml to read settings for every file from, "
                 "instead of each file's nearest one; or a setting as KEY = VALUE in TOML "
                 "(e.g. 'target-torch = \"2.4\"'), laid over the files' (repeatable).",
                 show_default=False),
]
StdinFilenameOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--stdin-filename", help="With `-` as the path: the name of the file on "
                 "stdin (its settings, excludes and findings' path).", show_default=False),
]
ForceExcludeOpt = Annotated[
    bool,
    typer.Option("--force-exclude", help="Apply exclude patterns to files named on the "
                 "command line too (pre-commit names every staged file)."),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Leave out the `why:` line under each finding."),
]
OutputFileOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--output-file", "-o", help="Write the report to this file instead of "
                 "stdout.", show_default=False),
]


StatisticsOpt = Annotated[
    bool,
    typer.Option("--statistics", help="Print a count per rule code instead of every finding "
                 "(text or json)."),
]
ShowFixesOpt = Annotated[
    bool,
    typer.Option("--show-fixes", help="Say what each fix does: under each finding (check), "
                 "or every fix applied, per file and code (fix)."),
]
ExitZeroOpt = Annotated[
    bool,
    typer.Option("--exit-zero", help="Exit 0 even when findings remain or the diff is not "
                 "empty (2 still means bad usage)."),
]


def _prepare(paths: list[str] | None, overrides: Overrides) -> tuple[list[str], Configuration]:
    try:
        return prepare(paths, overrides)
    except UsageError as error:
        raise fail(str(error)) from None


def _check_statistics_format(statistics: bool, output_format: str) -> None:
    problem = statistics_format_error(statistics, output_format)
    if problem is not None:
        raise fail(problem)


def _exit(findings: bool, exit_zero: bool) -> typer.Exit:
    """1 when findings remain (or a diff is not empty), unless ``--exit-zero``."""
    return typer.Exit(exit_code(findings, exit_zero))


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
    config: ConfigValuesOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the "
                                           "result cache (.torchfix_cache).")] = False,
    statistics: StatisticsOpt = False,
    show_fixes: ShowFixesOpt = False,
    exit_zero: ExitZeroOpt = False,
    stdin_filename: StdinFilenameOpt = None,
    add_noqa: Annotated[bool, typer.Option("--add-noqa", help="Add `# noqa: CODE` to every "
                                           "line with a finding (keeping the codes already "
                                           "there) instead of reporting.")] = False,
    force_exclude: ForceExcludeOpt = False,
    quiet: QuietOpt = False,
    output_file: OutputFileOpt = None,
    show_settings: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--show-settings", help="Print the settings in force for this file and exit.",
        show_default=False)] = None,
    show_files: Annotated[bool, typer.Option("--show-files", help="Print the files that "
                                             "would be checked and exit.")] = False,
) -> None:
    """Report findings; exit 1 when there are any. Writes nothing but its cache.

    `check -` reads the source from stdin (name it with --stdin-filename).
    """
    raise typer.Exit(check_command(
        paths, select, ignore, extend_select, output_format, target_torch, jobs, exclude,
        extend_exclude, config, no_cache, statistics, show_fixes, exit_zero,
        stdin_filename=stdin_filename, add_noqa=add_noqa, force_exclude=force_exclude,
        quiet=quiet, output_file=output_file, show_settings=show_settings,
        show_files=show_files))


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
    config: ConfigValuesOpt = None,
    statistics: StatisticsOpt = False,
    show_fixes: ShowFixesOpt = False,
    exit_zero: ExitZeroOpt = False,
    stdin_filename: StdinFilenameOpt = None,
    force_exclude: ForceExcludeOpt = False,
    quiet: QuietOpt = False,
    output_file: OutputFileOpt = None,
) -> None:
    """Apply safe fixes in place (with --unsafe-fixes, also unsafe ones); report the rest.

    With --diff, print what would change (each hunk names its rule codes and their
    fix safety) and write nothing. `fix -` reads the source from stdin and writes the
    fixed source to stdout, its report to stderr (name it with --stdin-filename).
    """
    try:
        overrides = overrides_for(select, ignore, extend_select, output_format, target_torch,
                                  jobs, exclude, extend_exclude, config, unsafe_fixes or None,
                                  force_exclude=force_exclude)
    except UsageError as error:
        raise fail(str(error)) from None
    if paths == ["-"]:
        raise typer.Exit(_fix_stdin(overrides, stdin_filename, diff, statistics, exit_zero,
                                    quiet))
    files, settings = _prepare(paths, overrides)
    fmt = settings.output_format
    _check_statistics_format(statistics, fmt)
    mode = Mode.DIFF if diff else Mode.FIX
    results = run_paths(files, settings, mode)
    unsafe = settings.unsafe_fixes
    summary = summarize(results)
    if diff:
        try:
            with output_to(output_file):
                if fmt == "json" and not statistics:
                    stdout.file.write(render_json(results) + "\n")
                else:
                    render_diff(stdout, results)
        except UsageError as error:
            raise fail(str(error)) from None
        if not (fmt == "json" and not statistics):
            if show_fixes:
                render_fixes(stderr, results, dry_run=True)
            if statistics:
                render_statistics(stderr, results, fmt)
            else:
                render_unanalysed(stderr, results)
                render_problems(stderr, results)
                render_summary(stderr, results, fixing=True, unsafe_fixes=unsafe, dry_run=True)
        # The README's exit-code table: 1 while the diff is not empty or findings remain.
        raise _exit(bool(summary.changed_files or summary.findings or summary.errors), exit_zero)
    try:
        with output_to(output_file):
            emit(results, fmt, fixing=True, unsafe_fixes=unsafe, statistics=statistics,
                 show_fixes=show_fixes, quiet=quiet)
    except UsageError as error:
        raise fail(str(error)) from None
    raise _exit(bool(summary.findings or summary.errors), exit_zero)


def _fix_stdin(overrides: Overrides, stdin_filename: str | None, diff: bool, statistics: bool,
               exit_zero: bool, quiet: bool) -> int:
    """``fix -``: the fixed source (or the input) on stdout, the report on stderr."""
    from torchfix_codemods.stdin import read_stdin, run_stdin

    try:
        configuration = Configuration(overrides)
    except ConfigError as error:
        raise fail(str(error)) from None
    _check_statistics_format(statistics, configuration.output_format)
    data = read_stdin()
    result, new_bytes = run_stdin(configuration, stdin_filename, data, apply_fixes=True,
                                  diff=diff)
    summary = summarize([result])
    if diff:
        render_diff(stdout, [result])
        render_unanalysed(stderr, [result])
        render_summary(stderr, [result], fixing=True, unsafe_fixes=configuration.unsafe_fixes,
                       dry_run=True)
        return exit_code(bool(summary.changed_files or summary.findings or summary.errors),
                         exit_zero)
    sys.stdout.buffer.write(new_bytes if new_bytes is not None else data)
    sys.stdout.buffer.flush()
    emit([result], configuration.output_format, fixing=True,
         unsafe_fixes=configuration.unsafe_fixes, statistics=statistics, quiet=quiet,
         stderr=True)
    return exit_code(bool(summary.findings or summary.errors), exit_zero)


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
    rows = [(rule.code, rule.name,
             {Safety.SAFE: "safe", Safety.UNSAFE: "unsafe", Safety.NONE: "-"}[rule.safety],
             "yes" if rule.default_enabled else "no", rule.message) for rule in rules]
    if not stdout.is_terminal:
        # Piped (grep, a pager, a file): one unwrapped line per rule, never cut at 80 columns.
        header = ("code", "name", "fix", "default", "what it finds")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
        for row in [header, *rows]:
            cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
            stdout.file.write("  ".join([*cells, row[4]]) + "\n")
        raise typer.Exit(EXIT_CLEAN)
    table = Table(box=None, pad_edge=False)
    for column in ("code", "name", "fix", "default"):
        table.add_column(column, no_wrap=True)
    table.add_column("what it finds", overflow="fold")
    for code, name, fix_label, default, message in rows:
        table.add_row(code, name, fix_label, default, escape(message))
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
    text = header + "\n\n" + rule.documentation()
    if not stdout.is_terminal:
        # Piped: the Markdown itself, unwrapped, so code and reference URLs stay whole.
        stdout.file.write(text.rstrip("\n") + "\n")
        return
    stdout.print(Markdown(text))


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


@app.command()
def migrate(
    repositories: Annotated[list[str], typer.Argument(
        help="Git repositories (or directories inside one) to migrate.", show_default=False)],
    branch: Annotated[str, typer.Option("--branch", help="The branch to create (or add to) "
                                        "in each repository.")] = DEFAULT_BRANCH,
    commit_per: Annotated[str, typer.Option("--commit-per", help="One commit per rule, per "
                                            "rule family (TFC1xx) or one for all.")] = "rule",
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that "
                                               "change behaviour on purpose.")] = False,
    test_cmd: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--test-cmd", help="Shell command that runs the repository's tests; it runs on the "
        "base and after each commit, and a commit that breaks passing tests is dropped.",
        show_default=False)] = None,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1, help="Seconds one run "
                                                "of --test-cmd may take.")] = 1800.0,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="Migrate the last commit "
                                              "even when the checkout has uncommitted "
                                              "changes (they are not part of it).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Rebuild the branch from HEAD when it "
                                        "exists and does not contain HEAD.")] = False,
    push: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--push", help="Push the branch to this remote (nothing is pushed without it).",
        show_default=False)] = None,
    open_pr: Annotated[bool, typer.Option("--open-pr", help="Open the pull request with `gh` "
                                          "(needs --push), or print the command when gh is "
                                          "not installed or not logged in.")] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    extend_select: ExtendSelectOpt = None,
    output_format: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--format", help="Output format: text or json.", show_default=False)] = None,
    target_torch: TargetOpt = None,
    jobs: JobsOpt = None,
    exclude: ExcludeOpt = None,
    extend_exclude: ExtendExcludeOpt = None,
    config: ConfigValuesOpt = None,
) -> None:
    """Make a branch per repository with one commit per rule that changed something, and a PR body.

    Works in a separate git worktree: the checked-out branch and files are never
    changed. Exit 0 when every repository was migrated (findings left for a person
    are in the PR body), 1 when a commit was dropped by --test-cmd or a repository
    failed, 2 when a repository is refused (uncommitted changes, not a repository).
    """
    from torchfix_codemods.migrate.campaign import migrate_all, prepare_all
    from torchfix_codemods.migrate.model import COMMIT_PER, MigrateOptions
    from torchfix_codemods.migrate.output import render_json, render_table

    if commit_per not in COMMIT_PER:
        raise fail(f"--commit-per: must be one of {', '.join(COMMIT_PER)}, got {commit_per!r}")
    if output_format not in (None, "text", "json"):
        raise fail(f"--format: 'migrate' supports text and json, got {output_format!r}")
    if open_pr and push is None:
        raise fail("--open-pr needs --push REMOTE: the branch must be on the remote first")
    if config:
        # A file is read from the worktree's side, so by its absolute path; a KEY = VALUE
        # setting (`'file-timeout = 120'`) travels as written.
        config = [item if inline_setting(item) else str(Path(item).resolve()) for item in config]
    overrides = overrides_for(select, ignore, extend_select, None, target_torch, jobs, exclude,
                           extend_exclude, config, unsafe_fixes or None)
    options = MigrateOptions(
        overrides=overrides, branch=branch, commit_per=commit_per, test_cmd=test_cmd,
        test_timeout=test_timeout, allow_dirty=allow_dirty, force=force, push=push,
        open_pr=open_pr, reproduce=_reproduce_command(
            branch=branch, commit_per=commit_per, unsafe_fixes=unsafe_fixes, test_cmd=test_cmd,
            select=select, ignore=ignore, extend_select=extend_select,
            target_torch=target_torch, exclude=exclude, extend_exclude=extend_exclude,
            config=config))
    targets, refusals = prepare_all(repositories, options)
    if refusals:
        for refusal in refusals:
            stderr.print(f"torchfix-codemods: error: {escape(refusal)}", soft_wrap=True)
        raise typer.Exit(EXIT_USAGE)
    with _MigrateProgress([t.path for t in targets]) as progress:
        outcomes = migrate_all(targets, options, progress.update)
    if output_format == "json":
        stdout.file.write(render_json(outcomes, options) + "\n")
    else:
        render_table(stdout, outcomes, options)
    failed = any(o.error or o.dropped for o in outcomes)
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_CLEAN)


def _reproduce_command(**given: object) -> str:
    """The ``migrate`` command line without its path (the PR body adds the repository's part)."""
    import shlex

    words = ["torchfix-codemods", "migrate"]
    for name, value in given.items():
        flag = "--" + name.replace("_", "-")
        if value in (None, False, [], ()) or (name, value) in (
                ("branch", DEFAULT_BRANCH), ("commit_per", "rule")):
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


class _MigrateProgress:
    """A progress bar per repository on a terminal; nothing when stderr is piped."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.progress = None
        self.tasks: list[object] = []

    def __enter__(self) -> _MigrateProgress:
        if stderr.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn

            self.progress = Progress(TextColumn("{task.fields[repo]}"), BarColumn(),
                                     TextColumn("{task.description}"), console=stderr,
                                     transient=True)
            self.progress.start()
            self.tasks = [self.progress.add_task("waiting", total=None, repo=name)
                          for name in self.names]
        return self

    def update(self, index: int, what: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(self.tasks[index], description=escape(what),  # type: ignore[arg-type]
                                 completed=done, total=total)

    def __exit__(self, *exc_info: object) -> None:
        if self.progress is not None:
            self.progress.stop()


@app.command()
def server() -> None:
    """Run the language server on stdin/stdout (needs the `server` extra: pygls).

    Editors start it and get this tool's findings as diagnostics, each fix as a code
    action labelled with its safety tier, "fix all safe" and "add noqa". Settings come
    from each file's nearest pyproject.toml, as for `check`.
    """
    import importlib.util

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        raise fail("server needs pygls: pip install 'torchfix-codemods[server]'")
    from torchfix_codemods.server.app import serve

    serve()


def main() -> None:
    app()
