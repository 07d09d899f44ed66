"""What code scanning and pull-request annotations receive: SARIF's rule descriptions and
URIs, notebooks located by cell, and levels that tell errors, findings and remarks apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from torchfix_codemods.rules.registry import rule_by_code

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "import torchvision.transforms as transforms\nimport torch\nx = torch.ger(a, b)\n"
NOTEBOOK = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
                      {"cell_type": "code", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": ["import torch\n", "\n", "y = torch.ger(a, b)\n"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def check(cwd: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "torchfix_codemods", "check", "--no-cache",
                           "--select", "ALL", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120).stdout


def _files(tmp_path: Path) -> None:
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "a%b.py").write_text(SOURCE)
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))


def test_sarif_rules_have_full_descriptions_and_plain_help(tmp_path: Path) -> None:
    _files(tmp_path)
    run = json.loads(check(tmp_path, "--format", "sarif", "my dir", "nb.ipynb"))["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"TFC406", "TFC409"}
    documentation = rule_by_code("TFC406").documentation()
    rule = rules["TFC406"]
    assert rule["fullDescription"]["text"].startswith(
        "Finds calls (and imports) of torch functions that are removed or deprecated")
    assert rule["help"]["markdown"] == documentation
    text = rule["help"]["text"]
    assert "`" not in text and "\n#" not in text and "](" not in text
    assert "helpUri" not in rule  # no published documentation to point at


def test_sarif_uris_are_encoded_and_notebook_results_name_the_cell(tmp_path: Path) -> None:
    _files(tmp_path)
    absolute = str(tmp_path / "my dir" / "a%b.py")
    run = json.loads(check(tmp_path, "--format", "sarif", "my dir", absolute, "nb.ipynb"))["runs"][0]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]]
    assert "my%20dir/a%25b.py" in uris
    assert "file://" + str(tmp_path).replace(" ", "%20") + "/my%20dir/a%25b.py" in uris
    [cell] = [r for r in run["results"] if r["locations"][0]["physicalLocation"][
        "artifactLocation"]["uri"] == "nb.ipynb"]
    assert "region" not in cell["locations"][0]["physicalLocation"]
    assert cell["message"]["text"].startswith("cell 2, line 3: `torch.ger` is deprecated")
    assert cell["properties"]["cell"] == 2 and cell["properties"]["lineInCell"] == 3
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"TFC406": "warning", "TFC409": "note"}


def test_github_annotations_levels_and_cells(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "broken.py").write_text("def f(:\n")
    lines = check(tmp_path, "--format", "github", "my dir", "nb.ipynb", "broken.py").splitlines()
    assert lines == [
        "::error title=TFC000 syntax-error,file=broken.py,line=1,col=7,endLine=1,endColumn=7::"
        + lines[0].split("::", 2)[2],
        "::notice title=TFC409 torch-internals-and-hints,file=my dir/a%25b.py,line=1,col=1,"
        "endLine=1,endColumn=44::`import torchvision.transforms as transforms` is `from "
        "torchvision import transforms` (style only, no fix: the same module)",
        "::warning title=TFC406 removed-or-deprecated-function,file=my dir/a%25b.py,line=3,"
        "col=5,endLine=3,endColumn=20::`torch.ger` is deprecated: `torch.outer` is the same "
        "function",
        "::warning title=TFC406 removed-or-deprecated-function (cell 2%2C line 3),"
        "file=nb.ipynb::`torch.ger` is deprecated: `torch.outer` is the same function",
    ]
