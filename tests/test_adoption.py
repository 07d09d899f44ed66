"""Adopting the tool on a large codebase: ``--add-noqa``, TorchFix's noqa codes,
``--force-exclude``, ``--show-settings``/``--show-files``, ``--config KEY=VALUE``,
``-q``, ``-o``, and the ``gitlab`` and ``junit`` formats."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from tests.support import findings
from torchfix_codemods.add_noqa import add_noqa
from torchfix_codemods.noqa import noqa_lines
from torchfix_codemods.torchfix_codes import TORCHFIX_CODES

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "import torch\n\nx = torch.range(0, 10)\ny = torch.ger(a, b)\n"


def tfc(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "torchfix_codemods", *args], cwd=cwd,
                          input=stdin, capture_output=True, text=True, env=env, timeout=300)


# ------------------------------------------------------------------ add-noqa
def test_noqa_goes_where_it_is_read_and_merges_with_what_is_there() -> None:
    text = ('x = torch.range(0, 10)\n'
            'y = torch.range(0, 10)  # a note\n'
            'z = torch.range(0, 10)  # noqa: TFC002\n'
            'w = f("""a\n'
            'b""", torch.range(0, 1))\n'
            'v = torch.range(0, 1) + \\\n'
            '    1\n'
            'u = torch.range(0, 1)  # noqa\n')
    new, changed = add_noqa(text, [(1, 1, "TFC406"), (2, 2, "TFC406"), (3, 3, "TFC406"),
                                   (4, 5, "TFC406"), (6, 7, "TFC406"), (8, 8, "TFC406"),
                                   (1, 1, "TFC406"), (1, 1, "TFC001")])
    assert new == ('x = torch.range(0, 10)  # noqa: TFC406, TFC001\n'
                   'y = torch.range(0, 10)  # a note  # noqa: TFC406\n'
                   'z = torch.range(0, 10)  # noqa: TFC002, TFC406\n'
                   'w = f("""a\n'
                   'b""", torch.range(0, 1))  # noqa: TFC406\n'
                   'v = torch.range(0, 1) + \\\n'
                   '    1  # noqa: TFC406\n'
                   'u = torch.range(0, 1)  # noqa\n')
    assert changed == 5
    assert add_noqa(new, [(1, 1, "TFC406"), (3, 3, "TFC002")]) == (new, 0)
    silenced = noqa_lines(new)
    assert {"TFC406", "TFC001"} <= silenced[1] and "TFC406" in silenced[7]


@pytest.mark.parametrize("folder", ["tests/parity/corpus", "examples"])
def test_add_noqa_on_a_repository_then_check_passes_and_a_second_run_changes_nothing(
        tmp_path: Path, folder: str) -> None:
    """TorchFix's parity corpus, and examples/: a small training project (eight files, a
    notebook among them) whose findings include cross-file ones and multi-line statements."""
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / folder, corpus)
    before = tfc("check", "--select", "ALL", "--no-cache", ".", cwd=corpus)
    assert before.returncode == 1
    found = int(re.search(r"Found (\d+) finding", before.stdout).group(1))
    assert found > 40
    added = tfc("check", "--add-noqa", "--select", "ALL", ".", cwd=corpus)
    assert added.returncode == 0, added.stdout + added.stderr
    assert re.fullmatch(r"Added \d+ noqa comment\(s\) in \d+ file\(s\)\.\n", added.stdout)
    snapshot = {p: p.read_bytes() for p in corpus.rglob("*") if p.suffix in (".py", ".ipynb")}
    for path in snapshot:
        if path.suffix == ".py":
            compile(snapshot[path], str(path), "exec")
    after = tfc("check", "--select", "ALL", "--no-cache", ".", cwd=corpus)
    assert after.returncode == 0, after.stdout
    # fix honours the same comments: nothing left to rewrite, even with --unsafe-fixes.
    fixed = tfc("fix", "--diff", "--unsafe-fixes", "--select", "ALL", ".", cwd=corpus)
    assert fixed.returncode == 0 and fixed.stdout == "", fixed.stdout
    again = tfc("check", "--add-noqa", "--select", "ALL", ".", cwd=corpus)
    assert again.stdout == "Added 0 noqa comment(s) in 0 file(s).\n"
    assert {p: p.read_bytes() for p in snapshot} == snapshot


def test_add_noqa_in_a_notebook_cell(tmp_path: Path) -> None:
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
                          {"cell_type": "code", "metadata": {}, "execution_count": None,
                           "outputs": [], "source": ["import torch\n", "x = torch.ger(a, b)"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook, indent=1))
    assert tfc("check", "--add-noqa", "nb.ipynb", cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert cells[1]["source"] == ["import torch\n", "x = torch.ger(a, b)  # noqa: TFC406"]
    assert tfc("check", "--no-cache", "nb.ipynb", cwd=tmp_path).returncode == 0


# ------------------------------------------------------------ TorchFix codes
def test_torchfix_noqa_codes_silence_ours() -> None:
    text = ('import torch\n'
            'a = torch.load(p)  # noqa: TOR102\n'
            'b = torch.load(p)  # noqa: TOR101\n')
    codes = [(f.line, f.code) for f in findings(text, ["TFC001"])]
    assert codes == [(3, "TFC001")]


def test_the_torchfix_code_table_is_the_parity_documents() -> None:
    """Every row of docs/torchfix-parity.md's table maps the TorchFix code to the same codes."""
    table = (ROOT / "docs" / "torchfix-parity.md").read_text()
    documented: dict[str, tuple[str, ...]] = {}
    for line in table.splitlines():
        match = re.match(r"\| (TOR\d+)(?: \(main\))? \| [^|]+ \| ([^|]+) \|", line)
        if match and "not covered" not in match.group(2):
            documented[match.group(1)] = tuple(re.findall(r"TFC\d+", match.group(2)))
    assert documented == TORCHFIX_CODES


# ------------------------------------------------- force-exclude, settings, files
@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nextend-exclude = ["third_party/"]\n')
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "x.py").write_text(SOURCE)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(SOURCE)
    return tmp_path


