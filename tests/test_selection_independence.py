"""A rule's findings do not depend on which other rules are selected.

Every fixture folder is checked twice through the command line, as a user runs it: with
only its own rule (``--select CODE``) and with the default selection plus that rule
(``--extend-select CODE``). The rule's findings must be the same in both runs. Engine
policies that read cross-file facts (a compatibility guard reading another file's
torch-version flag) once ran only when a selected rule happened to ask for the project
index, so ``--select TFC401`` rewrote code the default selection left alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods.catalog import SYNTAX_ERROR_CODE, entries_by_code
from torchfix_codemods.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
CODES = sorted(path.name for path in FIXTURES.iterdir()
               if path.is_dir() and path.name in entries_by_code())
runner = CliRunner()


def _findings(code: str, *selection: str) -> list[str]:
    result = runner.invoke(app, ["check", "--no-cache", "--format", "json", "--jobs", "1",
                                 *selection, str(FIXTURES / code)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    # Every field of the finding: where, what, why (the reason), and the fix it offers
    # (tier, description, withheld or not).
    return sorted(json.dumps(f, sort_keys=True) for f in report["findings"] if f["code"] == code)


@pytest.mark.parametrize("code", [c for c in CODES if c != SYNTAX_ERROR_CODE])
def test_a_rule_reports_the_same_alone_and_beside_the_default_rules(code: str) -> None:
    alone = _findings(code, "--select", code)
    beside = _findings(code, "--extend-select", code)
    assert alone == beside


def test_a_version_flag_of_another_file_guards_a_rule_selected_alone(tmp_path: Path) -> None:
    (tmp_path / "flags.py").write_text(
        "import torch\nfrom packaging import version\n\n"
        "LEGACY = version.parse(torch.__version__) < version.parse(\"2.0\")\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom flags import LEGACY\n\nscaler = None\nif LEGACY:\n"
        "    scaler = torch.cuda.amp.GradScaler()\n")
    for selection in (["--select", "TFC401"], []):
        result = runner.invoke(app, ["fix", "--diff", "--jobs", "1", *selection, str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "GradScaler" not in result.stdout
