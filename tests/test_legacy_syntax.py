"""Parse repair of ``async=`` keyword arguments (TFC004), tested once for all files.

The repair is an engine step before parsing (``legacy_syntax``): the repaired
text goes through every rule and the same validation, a file that still does
not parse keeps its bytes and gets TFC000, and ``check``/``fix`` report and write
it like any other fix, for ``.py`` files and notebooks alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import findings, fix_bytes
from typer.testing import CliRunner

from torchfix_codemods.catalog import resolve_selection
from torchfix_codemods.cli import app
from torchfix_codemods.legacy_syntax import repair

runner = CliRunner()
DEFAULT = sorted(resolve_selection(None, (), ()))

OLD = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "x = torch.randn(4)\n"
    "y = x.to('cpu', async=True)  # the 0.4 spelling\n"
    "z = torch.zeros(4); z.copy_(y, async=True)\n"
    "w = x.type(torch.DoubleTensor, async=True)\n"
    "loss = F.mse_loss(y, z)\n"
    "print(loss.data[0], w.dtype)\n"
)


def test_check_reports_every_rename_and_the_rest_of_the_file() -> None:
    found = findings(OLD, DEFAULT)
    repairs = [(f.line, f.column) for f in found if f.code == "TFC004"]
    assert repairs == [(4, 17), (5, 32), (6, 32)]
    assert all(f.fix is not None and f.fix.safety.value == "safe" and not f.fix.applied
               for f in found if f.code == "TFC004")
    # The file parses once repaired: the other rules see it (TFC105 at the original column).
    index = [f for f in found if f.code == "TFC105"]
    assert [(f.line, f.column) for f in index] == [(8, 7)]
    assert "TFC000" not in {f.code for f in found}


def test_fix_writes_the_repair_and_the_other_fixes_and_the_result_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.py"
    path.write_text(OLD)
    assert subprocess.run([sys.executable, str(path)], capture_output=True).returncode != 0
    result = runner.invoke(app, ["fix", str(path)])
    assert result.exit_code == 0, result.output
    fixed = path.read_text()
    assert fixed == OLD.replace("async=", "non_blocking=").replace(".data[0]", ".item()")
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "0.0 torch.float64"
    again = runner.invoke(app, ["fix", str(path)])
    assert again.exit_code == 0 and path.read_text() == fixed


def test_repair_alone_is_written_and_bytes_elsewhere_survive() -> None:
    # latin-1 cookie, CRLF, a comment and a string that say `async=` are kept byte for byte.
    source = ("# -*- coding: latin-1 -*-\r\n"
              "import torch\r\n"
              "note = 'caf\xe9: x.cuda(async=True)'  # async=True in a comment\r\n"
              "t = torch.ones(1).to('cpu', async = True)\r\n")
    data = source.encode("latin-1")
    result = fix_bytes(data, ["TFC004"])
    assert result.new_bytes == source.replace("async = True)\r\n", "non_blocking = True)\r\n") \
        .encode("latin-1")


@pytest.mark.parametrize("source", [
    # Still broken after the repair: a Python 2 print.
    "import torch\nx = torch.ones(1).cuda(async=True)\nprint 'x'\n",
    # A parameter of a definition, not an argument of a call.
    "import torch\ndef cuda(self, async=False):\n    return self\n",
    # An argument of a function whose new name is unknown.
    "import torch\nresult = pool.apply(f, async=True)\n",
    # `.cuda` called on a call's result, but with the keyword in an inner bracket of another call.
    "import torch\nx = t.cuda(send(async=True))\n",
    # The line asks for no TFC004.
    "import torch\nx = torch.ones(1).to('cpu', async=True)  # noqa: TFC004\n",
])
def test_a_file_the_repair_cannot_make_parse_keeps_its_bytes_and_gets_tfc000(source: str) -> None:
    result = fix_bytes(source.encode(), DEFAULT, unsafe=True)
    assert result.new_bytes is None and result.fixed is None
    codes = [f.code for f in result.findings]
    assert codes == ["TFC000"], result.findings


def test_a_file_that_parses_is_never_repaired() -> None:
    # `async=` inside strings only: tokens of a file that parses are never touched.
    source = "import torch\ncode = 'x.cuda(async=True)'\nprint(code)\n"
    assert repair(source, "case.py") is None
    assert fix_bytes(source.encode(), DEFAULT, unsafe=True).new_bytes is None


def test_any_selection_reports_a_file_that_does_not_parse(tmp_path: Path) -> None:
    """Issue 24 item 8: ``--select TFC301`` must not print "All checks passed" for it."""
    path = tmp_path / "old.py"
    path.write_text("import torch\nmodel = torch.nn.DataParallel(net).cuda(async=True)\n")
    before = path.read_bytes()
    result = runner.invoke(app, ["check", "--select", "TFC301", str(path)])
    assert result.exit_code == 1
    assert "old.py:2:" in result.output and "TFC000" in result.output
    assert "TFC004, not selected here, repairs it" in result.output
    assert "All checks passed" not in result.output
    fixed = runner.invoke(app, ["fix", "--select", "TFC301", str(path)])
    assert fixed.exit_code == 1 and path.read_bytes() == before
    ignored = runner.invoke(app, ["check", "--select", "TFC301", "--ignore", "TFC000", str(path)])
    assert "TFC000" not in ignored.output


def test_notebook_cells_are_repaired_in_place(tmp_path: Path) -> None:
    cells = ["import torch\nx = torch.randn(2)\n", "y = x.to('cpu', async=True)\nprint(y)\n"]
    document = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": c.splitlines(keepends=True),
                   "outputs": [], "execution_count": None} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(document, indent=1) + "\n")
    check = runner.invoke(app, ["check", str(path)])
    assert f"{path}:cell 2:1:17: TFC004" in check.output, check.output
    assert runner.invoke(app, ["fix", str(path)]).exit_code == 0
    after = json.loads(path.read_text())
    assert after["cells"][0] == document["cells"][0]
    assert "".join(after["cells"][1]["source"]) == "y = x.to('cpu', non_blocking=True)\nprint(y)\n"


def test_columns_of_the_repaired_text_map_back_to_the_original_line() -> None:
    original = "y = x.to('cpu', async=True); z = x.to('cpu', async=True); w = 1\n"
    repaired = repair("import torch\n" + original, "case.py")
    assert repaired is not None
    new_line = repaired.text.splitlines()[1]
    for name in ("y", "z", "w"):
        column = new_line.index(f"{name} =") + 1
        assert repaired.original_column(2, column) == original.index(f"{name} =") + 1


# Reduced from a knowledge-distillation trainer (haitongli/knowledge-distillation-pytorch
# at 9937528f, train.py and utils.py): the file that saves the checkpoint is torch 0.3 code
# (`async=True`), the load is in a helper of another file.
SAVES_THROUGH_A_HELPER = (
    "import torch\n"
    "import utils\n"
    "model = torch.nn.Linear(2, 2)\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "x = torch.randn(3, 2).to('cpu', async=True)\n"
    "utils.save_checkpoint({'epoch': 1, 'state_dict': model.state_dict(),\n"
    "                       'optim_dict': optimizer.state_dict()}, checkpoint='runs')\n"
)
LOADS_IN_A_HELPER = (
    "import os\n"
    "import torch\n"
    "def save_checkpoint(state, checkpoint):\n"
    "    filepath = os.path.join(checkpoint, 'last.pth.tar')\n"
    "    torch.save(state, filepath)\n"
    "def load_checkpoint(checkpoint, model, optimizer=None):\n"
    "    checkpoint = torch.load(checkpoint, map_location='cpu')\n"
    "    model.load_state_dict(checkpoint['state_dict'])\n"
    "    if optimizer:\n"
    "        optimizer.load_state_dict(checkpoint['optim_dict'])\n"
    "    return checkpoint\n"
)


def test_the_index_reads_a_repaired_file_as_the_engine_does_so_fix_is_idempotent(
        tmp_path: Path) -> None:
    """What the saving file writes is known before its repair is written, not only after:
    one ``fix`` gives the load its ``weights_only=True`` and a second changes nothing (it
    used to add it only on the second run, once the first had made train.py parse)."""
    (tmp_path / "train.py").write_text(SAVES_THROUGH_A_HELPER)
    (tmp_path / "utils.py").write_text(LOADS_IN_A_HELPER)
    first = runner.invoke(app, ["fix", "--unsafe-fixes", "--select", "ALL",
                                str(tmp_path)])
    assert first.exit_code in (0, 1), first.output
    assert "non_blocking=True" in (tmp_path / "train.py").read_text()
    loads = (tmp_path / "utils.py").read_text()
    assert "torch.load(checkpoint, map_location='cpu', weights_only=True)" in loads
    after_first = {p.name: p.read_bytes() for p in tmp_path.glob("*.py")}
    second = runner.invoke(app, ["fix", "--unsafe-fixes", "--select", "ALL",
                                 str(tmp_path)])
    assert second.exit_code in (0, 1), second.output
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.py")} == after_first
