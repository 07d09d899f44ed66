"""Which files a run looks at: walk the given paths, honour .gitignore and excludes.

Explicitly named files are always checked (as in ruff), unless ``force-exclude`` is on. Directories are walked
without following symlinked directories, and a symlinked file is read only when
it points back inside the tree being walked, so a link never drags a run out
into the rest of the disk. A directory's entries are judged by the settings in
force for that directory (its nearest configuration): a subproject's
``exclude`` and ``respect-gitignore`` hold inside it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.settings import Settings

if TYPE_CHECKING:
    import pathspec

SOURCE_SUFFIXES = (".py", ".ipynb")
_GLOB = frozenset("*?[]!\\/")


class _Excludes:
    """``exclude`` patterns as gitignore reads them, without pathspec for plain names.

    From speed: a pattern with no slash and no glob character (every default: ``.git``,
    ``build``, ``site-packages``...) matches any path with a component of that
    name, which a set answers; pathspec (~20 ms to import) is loaded only for
    the other patterns (all of them when one negates, as order then matters).
    """

    def __init__(self, patterns: tuple[str, ...]) -> None:
        lines = [line.strip() for line in patterns]
        negates = any(line.startswith("!") for line in lines)
        self.names = frozenset(line for line in lines if line and not negates
                               and not line.startswith("#") and not _GLOB & set(line))
        rest = [line for line in lines if line and line not in self.names]
        self.spec: pathspec.PathSpec | None = None
        if rest:
            import pathspec

            self.spec = pathspec.GitIgnoreSpec.from_lines(rest)

    def match_file(self, relative: str) -> bool:
        if self.names and not self.names.isdisjoint(relative.rstrip("/").split("/")):
            return True
        return self.spec is not None and self.spec.match_file(relative)




class DiscoveryError(Exception):
    """A path that does not exist or cannot be read; the message is one line."""


@dataclass
class _Ignores:
    """The .gitignore files in force for one directory, outermost first."""

    specs: list[tuple[str, pathspec.PathSpec]] = field(default_factory=list)
    """(real path of the directory holding the .gitignore, its patterns)."""

    def ignored(self, real: str, is_dir: bool) -> bool:
        """Whether the file or directory at real path ``real`` is ignored."""
        for base, spec in self.specs:
            relative = _inside(real, base)
            if relative is None:
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
        return _Ignores([*self.specs, (str(directory), spec)])


def _inside(real: str, base: str) -> str | None:
    """``real`` relative to ``base`` in posix form, None when it is not below it."""
    if real == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not real.startswith(prefix):
        return None
    relative = real[len(prefix):]
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


def _read_gitignore(directory: Path) -> pathspec.PathSpec | None:
    candidate = directory / ".gitignore"
    if not candidate.is_file():
        return None
    try:
        lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

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


def discover(paths: list[str], configuration: Configuration,
             notes: list[str] | None = None) -> list[str]:
    """Files to check, in a stable order, for the paths given on the command line.

    Every file's settings are resolved on the way, so a broken configuration file
    is reported here, before any file is processed. A FIFO, device or socket is
    skipped, even when named, with a line in ``notes``: opening a FIFO named
    ``a.py`` waits forever for a writer, and a device never ends.
    """
    found: dict[str, None] = {}
    for raw in paths or ["."]:
        path = Path(raw)
        try:
            mode = path.stat().st_mode  # stat, never open: a FIFO would block
        except OSError:
            raise DiscoveryError(f"{raw}: no such file or directory") from None
        if stat.S_ISREG(mode):
            settings = configuration.settings_for(raw)
            if settings.force_exclude and is_excluded(raw, configuration):
                continue  # --force-exclude: named explicitly, excluded all the same
            found[os.path.normpath(raw)] = None
            continue
        if not stat.S_ISDIR(mode):
            _note(notes, raw, mode)
            continue
        for file in _walk(path, configuration, notes):
            found[file] = None
    return list(found)


def special_kind(mode: int) -> str:
    """What a file that is neither regular nor a directory is, in a word."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _note(notes: list[str] | None, path: str, mode: int) -> None:
    if notes is not None:
        notes.append(f"{os.path.normpath(path)}: {special_kind(mode)}, not a regular file: "
                     "skipped")


class _Rules:
    """The exclusion rules of one Settings, compiled once."""

    def __init__(self, settings: Settings) -> None:
        self.exclude = _Excludes(settings.excludes)
        self.root = str(Path(settings.root).resolve())
        self.gitignore = settings.respect_gitignore

    def excluded(self, name: str, real: str, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        if self.exclude.match_file(name + suffix):
            return True
        relative = _inside(real, self.root)
        return relative is not None and self.exclude.match_file(relative + suffix)


def _walk(top: Path, configuration: Configuration, notes: list[str] | None = None) -> list[str]:
    """Source files under ``top`` in walking order: a directory's files, then its subdirectories.

    From speed: paths are kept as strings and real paths are derived by joining
    names: a directory reached without crossing a symlink has its parent's real
    path plus its name, so only symlinked files are resolved (resolving every path
    cost two thirds of a warm ``check``).
    """
    real_top = str(top.resolve())
    files: list[str] = []
    compiled: dict[int, _Rules] = {}

    def rules_for(directory: str) -> _Rules:
        settings = configuration.settings_for(directory)
        found = compiled.get(id(settings))
        if found is None:
            found = compiled[id(settings)] = _Rules(settings)
        return found

    def visit(shown: str, real: str, ignores: _Ignores) -> None:
        try:
            with os.scandir(shown) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            return  # unreadable: skipped, as os.walk does
        rules = rules_for(shown)
        ignores = ignores.extended(Path(real))
        directories = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                child_real = os.path.join(real, name)
                if is_link or rules.excluded(name, child_real, True):
                    continue
                if rules.gitignore and ignores.ignored(child_real, True):
                    continue
                directories.append((os.path.join(shown, name), child_real))
                continue
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            if is_link:
                target = Path(entry.path).resolve()
                if not target.is_file() or real_top not in map(str, target.parents):
                    continue
                child_real = str(target)
            else:
                child_real = os.path.join(real, name)
            if rules.excluded(name, child_real, False):
                continue
            if rules.gitignore and ignores.ignored(child_real, False):
                continue
            if not is_link:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if not stat.S_ISREG(mode):
                    _note(notes, entry.path, mode)
                    continue
            files.append(os.path.normpath(os.path.join(shown, name)))
        for shown_child, real_child in directories:
            visit(shown_child, real_child, ignores)

    visit(str(top), real_top, _inherited_ignores(Path(real_top)))
    return files


def is_excluded(path: str, configuration: Configuration) -> bool:
    """Whether ``exclude``/``extend-exclude`` (of the settings in force for ``path``) cover a
    file named explicitly: the file itself or a directory above it, up to the settings'
    root. For ``--force-exclude`` (pre-commit names every staged file), ``--stdin-filename``
    and the editor, which all name files a directory walk would have skipped."""
    settings = configuration.settings_for(path)
    rules = _Rules(settings)
    real = os.path.realpath(os.path.join(configuration.cwd, path))
    if rules.excluded(os.path.basename(real), real, False):
        return True
    relative = _inside(real, rules.root)
    if relative is None:
        return False
    parts = relative.split("/")[:-1]
    current = rules.root
    for part in parts:
        current = os.path.join(current, part)
        if rules.excluded(part, current, True):
            return True
    return False
