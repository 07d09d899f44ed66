"""``check -`` and ``fix -`` with ``--stdin-filename``, run as an editor's format-on-save runs
them: a subprocess with the source on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "import torch\n\nx = torch.range(0, 10)\ny = torch.ger(a, b)\n"
FIXED = ("import torch\n\nx = torch.arange(0, 11, dtype=torch.get_default_dtype())\n"
         "y = torch.outer(a, b)\n")


def tfc(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "torchfix_codemods", *args], cwd=cwd,
                          input=stdin, capture_output=True, text=True, env=env, timeout=120)


def test_check_stdin_reports_with_the_given_name(tmp_path: Path) -> None:
    done = tfc("check", "-", "--stdin-filename", "pkg/model.py", "--no-cache", cwd=tmp_path,
               stdin=SOURCE)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].startswith("pkg/model.py:3:5: TFC406 [*] `torch.range`")
    nameless = tfc("check", "-", "--format", "json", cwd=tmp_path, stdin=SOURCE)
    assert {f["path"] for f in json.loads(nameless.stdout)["findings"]} == {"-"}
    assert not list(tmp_path.iterdir())  # nothing written, not even a cache


def test_fix_stdin_writes_the_fixed_source_to_stdout_and_the_report_to_stderr(
        tmp_path: Path) -> None:
    done = tfc("fix", "-", "--stdin-filename", "model.py", cwd=tmp_path, stdin=SOURCE)
    assert done.returncode == 0, done.stderr
    assert done.stdout == FIXED
    assert "Fixed 2 finding(s)" in done.stderr
    clean = tfc("fix", "-", cwd=tmp_path, stdin=FIXED)
    assert clean.stdout == FIXED and clean.returncode == 0


def test_stdin_settings_and_excludes_are_those_of_the_name(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nextend-exclude = ["third_party/"]\n\n'
        '[tool.torchfix-codemods.per-file-ignores]\n"legacy/*" = ["TFC406"]\n')
    for name in ("third_party/vendored.py", "legacy/old.py"):
        checked = tfc("check", "-", "--stdin-filename", name, cwd=tmp_path, stdin=SOURCE)
        assert checked.returncode == 0 and "TFC406" not in checked.stdout, name
        fixed = tfc("fix", "-", "--stdin-filename", name, cwd=tmp_path, stdin=SOURCE)
        assert fixed.stdout == SOURCE, name  # passed through untouched
    other = tfc("check", "-", "--stdin-filename", "src/new.py", cwd=tmp_path, stdin=SOURCE)
    assert other.returncode == 1 and "src/new.py:3:5: TFC406" in other.stdout


def test_fix_diff_stdin_and_stdin_mixed_with_paths(tmp_path: Path) -> None:
    diff = tfc("fix", "--diff", "-", "--stdin-filename", "m.py", cwd=tmp_path, stdin=SOURCE)
    assert diff.returncode == 1
    assert diff.stdout.startswith("--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@ TFC406 (safe)\n")
    assert "\n-x = torch.range(0, 10)\n" in diff.stdout
    assert "\n+y = torch.outer(a, b)\n" in diff.stdout
    mixed = tfc("check", "-", "other.py", cwd=tmp_path, stdin=SOURCE)
    assert mixed.returncode == 2
    assert mixed.stderr.strip() == \
        "torchfix-codemods: error: -: stdin cannot be combined with other paths"


def test_a_notebook_on_stdin(tmp_path: Path) -> None:
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                           "outputs": [], "source": ["import torch\n", "x = torch.ger(a, b)\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    done = tfc("check", "-", "--stdin-filename", "nb.ipynb", cwd=tmp_path,
               stdin=json.dumps(notebook))
    assert "nb.ipynb:cell 1:2:5: TFC406" in done.stdout
    fixed = tfc("fix", "-", "--stdin-filename", "nb.ipynb", cwd=tmp_path,
                stdin=json.dumps(notebook))
    assert json.loads(fixed.stdout)["cells"][0]["source"][1] == "x = torch.outer(a, b)\n"
