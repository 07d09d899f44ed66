"""The repository's own import sorter and formatter, run on the lines a commit changed.

A fix writes an import where the engine's placement puts it and lets a call grow
past the line length; a project that configures isort, ruff or black would then
get a PR its own linter rejects. For each configured tool that is installed,
the changed files are piped through it (``--stdin-filename``, so it reads the
repository's own configuration):

* a file the tool leaves as it is on the base commit is clean by the project's
  standard: the tool's output on the fixed file then differs from the fix only
  where the fix made it differ, so it is taken whole;
* a file that is not clean on the base is left to its owners, except for the
  lines the fix changed, which a formatter that takes line ranges (ruff format
  ``--range``, black ``--line-ranges``) reformats alone.

A file the tool's configuration excludes is left alone (``--force-exclude``,
``--filter-files``). Nothing is installed or guessed: a tool that is configured
but not on PATH is named in the PR body as not run. The result must still
compile, else the fix's own text is kept.
"""

from __future__ import annotations

import configparser
import difflib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_HOOK = re.compile(r"^\s*-?\s*id:\s*['\"]?(ruff|ruff-format|ruff-check|black|isort)['\"]?\s*$",
                   re.MULTILINE)
TIMEOUT = 60
_END_COLUMN = 1_000_000


@dataclass(frozen=True)
class Tool:
    """One command of the repository's style, as run on one file through stdin."""

    name: str
    """As the PR body names it: ``isort``, ``ruff check --select I``, ``ruff format``..."""
    program: str
    args: tuple[str, ...]
    """Arguments before the file name; ``{path}`` is the file's path."""
    ranges: Callable[[list[tuple[int, int]]], list[tuple[str, ...]]] | None = None
    """Argument sets that limit it to line ranges (one run each), when it can."""
    whole: bool = True
    """False: only ever on the changed lines (ruff's formatter where the project lints with
    ruff but does not format with it)."""
    wanted: Callable[[str], bool] | None = None
    """Whether the project's own configuration asks for what the tool does on this file
    (None: always): ``ruff check --select I`` only where its ruff selects the import rules."""


