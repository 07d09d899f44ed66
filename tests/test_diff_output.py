"""``fix --diff`` as a reviewer reads it: git's format, rule and safety per hunk, notebook cells."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods.cli import app
from torchfix_codemods.textdiff import hunks, split_lines

runner = CliRunner()

# Two rules, three hunks: the import TFC106 leaves unused is removed far from its call.
TWO_RULES = """\
import torch
import torch.nn.functional as F
from torch.autograd import Variable


def a(x):
    return F.upsample(x, scale_factor=2)


def unrelated():
    return 1


def more():
    return 2


def b():
    return Variable(torch.randn(3))
"""


def diff_of(*args: str):
    return runner.invoke(app, ["fix", "--diff", *args])


def hunk_headers(*args: str) -> list[str]:
    return [line for line in diff_of(*args).stdout.splitlines() if line.startswith("@@")]


def git_apply(diff: str, directory: Path) -> None:
    subprocess.run(["git", "apply", "--unsafe-paths", "-p1", "-"], input=diff, text=True,
                   cwd=directory, check=True)


def test_a_file_without_trailing_newline_gets_gits_marker(tmp_path: Path) -> None:
    # issue 15: the last changed line ended the output without the marker, and the
    # summary line was glued to it.
    source = ('import torch\n\n\ndef restore(model):\n'
              '    model.load_state_dict(torch.load("a.pt", map_location="cpu"))')
    (tmp_path / "a.py").write_text(source)
    done = subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--diff", "a.py"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stdout.endswith(
        '-    model.load_state_dict(torch.load("a.pt", map_location="cpu"))\n'
        '\\ No newline at end of file\n'
        '+    model.load_state_dict(torch.load("a.pt", map_location="cpu", weights_only=True))\n'
        '\\ No newline at end of file\n')
    assert done.stderr.startswith("Would fix 1 finding(s) in 1 file(s).")
    # git agrees: the diff applies and gives the fixed file, still without a newline.
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "a.py", copy / "a.py")
    git_apply(done.stdout, copy)
    assert (copy / "a.py").read_text() == source.replace('"cpu")', '"cpu", weights_only=True)')


def test_lines_end_at_newline_only_as_in_git() -> None:
    # A form feed is whitespace to Python and no line end to git; str.splitlines splits there.
    text = "import torch\n\x0c\ndef f():\n    pass\x0c # note\n"
    assert split_lines(text) == ["import torch\n", "\x0c\n", "def f():\n", "    pass\x0c # note\n"]
    assert split_lines("a\r\nb") == ["a\r\n", "b"]
    [hunk] = hunks("a\nb\nc\n", "a\nB\nc\n")
    assert hunk.header() == "@@ -1,3 +1,3 @@" and hunk.blocks == ((1, 2),)


def test_every_hunk_names_its_rules_and_their_safety(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text(TWO_RULES)
    result = diff_of(str(tmp_path / "c.py"))
    assert result.exit_code == 1
    headers = [line for line in result.stdout.splitlines() if line.startswith("@@")]
    assert headers == ["@@ -1,10 +1,9 @@ TFC106 (safe), TFC402 (safe)",
                       "@@ -16,4 +15,4 @@ TFC106 (safe)"]
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "c.py", copy / "c.py")
    git_apply(result.stdout.replace(str(tmp_path), "").replace("--- /c.py", "--- a/c.py")
              .replace("+++ /c.py", "+++ b/c.py"), copy)
    assert runner.invoke(app, ["fix", str(tmp_path / "c.py")]).exit_code == 0
    assert (copy / "c.py").read_text() == (tmp_path / "c.py").read_text()


def test_safe_and_unsafe_hunks_are_told_apart(tmp_path: Path) -> None:
    source = ("import torch\n\n\ndef restore(model, path):\n"
              "    model.load_state_dict(torch.load(path, map_location='cpu'))\n\n\n\n\n\n\n"
              "def shrink(model):\n    for p in model.parameters():\n        p.data.mul_(0.5)\n")
    (tmp_path / "l.py").write_text(source)
    assert hunk_headers(str(tmp_path / "l.py")) == ["@@ -2,7 +2,7 @@ TFC001 (safe)"]
    assert hunk_headers("--unsafe-fixes", str(tmp_path / "l.py")) == [
        "@@ -2,7 +2,7 @@ TFC001 (safe)", "@@ -11,4 +11,5 @@ TFC103 (unsafe)"]


def _notebook(*sources: str) -> dict:
    return {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                       "source": source.splitlines(keepends=True)} for source in sources],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


NOTEBOOK_CELLS = ("%matplotlib inline\nimport torch\nnet = torch.nn.Linear(2, 2)\n",
                  "!nvidia-smi\nnet.load_state_dict(torch.load('m.pt', map_location='cpu'))\n"
                  "print(net)\n")


def test_notebook_diff_on_a_terminal_shows_cells_not_the_joined_text(tmp_path: Path) -> None:
    from torchfix_codemods.configuration import Configuration
    from torchfix_codemods.report.diff import unified_diff
    from torchfix_codemods.runner import Mode, run_paths
    from torchfix_codemods.settings import Overrides

    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(_notebook(*NOTEBOOK_CELLS)))
    [result] = run_paths([str(path)], Configuration(Overrides(), cwd=str(tmp_path)), Mode.DIFF)
    text = unified_diff(result, cells=True)
    assert "torchfix-codemods: cell" not in text
    assert "torchfix-codemods-magic" not in text
    body = text.split("\n", 2)[2]
    assert body == ("## cell 2\n"
                    "@@ -1,3 +1,3 @@ TFC001 (safe)\n"
                    " !nvidia-smi\n"
                    "-net.load_state_dict(torch.load('m.pt', map_location='cpu'))\n"
                    "+net.load_state_dict(torch.load('m.pt', map_location='cpu', weights_only=True))\n"
                    " print(net)\n")


def test_piped_diff_with_notebooks_and_spaces_applies_with_git_and_patch(tmp_path: Path) -> None:
    """The README's promise: `fix --diff | git apply` works, notebooks and odd names included
    (a `## cell` line made git reject the patch; a name with a space needs a tab after it)."""
    work = tmp_path / "work"
    (work / "my dir").mkdir(parents=True)
    (work / "my dir" / "nb one.ipynb").write_text(json.dumps(_notebook(*NOTEBOOK_CELLS),
                                                             indent=1) + "\n")
    (work / "my dir" / "plain file.py").write_text(
        "import torch\nsd = torch.load('m.pt', map_location='cpu')\n")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    diff = subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--diff", "."],
                          cwd=work, capture_output=True, text=True).stdout
    assert "--- a/my dir/nb one.ipynb\t\n+++ b/my dir/nb one.ipynb\t\n" in diff
    assert "@@ cell 2: TFC001 (safe)\n" in diff and "## cell" not in diff
    subprocess.run(["git", "apply", "--check", "-"], cwd=work, input=diff, text=True,
                   check=True)
    if shutil.which("patch"):
        subprocess.run(["patch", "-p1", "--dry-run"], cwd=work, input=diff, text=True,
                       check=True, capture_output=True)
    subprocess.run(["git", "apply", "-"], cwd=work, input=diff, text=True, check=True)
    fixed = subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--diff", "."],
                           cwd=work, capture_output=True, text=True)
    # The applied patch was the whole fix: nothing is left to change (a finding whose fix is
    # unsafe remains, so the exit code is still 1).
    assert fixed.stdout == "" and fixed.stderr.startswith("Would fix 0 finding(s)")


def test_two_rules_on_one_call_label_only_that_hunk(tmp_path: Path) -> None:
    # TFC001 and TFC002 both rewrite the same call, so the engine applies one of them in a
    # second round, on the first one's output; its lines are carried back to the original.
    source = ("import torch\nimport torch.nn.functional as F\n\n\n"
              "def restore(model, path):\n    model.load_state_dict(torch.load(path))\n\n\n"
              "def unrelated():\n    return 1\n\n\ndef gate(x):\n    return F.upsample(x, scale_factor=2)\n")
    (tmp_path / "m.py").write_text(source)
    assert hunk_headers(str(tmp_path / "m.py")) == [
        "@@ -3,7 +3,7 @@ TFC001 (safe), TFC002 (safe)", "@@ -11,4 +11,4 @@ TFC402 (safe)"]


# A decorator added to a function and a `.data` fixed eight lines below it: two hunks.
DECORATED_AND_RENAMED = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 2)


def evaluate(loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)
        pred = out.argmax(1)
        correct += (pred == y).sum().item()
    print("cached", torch.cuda.memory_cached())
    return correct
"""


