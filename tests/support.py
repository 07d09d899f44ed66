"""Shared helpers for tests: run the engine on text with a chosen rule selection.

Like a run of the CLI over that one file, the engine gets the project index of the file
alone (what the run saves where a load reads, same-file whole-module pairs...).
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.project import (
    NoProject,
    ReturnFacts,
)
from torchfix_codemods.engine import process
from torchfix_codemods.findings import FileResult, Finding
from torchfix_codemods.indexing import project_of_bytes
from torchfix_codemods.options import FileOptions
from torchfix_codemods.settings import Settings
from torchfix_codemods.source import SourceUnit


def settings_for(codes: Iterable[str], *, unsafe: bool = False,
                 target: tuple[int, int] | None = None) -> Settings:
    return Settings(enabled=frozenset(codes), unsafe_fixes=unsafe, target_torch=target)


def options_for(codes: Iterable[str], *, unsafe: bool = False,
                target: tuple[int, int] | None = None) -> FileOptions:
    """What the engine runs with for these codes (no per-file ignores)."""
    return FileOptions(codes=tuple(codes), unsafe_fixes=unsafe, target_torch=target)


def fix_bytes(data: bytes, codes: Iterable[str], *, unsafe: bool = False,
              target: tuple[int, int] | None = None, path: str = "case.py") -> FileResult:
    unit = SourceUnit.from_bytes(path, data)
    return process(unit, options_for(codes, unsafe=unsafe, target=target), apply_fixes=True,
                   project=project_of_bytes({path: data}).view(path))


def fixed_text(text: str, codes: Iterable[str], *, unsafe: bool = False,
               target: tuple[int, int] | None = None) -> str:
    """The text after ``fix`` (the input itself when nothing changed)."""
    result = fix_bytes(text.encode("utf-8"), codes, unsafe=unsafe, target=target)
    return result.fixed if result.fixed is not None else text


def findings(text: str, codes: Iterable[str], *, path: str = "case.py") -> list[Finding]:
    data = text.encode("utf-8")
    unit = SourceUnit.from_bytes(path, data)
    return process(unit, options_for(codes), apply_fixes=False,
                   project=project_of_bytes({path: data}).view(path)).findings


def probe(source: str) -> tuple[NameIndex, cst.BaseExpression]:
    """The value of the last simple statement in ``source`` (nested blocks included), with the
    module's name index: analyses are asked about ``probe = <expression>`` or a ``return``."""
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    lines: list[cst.SimpleStatementLine] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            lines.append(node)

    module.visit(Collect())
    statement = lines[-1].body[0]
    assert isinstance(statement, (cst.Assign, cst.Return, cst.Expr))
    assert statement.value is not None
    return names, statement.value


class FakeProject(NoProject):
    """A project index that knows only what a test tells it (``ProjectFacts``; every question
    it is not told about is answered "unknown" by :class:`NoProject`, including the questions
    fact modules register later: nothing here changes when one is added)."""

    def __init__(self, *, version_flags: dict[str, bool] | None = None,
                 returns: dict[str, ReturnFacts] | None = None) -> None:
        self.version_flags = version_flags or {}
        self.returned = returns or {}

    def returns(self, qualified: str) -> ReturnFacts | None:
        return self.returned.get(qualified)

    def version_flag(self, qualified: str) -> bool | None:
        return self.version_flags.get(qualified)
