"""Notebooks: one namespace across cells, magics kept, findings at cell lines, cells rewritten."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods.cli import app
from torchfix_codemods.notebooks import Notebook

runner = CliRunner()


def _notebook(*cells: tuple[str, str]) -> dict:
    return {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
             **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


NOTEBOOK = _notebook(
    ("markdown", "# Loading a checkpoint\n"),
    ("code", "%matplotlib inline\nimport torch\n!pip list | grep torch\n"),
    ("code", "%%time\nthis is not python\n"),
    ("code", "model.load_state_dict(torch.load('m.pt'))\nmodel?\n"),
)


def _write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def test_findings_are_reported_at_their_cell_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, NOTEBOOK)
    result = runner.invoke(app, ["check", "--select", "TFC001", str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}:cell 4:1:23: TFC001" in result.output
    document = json.loads(runner.invoke(app, ["check", "--format", "json", "--select", "TFC001",
                                             str(path)]).output)
    assert document["findings"][0]["cell"] == 4 and document["findings"][0]["line"] == 1


def test_fix_rewrites_only_the_changed_cell_and_keeps_magics(tmp_path: Path) -> None:
    path = _write(tmp_path, NOTEBOOK)
    result = runner.invoke(app, ["fix", "--select", "TFC001", str(path)])
    assert result.exit_code == 0, result.output
    after = json.loads(path.read_text())
    assert after["cells"][:3] == NOTEBOOK["cells"][:3]
    assert "".join(after["cells"][3]["source"]) == (
        "model.load_state_dict(torch.load('m.pt', weights_only=True))\nmodel?\n")
    assert runner.invoke(app, ["fix", "--select", "TFC001", str(path)]).exit_code == 0
    assert json.loads(path.read_text()) == after


def test_magic_lines_are_hidden_from_the_parser_and_restored() -> None:
    data = (json.dumps(NOTEBOOK, indent=1) + "\n").encode()
    notebook = Notebook.parse(data)
    assert "this is not python" not in notebook.text
    compile(notebook.text, "nb", "exec")
    assert notebook.render(notebook.text) == data


def test_a_file_that_is_not_a_notebook_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "broken.ipynb: error: not a readable notebook" in result.output
    assert "Traceback" not in result.output
