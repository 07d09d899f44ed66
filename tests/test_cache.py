"""The check cache: same answers as a fresh run, invalidated by content and settings."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods.cli import app

runner = CliRunner()
SOURCE = "import torch\nstate = torch.load('m.pt')\n"


def _check(project: Path, *args: str) -> dict:
    result = runner.invoke(app, ["check", "--format", "json", "--config",
                                 str(project / "pyproject.toml"), *args, str(project)])
    return json.loads(result.output)


def test_cached_run_equals_fresh_run_and_follows_edits(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    module = tmp_path / "m.py"
    module.write_text(SOURCE)
    fresh = _check(tmp_path, "--no-cache")
    first = _check(tmp_path)
    assert (tmp_path / ".torchfix_cache").is_dir()
    second = _check(tmp_path)
    assert fresh["findings"] == first["findings"] == second["findings"]
    module.write_text(SOURCE.replace("'m.pt')", "'m.pt', weights_only=True)"))
    edited = _check(tmp_path)
    assert [f["code"] for f in edited["findings"]] == ["TFC002"]
    narrowed = _check(tmp_path, "--select", "TFC001")
    assert narrowed["findings"] == []


def test_cache_directory_ignores_itself_for_git(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    _check(tmp_path)
    assert (tmp_path / ".torchfix_cache" / ".gitignore").read_text().strip().endswith("*")
