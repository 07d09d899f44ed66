"""Messages a user meets when something is off: each names what and where, with the right exit
code (issue 28: unnamed failures, an empty selection, a float version, code this Python cannot
compile, NO_COLOR)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods.cli import app

ROOT = Path(__file__).resolve().parent.parent
AUTOCAST = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"


def invoke(*args: str, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(old)


def test_fix_diff_names_each_file_it_could_not_process(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(AUTOCAST)
    (tmp_path / "broken.ipynb").write_text("{")
    result = invoke("fix", "--diff", ".", cwd=tmp_path)
    assert result.exit_code == 1
    assert "broken.ipynb: error: not a readable notebook" in result.output
    assert "1 file(s) could not be processed." in result.output
    assert '+with torch.amp.autocast("cuda"):' in result.output


def test_fix_diff_names_each_file_it_could_not_analyse(tmp_path: Path) -> None:
    # Before: "1 finding(s) remaining (TFC000: 1)" and no word of which file has no diff.
    (tmp_path / "good.py").write_text(AUTOCAST)
    (tmp_path / "deep.py").write_text("import torch\nx = " + "[" * 2000 + "]" * 2000 + "\n")
    (tmp_path / "py2.py").write_text('import torch\nprint "x"\n')
    done = subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--diff", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert '+with torch.amp.autocast("cuda"):' in done.stdout
    assert "TFC000" not in done.stdout  # the diff stays a diff `git apply` reads
    named = [line for line in done.stderr.splitlines() if " TFC000 " in line]
    assert named == [
        "deep.py:2:205: TFC000 file cannot be parsed: too many nested parentheses; "
        "file left untouched",
        "py2.py:2:1: TFC000 file cannot be parsed: Missing parentheses in call to 'print'. "
        "Did you mean print(...)?; file left untouched"]
    assert "2 finding(s) remaining (TFC000: 2)." in done.stderr


@pytest.mark.parametrize("command", ["check", "fix"])
@pytest.mark.parametrize("value", ["", " , "])
def test_empty_select_is_a_usage_error(tmp_path: Path, command: str, value: str) -> None:
    (tmp_path / "a.py").write_text(AUTOCAST)
    result = invoke(command, "--select", value, "a.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.output.strip() == ("torchfix-codemods: error: --select: no rule code given "
                                     "(expected codes or prefixes such as TFC001,TFC1, or ALL)")
    assert (tmp_path / "a.py").read_text() == AUTOCAST


def test_empty_select_through_the_fast_check_entry(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(AUTOCAST)
    done = subprocess.run([sys.executable, "-m", "torchfix_codemods", "check", "--select=", "a.py"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--select: no rule code given" in done.stderr
    assert "All checks passed" not in done.stdout


def test_target_torch_as_a_toml_number_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\ntarget-torch = 2.10\n")
    (tmp_path / "a.py").write_text(AUTOCAST)
    result = invoke("check", ".", cwd=tmp_path)
    assert result.exit_code == 2
    assert "'target-torch' must be a quoted string such as \"2.10\", got the TOML number 2.1" \
        in result.output
    assert len(result.output.strip().splitlines()) == 1


NEWER_SYNTAX = "import torch\n\ntype Alias = int\n\nwith torch.cuda.amp.autocast():\n    pass\n"
DEEP = ("import torch\n\nwith torch.cuda.amp.autocast():\n    x = " + "(" * 250 + "1" + ")" * 250
        + "\n")


@pytest.mark.parametrize(("source", "why"), [
    pytest.param(NEWER_SYNTAX, "invalid syntax, line 3", id="3.12-syntax",
                 marks=pytest.mark.skipif(sys.version_info >= (3, 12),
                                          reason="this Python compiles `type X = ...`")),
])
def test_code_this_python_cannot_compile_is_named_as_such(tmp_path: Path, source: str,
                                                          why: str) -> None:
    (tmp_path / "a.py").write_text(source)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    expected = f"fix withheld: Python {version} cannot compile this file as it is ({why})"
    for command in ("check", "fix"):
        result = invoke(command, "a.py", cwd=tmp_path)
        assert result.exit_code == 1, result.output
        assert "TFC401 [!]" in result.output
        assert expected in result.output
        assert "the fixed code" not in result.output
    assert (tmp_path / "a.py").read_text() == source


def test_nesting_this_python_cannot_compile_is_one_syntax_finding(tmp_path: Path) -> None:
    """250 nested brackets: CPython refuses them ("too many nested parentheses") and LibCST's
    parser crashes on deeper ones, so the file is not handed to LibCST at all: one TFC000
    says why, no fix is offered, and nothing blames a fix."""
    (tmp_path / "a.py").write_text(DEEP)
    for command in ("check", "fix"):
        result = invoke(command, "a.py", cwd=tmp_path)
        assert result.exit_code == 1, result.output
        assert "TFC000" in result.output and "too many nested parentheses" in result.output
        assert "TFC401" not in result.output
        assert "the fixed code" not in result.output
    assert (tmp_path / "a.py").read_text() == DEEP


@pytest.mark.parametrize("args", [["check", "a.py"], ["fix", "--diff", "a.py"],
                                  ["explain", "TFC401"], ["rules"]])
def test_no_color_means_no_escape_codes_at_all(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "a.py").write_text(AUTOCAST)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "FORCE_COLOR": "1", "COLUMNS": "120"}
    coloured = subprocess.run([sys.executable, "-m", "torchfix_codemods", *args], cwd=tmp_path,
                              capture_output=True, env=environment)
    plain = subprocess.run([sys.executable, "-m", "torchfix_codemods", *args], cwd=tmp_path,
                           capture_output=True, env={**environment, "NO_COLOR": "1"})
    if args[0] == "check":  # the terminal is simulated: without NO_COLOR, styles are written
        assert b"\x1b[" in coloured.stdout
    assert b"\x1b" not in plain.stdout + plain.stderr
    assert plain.returncode == coloured.returncode
