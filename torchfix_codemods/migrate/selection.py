"""The configuration a migration runs under: the repository's own, narrowed to some codes.

Each file keeps the settings in force for it (its nearest configuration, the
flags, its per-file ignores); a commit for one rule runs the same settings with
only that rule left on, so it fixes exactly what a full ``fix`` run would fix
with that rule. Nothing is cached: the worktree is temporary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.settings import Overrides, Settings


class MigrationConfiguration(Configuration):
    """``Configuration`` for a worktree, with the enabled rules narrowed to ``codes`` (all if None)."""

    def __init__(self, overrides: Overrides, cwd: str,
                 codes: Iterable[str] | None = None) -> None:
        self.codes = None if codes is None else frozenset(codes)
        super().__init__(overrides, cwd)

    def narrowed(self, codes: Iterable[str]) -> MigrationConfiguration:
        return MigrationConfiguration(self.overrides, self.cwd, codes)

    def settings_for(self, path: str) -> Settings:
        settings = super().settings_for(path)
        enabled = settings.enabled if self.codes is None else settings.enabled & self.codes
        return dataclasses.replace(settings, enabled=enabled, cache=False)
