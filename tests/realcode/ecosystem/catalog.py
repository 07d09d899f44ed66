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
HELDOUT_SETS = {"heldout": HERE.parent / "heldout", "heldout2": HERE.parent / "heldout2",
                "heldout3": HERE.parent / "heldout3", "heldout4": HERE.parent / "heldout4",
                "heldout5": HERE.parent / "heldout5", "heldout6": HERE.parent / "heldout6"}
"""Held-out sets by name, each a folder of ``repos-*.toml``, ``labels-*.toml`` and
``review-*.toml``, one of each per labeller, so labellers working in parallel never edit the
same file. See heldout/README.md. ``heldout`` .. ``heldout6`` were test sets in turn; each
one's review drove fixes, so all are now looked at (tuning material): the next test set must
be labelled fresh, before any tool run, in a new folder."""
HELDOUT = HELDOUT_SETS["heldout"]
SETS = ("dev", *HELDOUT_SETS)
"""``dev``: the repositories rules are tuned on (this folder). The others: labelled before
any tool run; a set stays held out until its results drove a change."""

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


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_CELL = re.compile(r"\bcell (\d+)\b")


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


@dataclass(frozen=True)
class HunkReview:
    """One judged hunk of ``fix --unsafe-fixes --diff`` on a held-out repository."""

    repo: str
    path: str
    line: int
    """Old-side start line of the hunk header (``@@ -LINE,...``): the pinned source's numbering."""
    codes: tuple[str, ...]
    verdict: str
    """``correct`` / ``noise`` / ``wrong`` (see ``REVIEWS``)."""
    reason: str
    text_hash: str
    """``hunk_hash`` of the hunk's removed and added lines: a different edit is a new hunk."""
    cell: int | None = None

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.text_hash)

    def where(self) -> str:
        cell = f" cell {self.cell}" if self.cell is not None else ""
        return f"{self.repo} {self.path}:{self.line}{cell}"


@dataclass(frozen=True)
class Hunk:
    """One hunk as ``fix --diff`` prints it (see ``parse_diff``)."""

    path: str
    line: int
    codes: tuple[str, ...]
    cell: int | None
    text_hash: str
    text: str

    @property
    def key_tail(self) -> tuple[str, int, str]:
        return (self.path, self.line, self.text_hash)


def hunk_hash(lines: Iterable[str]) -> str:
    """First 8 hex of the SHA-1 of a hunk's ``-``/``+`` lines (trailing whitespace removed).

    Context lines and the header are left out, so the hash names the edit itself.
    """
    changed = [line.rstrip() for line in lines if line[:1] in "-+"]
    return hashlib.sha1("\n".join(changed).encode("utf-8")).hexdigest()[:8]


def parse_diff(text: str) -> list[Hunk]:
    """The hunks of ``fix --diff`` output: path, old-side start line, rule codes, cell, hash.

    Each hunk's body is read by the line counts of its header, so a removed line that
    itself starts with ``--`` is never taken for the next file's header.
    """
    hunks: list[Hunk] = []
    path: str | None = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("--- ") and index < len(lines) and lines[index].startswith("+++ "):
            name = line[4:].split("\t")[0]
            path = name[2:] if name.startswith("a/") else name
            path = path[2:] if path.startswith("./") else path
            index += 1
            continue
        match = _HUNK_HEADER.match(line)
        if not match or path is None:
            continue
        old = int(match.group(2)) if match.group(2) is not None else 1
        new = int(match.group(4)) if match.group(4) is not None else 1
        body: list[str] = []
        while index < len(lines) and (old > 0 or new > 0 or lines[index].startswith("\\")):
            item = lines[index]
            if item.startswith("\\"):
                index += 1
                continue
            if item[:1] == "-":
                old -= 1
            elif item[:1] == "+":
                new -= 1
            elif item[:1] == " " or item == "":
                old, new = old - 1, new - 1
            else:
                break
            body.append(item)
            index += 1
        tail = match.group(5)
        cell = _CELL.search(tail)
        hunks.append(Hunk(path, int(match.group(1)), tuple(dict.fromkeys(re.findall(r"TFC\d{3}", tail))),
                          int(cell.group(1)) if cell else None, hunk_hash(body), "\n".join(body)))
    return hunks


