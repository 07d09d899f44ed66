"""A cache of ``check`` results keyed by file content, the options that reach the engine, the
project facts the file's rules read, and the tool's own code.

Re-running ``check`` over an unchanged repository should cost a read and a hash
per file, and nothing else: this module imports neither LibCST nor a rule.

Layout (from speed: one index instead of a file per source file):
``.torchfix_cache/<version>/results-<options digest>.json``, one index per tool
version, cache root and :class:`~torchfix_codemods.options.FileOptions`, mapping
each file's absolute path to the key of its entry and its findings. One file
read and at most one written per index and run. The key covers the options'
fingerprint (every field), the project index's fingerprint for the file when its
rules read cross-file facts (so a change in ``models.py`` invalidates
``train.py``'s entry), and the digest of the file's bytes, which the runner
computes once per file and shares with the project index's summary cache. The
index records a fingerprint of the tool's source (every ``.py`` and ``.toml``
of the package), so a development checkout never serves results of older rules.

Only ``check`` reads and writes it: ``fix`` always recomputes before writing.

The cache does not grow without bound (:func:`prune`): every configuration, rule
selection and tool version ever used leaves an index, so after each write the
indexes (of every version) that no run has used for :data:`MAX_AGE_DAYS` are
removed, then the least recently used ones until the cache fits
:data:`MAX_BYTES`. A file's modification time is its last use: writing sets it,
and a read refreshes it once a day.
Everything is best effort: an unreadable, corrupt or concurrently rewritten
index only means misses, never a wrong answer, because each entry's key covers
everything its result depends on.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from torchfix_codemods import __version__
from torchfix_codemods.findings import Finding, FixInfo, Safety
from torchfix_codemods.options import FileOptions
from torchfix_codemods.settings import Settings

CACHE_DIRECTORY = ".torchfix_cache"
MAX_AGE_DAYS = 30
"""An index no run has read or written for this long is removed."""
MAX_BYTES = 64 * 1024 * 1024
"""Above this total, the least recently used indexes go first (this run's are kept)."""
_DAY = 24 * 60 * 60
_STALE_TEMPORARY = 60 * 60
"""A temporary file older than this was left by a killed run; younger ones may be in use."""
_FORMAT = 3
"""Bumped when the index layout changes; an index of another format is ignored."""
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


@cache
def tool_fingerprint() -> str:
    """A digest of the package's own source: a changed rule invalidates every entry.

    Reads the package's files with ``os.scandir`` (a few milliseconds); only called
    when a run has files to look up.
    """
    digest = hashlib.sha256(f"{__version__}:{_FORMAT}".encode())
    for relative in sorted(_source_files(_PACKAGE, "")):
        digest.update(relative.encode())
        with open(os.path.join(_PACKAGE, relative), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def _source_files(directory: str, prefix: str) -> list[str]:
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    found += _source_files(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith((".py", ".toml")):
                found.append(prefix + entry.name)
    return found


def content_digest(data: bytes) -> str:
    """The digest of a file's bytes: the one hash of each file a run computes."""
    return hashlib.sha256(data).hexdigest()


def entry_key(digest: str, options: FileOptions, project: str = "") -> str:
    """The key an entry must carry to be used: the file's content ``digest``, its options and
    ``project``, the project index's fingerprint for the file when its rules read the index."""
    key = hashlib.sha256(options.fingerprint().encode())
    key.update(b"\0" + project.encode() + b"\0" + digest.encode())
    return key.hexdigest()


def cache_key(path: str, data: bytes, options: FileOptions, project: str = "") -> str:
    """:func:`entry_key` of a file's bytes (the path is the entry's name, not part of its key)."""
    return entry_key(content_digest(data), options, project)


def cache_root(settings: Settings) -> Path:
    """Beside the configuration in force for the file (or the current directory)."""
    return Path(settings.root) / CACHE_DIRECTORY / __version__


class Store:
    """One run's view of the result indexes: look-ups during the run, one write each at the end.

    A run whose files fall under several configurations (or per-file ignores) uses one
    index per cache root and options, each read lazily once.
    """

    def __init__(self) -> None:
        self._indexes: dict[tuple[Path, str], _Index] = {}

    def _index(self, settings: Settings, options: FileOptions) -> _Index:
        root = cache_root(settings)
        fingerprint = options.fingerprint()
        index = self._indexes.get((root, fingerprint))
        if index is None:
            name = hashlib.sha256(fingerprint.encode()).hexdigest()[:24]
            index = self._indexes[(root, fingerprint)] = _Index(root, root / f"results-{name}.json")
        return index

    def get(self, path: str, settings: Settings, options: FileOptions,
            key: str) -> list[Finding] | None:
        """The cached findings for ``path`` (reported under that path), if ``key`` matches."""
        entry = self._index(settings, options).entries().get(os.path.abspath(path))
        if entry is None or entry[0] != key:
            return None
        try:
            return [_finding(path, row) for row in entry[1]]
        except (TypeError, ValueError, IndexError):
            return None

    def put(self, path: str, settings: Settings, options: FileOptions, key: str,
            findings: list[Finding]) -> None:
        self._index(settings, options).updates[os.path.abspath(path)] = [
            key, [_row(f) for f in findings]]

    def save(self) -> None:
        for index in self._indexes.values():
            index.save()


class _Index:
    def __init__(self, root: Path, path: Path) -> None:
        self.root = root
        self.path = path
        self._entries: dict[str, list[Any]] | None = None
        self.updates: dict[str, list[Any]] = {}

    def entries(self) -> dict[str, list[Any]]:
        if self._entries is None:
            self._entries = _read_index(self.path)
            if self._entries:
                mark_used(self.path)
        return self._entries

    def save(self) -> None:
        """Merge this run's entries into the index on disk and write it atomically.

        Entries of files that no longer exist are dropped; entries other runs
        wrote meanwhile are kept. Best effort: a read-only tree means no cache.
        """
        if not self.updates:
            return
        from torchfix_codemods.writing import replace_file

        entries = {**_read_index(self.path), **self.updates}
        entries = {path: entry for path, entry in entries.items()
                   if path in self.updates or os.path.exists(path)}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            ignore_for_git(self.root.parent)
            payload = json.dumps({"tool": tool_fingerprint(), "files": entries},
                                 separators=(",", ":"))
            replace_file(str(self.path), payload.encode("utf-8"), durable=False)
        except OSError:
            return
        self.updates = {}
        prune(self.root.parent, keep={self.path})


def mark_used(path: Path) -> None:
    """Refresh ``path``'s modification time (its last use, for :func:`prune`) once a day."""
    import time

    try:
        if time.time() - path.stat().st_mtime > _DAY:
            os.utime(path)
    except OSError:
        pass


def prune(directory: Path, keep: set[Path], *, now: float | None = None,
          max_age_days: float = MAX_AGE_DAYS, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Remove from the cache ``directory`` (``.torchfix_cache``, every version under it) the
    indexes unused for ``max_age_days``, then the least recently used until the rest fits
    ``max_bytes``, never one in ``keep``; and temporary files a killed run left. Returns what
    was removed. Best effort: a file another run removes or rewrites meanwhile is skipped."""
    import time

    now = time.time() if now is None else now
    files: list[tuple[float, int, Path]] = []
    removed: list[Path] = []
    try:
        versions = [entry for entry in os.scandir(directory) if entry.is_dir()]
    except OSError:
        return removed
    for version in versions:
        try:
            entries = list(os.scandir(version.path))
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                status = entry.stat()
            except OSError:
                continue
            if entry.name.endswith(".tmp"):
                if now - status.st_mtime > _STALE_TEMPORARY and _remove(path):
                    removed.append(path)
            elif entry.name.endswith(".json") and path not in keep:
                files.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in files)
    for mtime, size, path in sorted(files):  # oldest first
        if now - mtime <= max_age_days * _DAY and total <= max_bytes:
            break
        if _remove(path):
            removed.append(path)
            total -= size
    for version in versions:
        try:
            os.rmdir(version.path)  # only succeeds once empty
        except OSError:
            pass
    return removed


def _remove(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    return True


def ignore_for_git(directory: Path) -> None:
    """A ``.gitignore`` that hides the cache directory from version control."""
    marker = directory / ".gitignore"
    if not marker.exists():
        marker.write_text("# Created by torchfix-codemods\n*\n", encoding="utf-8")


def _read_index(path: Path) -> dict[str, list[Any]]:
    """The entries of the index at ``path`` made by this very tool source, else nothing."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("tool") != tool_fingerprint():
        return {}
    files = document.get("files")
    return files if isinstance(files, dict) else {}


def _row(finding: Finding) -> list[Any]:
    """A finding without its path (an entry is keyed by the file), as compact JSON."""
    fix = finding.fix
    return [finding.line, finding.column, finding.end_line, finding.end_column, finding.code,
            finding.name, finding.message,
            None if fix is None else [fix.safety.value, fix.description, fix.applied,
                                      fix.withheld],
            finding.reason, finding.internal_error, finding.cell, finding.note]


def _finding(path: str, row: list[Any]) -> Finding:
    line, column, end_line, end_column, code, name, message, fix, reason, internal, cell, note = row
    info = None if fix is None else FixInfo(Safety(fix[0]), fix[1], fix[2], fix[3])
    return Finding(path, line, column, end_line, end_column, code, name, message, info, reason,
                   internal, cell, note)
