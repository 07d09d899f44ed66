"""`fix` killed at any moment, two `fix` runs at once, `check` during `fix`: every file ends
original or fully fixed, and no temporary file is left behind.

The tree is the repository's examples and rule fixtures (real code with findings in most
files). Real processes, real SIGKILLs at random moments of a real run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _tree(target: Path) -> Path:
    shutil.copytree(ROOT / "examples", target / "examples")
    for rule in sorted((ROOT / "tests" / "fixtures").iterdir())[:4]:
        if rule.is_dir():
            shutil.copytree(rule, target / "fixtures" / rule.name,
                            ignore=shutil.ignore_patterns("*.json", "*.txt", "__pycache__"))
    (target / "pyproject.toml").write_text("[tool.torchfix-codemods]\ncache = false\n")
    return target


def _sources(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()
            and path.suffix in (".py", ".ipynb")}


def _start(root: Path, *command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "torchfix_codemods", *command, "."],
                            cwd=root, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _leftovers(root: Path) -> list[str]:
    return sorted(str(path) for path in root.rglob("*torchfix-*.tmp"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes],
                                                                 dict[str, bytes], float]:
    """The tree's files before and after a complete `fix`, and how long that took."""
    root = _tree(tmp_path_factory.mktemp("reference"))
    before = _sources(root)
    started = time.monotonic()
    done = _start(root, "fix", "--unsafe-fixes")
    done.wait(timeout=600)
    assert done.returncode in (0, 1)
    after = _sources(root)
    assert sum(before[name] != after[name] for name in before) >= 10  # real fixes happen
    return before, after, time.monotonic() - started


def _assert_each_original_or_fixed(root: Path, before: dict[str, bytes],
                                   after: dict[str, bytes]) -> None:
    now = _sources(root)
    assert set(now) == set(before)
    for name, data in now.items():
        assert data in (before[name], after[name]), name
    assert _leftovers(root) == []


def test_sigkill_at_random_moments_leaves_every_file_original_or_fixed(
        tmp_path: Path, reference) -> None:
    before, after, duration = reference
    randomness = random.Random(20261125)
    for trial in range(3):
        root = _tree(tmp_path / str(trial))
        process = _start(root, "fix", "--unsafe-fixes")
        time.sleep(randomness.uniform(0.3, max(0.5, duration)))
        process.send_signal(signal.SIGKILL)
        process.wait()
        _assert_each_original_or_fixed(root, before, after)
        # A second run finishes the job from wherever the first stopped.
        again = _start(root, "fix", "--unsafe-fixes")
        again.wait(timeout=600)
        assert _sources(root) == after


def test_two_fix_runs_at_once_and_a_check_meanwhile(tmp_path: Path, reference) -> None:
    before, after, _ = reference
    root = _tree(tmp_path)
    runs = [_start(root, "fix", "--unsafe-fixes"), _start(root, "fix", "--unsafe-fixes")]
    check = _start(root, "check", "--no-cache")
    for run in [*runs, check]:
        run.wait(timeout=600)
        assert b"Traceback" not in run.stderr.read()  # type: ignore[union-attr]
    assert check.returncode in (0, 1)
    _assert_each_original_or_fixed(root, before, after)
    assert _sources(root) == after


@pytest.mark.parametrize("unnamed", [True, False])
def test_a_fix_is_written_without_a_name_until_complete(tmp_path: Path, monkeypatch,
                                                        unnamed: bool) -> None:
    """What a SIGKILL during the write (the fsync is the slow part) would leave behind: on
    Linux nothing, as the file has no name until it is complete; elsewhere the fallback."""
    from torchfix_codemods import writing

    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    elif not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE here")
    target = tmp_path / "a.py"
    target.write_text("old\n")
    target.chmod(0o640)
    seen: list[list[str]] = []
    real = writing._fill

    def watched(fd: int, data: bytes, like, durable: bool) -> None:
        seen.append(sorted(os.listdir(tmp_path)))
        real(fd, data, like, durable)

    monkeypatch.setattr(writing, "_fill", watched)
    assert writing.write_source(str(target), b"new\n", b"old\n") is None
    assert target.read_bytes() == b"new\n"
    assert (target.stat().st_mode & 0o777) == 0o640
    assert os.listdir(tmp_path) == ["a.py"]
    if unnamed:
        assert seen == [["a.py"]]
    else:
        assert len(seen[0]) == 2
