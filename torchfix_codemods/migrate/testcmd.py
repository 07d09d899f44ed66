"""``--test-cmd``: run a repository's own tests and tell whether a commit broke them.

The command runs through the shell in the migration's worktree, in its own
process group so a time-out stops everything it started. Pass/fail is its
exit status; when the output carries pytest's summary lines (``FAILED id``,
``ERROR id``), the failing test ids are kept too, so a repository whose tests
already fail on the base can still tell a commit that breaks more of them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

from torchfix_codemods.migrate.model import SuiteOutcome

TAIL_LINES = 40
TAIL_CHARS = 4000
_FAILED_ID = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def run_tests(command: str, cwd: str, timeout: float) -> SuiteOutcome:
    started = time.monotonic()
    process = subprocess.Popen(command, shell=True, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        raw, _ = process.communicate(timeout=timeout)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _stop(process)
        raw, _ = process.communicate()
        returncode = None
        raw += f"\n[torchfix-codemods: stopped after {timeout:g} s]\n".encode()
    output = raw.decode("utf-8", errors="replace")
    return SuiteOutcome(passed=returncode == 0, returncode=returncode,
                       seconds=round(time.monotonic() - started, 2),
                       failed=tuple(sorted(set(_FAILED_ID.findall(output)))), tail=tail(output))


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # pragma: no cover - it ended just now
        pass


def tail(output: str) -> str:
    lines = output.rstrip("\n").splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def newly_failing(before: SuiteOutcome, after: SuiteOutcome) -> str | None:
    """Why ``after`` is worse than ``before``, or None when it is not (or cannot be told)."""
    if after.passed:
        return None
    if after.returncode is None and before.returncode is not None:
        return "the test command ran past its time limit after this commit"
    if before.passed:
        return f"tests passed on the base and fail after this commit (exit status {after.returncode})"
    new = sorted(set(after.failed) - set(before.failed))
    if new:
        shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
        return f"tests that passed on the base fail after this commit: {shown}"
    return None
