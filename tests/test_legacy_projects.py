"""Issue 22: real torch 0.3-era training scripts run on today's torch after one command.

Each folder of ``tests/legacy`` holds a script reduced from a real repository (its header
names the repository, commit and path, and what the reduction changed: small synthetic
data on the CPU; the training and evaluation code is as written then) and the same script
migrated by hand (``migrated_by_hand.py``), the reference. For each: the original fails on
the installed torch, ``fix --unsafe-fixes`` makes it run, the rules named here are the ones
whose fixes did it, and the fixed script prints exactly the losses the reference prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import shutil
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from torchfix_codemods.cli import app

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "legacy"


@dataclass(frozen=True)
class Project:
    folder: str
    error: str
    """The last line of the original's traceback on today's torch (a prefix of it)."""
    rules: frozenset[str]
    """The codes whose applied fixes the run needs, and no others."""
    losses: str
    """A regex whose groups are the numbers compared with the reference."""


PROJECTS = [
    # pytorch/examples mnist: `loss.data[0]`, `Variable(..., volatile=True)`, `size_average`.
    # (`output.data`/`target.data` in `test()` stay: the function gets `no_grad`, and a batch
    # has no history, so those reads provably work.)
    Project("mnist", "IndexError: invalid index of a 0-dim tensor",
            frozenset({"TFC105", "TFC106", "TFC202", "TFC403"}),
            r"Loss: ([\d.]+)|Average loss: ([\d.]+), Accuracy: (\d+)"),
    # pytorch/examples dcgan: `errD.data[0]`, Variable wrappers, `.data.normal_` init.
    Project("dcgan", "IndexError: invalid index of a 0-dim tensor",
            frozenset({"TFC102", "TFC103", "TFC105", "TFC106"}),
            r"Loss_D: ([\d.]+) Loss_G: ([\d.]+) D\(x\): ([\d.]+) D\(G\(z\)\): ([\d.]+) / ([\d.]+)"),
    # yunjey/pytorch-tutorial language model: `clip_grad_norm`, `loss.data[0]`, Variable.
    Project("language_model", "IndexError: invalid index of a 0-dim tensor",
            frozenset({"TFC103", "TFC105", "TFC106", "TFC406"}),
            r"Loss: ([\d.]+), Perplexity: +([\d.]+)"),
    # pytorch/examples imagenet: `target.cuda(async=True)` (a SyntaxError since Python 3.7),
    # `loss.data[0]` of a criterion passed in, `volatile`, and `accuracy`'s `.view(-1)` of a
    # transposed comparison (it raises since torch 0.4 made `eq` keep the layout).
    Project("imagenet", "SyntaxError: invalid syntax",
            frozenset({"TFC004", "TFC102", "TFC105", "TFC106", "TFC109", "TFC202"}),
            r"Loss ([\d.]+) \(([\d.]+)\)\tPrec@1 ([\d.]+) \(([\d.]+)\)\tPrec@5 ([\d.]+) \(([\d.]+)\)"),
]


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    """The last line of the traceback, as Python prints it."""


def _run(script: Path) -> Outcome:
    """Run ``script`` as ``__main__`` in this process (torch is already imported: a few
    seconds saved per run), restoring what a reduced script patches (``.cuda``)."""
    saved = (torch.Tensor.cuda, torch.nn.Module.cuda)
    output = io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(script.parent)
        with contextlib.redirect_stdout(output), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(script), run_name="__main__")
    except Exception as error:  # noqa: BLE001 - how the script fails is the measurement
        last = "".join(traceback.format_exception_only(type(error), error)).strip()
        return Outcome(1, output.getvalue(), last.splitlines()[-1])
    finally:
        os.chdir(cwd)
        torch.Tensor.cuda, torch.nn.Module.cuda = saved
    return Outcome(0, output.getvalue(), "")


def _numbers(pattern: str, output: str) -> list[str]:
    return [value for match in re.finditer(pattern, output) for value in match.groups()
            if value is not None]


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.folder)
def test_fix_makes_the_legacy_script_run_with_the_reference_losses(project: Project,
                                                                     tmp_path: Path) -> None:
    original = LEGACY / project.folder / "original.py"
    script = tmp_path / "train.py"
    shutil.copyfile(original, script)

    before = _run(script)
    assert before.returncode != 0, before.stdout
    assert before.stderr.startswith(project.error), before.stderr

    fixed = CliRunner().invoke(app, ["fix", "--unsafe-fixes", "--format", "json", str(script)])
    report = json.loads(fixed.stdout)
    applied = {f["code"] for f in report["findings"] if f["fix"] and f["fix"]["applied"]}
    assert applied == project.rules, report["findings"]

    after = _run(script)
    assert after.returncode == 0, after.stderr
    reference = _run(LEGACY / project.folder / "migrated_by_hand.py")
    assert reference.returncode == 0, reference.stderr
    expected = _numbers(project.losses, reference.stdout)
    assert expected, reference.stdout
    assert _numbers(project.losses, after.stdout) == expected


def test_what_is_left_for_a_person_is_left_and_named(tmp_path: Path) -> None:
    """spro/practical-pytorch's char-RNN: `fix` removes its Variables, but the script still
    stops where torch 0.4 changed meaning, not spelling: `target[c]` of a 1-D tensor is 0-dim
    now (a 1-element tensor in 0.3), and CrossEntropyLoss wants a batch of targets. No rule
    rewrites that; the README's "Migrating old code" section lists it for a person."""
    script = tmp_path / "train.py"
    shutil.copyfile(LEGACY / "char_rnn" / "original.py", script)
    before = _run(script)
    assert "Expected input batch_size (1) to match target batch_size (0)" in before.stderr
    fixed = CliRunner().invoke(app, ["fix", "--unsafe-fixes", str(script)])
    assert fixed.exit_code in (0, 1), fixed.output
    assert "Variable" not in script.read_text()
    after = _run(script)
    assert "Expected input batch_size (1) to match target batch_size (0)" in after.stderr
