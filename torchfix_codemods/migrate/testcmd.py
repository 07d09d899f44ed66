"""``--test-cmd``: run a repository's own tests and tell whether a commit broke them.

The command runs through the shell in the migration's worktree, in its own
process group so a time-out stops everything it started. Outcomes are read from
a structured report, never from the command's text (colour, ``-q``, a plugin's
layout would change what text says): ``PYTEST_ADDOPTS`` asks any pytest the
command starts for a JUnit XML report in a directory of ours, and each test's
id (``classname::name``, compared whole, spaces and parametrisation brackets
included) is read from it. A command that writes no report (not pytest) is read
by its exit status alone, and the PR body says so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree

from torchfix_codemods.migrate.model import EXIT_STATUS, JUNIT, SuiteOutcome

TAIL_LINES = 40
TAIL_CHARS = 4000
REPORT_NAME = "junit.xml"
_VERSIONS = ("import sys\nprint('Python ' + sys.version.split()[0])\n"
             "try:\n    import torch\nexcept Exception:\n    print('torch not importable')\n"
             "else:\n    print('torch ' + torch.__version__)\n")


def run_tests(command: str, cwd: str, timeout: float) -> SuiteOutcome:
    """One run of ``command`` in ``cwd``, stopped (with everything it started) after ``timeout``."""
    started = time.monotonic()
    reports = tempfile.mkdtemp(prefix="torchfix-tests-")
    report = os.path.join(reports, REPORT_NAME)
    env = dict(os.environ)
    # Appended: the user's own PYTEST_ADDOPTS stay in force; ours comes last, so it wins.
    env["PYTEST_ADDOPTS"] = " ".join(
        part for part in (env.get("PYTEST_ADDOPTS", ""), shlex.quote(f"--junitxml={report}"))
        if part)
    try:
        process = subprocess.Popen(command, shell=True, cwd=cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env=env)
        try:
            raw, _ = process.communicate(timeout=timeout)
            returncode: int | None = process.returncode
        except subprocess.TimeoutExpired:
            _stop(process)
            raw, _ = process.communicate()
            returncode = None
            raw += f"\n[torchfix-codemods: stopped after {timeout:g} s]\n".encode()
        except BaseException:  # Ctrl-C or SIGTERM: its own session would outlive us
            _stop(process)
            raise
        read = read_junit(report) if returncode is not None else None
    finally:
        shutil.rmtree(reports, ignore_errors=True)
    output = raw.decode("utf-8", errors="replace")
    seconds = round(time.monotonic() - started, 2)
    if read is None:
        return SuiteOutcome(passed=returncode == 0, returncode=returncode, seconds=seconds,
                            failed=(), tail=tail(output), reader=EXIT_STATUS)
    failed, count, passing = read
    return SuiteOutcome(passed=returncode == 0 and not failed, returncode=returncode,
                        seconds=seconds, failed=failed, tail=tail(output), reader=JUNIT,
                        tests=count, passing=passing)


XFAIL = "pytest.xfail"
"""The ``type`` pytest gives the ``<skipped>`` of an expected failure: it ran."""


def read_junit(path: str) -> tuple[tuple[str, ...], int, tuple[str, ...]] | None:
    """(ids of the failed or erroring test cases, number of test cases, ids of those that
    passed, expected failures included) from a JUnit XML report; None when there is none or
    it cannot be read (a run that crashed half-way)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    failed: set[str] = set()
    passing: set[str] = set()
    count = 0
    for case in root.iter("testcase"):
        count += 1
        identity = test_id(case.get("classname", ""), case.get("name", ""))
        if any(child.tag in ("failure", "error") for child in case):
            failed.add(identity)
        elif not any(child.tag == "skipped" and child.get("type") != XFAIL for child in case):
            passing.add(identity)
    return tuple(sorted(failed)), count, tuple(sorted(passing - failed))


def test_id(classname: str, name: str) -> str:
    """``tests.test_io::test_load[a b]``; a collection error (no class) is its module's name."""
    return f"{classname}::{name}" if classname else name


def interpreter_of(command: str) -> str | None:
    """The Python the command runs its tests with, when its first program says so: past
    ``NAME=value`` assignments and ``env``, a ``python...`` it names, or the interpreter on
    the ``#!`` line of the ``pytest`` script it starts (a virtual environment's)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        if word == "env" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            continue
        name = os.path.basename(word)
        if name.startswith("python"):
            return word
        if name in ("pytest", "py.test"):
            return _shebang(shutil.which(word))
        return None
    return None


def _shebang(script: str | None) -> str | None:
    if script is None:
        return None
    try:
        with open(script, "rb") as handle:
            first = handle.readline(512).decode("utf-8", errors="replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    return words[0] if words and os.path.basename(words[0]).startswith("python") else None


def versions(command: str, cwd: str) -> str:
    """The Python and torch versions of the interpreter the tests run on, best effort:
    the command's own (:func:`interpreter_of`), else the ``python`` on PATH."""
    interpreter = interpreter_of(command) or shutil.which("python") or shutil.which("python3")
    if interpreter is None:
        return "unknown (no python on PATH)"
    try:
        done = subprocess.run([interpreter, "-c", _VERSIONS], cwd=cwd, capture_output=True,
                              text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return f"unknown (`{interpreter}` did not answer)"
    lines = done.stdout.strip().splitlines()
    return ", ".join(lines) if done.returncode == 0 and lines else "unknown"


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # pragma: no cover - it ended just now
        pass


def tail(output: str) -> str:
    lines = output.rstrip("\n").splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def comparable(before: SuiteOutcome) -> str | None:
    """Why commits cannot be checked against this base run, or None when they can."""
    if before.returncode is None:
        return "the test command ran past its time limit on the base"
    if not before.passed and before.reader == EXIT_STATUS:
        return (f"the test command fails on the base (exit status {before.returncode}) and "
                "writes no JUnit report (it is not pytest), so a commit's new failures cannot "
                "be told from the base's")
    return None


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def newly_failing(before: SuiteOutcome, after: SuiteOutcome) -> str | None:
    """Why ``after`` is worse than ``before``, or None when it is not.

    Only called when ``comparable(before)`` is None.
    """
    if after.returncode is None:
        return "the test command ran past its time limit after this commit"
    if before.reader == JUNIT and after.reader == JUNIT and not set(after.failed) - set(
            before.failed):
        # A green run proves nothing about a test that no longer runs: an import the commit
        # broke, behind `pytest.importorskip` or a module-level `pytest.skip`, skips it.
        lost = sorted(set(before.passing) - set(after.passing) - set(after.failed))
        if lost:
            return ("tests that passed on the base were skipped or did not run after this "
                    f"commit: {_shown(lost)}")
    if after.passed:
        return None
    if before.passed and after.reader == EXIT_STATUS and before.reader == EXIT_STATUS:
        return f"tests passed on the base and fail after this commit (exit status {after.returncode})"
    if after.reader == EXIT_STATUS:  # the base wrote a report and this run did not
        return (f"the test run ended without its JUnit report (exit status {after.returncode}): "
                "it crashed or stopped before the tests ran")
    new = sorted(set(after.failed) - set(before.failed))
    if new:
        return f"tests that passed on the base fail after this commit: {_shown(new)}"
    if before.passed or (before.returncode in (0, 1) and after.returncode not in (0, 1)):
        # Nothing new failed in the report, yet the command failed in another way.
        return (f"the test command ended with exit status {after.returncode} after this commit "
                f"and {before.returncode} on the base")
    return None
