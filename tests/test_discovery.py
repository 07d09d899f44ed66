"""Which files a run reads: .gitignore, default excludes, symlinks, explicit files."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import DiscoveryError, _Excludes, discover
from torchfix_codemods.settings import DEFAULT_EXCLUDES, Overrides


def _files(root: Path, *paths: str, **overrides) -> list[str]:
    configuration = Configuration(Overrides(**overrides), cwd=str(root))
    found = discover([str(root / p) for p in paths] or [str(root)], configuration)
    return sorted(os.path.relpath(f, root) for f in found)


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_walks_python_files_and_skips_default_excludes(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py", "pkg/b.py", "notes.txt", ".venv/lib/c.py", "build/d.py",
           "pkg/__pycache__/e.py", "node_modules/f.py", "venv/g.py", ".tox/h.py",
           "nb.ipynb", "pkg/.ipynb_checkpoints/nb-checkpoint.ipynb")
    # Jupyter's autosave copies (.ipynb_checkpoints/) are skipped, as ruff skips them.
    assert _files(tmp_path) == ["a.py", "nb.ipynb", "pkg/b.py"]


def test_gitignore_is_honoured_at_every_level(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path, "keep.py", "generated/x.py", "pkg/keep.py", "pkg/secret.py", "pkg/sub/y.py")
    (tmp_path / ".gitignore").write_text("generated/\n")
    (tmp_path / "pkg" / ".gitignore").write_text("secret.py\nsub/\n")
    assert _files(tmp_path) == ["keep.py", "pkg/keep.py"]
    # Walking a subdirectory still applies the parent's .gitignore.
    assert _files(tmp_path, "pkg") == ["pkg/keep.py"]


def test_explicit_file_is_always_checked(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path, "ignored.py")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    assert _files(tmp_path) == []
    assert _files(tmp_path, "ignored.py") == ["ignored.py"]


def test_exclude_and_extend_exclude(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py", "legacy/b.py", "build/c.py")
    assert _files(tmp_path, extend_exclude=("legacy/",)) == ["a.py"]
    # --exclude replaces the defaults, so build/ is walked again.
    assert _files(tmp_path, exclude=("legacy/",)) == ["a.py", "build/c.py"]


def test_symlinks_do_not_lead_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    tree = tmp_path / "tree"
    _touch(outside, "secret.py", "dir/deep.py")
    _touch(tree, "real.py")
    (tree / "link_out.py").symlink_to(outside / "secret.py")
    (tree / "link_in.py").symlink_to(tree / "real.py")
    (tree / "dir_link").symlink_to(outside / "dir", target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    assert _files(tree) == ["link_in.py", "real.py"]


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    configuration = Configuration(Overrides(), cwd=str(tmp_path))
    with pytest.raises(DiscoveryError, match="nope.py: no such file or directory"):
        discover([str(tmp_path / "nope.py")], configuration)


def test_a_subproject_excludes_by_its_own_configuration(tmp_path: Path) -> None:
    """Each directory is walked under its nearest configuration: the subproject's
    `extend-exclude` holds inside it, and nowhere else, whatever the order of the paths."""
    _touch(tmp_path, "generated/a.py", "sub/generated/b.py", "sub/c.py")
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nextend-exclude = ["generated/"]\n')
    assert _files(tmp_path) == ["generated/a.py", "sub/c.py"]
    assert _files(tmp_path, "sub", "generated") == _files(tmp_path, "generated", "sub") == [
        "generated/a.py", "sub/c.py"]


_COMPONENTS = st.sampled_from(["build", "builder", ".git", "venv", "src", "docs", "a.py",
                               "b.gen.py", "site-packages", "x", "__pycache__", "keep.py"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_COMPONENTS, min_size=1, max_size=4), directory=st.booleans(),
       extra=st.sampled_from([(), ("*.gen.py",), ("docs/",), ("!keep.py", "x"), ("src",)]))
def test_exclude_matching_without_pathspec_agrees_with_pathspec(
        parts: list[str], directory: bool, extra: tuple[str, ...]) -> None:
    patterns = DEFAULT_EXCLUDES + extra
    relative = "/".join(parts) + ("/" if directory else "")
    expected = pathspec.GitIgnoreSpec.from_lines(patterns).match_file(relative)
    assert _Excludes(patterns).match_file(relative) == expected


def _special_tree(root: Path) -> None:
    import socket

    _touch(root, "a.py")
    os.mkfifo(root / "fifo.py")
    (root / "pkg").mkdir()
    os.mkfifo(root / "pkg" / "nb.ipynb")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock.py"))
    server.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_sockets_and_devices_are_skipped_with_a_note(tmp_path: Path) -> None:
    _special_tree(tmp_path)
    configuration = Configuration(Overrides(), cwd=str(tmp_path))
    notes: list[str] = []
    named = [str(tmp_path / "fifo.py"), os.devnull]
    found = discover([str(tmp_path), *named], configuration, notes)
    assert [os.path.relpath(f, tmp_path) for f in found] == ["a.py"]
    assert sorted(notes) == sorted([
        f"{tmp_path / 'fifo.py'}: a FIFO, not a regular file: skipped",
        f"{tmp_path / 'sock.py'}: a socket, not a regular file: skipped",
        f"{tmp_path / 'pkg' / 'nb.ipynb'}: a FIFO, not a regular file: skipped",
        f"{tmp_path / 'fifo.py'}: a FIFO, not a regular file: skipped",
        f"{os.devnull}: a device, not a regular file: skipped",
    ])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", [["check", "--no-cache"], ["fix"], ["fix", "--diff"]])
def test_a_fifo_in_the_tree_never_stalls_a_run(tmp_path: Path, command: list[str]) -> None:
    # Before: `check` and `fix` waited forever in open() for a writer to the FIFO.
    import subprocess
    import sys

    _special_tree(tmp_path)
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "torchfix_codemods", *command, ".", "fifo.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: fifo.py: a FIFO, not a regular file: skipped" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_file_that_became_a_fifo_after_discovery_is_not_waited_for(tmp_path: Path) -> None:
    from torchfix_codemods.runner import read_regular

    os.mkfifo(tmp_path / "late.py")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(str(tmp_path / "late.py"))
