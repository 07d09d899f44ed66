"""The ecosystem check's two data files: which repositories, and the hand-written labels.

``repos.toml`` pins each public repository to a commit and names the subpaths
to check; ``labels.toml`` holds one entry per labelled occurrence. Only names,
commits, line numbers and a short hash of each labelled line are kept here,
never the repositories' code: ``score.py`` materialises the code from local git
mirrors at scoring time.

This module only reads and validates the two files, so the label test
(``tests/test_ecosystem_labels.py``) can check them without any mirror.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HERE = Path(__file__).parent
REPOS_FILE = HERE / "repos.toml"
LABELS_FILE = HERE / "labels.toml"

VERDICTS = ("must-fix", "report-only", "must-not-touch")
"""``must-fix``: a real mistake the tool should report and, where a right fix
exists, fix. ``report-only``: a real problem, but every automatic rewrite the
tool could make is wrong here: found counts, a fix (any tier) fails the run.
``must-not-touch``: looks like the mistake and is not: a finding is noise, a
fix (any tier) fails the run."""

REVIEWS = ("correct", "noise", "wrong")
"""Judgement of one hunk of ``fix --unsafe-fixes --diff`` (issue 16's review)."""

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HASH = re.compile(r"^[0-9a-f]{8}$")
_CODE = re.compile(r"^TFC\d{3}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class CatalogError(ValueError):
    """``repos.toml`` or ``labels.toml`` is malformed; the message names the entry."""


@dataclass(frozen=True)
class Repo:
    name: str
    """``owner/name`` as GitHub spells it."""
    commit: str
    paths: tuple[str, ...]
    """Subpaths (files or folders, relative to the repository root) that are checked."""
    kind: str
    """What sort of code it is (training scripts, framework, notebooks...), for the report."""

    @property
    def slug(self) -> str:
        """``owner+name``: the mirror's and the cache's folder name."""
        return self.name.replace("/", "+")

    def covers(self, path: str) -> bool:
        return any(path == sub or sub == "." or path.startswith(sub.rstrip("/") + "/")
                   for sub in self.paths)


@dataclass(frozen=True)
class Label:
    repo: str
    path: str
    line: int
    """1-based; inside ``cell`` for a notebook."""
    code: str
    verdict: str
    reason: str
    text_hash: str
    """``line_hash`` of the labelled line, so a label that drifted off its line is caught."""
    cell: int | None = None
    """Notebook cell, 1-based counting every cell (as Jupyter numbers them); ``None`` for ``.py``."""
    review: str | None = None
    """Set for occurrences judged hunk by hunk in a ``--diff`` review."""

    @property
    def key(self) -> tuple[str, str, int | None, int, str]:
        return (self.repo, self.path, self.cell, self.line, self.code)

    def where(self) -> str:
        cell = f":cell {self.cell}" if self.cell is not None else ""
        return f"{self.repo} {self.path}{cell}:{self.line}"


def line_hash(text: str) -> str:
    """First 8 hex digits of the SHA-1 of the line with surrounding whitespace removed."""
    return hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:8]


def load_repos(path: Path = REPOS_FILE) -> dict[str, Repo]:
    document = _read_toml(path)
    repos: dict[str, Repo] = {}
    for index, entry in enumerate(document.get("repo", []), start=1):
        where = f"{path.name}: repo #{index}"
        _only_keys(entry, {"name", "commit", "paths", "kind"}, where)
        name = _string(entry, "name", where)
        if not _REPO.match(name):
            raise CatalogError(f"{where}: name {name!r} is not owner/name")
        commit = _string(entry, "commit", where)
        if not _COMMIT.match(commit):
            raise CatalogError(f"{where} ({name}): commit must be 40 lowercase hex digits")
        paths = entry.get("paths", ["."])
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            raise CatalogError(f"{where} ({name}): paths must be a non-empty list of strings")
        if any(p.startswith("/") or ".." in Path(p).parts for p in paths):
            raise CatalogError(f"{where} ({name}): paths must stay inside the repository")
        if name in repos:
            raise CatalogError(f"{where}: {name} is listed twice")
        repos[name] = Repo(name, commit, tuple(paths), _string(entry, "kind", where))
    if not repos:
        raise CatalogError(f"{path.name}: no [[repo]] entries")
    return repos


def load_labels(repos: dict[str, Repo], codes: Iterable[str], path: Path = LABELS_FILE) -> list[Label]:
    """Every label, validated against the repositories and the tool's rule codes."""
    known_codes = frozenset(codes)
    document = _read_toml(path)
    labels: list[Label] = []
    seen: dict[tuple[str, str, int | None, int, str], int] = {}
    for index, entry in enumerate(document.get("label", []), start=1):
        where = f"{path.name}: label #{index}"
        _only_keys(entry, {"repo", "path", "cell", "line", "code", "verdict", "reason", "hash",
                           "review"}, where)
        repo = _string(entry, "repo", where)
        if repo not in repos:
            raise CatalogError(f"{where}: repo {repo!r} is not in {REPOS_FILE.name}")
        label_path = _string(entry, "path", where)
        if not repos[repo].covers(label_path):
            raise CatalogError(f"{where}: {label_path} is outside {repo}'s checked paths")
        line = entry.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise CatalogError(f"{where}: line must be a positive integer")
        cell = entry.get("cell")
        if label_path.endswith(".ipynb"):
            if not isinstance(cell, int) or isinstance(cell, bool) or cell < 1:
                raise CatalogError(f"{where}: a notebook label needs a positive integer cell")
        elif cell is not None:
            raise CatalogError(f"{where}: cell is only for .ipynb paths")
        code = _string(entry, "code", where)
        if not _CODE.match(code) or code not in known_codes:
            raise CatalogError(f"{where}: unknown rule code {code!r}")
        verdict = _string(entry, "verdict", where)
        if verdict not in VERDICTS:
            raise CatalogError(f"{where}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
        reason = _string(entry, "reason", where)
        text_hash = _string(entry, "hash", where)
        if not _HASH.match(text_hash):
            raise CatalogError(f"{where}: hash must be 8 lowercase hex digits")
        review = entry.get("review")
        if review is not None and review not in REVIEWS:
            raise CatalogError(f"{where}: review {review!r} is not one of {', '.join(REVIEWS)}")
        label = Label(repo, label_path, line, code, verdict, reason, text_hash, cell, review)
        if label.key in seen:
            raise CatalogError(f"{where}: same repo, path, cell, line and code as label "
                               f"#{seen[label.key]}")
        seen[label.key] = index
        labels.append(label)
    return labels


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise CatalogError(f"{path.name}: not valid TOML: {error}") from None


def _only_keys(entry: object, allowed: set[str], where: str) -> None:
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: not a table")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise CatalogError(f"{where}: unknown key {unknown[0]!r}")


def _string(entry: dict, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where}: {key} must be a non-empty string")
    return value
