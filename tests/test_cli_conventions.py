"""ruff's conventions: ``--select ALL``, ``--statistics``, ``--show-fixes``, ``--exit-zero``, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods.catalog import resolve_selection
from torchfix_codemods.cli import app
from torchfix_codemods.rules.registry import all_rules

runner = CliRunner()

LOADS = """\
import torch


def restore(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model.load_state_dict(torch.load(path + ".ema", map_location="cpu"))
    return torch.load(path, weights_only=True)["step"]
"""
LOADER = """\
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=2)
"""
# A finding with no fix: nothing to diff, and still a finding.
SAVE_MODULE = """\
import torch
import torch.nn as nn

model = nn.Linear(2, 2)
torch.save(model, "model.pt")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "loads.py").write_text(LOADS)
    (tmp_path / "loader.py").write_text(LOADER)
    return tmp_path


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_select_all_selects_rules_that_are_off_by_default(project: Path) -> None:
    off = {rule.code for rule in all_rules() if not rule.default_enabled}
    assert off, "the test needs a rule that is off by default"
    assert resolve_selection(("ALL",), (), ()) == frozenset(r.code for r in all_rules())
    assert "TFC410" not in invoke("check", str(project)).output
    assert "TFC410" in invoke("check", "--select", "ALL", str(project)).output
    assert "TFC410" not in invoke("check", "--select", "ALL", "--ignore", "TFC4",
                                  str(project)).output


def test_statistics_counts_per_code(project: Path) -> None:
    result = invoke("check", "--statistics", str(project / "loads.py"))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "2\tTFC001\t[*] torch-load-without-weights-only",
        "1\tTFC002\t[~] torch-load-without-map-location",
    ]
    document = json.loads(invoke("check", "--statistics", "--format", "json",
                                 str(project / "loads.py")).output)
    assert document == [
        {"code": "TFC001", "name": "torch-load-without-weights-only", "count": 2, "fix": "safe"},
        {"code": "TFC002", "name": "torch-load-without-map-location", "count": 1, "fix": "unsafe"},
    ]


def test_statistics_after_fix_counts_what_remains(project: Path) -> None:
    result = invoke("fix", "--statistics", str(project / "loads.py"))
    assert result.exit_code == 1
    assert result.output.splitlines() == ["1\tTFC002\t[~] torch-load-without-map-location"]


def test_statistics_refuses_formats_it_cannot_print(project: Path) -> None:
    result = invoke("check", "--statistics", "--format", "sarif", str(project))
    assert result.exit_code == 2
    assert "--statistics: supports text and json output" in result.output


def test_show_fixes_says_what_each_fix_does(project: Path) -> None:
    checked = invoke("check", "--show-fixes", str(project / "loads.py"))
    assert "    fix (safe): add `weights_only=True`" in checked.output
    assert '    fix (unsafe): add `map_location="cpu"`' in checked.output
    fixed = invoke("fix", "--show-fixes", str(project / "loads.py"))
    path = str(project / "loads.py")
    assert f"Fixed 2 finding(s):\n- {path}:\n    2 \u00d7 TFC001 " \
        "(torch-load-without-weights-only, safe)\n" in fixed.output


def test_exit_zero_keeps_findings_and_exits_0(project: Path) -> None:
    checked = invoke("check", "--exit-zero", str(project / "loads.py"))
    assert checked.exit_code == 0 and "TFC001" in checked.output
    diff = invoke("fix", "--diff", "--exit-zero", str(project / "loads.py"))
    assert diff.exit_code == 0 and "+++ " in diff.output
    assert invoke("check", "--exit-zero", "--select", "TFC9", str(project)).exit_code == 2


def test_fix_diff_exits_1_while_findings_remain_even_with_an_empty_diff(tmp_path: Path) -> None:
    # README's exit-code table: 1 while findings remain or the diff is not empty.
    (tmp_path / "save.py").write_text(SAVE_MODULE)
    result = invoke("fix", "--diff", str(tmp_path))
    assert result.exit_code == 1
    assert "+++ " not in result.output and "TFC003: 1" in result.output
    json_result = invoke("fix", "--diff", "--format", "json", str(tmp_path))
    assert json_result.exit_code == 1
    (tmp_path / "save.py").write_text("import torch\n")
    assert invoke("fix", "--diff", str(tmp_path)).exit_code == 0
