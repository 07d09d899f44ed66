"""``fix --diff``: a unified diff per changed file, coloured on a terminal, plain when piped."""

from __future__ import annotations

import difflib

from rich.console import Console
from rich.syntax import Syntax

from torchfix_codemods.findings import FileResult


def _label(side: str, path: str) -> str:
    """git-style ``a/`` and ``b/`` prefixes for relative paths; absolute paths as they are."""
    posix = path.replace("\\", "/")
    return posix if posix.startswith("/") else f"{side}/{posix}"


def unified_diff(result: FileResult) -> str:
    assert result.original is not None and result.fixed is not None
    lines = difflib.unified_diff(
        result.original.splitlines(keepends=True),
        result.fixed.splitlines(keepends=True),
        fromfile=_label("a", result.path),
        tofile=_label("b", result.path),
    )
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return text


def render_diff(console: Console, results: list[FileResult]) -> int:
    """Print every changed file's diff; return how many files would change."""
    changed = 0
    for result in results:
        if not result.changed:
            continue
        changed += 1
        text = unified_diff(result)
        if console.is_terminal:
            console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
        else:
            console.file.write(text)
    console.file.flush()
    return changed
