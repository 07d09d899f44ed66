"""``check -`` and ``fix -``: the source on stdin, as editors' format-on-save and ruff do it.

``--stdin-filename NAME`` says which file the text is: settings come from that
name's nearest configuration, its ``exclude`` applies (an excluded name is passed
through untouched and reports nothing), a ``.ipynb`` name is read as a notebook,
and findings carry the name. ``check -`` reports on stdout; ``fix -`` writes the
fixed source (or the input, unchanged) to stdout and its report to stderr, so the
output can replace the buffer; ``fix --diff -`` prints the diff. Nothing is read
or written on disk except configuration files.
"""

from __future__ import annotations

import sys

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.findings import FileResult

STDIN = "-"
STDIN_NAME = "-"


def read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def run_stdin(configuration: Configuration, name: str | None, data: bytes, *,
              apply_fixes: bool, diff: bool = False) -> tuple[FileResult, bytes | None]:
    """The result for ``data`` as the file ``name``, and the fixed bytes when they differ."""
    from torchfix_codemods.discovery import is_excluded
    from torchfix_codemods.single import run_text

    path = name or STDIN_NAME
    if name is not None and is_excluded(name, configuration):
        return FileResult(path), None
    options = configuration.settings_for(name or ".").options_for(path)
    done = run_text(path, data, options, apply_fixes=apply_fixes, locate_edits=diff)
    result = done.result
    if not result.changed:
        result.original = None
        result.fixed = None
    return result, done.new_bytes
