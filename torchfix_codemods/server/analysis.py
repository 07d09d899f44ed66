"""An editor's documents analysed as ``check`` would analyse the files on disk.

Settings are resolved for the document's path (its nearest configuration), and a
document excluded by the configuration gets no diagnostics. When an active rule
reads cross-file facts, the project index of the workspace is built once (from
disk) and rebuilt when a file is saved. An editor applies one document's edit at a
time, so fixes that must edit two files together (a checkpoint's save and load, a
loader and its training loop) are never offered here: those findings are shown,
and ``fix`` on the command line rewrites both sides.
"""

from __future__ import annotations

import dataclasses
import os

from torchfix_codemods.analysis.project import NO_PROJECT, ProjectFacts
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.findings import Finding
from torchfix_codemods.settings import Overrides
from torchfix_codemods.single import declared_encoding, noqa_text, run_text


class Analysis:
    """What the server knows of one workspace: its configuration and project index."""

    def __init__(self, root: str | None) -> None:
        self.root = os.path.abspath(root or os.getcwd())
        self._configuration: Configuration | None = None
        self._project: object = None
        self._project_built = False

    def configuration(self) -> Configuration:
        """Raises :class:`~torchfix_codemods.settings.ConfigError` for a bad configuration."""
        if self._configuration is None:
            self._configuration = Configuration(Overrides(), cwd=self.root)
        return self._configuration

    def saved(self, path: str) -> None:
        """A file was saved: the index (and, for a pyproject.toml, the settings) are stale."""
        self._project = None
        self._project_built = False
        if os.path.basename(path) == "pyproject.toml":
            self._configuration = None

    def excluded(self, path: str) -> bool:
        from torchfix_codemods.discovery import is_excluded

        return is_excluded(path, self.configuration())

    def _facts(self, path: str) -> ProjectFacts:
        from torchfix_codemods.catalog import reads_project

        settings = self.configuration().settings_for(path)
        if not reads_project(settings.options_for(path).codes):
            return NO_PROJECT
        if not self._project_built:
            self._project = self._build_project()
            self._project_built = True
        if self._project is None:
            return NO_PROJECT
        return self._project.view(path)  # type: ignore[attr-defined]

    def _build_project(self) -> object:
        from torchfix_codemods.discovery import DiscoveryError, discover
        from torchfix_codemods.indexing import build_project, index_needed

        configuration = self.configuration()
        try:
            files = discover([self.root], configuration)
        except DiscoveryError:
            return None
        work = [(path, configuration.settings_for(path)) for path in files]
        if not index_needed(work):
            return None
        index = build_project(work, configuration.run, jobs=1)
        # Only this document's edit can be applied: no fix that needs a second file.
        return dataclasses.replace(index, pairable={}, shardable={})

    def findings(self, path: str, text: str) -> list[Finding]:
        """The document's findings under the settings in force for ``path``."""
        if self.excluded(path):
            return []
        options = self.configuration().settings_for(path).options_for(path)
        done = run_text(path, text.encode(declared_encoding(text), "surrogatepass"), options,
                        project=self._facts(path))
        return done.result.findings

    def fixed(self, path: str, text: str, *, only: tuple[int, int, str] | None = None,
              unsafe: bool = False, cell: int | None = None) -> str | None:
        """The text with the safe fixes applied (with ``only``: that finding's fix, of
        either tier when ``unsafe``); None when nothing changes."""
        options = self.configuration().settings_for(path).options_for(path)
        options = dataclasses.replace(options, unsafe_fixes=unsafe)
        encoding = declared_encoding(text)
        done = run_text(path, text.encode(encoding, "surrogatepass"), options, apply_fixes=True,
                        project=self._facts(path), only=only, cell=cell)
        if done.new_bytes is None:
            return None
        return done.new_bytes.decode(encoding, "surrogatepass")

    def with_noqa(self, path: str, text: str, *, only: tuple[int, int, str] | None = None,
                  cell: int | None = None) -> str | None:
        options = self.configuration().settings_for(path).options_for(path)
        encoding = declared_encoding(text)
        done = noqa_text(path, text.encode(encoding, "surrogatepass"), options,
                         project=self._facts(path), only=only, cell=cell)
        if done.new_bytes is None:
            return None
        return done.new_bytes.decode(encoding, "surrogatepass")
