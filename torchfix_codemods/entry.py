"""The ``torchfix-codemods`` console script: ``check`` without typer when it can.

(From speed.) A ``check`` answered from the cache should cost little more than starting
Python and hashing the files. typer alone costs ~150 ms before the
first file is looked at: it imports pydantic and builds a validator for every
parameter. Pre-commit hooks and editors run ``check`` on every save, so a
``check`` whose arguments use only the options in :data:`CHECK_OPTIONS` is
parsed here and runs :func:`~torchfix_codemods.commands.check_command`, the
same function the typer command calls. Anything else (``--help``, a typo, an
option not in the table, ``-j4``, ``--``) goes to the typer application,
which handles it as always. tests/test_speed.py checks that every option here
is typer's, under the same parameter name, and that both parsers pass the
same values.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Literal

OptionKind = Literal["list", "value", "int", "flag"]

CHECK_OPTIONS: dict[str, tuple[str, OptionKind]] = {
    "--select": ("select", "list"),
    "--ignore": ("ignore", "list"),
    "--extend-select": ("extend_select", "list"),
    "--exclude": ("exclude", "list"),
    "--extend-exclude": ("extend_exclude", "list"),
    "--format": ("output_format", "value"),
    "--target-torch": ("target_torch", "value"),
    "--config": ("config", "list"),
    "--jobs": ("jobs", "int"),
    "-j": ("jobs", "int"),
    "--no-cache": ("no_cache", "flag"),
    "--statistics": ("statistics", "flag"),
    "--show-fixes": ("show_fixes", "flag"),
    "--exit-zero": ("exit_zero", "flag"),
    "--stdin-filename": ("stdin_filename", "value"),
    "--force-exclude": ("force_exclude", "flag"),
    "--quiet": ("quiet", "flag"),
    "-q": ("quiet", "flag"),
    "--output-file": ("output_file", "value"),
    "-o": ("output_file", "value"),
}
"""``check``'s options this parser knows: option -> (parameter name, kind)."""


def parse_check(argv: list[str]) -> dict[str, object] | None:
    """``check_command``'s keyword arguments for ``argv``, or None to let typer decide."""
    if not argv or argv[0] != "check":
        return None
    arguments: dict[str, object] = {}
    paths: list[str] = []
    rest = iter(argv[1:])
    for item in rest:
        if not item.startswith("-") or item == "-":
            paths.append(item)
            continue
        option, equals, attached = item.partition("=")
        known = CHECK_OPTIONS.get(option)
        if known is None or (equals and option.startswith("-") and not option.startswith("--")):
            return None
        name, kind = known
        if kind == "flag":
            if equals:
                return None
            arguments[name] = True
            continue
        value = attached if equals else next(rest, None)
        if value is None or (not equals and value.startswith("-")):
            return None  # a missing value, or one click might read differently: typer says
        if kind == "list":
            arguments.setdefault(name, []).append(value)  # type: ignore[union-attr]
        elif kind == "int":
            if not value.isdigit() or int(value) < 1:
                return None
            arguments[name] = int(value)
        else:
            arguments[name] = value
    if paths:
        arguments["paths"] = paths
    return arguments


class Interrupted(BaseException):
    """Ctrl-C. Not a ``KeyboardInterrupt``: click turns that into "Aborted!" and exit 1."""


EXIT_INTERRUPTED = 130
"""128 + SIGINT, as shells report a command ended by Ctrl-C."""
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, what ``cat``/``grep`` end with when the reader of their output goes away."""


def main(argv: list[str] | None = None) -> None:
    """Run one command; Ctrl-C, a closed pipe and an output that cannot show every character
    end in one line (or none) and the conventional exit code, never a traceback."""
    _tolerate_narrow_output()
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        _main(argv)
    except Interrupted:
        _quiet_stdout()
        print("torchfix-codemods: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        _quiet_stdout()  # nobody reads any more: exit without a word, as other CLIs do
        sys.exit(EXIT_BROKEN_PIPE)
    except SystemExit as done:
        if done.code == 1 and _pipe_closed_under_click():
            _quiet_stdout()
            sys.exit(EXIT_BROKEN_PIPE)
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _pipe_closed_under_click() -> bool:
    """Whether click (under typer) ended the command with exit 1 because the reader of its
    output went away: it then wraps the streams in its ``PacifyFlushWrapper`` (click's own,
    or the copy typer vendors as ``typer._click``)."""
    return any(isinstance(sys.stdout, wrapper) for wrapper in (
        getattr(sys.modules.get(name), "PacifyFlushWrapper", None)
        for name in ("click.utils", "typer._click.utils")) if isinstance(wrapper, type))


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


def _tolerate_narrow_output() -> None:
    """``PYTHONIOENCODING=ascii`` or a legacy terminal: characters the stream cannot encode
    are written as escapes instead of raising ``UnicodeEncodeError`` mid-report."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a detached stream
                pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of a closed pipe is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real stdout
        pass


def _main(argv: list[str] | None) -> None:
    arguments = parse_check(sys.argv[1:] if argv is None else argv)
    if arguments is not None:
        from torchfix_codemods.commands import check_command

        sys.exit(check_command(**arguments))  # type: ignore[arg-type]
    from torchfix_codemods.cli import app

    app(args=argv)
