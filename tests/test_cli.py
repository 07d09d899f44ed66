"""The command line as a user meets it: exit codes, one-line errors, writes, formats."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from torchfix_codemods.cli import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

LOADS = """\
import torch as T
from torch import load as L


def restore(model, path):
    model.load_state_dict(T.load(path))
    model.load_state_dict(L(path))
"""
NOT_TORCH = """\
import pickle

import numpy as np
import yaml


def load(path):
    return pickle.load(open(path, "rb"))


class Store:
    def load(self, path):
        return load(path)

    def all(self, path):
        return self.load(path), np.load(path), yaml.load(path, Loader=yaml.SafeLoader)
"""


def invoke(*args: str, cwd: Path | None = None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(app, list(args))
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "loads.py").write_text(LOADS)
    (tmp_path / "not_torch.py").write_text(NOT_TORCH)
    return tmp_path


def test_check_reports_and_exits_1(project: Path) -> None:
    result = invoke("check", str(project))
    assert result.exit_code == 1, result.output
    assert "loads.py:6:27: TFC001 [*]" in result.output
    assert "loads.py:7:27: TFC001 [*]" in result.output
    assert "not_torch.py" not in result.output
    assert "fixable with `torchfix-codemods fix`" in result.output


def test_clean_tree_exits_0(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import torch\nx = torch.load('a', weights_only=True, "
                                    "map_location='cpu')\n")
    result = invoke("check", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "All checks passed" in result.output


def test_fix_rewrites_aliases_and_leaves_other_loads_alone(project: Path) -> None:
    before = (project / "not_torch.py").read_bytes()
    result = invoke("fix", str(project))
    assert result.exit_code == 0, result.output
    fixed = (project / "loads.py").read_text()
    assert "T.load(path, map_location=\"cpu\", weights_only=True)" in fixed or \
        "T.load(path, weights_only=True, map_location=\"cpu\")" in fixed
    assert "L(path, " in fixed and "weights_only=True" in fixed.split("L(path")[1]
    assert (project / "not_torch.py").read_bytes() == before
    again = invoke("fix", str(project))
    assert again.exit_code == 0 and (project / "loads.py").read_text() == fixed


def test_fix_diff_writes_nothing_and_exits_1(project: Path) -> None:
    before = (project / "loads.py").read_bytes()
    result = invoke("fix", "--diff", str(project))
    assert result.exit_code == 1, result.output
    assert "-    model.load_state_dict(T.load(path))" in result.output
    assert "+    model.load_state_dict(T.load(path, " in result.output
    assert (project / "loads.py").read_bytes() == before


def test_fix_keeps_file_mode_and_leaves_no_temporary_files(project: Path) -> None:
    target = project / "loads.py"
    os.chmod(target, 0o751)
    assert invoke("fix", str(project)).exit_code == 0
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    assert sorted(p.name for p in project.iterdir()) == ["loads.py", "not_torch.py"]


def test_python2_file_is_tfc000_and_others_still_processed(project: Path) -> None:
    legacy = project / "legacy.py"
    legacy.write_bytes(b'import torch\nprint "x", torch.load("m.pt")\n')
    before = legacy.read_bytes()
    result = invoke("fix", str(project))
    assert result.exit_code == 1
    assert "legacy.py:2:1: TFC000" in result.output
    assert "Traceback" not in result.output
    assert legacy.read_bytes() == before
    assert "weights_only=True" in (project / "loads.py").read_text()


def test_json_output_schema(project: Path) -> None:
    result = invoke("check", "--format", "json", str(project))
    assert result.exit_code == 1
    document = json.loads(result.output)
    assert document["version"] == 1
    assert set(document) >= {"version", "findings", "summary"}
    finding = document["findings"][0]
    for key in ("path", "line", "column", "end_line", "end_column", "code", "name", "message",
                "fix", "reason"):
        assert key in finding
    assert finding["fix"]["safety"] in ("safe", "unsafe")
    assert finding["fix"]["applied"] is False
    assert document["summary"]["findings"] == len(document["findings"])


def test_json_after_fix_marks_applied(project: Path) -> None:
    result = invoke("fix", "--format", "json", str(project))
    document = json.loads(result.output)
    assert document["findings"] and all(f["fix"]["applied"] for f in document["findings"])


def test_github_format(project: Path) -> None:
    result = invoke("check", "--format", "github", str(project))
    assert result.output.startswith("::warning title=TFC001")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("check", "does/not/exist"), "does/not/exist: no such file or directory"),
        (("check", "--select", "TFC9"), "unknown rule code or prefix 'TFC9'"),
        (("check", "--ignore", "XYZ1"), "unknown rule code or prefix 'XYZ1'"),
        (("check", "--target-torch", "two"), "'target-torch' must look like '2.6'"),
        (("check", "--format", "xml"), "'format' must be one of"),
        (("explain", "TFC999"), "unknown rule code 'TFC999'"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(project: Path, args, needle) -> None:
    result = invoke(*args, cwd=project)
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('[tool.torchfix-codemods]\nselct = ["TFC001"]\n', "unknown key 'selct'"),
        ('[tool.torchfix-codemods]\nselect = ["TFC123"]\n', "unknown rule code or prefix 'TFC123'"),
        ('[tool.torchfix-codemods]\ntarget-torch = "latest"\n', "'target-torch' must look like"),
        ('[tool.torchfix-codemods]\nunsafe-fixes = "yes"\n', "'unsafe-fixes' must be true or false"),
        ('[tool.torchfix-codemods\n', "invalid TOML"),
    ],
)
def test_bad_config_is_one_line_and_exit_2(project: Path, config: str, needle: str) -> None:
    (project / "pyproject.toml").write_text(config)
    result = invoke("check", ".", cwd=project)
    assert result.exit_code == 2, result.output
    assert needle in result.output and "pyproject.toml" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_config_select_per_file_ignores_and_flags_win(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nselect = ["TFC002"]\n'
        '[tool.torchfix-codemods.per-file-ignores]\n"not_*.py" = ["TFC0"]\n')
    result = invoke("check", ".", cwd=project)
    assert "TFC002" in result.output and "TFC001" not in result.output
    flags = invoke("check", ".", "--select", "TFC001", cwd=project)
    assert "TFC001" in flags.output and "TFC002" not in flags.output
    ignored = invoke("check", ".", "--ignore", "TFC002", cwd=project)
    assert ignored.exit_code == 0, ignored.output


def test_config_flag_pointing_at_a_file_without_our_table_is_exit_2(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.ruff]\nline-length = 99\n')
    result = invoke("check", "--config", "pyproject.toml", ".", cwd=project)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("torchfix-codemods: error: --config: pyproject.toml has no "
                                     "[tool.torchfix-codemods] table")


def test_each_path_is_checked_under_its_own_configuration_in_any_order(tmp_path: Path) -> None:
    """Issue 16 item 7: results must not depend on which path comes first."""
    for name, table in (("lenient", 'select = ["TFC002"]'), ("strict", 'select = ["TFC001"]')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f"[tool.torchfix-codemods]\n{table}\n")
        (tmp_path / name / "m.py").write_text("import torch\nstate = torch.load('m.pt')\n")

    def codes(*paths: str) -> list[tuple[str, str]]:
        output = json.loads(invoke("check", "--no-cache", "--format", "json", *paths,
                                   cwd=tmp_path).output)
        return sorted((Path(f["path"]).parent.name, f["code"]) for f in output["findings"])

    expected = [("lenient", "TFC002"), ("strict", "TFC001")]
    assert codes("lenient", "strict") == codes("strict", "lenient") == expected


def test_per_file_ignores_silence_a_file(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.torchfix-codemods.per-file-ignores]\n"loads.py" = ["TFC001", "TFC002"]\n')
    result = invoke("check", ".", cwd=project)
    assert result.exit_code == 0, result.output


def test_noqa_is_honoured_by_check_and_fix(tmp_path: Path) -> None:
    source = ("import torch\n"
              "a = torch.load('a.pt', map_location='cpu')  # noqa: TFC001\n"
              "b = torch.load('b.pt', map_location='cpu')  # noqa\n")
    (tmp_path / "n.py").write_text(source)
    assert invoke("check", str(tmp_path)).exit_code == 0
    assert invoke("fix", str(tmp_path)).exit_code == 0
    assert (tmp_path / "n.py").read_text() == source


def test_target_torch_withholds_fixes_the_release_lacks(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text("import torch\nsd = torch.load('a.pt', map_location='cpu')\n")
    result = invoke("fix", "--target-torch", "1.12", str(tmp_path))
    assert result.exit_code == 1
    assert "needs torch >= 1.13" in result.output
    assert "weights_only" not in (tmp_path / "old.py").read_text()


def test_unsafe_fixes_only_with_flag(tmp_path: Path) -> None:
    # TFC001's fix is unsafe here: what a.pt holds is not visible in the run.
    source = "import torch\nckpt = torch.load('a.pt', map_location='cpu')\nema = ckpt['ema']\n"
    (tmp_path / "u.py").write_text(source)
    safe = invoke("fix", str(tmp_path))
    assert safe.exit_code == 1 and "[~]" in safe.output
    assert (tmp_path / "u.py").read_text() == source
    unsafe = invoke("fix", "--unsafe-fixes", str(tmp_path))
    assert unsafe.exit_code == 0, unsafe.output
    assert "weights_only=True" in (tmp_path / "u.py").read_text()


def test_rules_and_explain() -> None:
    listing = invoke("rules")
    assert listing.exit_code == 0 and "TFC001" in listing.output and "TFC003" in listing.output
    text = invoke("explain", "tfc001")
    assert text.exit_code == 0
    assert "What it does" in text.output and "Fix safety" in text.output


@pytest.mark.parametrize("command", ["check", "fix", "rules", "explain", "verify"])
def test_every_command_has_help(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.output


def test_module_entry_point_and_version(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "torchfix_codemods", "--version"],
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0 and completed.stdout.startswith("torchfix-codemods ")


def test_the_version_option_fires_only_when_given() -> None:
    """click >= 8.2 under typer < 0.16 hands an option that was not given to its callback as
    a truthy sentinel; the version callback must not take it for ``--version`` (it made every
    command print the version and exit 0, so a ``fix --diff`` gate passed silently)."""
    from torchfix_codemods.cli import _version

    _version(False)
    _version(object())  # click's UNSET, or anything else that is not True
    with pytest.raises(typer.Exit):
        _version(True)


@pytest.mark.parametrize("command", ["migrate", "server"])
def test_the_other_commands_have_help(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.output


def test_piped_rules_and_explain_are_not_wrapped() -> None:
    """Piped into grep or a file, each rule is one whole line and explain's code and URLs
    stay whole (rich wrapped both at 80 columns)."""
    from torchfix_codemods.rules.registry import rule_by_code

    def run(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "torchfix_codemods", *args],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "COLUMNS": "80", "TERM": "xterm"}).stdout

    lines = run("rules").splitlines()
    [line] = [line for line in lines if line.startswith("TFC302 ")]
    assert line.endswith(rule_by_code("TFC302").message)
    assert len(lines) == 1 + len({line.split()[0] for line in lines[1:]})
    explained = run("explain", "TFC001")
    assert "- [pytorch/pytorch#86812: add `weights_only` to `torch.load`]" \
        "(https://github.com/pytorch/pytorch/pull/86812)\n" in explained
    assert rule_by_code("TFC001").documentation().strip() in explained


def test_parallel_run_matches_serial(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"m{i}.py").write_text(LOADS)
    serial = invoke("check", "--format", "json", "--jobs", "1", str(tmp_path))
    parallel = invoke("check", "--format", "json", "--jobs", "2", str(tmp_path))
    assert json.loads(serial.output)["findings"] == json.loads(parallel.output)["findings"]


def test_examples_fix_then_check_leaves_only_findings_without_safe_fix(tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", copy)
    diff = invoke("fix", "--diff", str(copy))
    assert diff.exit_code == 1 and "+++ " in diff.output
    invoke("fix", str(copy))
    after = json.loads(invoke("check", "--format", "json", str(copy)).output)
    assert all(f["fix"] is None or f["fix"]["safety"] != "safe" or f["fix"]["withheld"]
               for f in after["findings"])


def test_sarif_output(project: Path) -> None:
    result = invoke("check", "--format", "sarif", str(project))
    assert result.exit_code == 1
    document = json.loads(result.output)
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["TFC001", "TFC002"]
    first = run["results"][0]
    assert first["ruleId"] == "TFC001"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (6, 27)
    assert first["properties"]["fix"]["safety"] == "safe"