def load_reviews(repos: dict[str, Repo], codes: Iterable[str], paths: Iterable[Path]) -> list[HunkReview]:
    """Every judged hunk in ``paths`` (``review-*.toml``), validated; keys unique across files."""
    known_codes = frozenset(codes)
    reviews: list[HunkReview] = []
    seen: dict[tuple[str, str, int, str], str] = {}
    for path in paths:
        document = _read_toml(path)
        for index, entry in enumerate(document.get("hunk", []), start=1):
            where = f"{path.name}: hunk #{index}"
            _only_keys(entry, {"repo", "path", "cell", "line", "codes", "verdict", "reason", "hash"},
                       where)
            repo = _string(entry, "repo", where)
            if repo not in repos:
                raise CatalogError(f"{where}: repo {repo!r} is not in the set's repos files")
            hunk_path = _string(entry, "path", where)
            if not repos[repo].covers(hunk_path):
                raise CatalogError(f"{where}: {hunk_path} is outside {repo}'s checked paths")
            line = entry.get("line")
            if not isinstance(line, int) or isinstance(line, bool) or line < 0:
                raise CatalogError(f"{where}: line must be the hunk header's old-side start line")
            cell = entry.get("cell")
            if cell is not None and (not isinstance(cell, int) or isinstance(cell, bool) or cell < 1
                                     or not hunk_path.endswith(".ipynb")):
                raise CatalogError(f"{where}: cell must be a positive integer, for .ipynb paths only")
            hunk_codes = entry.get("codes")
            if (not isinstance(hunk_codes, list) or not hunk_codes
                    or not all(isinstance(c, str) for c in hunk_codes)):
                raise CatalogError(f"{where}: codes must be a non-empty list of rule codes")
            unknown = [c for c in hunk_codes if c not in known_codes]
            if unknown:
                raise CatalogError(f"{where}: unknown rule code {unknown[0]!r}")
            verdict = _string(entry, "verdict", where)
            if verdict not in REVIEWS:
                raise CatalogError(f"{where}: verdict {verdict!r} is not one of {', '.join(REVIEWS)}")
            reason = _string(entry, "reason", where)
            text_hash = _string(entry, "hash", where)
            if not _HASH.match(text_hash):
                raise CatalogError(f"{where}: hash must be 8 lowercase hex digits")
            review = HunkReview(repo, hunk_path, line, tuple(hunk_codes), verdict, reason, text_hash,
                                cell)
            if review.key in seen:
                raise CatalogError(f"{where}: same repo, path, line and hash as {seen[review.key]}")
            seen[review.key] = where
            reviews.append(review)
    return reviews


@dataclass(frozen=True)
class LabelSet:
    """One set's repositories, labels and (held-out set only) hunk reviews."""

    name: str
    repos: dict[str, Repo]
    labels: list[Label]
    reviews: list[HunkReview]


def set_files(name: str, folder: Path = HELDOUT) -> tuple[list[Path], list[Path], list[Path]]:
    """``(repos files, labels files, review files)`` of set ``name``."""
    if name == "dev":
        return [REPOS_FILE], [LABELS_FILE], []
    if name in HELDOUT_SETS:
        return (sorted(folder.glob("repos-*.toml")), sorted(folder.glob("labels-*.toml")),
                sorted(folder.glob("review-*.toml")))
    raise CatalogError(f"unknown set {name!r} (one of {', '.join(SETS)})")


def load_repos_files(paths: Iterable[Path]) -> dict[str, Repo]:
    """The repositories of several ``repos-*.toml`` files; one listed in two files is an error."""
    repos: dict[str, Repo] = {}
    origin: dict[str, str] = {}
    for path in paths:
        for name, repo in load_repos(path).items():
            if name in repos:
                raise CatalogError(f"{path.name}: {name} is already listed in {origin[name]}")
            repos[name] = repo
            origin[name] = path.name
    if not repos:
        raise CatalogError("no repos files with [[repo]] entries")
    return repos


def load_set(name: str, codes: Iterable[str], folder: Path | None = None,
             dev_repos_file: Path = REPOS_FILE) -> LabelSet:
    """Set ``name``, validated; a held-out set may share no repository with the dev set or with
    another held-out set (``folder`` replaces the set's own folder, for tests)."""
    codes = list(codes)
    folder = folder if folder is not None else HELDOUT_SETS.get(name, HELDOUT)
    repo_files, label_files, review_files = set_files(name, folder)
    if name == "dev":
        repo_files = [dev_repos_file]
    repos = load_repos_files(repo_files)
    if name in HELDOUT_SETS:
        shared = sorted(set(repos) & set(load_repos(dev_repos_file)))
        if shared:
            raise CatalogError(f"{shared[0]} is in both the dev set ({dev_repos_file.name}) and the "
                               f"held-out set: a test repository must never be tuned on")
        for other, other_folder in HELDOUT_SETS.items():
            other_files = sorted(other_folder.glob("repos-*.toml"))
            if other == name or other_folder == folder or not other_files:
                continue
            shared = sorted(set(repos) & set(load_repos_files(other_files)))
            if shared:
                raise CatalogError(f"{shared[0]} is in both held-out sets {name} and {other}: "
                                   f"a repository is held out once")
    labels: list[Label] = []
    seen: dict[tuple[str, str, int | None, int, str], str] = {}
    for path in label_files:
        for label in load_labels(repos, codes, path):
            if label.key in seen:
                raise CatalogError(f"{path.name}: {label.where()} {label.code} is also labelled in "
                                   f"{seen[label.key]}")
            seen[label.key] = path.name
            labels.append(label)
    return LabelSet(name, repos, labels, load_reviews(repos, codes, review_files))


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
