"""TFC302 and TFC303 beyond their fixtures: the guard fix proven by running the script under
the spawn start method, and the files where workers never re-run the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import findings

FIXTURE = Path(__file__).parent / "fixtures" / "TFC302" / "spawn_script_module_level.py"
SCRIPT = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "for batch in DataLoader(torch.arange(4.0), num_workers=2):\n    print(batch)\n"
)


def test_guard_fix_makes_a_spawn_script_work(tmp_path: Path) -> None:
    """Before: each spawned worker re-runs the module-level loop and fails while bootstrapping.
    After (the fixture's expected file, which the fixture test checks is what `fix` writes):
    the workers only import the dataset class, and the script prints the sum of squares."""
    runs = {}
    for name, source in (("before", FIXTURE), ("after", FIXTURE.with_suffix(".expected.py"))):
        script = tmp_path / f"{name}.py"
        script.write_bytes(source.read_bytes())
        runs[name] = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    before_out, before_err = runs["before"].communicate(timeout=120)
    after_out, after_err = runs["after"].communicate(timeout=120)
    assert runs["before"].returncode != 0
    assert "bootstrapping phase" in before_err
    assert "exited unexpectedly" in before_err
    assert runs["after"].returncode == 0, after_err
    assert after_out.strip() == f"total {float(sum(i * i for i in range(8)))}"


@pytest.mark.parametrize("path", ["notebook.ipynb", "pkg/__main__.py", "tests/test_loader.py"])
def test_no_finding_where_workers_do_not_rerun_the_script(path: str) -> None:
    # A notebook is never re-run by a worker, Python skips a package's __main__.py when it
    # prepares a spawned child, and pytest imports test files under their own module name.
    assert [f for f in findings(SCRIPT, ["TFC302"], path=path)] == []
    assert [f.code for f in findings(SCRIPT, ["TFC302"], path="train.py")] == ["TFC302"]
