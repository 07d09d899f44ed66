"""Which settings apply to which file: the nearest configuration, as ruff does it.

Each file is governed by the nearest ``pyproject.toml`` at or above it that
has a ``[tool.torchfix-codemods]`` table (a ``pyproject.toml`` without one is
passed over); patterns in it are relative to its directory. So
``check a/ b/`` and ``check b/ a/`` give the same findings, and a subproject's
settings hold for its files wherever the run starts. Command-line flags apply
on top of every file's settings. ``--config FILE`` puts one file in force for
every path; a ``--config`` file without our table is an error, not a silent
fallback to the defaults.

Settings of the run as a whole (output format, worker count) come from the
configuration in force for the current directory, or from ``--config``.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchfix_codemods.settings import (
    SECTION,
    ConfigError,
    Overrides,
    Settings,
    build_settings,
    table_of,
)


class Configuration:
    """The settings for every file of a run; resolved lazily, each config file read once.

    Building it raises :class:`ConfigError` for a bad ``--config`` or a bad file governing
    the current directory; files elsewhere are read when a path under them is first asked.
    """

    def __init__(self, overrides: Overrides, cwd: str | None = None) -> None:
        self.overrides = overrides
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._fixed: Settings | None = None
        self._by_config: dict[Path | None, Settings] = {}
        self._config_of: dict[Path, Path | None] = {}
        self._config_of_text: dict[str, Path | None] = {}
        self._has_table: dict[Path, bool] = {}
        if overrides.config is not None:
            path = Path(self.cwd, overrides.config)
            if not path.is_file():
                raise ConfigError(f"--config: no such file: {overrides.config}")
            if table_of(path) is None:
                raise ConfigError(f"--config: {overrides.config} has no [tool.{SECTION}] table")
            self._fixed = build_settings(path, overrides, self.cwd)
        self.run = self.settings_for(self.cwd)
        """The settings in force for the current directory: the run-wide options come from it."""

    # ---------------------------------------------------------------- run-wide
    @property
    def output_format(self) -> str:
        return self.run.output_format

    @property
    def jobs(self) -> int | None:
        return self.run.jobs

    @property
    def unsafe_fixes(self) -> bool:
        """Whether the run was asked for unsafe fixes (for the summary's hint)."""
        return self.run.unsafe_fixes

    # ---------------------------------------------------------------- per file
    def settings_for(self, path: str) -> Settings:
        """The settings in force for a file or directory (relative paths: to ``cwd``)."""
        if self._fixed is not None:
            return self._fixed
        config = self.config_for(path)
        settings = self._by_config.get(config)
        if settings is None:
            settings = self._by_config[config] = build_settings(config, self.overrides, self.cwd)
        return settings

    def config_for(self, path: str) -> Path | None:
        """The nearest pyproject.toml with our table at or above ``path``, or None."""
        if self._fixed is not None:
            return Path(self._fixed.config_path) if self._fixed.config_path else None
        full = os.path.join(self.cwd, path)
        if not os.path.islink(full) and not os.path.isdir(full):
            # A file that is no link: its directory (as spelled) decides, resolved once for
            # all its files rather than once per file (a warm run asks for every file).
            directory = os.path.dirname(full)
            known = self._config_of_text.get(directory, ...)
            if known is ...:
                known = self._config_of_text[directory] = self._config_of_directory(
                    Path(directory).resolve())
            return known  # type: ignore[return-value]
        start = Path(full).resolve()
        if not start.is_dir():
            start = start.parent
        return self._config_of_directory(start)

    def _config_of_directory(self, directory: Path) -> Path | None:
        known = self._config_of.get(directory, ...)
        if known is not ...:
            return known  # type: ignore[return-value]
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and self._with_table(candidate):
            found: Path | None = candidate
        elif directory.parent == directory:
            found = None
        else:
            found = self._config_of_directory(directory.parent)
        self._config_of[directory] = found
        return found

    def _with_table(self, candidate: Path) -> bool:
        known = self._has_table.get(candidate)
        if known is None:
            known = self._has_table[candidate] = table_of(candidate) is not None
        return known