@dataclass
class Style:
    """The tools a repository configures; what ran where, for the PR body."""

    tools: list[Tool] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Configured, not installed: not run."""
    ran: dict[str, set[str]] = field(default_factory=dict)
    """Tool name -> files it changed (wholly or on the changed lines)."""
    skipped: dict[str, set[str]] = field(default_factory=dict)
    """Tool name -> files left as the fix wrote them (not clean on the base, no ranges)."""
    checked: dict[str, set[str]] = field(default_factory=dict)
    """Tool name -> files it ran over (wholly or on the changed lines), changed or not."""

    def apply(self, path: str, relative: str, original: str, fixed: str) -> str:
        """``fixed`` passed through every tool, as far as each may touch it."""
        text = fixed
        for tool in self.tools:
            if tool.wanted is not None and not tool.wanted(path):
                continue  # not part of this project's standard for this file
            clean = tool.whole and _run(tool, path, original) == original
            if clean:
                result = _run(tool, path, text)
            else:
                result = _ranged(tool, path, original, text)
            if result is None or not _compiles(result):
                if not clean:
                    self.skipped.setdefault(tool.name, set()).add(relative)
                continue
            self.checked.setdefault(tool.name, set()).add(relative)
            if result != text:
                self.ran.setdefault(tool.name, set()).add(relative)
                text = result
        return text


def _ruff_ranges(spans: list[tuple[int, int]]) -> list[tuple[str, ...]]:
    # ``line:column-line:column``; the end column is past any line's end (measured: a bare
    # ``6-6`` is an empty range, ``6:5`` runs from column 5 to the end of the file).
    return [(f"--range={first}:1-{last}:{_END_COLUMN}",) for first, last in spans]


def _black_ranges(spans: list[tuple[int, int]]) -> list[tuple[str, ...]]:
    return [tuple(f"--line-ranges={first}-{last}" for first, last in spans)] if spans else []


def find(program: str) -> str | None:
    """On PATH, or beside this interpreter (a virtual environment not activated)."""
    found = shutil.which(program)
    if found is not None:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), program)
    return beside if os.access(beside, os.X_OK) else None


def configured(root: str) -> set[str]:
    """``isort``, ``ruff``, ``ruff-format``, ``black``: what the repository configures."""
    found: set[str] = set()
    pyproject = _toml(os.path.join(root, "pyproject.toml"))
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    for name in ("isort", "black", "ruff"):
        if name in tool:
            found.add(name)
    ruff = tool.get("ruff") if isinstance(tool.get("ruff"), dict) else None
    for name in ("ruff.toml", ".ruff.toml"):
        if os.path.isfile(os.path.join(root, name)):
            found.add("ruff")
            ruff = _toml(os.path.join(root, name))
    if isinstance(ruff, dict) and "format" in ruff:
        found.add("ruff-format")
    if os.path.isfile(os.path.join(root, ".isort.cfg")):
        found.add("isort")
    setup = configparser.ConfigParser()
    try:
        setup.read(os.path.join(root, "setup.cfg"), encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        pass
    if setup.has_section("isort") or setup.has_section("tool:isort"):
        found.add("isort")
    try:
        with open(os.path.join(root, ".pre-commit-config.yaml"), encoding="utf-8") as handle:
            hooks = set(_HOOK.findall(handle.read()))
    except (OSError, UnicodeDecodeError):
        hooks = set()
    found |= {"ruff" if hook == "ruff-check" else hook for hook in hooks}
    return found


def _toml(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def for_repository(root: str) -> Style:
    """The tools to run for ``root``'s configuration, in the order a pre-commit setup runs
    them: sort imports first, then format."""
    wanted = configured(root)
    style = Style()
    ruff = find("ruff")
    candidates: list[tuple[str, str, Tool | None]] = []
    if "isort" in wanted:
        isort = find("isort")
        candidates.append(("isort", "isort", isort and Tool(
            "isort", isort, ("--quiet", "--filter-files", "--filename", "{path}", "-"))))
    if "ruff" in wanted or "ruff-format" in wanted:
        rules = _RuffRules(ruff) if ruff else None
        # Imports are sorted where the project's ruff selects the isort rules (I001); a
        # `[tool.ruff.lint.isort]` table alone configures rules nobody turned on.
        candidates.append(("ruff", "ruff check --select I", ruff and rules and Tool(
            "ruff check --select I", ruff,
            ("check", "--fix-only", "--select", "I", "--quiet", "--force-exclude",
             "--stdin-filename", "{path}", "-"), wanted=rules.selects("I001"))))
        # A project that formats with ruff gets ruff's formatter; one that only lints with it
        # gets its line length kept on the changed lines (``--range``) where it selects E501.
        whole = "ruff-format" in wanted
        candidates.append(("ruff", "ruff format", ruff and rules and Tool(
            "ruff format" if whole else "ruff format --range", ruff,
            ("format", "--quiet", "--force-exclude", "--stdin-filename", "{path}", "-"),
            _ruff_ranges, whole, None if whole else rules.selects("E501"))))
    if "black" in wanted:
        black = find("black")
        candidates.append(("black", "black", black and Tool(
            "black", black, ("--quiet", "--force-exclude", "--stdin-filename", "{path}", "-"),
            _black_ranges)))
    for _, name, tool in candidates:
        if tool is None:
            style.missing.append(name)
        else:
            style.tools.append(tool)
    return style


class _RuffRules:
    """The rules the project's ruff enables for a file (``ruff check --show-settings``, which
    resolves the file's nearest configuration), asked once per directory."""

    _ENABLED = re.compile(r"^linter\.rules\.enabled = \[\n(.*?)^\]", re.MULTILINE | re.DOTALL)

    def __init__(self, program: str) -> None:
        self.program = program
        self._by_directory: dict[str, frozenset[str]] = {}

    def enabled(self, path: str) -> frozenset[str]:
        directory = os.path.dirname(path)
        if directory not in self._by_directory:
            self._by_directory[directory] = self._ask(path)
        return self._by_directory[directory]

    def _ask(self, path: str) -> frozenset[str]:
        try:
            done = subprocess.run([self.program, "check", "--show-settings", path],
                                  capture_output=True, text=True, timeout=TIMEOUT,
                                  cwd=os.path.dirname(path) or None, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return frozenset()
        block = self._ENABLED.search(done.stdout)
        return frozenset(re.findall(r"\(([A-Z]+[0-9]+)\)", block.group(1))) if block else frozenset()

    def selects(self, code: str) -> Callable[[str], bool]:
        return lambda path: code in self.enabled(path)


def _run(tool: Tool, path: str, text: str, extra: tuple[str, ...] = ()) -> str | None:
    args = [a.replace("{path}", path) for a in tool.args]
    # Options go before the trailing ``-`` (stdin).
    command = [tool.program, *args[:-1], *extra, args[-1]]
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True,
                              timeout=TIMEOUT, cwd=os.path.dirname(path) or None, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1) or not done.stdout and text:
        return None
    return done.stdout


def _ranged(tool: Tool, path: str, original: str, fixed: str) -> str | None:
    """``fixed`` with only the lines the fix changed passed through ``tool``."""
    if tool.ranges is None:
        return None
    spans = changed_lines(original, fixed)
    text = fixed
    # Last span first: formatting one span does not move the lines of those above it.
    for extra in reversed(tool.ranges(spans)):
        result = _run(tool, path, text, extra)
        if result is None:
            return None
        text = result
    return text


def changed_lines(original: str, fixed: str) -> list[tuple[int, int]]:
    """1-based inclusive line spans of ``fixed`` that differ from ``original``."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(),
                                      autojunk=False)
    return [(j1 + 1, j2) for tag, _, _, j1, j2 in matcher.get_opcodes()
            if tag in ("replace", "insert") and j2 > j1]


def _compiles(text: str) -> bool:
    try:
        compile(text, "<style>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
