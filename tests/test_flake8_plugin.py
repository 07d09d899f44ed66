"""The flake8 plugin, run by flake8 itself: its entry point is the one pyproject.toml declares.

flake8 finds plugins through installed distributions' entry points. Where this checkout is
installed with them (``pip install -e .``, as CI does), those run, and they must be exactly
pyproject.toml's ``flake8.extension`` table; otherwise the test writes a distribution record
holding that table onto the path, so what runs is what ``pip install torchfix-codemods``
would register (never both: flake8 would run the plugin twice).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("flake8")
tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the plugin itself needs neither

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ('import torch\n\nx = torch.range(0, 10)\ny = torch.ger(a, b)  # noqa: TFC406\n'
          'z = torch.load("w.pt")  # noqa: TOR102\n')


def _flake8(tmp_path: Path, *args: str,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entries = table["project"]["entry-points"]["flake8.extension"]
    installed = {ep.name: ep.value for ep in entry_points(group="flake8.extension")
                 if ep.name in entries}
    if installed and installed != entries:
        pytest.fail(f"the installed torchfix-codemods declares {installed}, pyproject.toml "
                    f"{entries}: reinstall it (pip install -e .)")
    if not installed:  # not installed with its entry points (an older editable install)
        record = tmp_path / "site" / "torchfix_codemods_plugin-0.dist-info"
        record.mkdir(parents=True, exist_ok=True)
        (record / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: torchfix-codemods-plugin\nVersion: 0\n")
        (record / "entry_points.txt").write_text(
            "[flake8.extension]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path / "site")]))
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=tmp_path, env=env,
                          input=stdin, capture_output=True, text=True, timeout=300)


def test_flake8_reports_our_findings_with_its_noqa(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    done = _flake8(tmp_path, "--select", "TFC", "m.py")
    assert done.returncode == 1, done.stderr
    # TOR102 silences TFC001 only: TFC002 (map_location) stays on line 5.
    assert [line.split(" `")[0] for line in done.stdout.splitlines()] == [
        "m.py:3:5: TFC406", "m.py:5:5: TFC002"], done.stdout
    listed = _flake8(tmp_path, "--version")
    assert "torchfix-codemods" in listed.stdout


def test_flake8_on_stdin_and_with_the_files_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchfix-codemods]\nignore = ["TFC406"]\n')
    done = _flake8(tmp_path, "--select", "TFC", "-", stdin=SOURCE)
    # The configuration's ignore drops TFC406 (line 3); TFC002 is not ignored.
    assert [line.split(" `")[0] for line in done.stdout.splitlines()] == ["stdin:5:5: TFC002"]
