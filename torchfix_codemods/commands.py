"""What ``check`` does once its arguments are parsed, without typer.

Two front ends call into this module (from speed): the typer application in
:mod:`torchfix_codemods.cli`, and :mod:`torchfix_codemods.entry`, which runs
``check`` without importing typer (typer imports pydantic and builds a validator
per parameter: ~200 ms on every start, ten times the interpreter's). So nothing
here imports typer, rich, LibCST or a rule at module level; the reports and the
engine are imported where they are used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import DiscoveryError, discover
from torchfix_codemods.findings import FileResult
from torchfix_codemods.report.console import console
from torchfix_codemods.report.formats import EMITTERS
from torchfix_codemods.report.summary import summarize
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import ConfigError, Overrides

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
                  extend_exclude: list[str] | None, config: str | list[str] | None,
                  unsafe_fixes: bool | None = None,
                  force_exclude: bool | None = None) -> Overrides:
    """The flags as :class:`Overrides`; ``config`` is a file, or (a list of) files and
    ``KEY = VALUE`` settings. :class:`UsageError` for a bad one."""
    from torchfix_codemods.settings import parse_config_value

    configs = [config] if isinstance(config, str) else list(config or [])
    files = [item for item in configs if not inline_setting(item)]
    if len(files) > 1:
        raise UsageError(f"--config: one configuration file at most, got {', '.join(files)}")
    try:
        values = tuple(parse_config_value(item) for item in configs if inline_setting(item))
    except ConfigError as error:
        raise UsageError(str(error)) from None
    return Overrides(
        select=split_codes(select), ignore=split_codes(ignore),
        extend_select=split_codes(extend_select),
        exclude=tuple(exclude) if exclude else None,
        extend_exclude=tuple(extend_exclude) if extend_exclude else None,
        target_torch=target_torch, unsafe_fixes=unsafe_fixes, output_format=output_format,
        jobs=jobs, config=files[0] if files else None, force_exclude=force_exclude or None,
        values=values,
    )


def inline_setting(config: str) -> bool:
    """``--config`` given ``KEY = VALUE`` rather than a file (as ruff tells them apart)."""
    return "=" in config and not Path(config).is_file()


def prepare(paths: list[str] | None, overrides: Overrides) -> tuple[list[str], Configuration]:
    """The files to look at and their configuration; :class:`UsageError` when impossible."""
    given = paths or ["."]
    if "-" in given and len(given) > 1:
        raise UsageError("-: stdin cannot be combined with other paths")
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


def emit(results: list[FileResult], output_format: str, *, fixing: bool,
         unsafe_fixes: bool, statistics: bool = False, show_fixes: bool = False,
         quiet: bool = False, stderr: bool = False) -> None:
    """Findings in the chosen format on stdout, or stderr (rich only for text on a terminal).

    ``quiet`` drops the ``why:`` lines of the text format.
    """
    out = console(plain_when_piped=True, stderr=stderr)
    if statistics:
        from torchfix_codemods.report.statistics import render_statistics

        render_statistics(out, results, output_format)
        return
    emitter = EMITTERS.get(output_format, EMITTERS["text"])
    emitter(out, results, fixing=fixing, unsafe_fixes=unsafe_fixes, show_fixes=show_fixes,
            quiet=quiet)


@contextlib.contextmanager
def output_to(output_file: str | None) -> Iterator[None]:
    """``-o FILE``: what would go to stdout goes to ``FILE`` (plain, as when piped)."""
    if output_file is None:
        yield
        return
    try:
        handle = open(output_file, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as error:
        raise UsageError(f"--output-file: cannot write {output_file}: "
                         f"{error.strerror or error}") from None
    with handle, contextlib.redirect_stdout(handle):
        yield


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
    config: list[str] | None = None,
    no_cache: bool = False,
    statistics: bool = False,
    show_fixes: bool = False,
    exit_zero: bool = False,
    stdin_filename: str | None = None,
    add_noqa: bool = False,
    force_exclude: bool = False,
    quiet: bool = False,
    output_file: str | None = None,
    show_settings: str | None = None,
    show_files: bool = False,
) -> int:
    """``check``: report findings; the exit code (1 when there are any, 2 on bad usage).

    Its parameters are the typer command's, by name (tests/test_speed.py).
    """
    try:
        overrides = overrides_for(select, ignore, extend_select, output_format, target_torch,
                                  jobs, exclude, extend_exclude, config,
                                  force_exclude=force_exclude)
        if no_cache:
            overrides = dataclasses.replace(overrides, cache=False)
        if show_settings is not None:
            return _show_settings(show_settings, overrides)
        if paths == ["-"]:
            if add_noqa:
                raise UsageError("--add-noqa: edits files; it cannot read stdin")
            return _check_stdin(overrides, stdin_filename, statistics, show_fixes, exit_zero,
                                quiet, output_file)
        files, configuration = prepare(paths, overrides)
        if show_files:
            with output_to(output_file):
                for file in files:
                    sys.stdout.write(file + "\n")
            return EXIT_CLEAN
        problem = statistics_format_error(statistics, configuration.output_format)
        if problem is not None:
            raise UsageError(problem)
        if add_noqa:
            return _add_noqa(files, configuration)
        results = run_paths(files, configuration, Mode.CHECK)
        with output_to(output_file):
            emit(results, configuration.output_format, fixing=False,
                 unsafe_fixes=configuration.unsafe_fixes, statistics=statistics,
                 show_fixes=show_fixes, quiet=quiet)
    except UsageError as error:
        print_usage_error(str(error))
        return EXIT_USAGE
    summary = summarize(results)
    return exit_code(bool(summary.findings or summary.errors), exit_zero)


def _check_stdin(overrides: Overrides, stdin_filename: str | None, statistics: bool,
                 show_fixes: bool, exit_zero: bool, quiet: bool, output_file: str | None) -> int:
    from torchfix_codemods.stdin import read_stdin, run_stdin

    configuration = _configuration(overrides)
    problem = statistics_format_error(statistics, configuration.output_format)
    if problem is not None:
        raise UsageError(problem)
    result, _ = run_stdin(configuration, stdin_filename, read_stdin(), apply_fixes=False)
    with output_to(output_file):
        emit([result], configuration.output_format, fixing=False,
             unsafe_fixes=configuration.unsafe_fixes, statistics=statistics,
             show_fixes=show_fixes, quiet=quiet)
    summary = summarize([result])
    return exit_code(bool(summary.findings or summary.errors), exit_zero)


def _configuration(overrides: Overrides) -> Configuration:
    try:
        return Configuration(overrides)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def _add_noqa(files: list[str], configuration: Configuration) -> int:
    """``check --add-noqa``: a noqa comment on every line with a finding; 0 unless a file
    could not be processed (its error is printed)."""
    results = run_paths(files, configuration, Mode.ADD_NOQA)
    added = sum(result.noqa_added for result in results)
    changed = sum(1 for result in results if result.noqa_added)
    out = console(plain_when_piped=True)
    for result in results:
        if result.error:
            out.print(f"{result.path}: error: {result.error}", markup=False, soft_wrap=True)
    out.print(f"Added {added} noqa comment(s) in {changed} file(s).", markup=False,
              soft_wrap=True)
    return EXIT_FINDINGS if any(result.error for result in results) else EXIT_CLEAN


def _show_settings(path: str, overrides: Overrides) -> int:
    """``--show-settings FILE``: the settings in force for ``FILE``, as TOML-like lines."""
    configuration = _configuration(overrides)
    try:
        settings = configuration.settings_for(path)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    from torchfix_codemods.discovery import is_excluded

    options = settings.options_for(path)
    target = ".".join(map(str, settings.target_torch)) if settings.target_torch else None
    shown = {
        "file": path,
        "configuration": settings.config_path or "(none: defaults)",
        "root": settings.root,
        "excluded": is_excluded(path, configuration),
        "select": list(options.codes),
        "per-file-ignored": sorted(settings.ignored_for(path)),
        "target-torch": target,
        "unsafe-fixes": settings.unsafe_fixes,
        "exclude": list(settings.excludes),
        "force-exclude": settings.force_exclude,
        "respect-gitignore": settings.respect_gitignore,
        "inference-decorators": list(settings.inference_decorators),
        "format": settings.output_format,
        "jobs": settings.jobs,
        "cache": settings.cache,
    }
    import json

    for key, value in shown.items():
        sys.stdout.write(f"{key} = {json.dumps(value)}\n")
    return EXIT_CLEAN
