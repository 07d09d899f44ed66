"""Fixture files: where they live, what their header asks for, which ones execute.

One convention for the whole project, so the expected-output tests and the
execution harness read fixtures the same way:

* ``tests/fixtures/<CODE>/<case>.py`` is an input; ``<case>.expected.py``
  beside it is what ``fix`` must turn it into. A case without an expected file
  (traps are named ``trap_*.py``) must stay byte-identical.
* An optional header in the leading comment block,
  ``# fixture-args: --unsafe-fixes --target-torch 2.4``, holds CLI flags.
  Without ``--select`` the case selects its directory's code; safe fixes only.
* A case is *executable* when it defines a top-level ``def run(device)``.
* A *project* is a folder ``tests/fixtures/<CODE>/project_<name>/`` (a trap:
  ``trap_project_<name>/``) of files fixed together in one run, the way the CLI
  fixes a repository (one project index over all of them): each ``<file>.py``
  with a ``<file>.expected.py`` beside it must become that, every other file
  must stay byte-identical. Its ``case.py`` holds the header and, when the
  project is executable, ``run(device)``, executed with the project's files
  importable beside it.

Nothing here imports torch or runs fixture code: executability is read from
the syntax tree, so discovery stays cheap and safe.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from torchfix_codemods.catalog import UnknownRuleCode, resolve_selection
from torchfix_codemods.settings import DEFAULT_EXCLUDES, ConfigError, Settings, parse_target_torch

HEADER = "# fixture-args:"
EXPECTED_SUFFIX = ".expected.py"
TRAP_PREFIX = "trap_"
_CODE_DIR = re.compile(r"^TFC\d{3}$")
_KNOWN_FLAGS = ("--unsafe-fixes", "--target-torch", "--select", "--extend-select", "--ignore")
SKIP_DIRS = frozenset(DEFAULT_EXCLUDES)
"""Directories never worth walking for fixtures: the ones a check skips by default."""


PROJECT_PREFIXES = ("project_", "trap_project_")
PROJECT_ENTRY = "case.py"


class FixtureError(ValueError):
    """A fixture that cannot be used as written; the message names the file."""


@dataclass(frozen=True)
class FixtureArgs:
    """The flags of a ``# fixture-args:`` header, spelled as the CLI spells them.

    ``select`` is None when the header does not say ``--select`` (the case
    then selects its directory's code).
    """

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    target_torch: str | None = None
    raw: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Fixture:
    """One fixture case and everything needed to fix, compare or execute it."""

    path: Path
    code: str | None
    args: FixtureArgs
    expected_path: Path | None
    executable: bool

    @property
    def is_trap(self) -> bool:
        """Traps must come out of ``fix`` unchanged."""
        return self.path.name.startswith(TRAP_PREFIX)

    def read_text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def settings(self) -> Settings:
        """The Settings ``fix`` runs with on this case (see :func:`fixture_settings`)."""
        return _settings_for(self)


@dataclass(frozen=True)
class ProjectFixture:
    """A folder of files fixed together (see the module docstring)."""

    path: Path
    code: str | None
    args: FixtureArgs
    files: tuple[Path, ...]
    """Every source file of the project (not the expected files), sorted."""
    executable: bool

    @property
    def entry(self) -> Path:
        return self.path / PROJECT_ENTRY

    @property
    def is_trap(self) -> bool:
        return self.path.name.startswith(TRAP_PREFIX)

    def expected_for(self, file: Path) -> Path | None:
        expected = expected_path_for(file)
        return expected if expected.is_file() else None

    def settings(self) -> Settings:
        return _settings_for(self)


def is_project_dir(path: Path) -> bool:
    return path.is_dir() and path.name.startswith(PROJECT_PREFIXES) and \
        (path / PROJECT_ENTRY).is_file()


def load_project(directory: Path | str) -> ProjectFixture:
    """Describe one project folder (raises :class:`FixtureError` on a bad header)."""
    path = Path(directory)
    if not is_project_dir(path):
        raise FixtureError(f"{path}: not a project fixture (a project_* folder with a "
                           f"{PROJECT_ENTRY})")
    entry = path / PROJECT_ENTRY
    text = entry.read_text(encoding="utf-8")
    files = tuple(sorted(p for p in path.rglob("*.py") if not is_expected_file(p)
                         and not any(part.startswith((".", "__pycache__")) for part in
                                     p.relative_to(path).parts)))
    return ProjectFixture(path, directory_code(path), parse_fixture_args(text, str(entry)),
                          files, defines_run(text))


def collect_projects(root: Path | str) -> list[ProjectFixture]:
    """Every project folder under ``root``, sorted."""
    found = []
    for directory, subdirs, _ in os.walk(root):
        subdirs.sort()
        for name in list(subdirs):
            candidate = Path(directory, name)
            if is_project_dir(candidate):
                found.append(load_project(candidate))
                subdirs.remove(name)
    return found


def parse_fixture_args(text: str, where: str = "<fixture>") -> FixtureArgs:
    """Read the ``# fixture-args:`` header from the leading comment block of ``text``.

    The header is looked for before the first line of code (so a shebang or a
    coding cookie may come first). Unknown flags are errors: a typo must not
    silently run a case with the wrong settings.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped.startswith(HEADER):
            return _parse_flags(stripped[len(HEADER):], f"{where}:{number}")
    return FixtureArgs()


def _parse_flags(spec: str, where: str) -> FixtureArgs:
    try:
        words = shlex.split(spec)
    except ValueError as error:
        raise FixtureError(f"{where}: cannot split fixture-args: {error}") from None
    select: list[str] | None = None
    extend: list[str] = []
    ignore: list[str] = []
    unsafe = False
    target: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        flag, has_value, inline = word.partition("=")
        if flag == "--unsafe-fixes" and not has_value:
            unsafe = True
            index += 1
            continue
        if flag == "--unsafe-fixes":
            raise FixtureError(f"{where}: fixture-args flag --unsafe-fixes takes no value")
        if flag not in _KNOWN_FLAGS:
            raise FixtureError(
                f"{where}: unknown fixture-args flag {word!r} (known: {', '.join(_KNOWN_FLAGS)})"
            )
        if has_value:
            value = inline
            index += 1
        elif index + 1 < len(words) and not words[index + 1].startswith("--"):
            value = words[index + 1]
            index += 2
        else:
            raise FixtureError(f"{where}: fixture-args flag {flag} needs a value")
        if flag == "--target-torch":
            target = value
            continue
        codes = [part.strip() for part in value.split(",") if part.strip()]
        if flag == "--select":
            select = (select or []) + codes
        elif flag == "--extend-select":
            extend += codes
        else:
            ignore += codes
    return FixtureArgs(
        select=tuple(select) if select is not None else None,
        extend_select=tuple(extend),
        ignore=tuple(ignore),
        unsafe_fixes=unsafe,
        target_torch=target,
        raw=tuple(words),
    )


def directory_code(path: Path) -> str | None:
    """The rule code a case's directory is named after (``tests/fixtures/TFC001/x.py``)."""
    name = path.parent.name.upper()
    return name if _CODE_DIR.match(name) else None


def defines_run(text: str) -> bool:
    """Does the module define a top-level ``def run(device)``? (read from the AST, never run).

    One positional parameter, as the harness calls it: a fixture whose code has a ``run`` of its
    own (yolov5's ``run(model, dataloader)``) is not executable for that."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.FunctionDef) and node.name == "run"
               and len(node.args.posonlyargs) + len(node.args.args) == 1
               for node in tree.body)


def is_expected_file(path: Path) -> bool:
    return path.name.endswith(EXPECTED_SUFFIX)


def expected_path_for(case: Path) -> Path:
    return case.with_name(case.name[: -len(".py")] + EXPECTED_SUFFIX)


def load_fixture(case_path: Path | str) -> Fixture:
    """Describe one case file (raises :class:`FixtureError` on a bad header)."""
    path = Path(case_path)
    if is_expected_file(path):
        raise FixtureError(f"{path}: an expected-output file, not a case")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise FixtureError(f"{path}: cannot read: {error}") from None
    expected = expected_path_for(path)
    return Fixture(
        path=path,
        code=directory_code(path),
        args=parse_fixture_args(text, str(path)),
        expected_path=expected if expected.is_file() else None,
        executable=defines_run(text),
    )


def fixture_settings(case_path: Path | str) -> Settings:
    """The Settings that ``fix`` uses on a case: its header over the directory's code.

    Default: ``select`` = the directory's rule code (all default rules when the
    directory is not named after one), safe fixes only, no target torch.
    """
    return _settings_for(load_fixture(case_path))


def _settings_for(fixture: Fixture | ProjectFixture) -> Settings:
    args = fixture.args
    where = f"{fixture.path}: fixture-args"
    select = args.select
    if select is None and fixture.code is not None:
        select = (fixture.code,)
    try:
        enabled = resolve_selection(select, args.extend_select, args.ignore)
    except UnknownRuleCode as error:
        raise FixtureError(f"{where}: unknown rule code or prefix '{error}'") from None
    target = None
    if args.target_torch is not None:
        try:
            target = parse_target_torch("--target-torch", args.target_torch)
        except ConfigError as error:
            raise FixtureError(f"{where}: {error}") from None
    return Settings(
        enabled=enabled,
        unsafe_fixes=args.unsafe_fixes,
        target_torch=target,
        root=str(fixture.path.parent),
    )


def iter_case_files(root: Path | str) -> Iterator[Path]:
    """Every case file (not ``*.expected.py``) under ``root``, sorted, skipping tool dirs."""
    root = Path(root)
    if root.is_file():
        if root.suffix == ".py" and not is_expected_file(root):
            yield root
        return
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS and not d.startswith(".")
                            and not d.startswith(PROJECT_PREFIXES))
        for name in sorted(files):
            path = Path(directory, name)
            if name.endswith(".py") and not is_expected_file(path):
                yield path


def collect_fixtures(root: Path | str) -> list[Fixture]:
    """Every case under ``root`` (for the expected-output tests and for ``verify``)."""
    return [load_fixture(path) for path in iter_case_files(root)]


def executable_fixtures(root: Path | str) -> list[Fixture | ProjectFixture]:
    """Every executable case and project under ``root``."""
    cases: list[Fixture | ProjectFixture] = [f for f in collect_fixtures(root) if f.executable]
    return cases + [project for project in collect_projects(root) if project.executable]
