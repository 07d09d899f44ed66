"""Where human output goes: rich's Console on a terminal, a plain writer on a pipe.

Importing rich costs about 30 ms, more than a warm ``check`` of a small
repository. Piped output has no colour or layout to render, so ``check``
writes it with :class:`PlainConsole` and never imports rich. Whatever is
printed through it must be plain text (no rich markup); renderers look at
``is_terminal`` to choose.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console


class PlainConsole:
    """The part of rich's Console that plain output uses: ``file``, ``is_terminal``, ``print``."""

    is_terminal = False

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr

    @property
    def file(self) -> TextIO:
        # Looked up on every use, like rich does: a test runner may swap the streams.
        return sys.stderr if self._stderr else sys.stdout

    def print(self, *objects: Any, **_options: Any) -> None:
        self.file.write(" ".join(str(item) for item in objects) + "\n")


def wants_rich(stream: TextIO) -> bool:
    """Whether rich would treat ``stream`` as a terminal (FORCE_COLOR and TTY_COMPATIBLE too)."""
    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE") == "1":
        return True
    if os.environ.get("TTY_COMPATIBLE") == "0":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def no_color() -> bool:
    """``NO_COLOR`` set to anything but the empty string (no-color.org)."""
    return os.environ.get("NO_COLOR", "") != ""


def rich_console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich Console; under ``NO_COLOR``, one that writes no escape code at all.

    no-color.org asks only for no colour, and rich honours that by dropping colours but
    keeping bold and dim. Users who set ``NO_COLOR`` (screen readers, logs that keep
    escape codes as text) want plain text, so no style is written: ``color_system=None``.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 on its own; the run's entry point ends it quietly with 141, as it
            # does for the plain writer, whatever wrote last (README: exit codes).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    options.setdefault("highlight", False)
    if no_color():
        options["color_system"] = None
    return _Console(stderr=stderr, **options)


def console(*, stderr: bool = False, plain_when_piped: bool = False) -> Console | PlainConsole:
    """A console for stdout (or stderr); plain on a pipe when the caller can do without rich."""
    stream = sys.stderr if stderr else sys.stdout
    if plain_when_piped and not wants_rich(stream):
        return PlainConsole(stderr=stderr)
    return rich_console(stderr=stderr)
