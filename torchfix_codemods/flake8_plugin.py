"""A flake8 plugin (report only), so a setup that runs TorchFix through flake8 can switch
by changing one line (``extend-select = TFC`` instead of ``TOR``).

flake8 hands over the file's lines (stdin included); the findings are the engine's,
with the settings of the file's nearest configuration, as ``check`` gives them.
flake8's own ``--select``/``--extend-ignore`` and ``# noqa`` then apply on top. No
fix is applied: use ``torchfix-codemods fix`` for that. Syntax errors (TFC000) are
left to flake8's E999.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from torchfix_codemods import __version__

SYNTAX_ERROR_CODE = "TFC000"


class Flake8Plugin:
    """flake8's ``flake8.extension`` interface: ``run`` yields (line, column, text, type)."""

    name = "torchfix-codemods"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        from torchfix_codemods.configuration import Configuration
        from torchfix_codemods.settings import ConfigError, Overrides
        from torchfix_codemods.single import run_text, text_bytes

        path = self.filename if self.filename not in ("stdin", "-") else "stdin.py"
        try:
            configuration = Configuration(Overrides())
            options = configuration.settings_for(path).options_for(path)
        except ConfigError as error:
            yield 1, 0, f"TFC000 torchfix-codemods configuration error: {error}", type(self)
            return
        done = run_text(path, text_bytes("".join(self.lines)), options)
        for finding in done.result.findings:
            if finding.code == SYNTAX_ERROR_CODE:
                continue
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", \
                type(self)
