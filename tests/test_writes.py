"""What ``fix`` must never change when it writes: links, owners, modes, read-only files, and
the truth of its summary when a write fails (real links, a real chown, a real read-only file)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods import writing
from torchfix_codemods.cli import app

BEFORE = 'import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n'
AFTER = 'import torch\n\nwith torch.amp.autocast("cuda"):\n    pass\n'


def fix(*args: str, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, ["fix", *args])
    finally:
        os.chdir(old)


def test_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target.py"
    target.write_text(BEFORE)
    (tmp_path / "link.py").symlink_to("target.py")
    (tmp_path / "other_link.py").symlink_to(target)
    result = fix(".", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.py").is_symlink() and (tmp_path / "other_link.py").is_symlink()
    assert os.readlink(tmp_path / "link.py") == "target.py"
    assert target.read_text() == AFTER
    # Three names, one file: fixed once, counted once, no "changed on disk" error.
    assert "Fixed 1 finding(s) in 1 file(s)." in result.output
    assert "error" not in result.output


def test_fixing_a_link_by_name_fixes_its_target(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    target = tmp_path / "src" / "target.py"
    target.write_text(BEFORE)
    (tmp_path / "link.py").symlink_to(target)
    result = fix("link.py", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.py").is_symlink()
    assert target.read_text() == AFTER
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["target.py"]


def test_hard_linked_file_is_not_split(tmp_path: Path) -> None:
    first = tmp_path / "first.py"
    first.write_text(BEFORE)
    os.link(first, tmp_path / "second.py")
    result = fix("first.py", cwd=tmp_path)
    assert result.exit_code == 1
    assert "first.py: error: not written: the file has 2 hard links" in result.output
    assert first.read_text() == BEFORE == (tmp_path / "second.py").read_text()
    assert os.stat(first).st_ino == os.stat(tmp_path / "second.py").st_ino
    assert "Fixed" not in result.output


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_owner_group_and_mode_are_kept(tmp_path: Path) -> None:
    source = tmp_path / "owned.py"
    source.write_text(BEFORE)
    os.chown(source, 4321, 4322)
    os.chmod(source, 0o640)
    result = fix("owned.py", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    status = os.stat(source)
    assert (status.st_uid, status.st_gid) == (4321, 4322)
    assert stat.S_IMODE(status.st_mode) == 0o640
    assert source.read_text() == AFTER


def test_read_only_file_is_not_written_and_the_summary_says_so(tmp_path: Path) -> None:
    source = tmp_path / "frozen.py"
    source.write_text(BEFORE)
    os.chmod(source, 0o444)
    result = fix(".", cwd=tmp_path)
    assert result.exit_code == 1
    assert "frozen.py: error: not written: the file is read-only" in result.output
    assert source.read_text() == BEFORE
    assert stat.S_IMODE(os.stat(source).st_mode) == 0o444
    # The finding is still open: it was not fixed.
    assert "TFC401 [*]" in result.output
    assert "Fixed" not in result.output
    assert "1 file(s) could not be processed" in result.output


def test_full_disk_leaves_the_file_and_a_true_summary(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(BEFORE)

    def full_disk(fd, data, like, durable):
        # The disk fills up halfway through the new bytes, as write(2) reports it.
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writing, "_fill", full_disk)
    result = fix(".", "--jobs", "1", cwd=tmp_path)
    assert result.exit_code == 1
    assert "a.py: error: cannot write: No space left on device" in result.output
    assert "Fixed" not in result.output
    assert "2 finding(s) remaining" in result.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["a.py", "b.py"]
    assert not list(tmp_path.rglob("*.tmp"))
    assert (tmp_path / "a.py").read_text() == BEFORE


def test_failed_cache_writes_leave_no_temporary_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Both caches a ``check`` writes (results, and the project index's summaries, which
    TFC301's cross-file facts need) on a full disk: no cache, and no temporary file left."""
    (tmp_path / "train.py").write_text(
        "import torch\n\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    attempts = []
    real_temporary = writing._complete_temporary

    def complete_temporary(directory, *args, **kwargs):
        attempts.append(directory)
        return real_temporary(directory, *args, **kwargs)

    monkeypatch.setattr(writing.os, "replace", full)
    monkeypatch.setattr(writing, "_complete_temporary", complete_temporary)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(app, ["check", "--select", "TFC301", "."])
    finally:
        os.chdir(old)
    assert result.exit_code == 1, result.output
    assert len(attempts) == 2  # the summaries and the results
    left = [p.name for p in (tmp_path / ".torchfix_cache").rglob("*") if p.is_file()]
    assert left == [".gitignore"]


def test_a_fifo_in_the_tree_is_passed_over_not_waited_on(tmp_path: Path) -> None:
    """Reading a FIFO blocks until something writes to it: a walk must not open one."""
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "real.py").write_text(BEFORE)
    result = fix(".", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "real.py").read_text() == AFTER
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe.py").st_mode)


@pytest.fixture
def full_disk(tmp_path: Path):
    """A real file system with no space left (a 64 KiB tmpfs, filled): root only, and only
    where mounting is allowed (not in every container)."""
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(root)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root)], capture_output=True, check=False)


def test_a_really_full_disk_leaves_every_file_and_a_true_summary(full_disk: Path) -> None:
    for name in ("a.py", "b.py"):
        (full_disk / name).write_text(BEFORE)
    filler = os.open(full_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:  # every block of the disk
            os.write(filler, b"\0" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(filler)
    result = fix(".", "--jobs", "1", cwd=full_disk)
    assert result.exit_code == 1, result.output
    assert "a.py: error: cannot write: No space left on device" in result.output
    assert "b.py: error: cannot write: No space left on device" in result.output
    assert "Fixed" not in result.output and "2 finding(s) remaining" in result.output
    assert (full_disk / "a.py").read_text() == BEFORE == (full_disk / "b.py").read_text()
    # A check on the full disk afterwards: no cache written, no temporary file left.
    check = CliRunner().invoke(app, ["check", str(full_disk)])
    assert check.exit_code == 1, check.output
    left = sorted(str(p.relative_to(full_disk)) for p in full_disk.rglob("*") if p.is_file())
    assert [name for name in left if name not in ("a.py", "b.py", "filler")] in (
        [], [".torchfix_cache/.gitignore"]), left
