"""Notebooks: one namespace across cells, magics kept, findings at cell lines, cells rewritten."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods.cli import app
from torchfix_codemods.findings import Finding
from torchfix_codemods.notebooks import Notebook
from torchfix_codemods.source import load_source

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


# Reduced from ultralytics/yolov5@5081342f04fb287fc2e5f2b5a4e06752b7937b1c tutorial.ipynb
# (cell 11; classify/ and segment/tutorial.ipynb alike): magics alone in `if` blocks.
LOGGER_CELL = (
    "logger = 'Comet' #@param ['Comet', 'ClearML', 'TensorBoard']\n"
    "\n"
    "if logger == 'Comet':\n"
    "  %pip install -q comet_ml\n"
    "  import comet_ml; comet_ml.init()\n"
    "elif logger == 'TensorBoard':\n"
    "  %load_ext tensorboard\n"
    "  %tensorboard --logdir runs/train\n"
)
MAGIC_IN_BLOCKS = _notebook(
    ("code", LOGGER_CELL),
    ("code", "import torch\nmodel.load_state_dict(torch.load('m.pt'))\n"),
)


def test_magics_alone_in_a_block_parse_and_come_back(tmp_path: Path) -> None:
    """Issue 16 item 5: a valid notebook is checked, never reported as a syntax error."""
    path = _write(tmp_path, MAGIC_IN_BLOCKS)
    check = runner.invoke(app, ["check", "--select", "TFC000,TFC001", str(path)])
    assert "TFC000" not in check.output
    assert f"{path}:cell 2:2:23: TFC001" in check.output
    assert runner.invoke(app, ["fix", "--select", "TFC001", str(path)]).exit_code == 0
    after = json.loads(path.read_text())
    assert after["cells"][0] == MAGIC_IN_BLOCKS["cells"][0]
    assert "weights_only=True" in "".join(after["cells"][1]["source"])


def test_a_magic_in_a_block_follows_the_block_when_a_fix_reindents_it() -> None:
    notebook = Notebook.parse((json.dumps(MAGIC_IN_BLOCKS) + "\n").encode())
    assert "\n  pass  #torchfix-codemods-magic:%pip install -q comet_ml\n" in notebook.text
    compile(notebook.text, "nb", "exec")
    reindented = notebook.text.replace("\n  pass  #torchfix-codemods-magic:%pip",
                                       "\n      pass  #torchfix-codemods-magic:%pip")
    cell = json.loads(notebook.render(reindented))["cells"][0]
    assert "".join(cell["source"]).splitlines()[3] == "      %pip install -q comet_ml"


def test_a_file_that_is_not_a_notebook_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "broken.ipynb: error: not a readable notebook" in result.output
    assert "Traceback" not in result.output


def test_one_loader_reads_notebooks_and_python_files_alike() -> None:
    data = (json.dumps(NOTEBOOK, indent=1) + "\n").encode()
    notebook = load_source("nb.ipynb", data)
    assert notebook.notebook is not None and "torch.load('m.pt')" in notebook.text
    assert notebook.encode(notebook.text) == data
    joined_line = notebook.text.splitlines().index("model.load_state_dict(torch.load('m.pt'))") + 1
    finding = Finding("nb.ipynb", joined_line, 23, joined_line, 40, "TFC001", "n", "m")
    placed = notebook.place(finding)
    assert (placed.cell, placed.line, placed.end_line) == (4, 1, 1)
    module = load_source("m.py", b"\xef\xbb\xbfimport torch\r\n")
    assert module.notebook is None and module.text == "import torch\r\n"
    assert module.place(finding) is finding
    assert module.encode(module.text) == b"\xef\xbb\xbfimport torch\r\n"