def test_force_exclude_applies_excludes_to_named_files(project: Path) -> None:
    named = tfc("check", "--no-cache", "third_party/x.py", cwd=project)
    assert named.returncode == 1  # named explicitly: checked, as ruff does
    forced = tfc("check", "--no-cache", "--force-exclude", "third_party/x.py", "src/a.py",
                 cwd=project)
    assert forced.returncode == 1
    assert "third_party" not in forced.stdout and "src/a.py:3:5" in forced.stdout
    with_key = tfc("check", "--no-cache", "--config", "force-exclude = true",
                   "third_party/x.py", cwd=project)
    assert with_key.returncode == 0, with_key.stdout


def test_show_files_and_show_settings(project: Path) -> None:
    files = tfc("check", "--show-files", ".", cwd=project)
    assert files.returncode == 0 and files.stdout == "src/a.py\n"
    shown = tfc("check", "--show-settings", "third_party/x.py", "--config",
                'target-torch = "2.4"', cwd=project)
    assert shown.returncode == 0, shown.stderr
    lines = dict(line.split(" = ", 1) for line in shown.stdout.splitlines())
    assert lines["excluded"] == "true" and lines["target-torch"] == '"2.4"'
    assert lines["configuration"] == json.dumps(str(project / "pyproject.toml"))
    assert "TFC406" in json.loads(lines["select"])


def test_config_values_override_the_file_and_bad_ones_are_one_line(project: Path) -> None:
    ignored = tfc("check", "--no-cache", "src", "--config", 'ignore = ["TFC406"]', cwd=project)
    assert ignored.returncode == 0, ignored.stdout
    for value, message in [
        ("colour = 1", "--config: unknown key 'colour'"),
        ("target-torch = 2.x", "--config: 'target-torch = 2.x' is neither a file nor KEY = "
                               "VALUE in TOML"),
        ('target-torch = "two"', "--config: 'target-torch' must look like '2.6'"),
    ]:
        bad = tfc("check", "src", "--config", value, cwd=project)
        assert bad.returncode == 2, value
        assert bad.stderr.startswith("torchfix-codemods: error: " + message), bad.stderr
        assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr


# ------------------------------------------------------------- output options
def test_quiet_drops_the_why_lines_and_output_file_takes_the_report(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('import torch\nm = torch.load("w.pt")\n')
    loud = tfc("check", "--no-cache", "m.py", cwd=tmp_path)
    assert "    why: " in loud.stdout
    quiet = tfc("check", "--no-cache", "-q", "m.py", cwd=tmp_path)
    assert "why:" not in quiet.stdout
    assert quiet.stdout == "".join(
        line for line in loud.stdout.splitlines(keepends=True) if not line.startswith("    why:"))
    to_file = tfc("check", "--no-cache", "-o", "report.json", "--format", "json", "m.py",
                  cwd=tmp_path)
    assert to_file.returncode == 1 and to_file.stdout == ""
    assert json.loads((tmp_path / "report.json").read_text())["findings"]
    nowhere = tfc("check", "-o", "missing/dir/r.txt", "m.py", cwd=tmp_path)
    assert nowhere.returncode == 2
    assert nowhere.stderr.startswith("torchfix-codemods: error: --output-file: cannot write")


def test_gitlab_and_junit_formats(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    gitlab = tfc("check", "--no-cache", "--format", "gitlab", "m.py", cwd=tmp_path)
    issues = json.loads(gitlab.stdout)
    assert [(i["check_name"], i["location"]) for i in issues] == [
        ("TFC406", {"path": "m.py", "lines": {"begin": 3, "end": 3}}),
        ("TFC406", {"path": "m.py", "lines": {"begin": 4, "end": 4}})]
    assert len({i["fingerprint"] for i in issues}) == 2
    # A line added above keeps each issue's fingerprint (it does not hash the line).
    (tmp_path / "m.py").write_text("# header\n" + SOURCE)
    moved = json.loads(tfc("check", "--no-cache", "--format", "gitlab", "m.py",
                           cwd=tmp_path).stdout)
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]
    junit = tfc("check", "--no-cache", "--format", "junit", "m.py", cwd=tmp_path)
    assert junit.returncode == 1
    suite = ElementTree.fromstring(junit.stdout).find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "TFC406 m.py:4:5"
    assert cases[0].find("failure").get("type") == "TFC406"
    (tmp_path / "m.py").write_text("x = 1\n")
    empty = tfc("check", "--no-cache", "--format", "junit", "m.py", cwd=tmp_path)
    assert empty.returncode == 0
    assert ElementTree.fromstring(empty.stdout).find("testsuite").get("tests") == "0"


def test_fix_diff_output_file_takes_the_diff(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    done = tfc("fix", "--diff", "-o", "out.diff", "m.py", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert (tmp_path / "out.diff").read_text().startswith("--- a/m.py\n+++ b/m.py\n@@")
    assert (tmp_path / "m.py").read_text() == SOURCE
