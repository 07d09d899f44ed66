"""Which files a run looks at: walk the given paths, honour .gitignore and excludes.

Explicitly named files are always checked (as in ruff). Directories are walked
without following symlinked directories, and a symlinked file is read only when
it points back inside the tree being walked, so a link never drags a run out
into the rest of the disk. A directory's entries are judged by the settings in
force for that directory (its nearest configuration): a subproject's
``exclude`` and ``respect-gitignore`` hold inside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.settings import Settings

SOURCE_SUFFIXES = (".py", ".ipynb")


class DiscoveryError(Exception):
    """A path that does not exist or cannot be read; the message is one line."""


@dataclass
class _Ignores:
    """The .gitignore files in force for one directory, outermost first."""

    specs: list[tuple[Path, pathspec.PathSpec]] = field(default_factory=list)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            try:
                relative = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if is_dir:
                relative += "/"
            if spec.match_file(relative):
                return True
        return False

    def extended(self, directory: Path) -> _Ignores:
        spec = _read_gitignore(directory)
        if spec is None:
            return self
        return _Ignores([*self.specs, (directory, spec)])


def _read_gitignore(directory: Path) -> pathspec.PathSpec | None:
    candidate = directory / ".gitignore"
    if not candidate.is_file():
        return None
    try:
        lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _repository_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _inherited_ignores(directory: Path) -> _Ignores:
    """.gitignore files of the enclosing repository above ``directory``."""
    root = _repository_root(directory)
    ignores = _Ignores()
    if root is None:
        return ignores
    chain = [directory, *directory.parents]
    for ancestor in reversed(chain[1:]):
        if ancestor == root or root in ancestor.parents:
            ignores = ignores.extended(ancestor)
    return ignores


def discover(paths: list[str], configuration: Configuration) -> list[str]:
    """Files to check, in a stable order, for the paths given on the command line.

    Every file's settings are resolved on the way, so a broken configuration file
    is reported here, before any file is processed.
    """
    found: dict[str, None] = {}
    for raw in paths or ["."]:
        path = Path(raw)
        if not path.exists():
            raise DiscoveryError(f"{raw}: no such file or directory")
        if path.is_file():
            configuration.settings_for(raw)
            found[os.path.normpath(raw)] = None
            continue
        if not path.is_dir():
            raise DiscoveryError(f"{raw}: not a regular file or directory")
        for file in _walk(path, configuration):
            found[file] = None
    return list(found)


class _Rules:
    """The exclusion rules of one Settings, compiled once."""

    def __init__(self, settings: Settings) -> None:
        self.exclude = pathspec.GitIgnoreSpec.from_lines(settings.excludes)
        self.root = Path(settings.root).resolve()
        self.gitignore = settings.respect_gitignore

    def excluded(self, path: Path, is_dir: bool) -> bool:
        name = path.name + ("/" if is_dir else "")
        if self.exclude.match_file(name):
            return True
        try:
            relative = path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return False
        return self.exclude.match_file(relative + ("/" if is_dir else ""))


def _walk(top: Path, configuration: Configuration) -> list[str]:
    real_top = top.resolve()
    files: list[str] = []
    compiled: dict[int, _Rules] = {}

    def rules_for(directory: str) -> _Rules:
        settings = configuration.settings_for(directory)
        found = compiled.get(id(settings))
        if found is None:
            found = compiled[id(settings)] = _Rules(settings)
        return found

    start_ignores = _inherited_ignores(real_top)
    ignores_by_dir: dict[str, _Ignores] = {}
    for directory, dirnames, filenames in os.walk(top, followlinks=False):
        current = Path(directory)
        rules = rules_for(directory)
        parent_ignores = ignores_by_dir.get(os.path.dirname(directory), start_ignores)
        ignores = parent_ignores.extended(current.resolve())
        ignores_by_dir[directory] = ignores
        kept = []
        for name in sorted(dirnames):
            child = current / name
            if child.is_symlink():
                continue
            if rules.excluded(child, True):
                continue
            if rules.gitignore and ignores.ignored(child.resolve(), True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            child = current / name
            if child.is_symlink():
                target = child.resolve()
                if not target.is_file() or real_top not in target.parents:
                    continue
            if rules.excluded(child, False):
                continue
            if rules.gitignore and ignores.ignored(child.resolve(), False):
                continue
            files.append(os.path.normpath(str(child)))
    return files