def test_a_fix_that_replaces_a_whole_function_labels_only_the_lines_it_changes(
        tmp_path: Path) -> None:
    # issue 21: TFC202 replaces the whole `def` (to add its decorator), so every hunk inside
    # the function was put down to it too, `.data` hunk twenty lines below included. (A `.data`
    # read inside the function is quiet now that it runs under the decorator's no_grad: a
    # rename of another rule stands in for it.)
    (tmp_path / "e.py").write_text(DECORATED_AND_RENAMED)
    assert hunk_headers(str(tmp_path / "e.py")) == [
        "@@ -4,6 +4,7 @@ TFC202 (safe)", "@@ -11,5 +12,5 @@ TFC406 (safe)"]


def test_a_notebook_hunk_names_the_codes_of_its_own_lines_not_of_its_whole_cell(
        tmp_path: Path) -> None:
    # issue 21: a piped notebook diff labelled each JSON hunk with every code of its cell,
    # so the decorator's hunk also said the code of the other edit (and its safety) and the reverse.
    (tmp_path / "nb.ipynb").write_text(json.dumps(_notebook(DECORATED_AND_RENAMED), indent=1))
    headers = hunk_headers(str(tmp_path / "nb.ipynb"))
    assert [header.split("@@")[-1] for header in headers] == [
        " cell 1: TFC202 (safe)", " cell 1: TFC406 (safe)"]


def test_a_notebook_hunk_names_only_the_cells_whose_changed_lines_it_holds(
        tmp_path: Path) -> None:
    # Found reviewing howardyclo/pytorch-seq2seq-example's notebook: a JSON hunk was put down
    # to every changed cell that had *any* line (changed or not) inside the hunk's changed
    # text, or a shorter line ending like one of them (`    with torch.no_grad():` inside
    # `            with torch.no_grad():`), so one edit named cells it never touched.
    first = "import torch\nimport torch.nn.functional as F\n\n\ndef up(x):\n" \
            "    return F.upsample(x, scale_factor=2)\n"
    second = "x = 2\nF\nscale_factor=2\n\n\n\n\n\n\ny = F.upsample(x, scale_factor=3)\n"
    (tmp_path / "nb.ipynb").write_text(json.dumps(_notebook(first, second), indent=1))
    headers = hunk_headers(str(tmp_path / "nb.ipynb"))
    assert [header.split("@@")[-1] for header in headers] == [
        " cell 1: TFC402 (safe)", " cell 2: TFC402 (safe)"], headers
