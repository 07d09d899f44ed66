"""Shared helpers for tests: run the engine on text with a chosen rule selection."""

from __future__ import annotations

from collections.abc import Iterable

from torchfix_codemods.engine import process
from torchfix_codemods.findings import FileResult, Finding
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
    return process(unit, options_for(codes, unsafe=unsafe, target=target), apply_fixes=True)


def fixed_text(text: str, codes: Iterable[str], *, unsafe: bool = False,
               target: tuple[int, int] | None = None) -> str:
    """The text after ``fix`` (the input itself when nothing changed)."""
    result = fix_bytes(text.encode("utf-8"), codes, unsafe=unsafe, target=target)
    return result.fixed if result.fixed is not None else text


def findings(text: str, codes: Iterable[str], *, path: str = "case.py") -> list[Finding]:
    unit = SourceUnit.from_bytes(path, text.encode("utf-8"))
    return process(unit, options_for(codes), apply_fixes=False).findings
