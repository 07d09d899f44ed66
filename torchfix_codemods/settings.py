"""One ``[tool.torchfix-codemods]`` table plus command-line flags -> one frozen Settings.

Flags win over the file. Every problem (an unknown key, an unknown rule code,
a bad value, unreadable TOML) becomes one :class:`ConfigError` whose message
names the file and the key, so the CLI can print one line and exit 2. Which
table applies to which file is :mod:`torchfix_codemods.configuration`'s job.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchfix_codemods.budget import DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_NESTING_DEPTH
from torchfix_codemods.catalog import UnknownRuleCode, covered, resolve_selection
from torchfix_codemods.options import FileOptions, RuleOptions
from torchfix_codemods.report.formats import EMITTERS

if TYPE_CHECKING:
    import pathspec

SECTION = "torchfix-codemods"
OUTPUT_FORMATS = tuple(EMITTERS)
"""The ``format`` values, as the help and error messages list them (from the emitters' table)."""
DEFAULT_EXCLUDES = (
    # Never worth walking for source files: version control, virtualenvs, builds, caches.
    ".git", ".hg", ".svn", ".venv", "venv", "build", "dist", "__pycache__", ".tox", ".nox",
    "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs",
    # Jupyter's autosave copies of notebooks (ruff skips them too): editing them is noise.
    ".ipynb_checkpoints",
)
DEFAULT_FILE_TIMEOUT = 20.0
"""``file-timeout``: generous for real code (the largest real files of the real-code check
take a few seconds), short enough that a generated file cannot stall a CI job."""
_VERSION = re.compile(r"^(\d+)\.(\d+)$")


class ConfigError(Exception):
    """Bad configuration; the message is the single line the user sees."""


@dataclass(frozen=True)
class Settings:
    """The settings in force for the files under one configuration file (or none)."""

    enabled: frozenset[str]
    unsafe_fixes: bool = False
    target_torch: tuple[int, int] | None = None
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    root: str = "."
    output_format: str = "text"
    jobs: int | None = None
    inference_decorators: tuple[str, ...] = ()
    cache: bool = True
    config_path: str | None = None
    force_exclude: bool = False
    """Apply ``exclude`` to files named explicitly too (pre-commit names every staged file)."""
    file_timeout: float = DEFAULT_FILE_TIMEOUT
    """Seconds one file's analysis may take before it is reported and left untouched."""
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    """Bytes above which a file is skipped (one finding) before anything parses it."""
    max_nesting_depth: int = DEFAULT_MAX_NESTING_DEPTH
    """Syntax-tree depth above which a file is skipped (one finding) before LibCST parses it."""

    def options_for(self, path: str) -> FileOptions:
        """What the engine needs for ``path``: its rules, the fix policy, the rules' options.

        One instance per settings and per-file ignores, so its fingerprint is computed once.
        """
        return _options(self, self.ignored_for(path))

    def ignored_for(self, path: str) -> frozenset[str]:
        """Codes that ``per-file-ignores`` switches off for ``path``."""
        if not self.per_file_ignores:
            return frozenset()
        relative = _relative(path, self.root)
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if _spec(pattern).match_file(relative):
                ignored |= codes
        return frozenset(ignored)

    @property
    def excludes(self) -> tuple[str, ...]:
        return (self.exclude if self.exclude else DEFAULT_EXCLUDES) + self.extend_exclude


@cache
def _options(settings: Settings, ignored: frozenset[str]) -> FileOptions:
    return FileOptions(
        codes=tuple(settings.enabled - ignored),
        unsafe_fixes=settings.unsafe_fixes,
        target_torch=settings.target_torch,
        max_nesting_depth=settings.max_nesting_depth,
        max_file_size=settings.max_file_size,
        rules=RuleOptions(
            inference_decorators=settings.inference_decorators),
    )


@cache
def _spec(pattern: str) -> pathspec.PathSpec:
    import pathspec  # only per-file ignores need it, and it costs ~20 ms to import

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _relative(path: str, root: str) -> str:
    try:
        return os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    except ValueError:  # different drives on Windows
        return path.replace(os.sep, "/")


@dataclass(frozen=True)
class Overrides:
    """Command-line values; None means "not given, use the file or the default"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] | None = None
    target_torch: str | None = None
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    jobs: int | None = None
    config: str | None = None
    cache: bool | None = None
    force_exclude: bool | None = None
    values: tuple[tuple[str, Any], ...] = ()
    """``--config KEY=VALUE`` settings, laid over every configuration file's table."""


_KEYS = {
    "select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
    "target-torch", "unsafe-fixes", "format", "jobs", "respect-gitignore",
    "inference-decorators", "cache", "force-exclude", "file-timeout", "max-file-size",
    "max-nesting-depth",
}


def parse_config_value(text: str) -> tuple[str, Any]:
    """``--config 'target-torch = "2.4"'`` -> ``("target-torch", "2.4")``: one TOML key and
    value, as in ``[tool.torchfix-codemods]``; :class:`ConfigError` naming the option else."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"--config: {text!r} is neither a file nor KEY = VALUE in TOML "
                          f"({error})") from None
    if len(parsed) != 1:
        raise ConfigError(f"--config: {text!r} must set exactly one key")
    [(key, value)] = parsed.items()
    if key not in _KEYS:
        raise ConfigError(f"--config: unknown key '{key}' (known: {', '.join(sorted(_KEYS))})")
    return key, value


def read_toml(path: Path) -> dict[str, Any]:
    # Imported here: a run in a tree without pyproject.toml files need not pay for it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except UnicodeDecodeError as error:
        bad = error.object[error.start:error.start + 1]
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text ({bad!r} at byte offset "
                          f"{error.start})") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None


def _string_list(where: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings, got {value!r}")
    return tuple(value)


def _codes(where: str, key: str, values: Iterable[str]) -> tuple[str, ...]:
    result = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                covered(part)
            except UnknownRuleCode:
                raise ConfigError(f"{where}: unknown rule code or prefix '{part}' in '{key}'") \
                    from None
            result.append(part.upper())
    return tuple(result)


def parse_target_torch(where: str, value: Any) -> tuple[int, int]:
    if isinstance(value, float):
        # TOML reads `target-torch = 2.10` as the number 2.1: the version is lost before we see it.
        raise ConfigError(
            f"{where}: 'target-torch' must be a quoted string such as \"2.10\", got the TOML "
            f"number {value!r} (a number drops trailing zeros: 2.10 reads as 2.1)"
        )
    match = _VERSION.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(
            f"{where}: 'target-torch' must look like '2.6' (major.minor), got {value!r}"
        )
    return int(match.group(1)), int(match.group(2))


def table_of(config_path: Path) -> dict[str, Any] | None:
    """Our ``[tool.torchfix-codemods]`` table of a pyproject.toml, None when it has none."""
    data = read_toml(config_path)
    tool = data.get("tool", {})
    if not isinstance(tool, dict) or SECTION not in tool:
        return None
    table = tool[SECTION]
    if not isinstance(table, dict):
        raise ConfigError(f"{config_path}: [tool.{SECTION}] must be a table")
    return table


def build_settings(config_path: Path | None, overrides: Overrides, cwd: str) -> Settings:
    """The settings for files governed by ``config_path`` (None: no file, defaults), flags on top.

    Patterns in the file (``per-file-ignores``, ``exclude``) are relative to the file's
    directory; without a file, to ``cwd``.
    """
    table: dict[str, Any] = {}
    where = "command line"
    root = cwd
    if config_path is not None:
        table = table_of(config_path) or {}
        where = f"{config_path} [tool.{SECTION}]"
        root = str(config_path.parent)
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key '{unknown[0]}' (known: {', '.join(sorted(_KEYS))})"
            )
    if overrides.values:
        if config_path is not None:
            # Checked alone first, so that a bad value is blamed on --config, not the file.
            build_settings(None, Overrides(values=overrides.values), cwd)
        else:
            where = "--config"
        table = {**table, **dict(overrides.values)}

    def file_list(key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        return _string_list(where, key, table[key])

    if overrides.select == ():
        raise ConfigError("--select: no rule code given (expected codes or prefixes such as "
                          "TFC001,TFC1, or ALL)")
    select = overrides.select if overrides.select is not None else file_list("select")
    if select is not None:
        select = _codes(where if overrides.select is None else "--select", "select", select)
    ignore_file = _codes(where, "ignore", file_list("ignore") or ())
    ignore = ignore_file + _codes("--ignore", "ignore", overrides.ignore or ())
    extend = _codes(where, "extend-select", file_list("extend-select") or ())
    extend += _codes("--extend-select", "extend-select", overrides.extend_select or ())

    per_file: list[tuple[str, frozenset[str]]] = []
    raw_per_file = table.get("per-file-ignores", {})
    if not isinstance(raw_per_file, dict):
        raise ConfigError(f"{where}: 'per-file-ignores' must be a table of pattern = [codes]")
    for pattern, codes in raw_per_file.items():
        names = _codes(where, f"per-file-ignores.{pattern}",
                       _string_list(where, f"per-file-ignores.{pattern}", codes))
        expanded = frozenset(e.code for name in names for e in covered(name))
        per_file.append((pattern, expanded))

    target = overrides.target_torch if overrides.target_torch is not None else table.get(
        "target-torch")
    target_torch = None
    if target is not None:
        target_torch = parse_target_torch(
            "--target-torch" if overrides.target_torch is not None else where, target)

    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError(f"{where}: 'unsafe-fixes' must be true or false, got {unsafe!r}")
    if overrides.unsafe_fixes is not None:
        unsafe = overrides.unsafe_fixes

    output_format = overrides.output_format or table.get("format", "text")
    if output_format not in OUTPUT_FORMATS:
        source = "--format" if overrides.output_format else where
        raise ConfigError(
            f"{source}: 'format' must be one of {', '.join(OUTPUT_FORMATS)}, got {output_format!r}"
        )

    jobs = overrides.jobs if overrides.jobs is not None else table.get("jobs")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ConfigError(f"{where}: 'jobs' must be a positive integer, got {jobs!r}")

    timeout = table.get("file-timeout", DEFAULT_FILE_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"{where}: 'file-timeout' must be a positive number of seconds, "
                          f"got {timeout!r}")

    limits = {key: _positive_int(where, table, key, default) for key, default in (
        ("max-file-size", DEFAULT_MAX_FILE_SIZE), ("max-nesting-depth", DEFAULT_MAX_NESTING_DEPTH))}

    use_cache = table.get("cache", True)
    if not isinstance(use_cache, bool):
        raise ConfigError(f"{where}: 'cache' must be true or false, got {use_cache!r}")
    if overrides.cache is not None:
        use_cache = overrides.cache

    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{where}: 'respect-gitignore' must be true or false, got {respect!r}")

    force_exclude = table.get("force-exclude", False)
    if not isinstance(force_exclude, bool):
        raise ConfigError(f"{where}: 'force-exclude' must be true or false, got {force_exclude!r}")
    if overrides.force_exclude:
        force_exclude = True

    exclude = overrides.exclude if overrides.exclude is not None else file_list("exclude")
    extend_exclude = (file_list("extend-exclude") or ()) + (overrides.extend_exclude or ())
    decorators = file_list("inference-decorators") or ()

    try:
        enabled = resolve_selection(select, extend, ignore)
    except UnknownRuleCode as error:  # pragma: no cover - validated above
        raise ConfigError(f"{where}: unknown rule code '{error}'") from None

    return Settings(
        enabled=enabled,
        unsafe_fixes=unsafe,
        target_torch=target_torch,
        per_file_ignores=tuple(per_file),
        exclude=tuple(exclude or ()),
        extend_exclude=tuple(extend_exclude),
        respect_gitignore=respect,
        root=root,
        output_format=output_format,
        jobs=jobs,
        inference_decorators=decorators,
        cache=use_cache,
        config_path=str(config_path) if config_path else None,
        force_exclude=force_exclude,
        file_timeout=float(timeout),
        max_file_size=limits["max-file-size"],
        max_nesting_depth=limits["max-nesting-depth"],
    )


def _positive_int(where: str, table: dict[str, Any], key: str, default: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: '{key}' must be a positive integer, got {value!r}")
    return value
