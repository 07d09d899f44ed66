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


# --- TFC303 across files: the dataset class of another file (analysis/project/dataset_workers.py)

PROJECTS = Path(__file__).parent / "fixtures" / "TFC303"


def _project_findings(folder: Path, entry: str = "case.py") -> list:
    from support import options_for

    from torchfix_codemods.engine import process
    from torchfix_codemods.indexing import project_of_bytes
    from torchfix_codemods.source import SourceUnit

    files = {str(p): p.read_bytes() for p in folder.glob("*.py") if ".expected" not in p.name}
    path = str(folder / entry)
    unit = SourceUnit.from_bytes(path, files[path])
    return process(unit, options_for(["TFC303"]), apply_fixes=False,
                   project=project_of_bytes(files).view(path)).findings


def test_a_dataset_of_another_file_doing_cuda_work_is_reported_at_its_loader() -> None:
    [finding] = _project_findings(PROJECTS / "project_dataset_of_another_file")
    assert (finding.code, finding.line, finding.column) == ("TFC303", 12, 10)
    assert finding.message.startswith("CUDA work in `Features.load` (")
    assert "data.py), which this loader's workers run" in finding.message
    assert finding.reason == "`.to()` a CUDA device (`'cuda:0'`)"


def test_datasets_of_another_file_without_visible_cuda_work_in_workers_are_quiet() -> None:
    assert _project_findings(PROJECTS / "trap_project_dataset_of_another_file") == []


def test_what_one_file_says_about_its_datasets() -> None:
    """Base classes of the same file are followed and overridden as Python looks methods up;
    CUDA work in ``__init__`` or in a method the worker methods never call is not theirs."""
    import ast

    from torchfix_codemods.analysis.project.dataset_workers import summarize

    said = summarize(ast.parse((PROJECTS / "project_dataset_of_another_file" / "data.py")
                               .read_text()))
    assert said == {"Features": ["load", "`.to()` a CUDA device (`'cuda:0'`)"]}
    trap = summarize(ast.parse((PROJECTS / "trap_project_dataset_of_another_file" / "data.py")
                               .read_text()))
    assert trap == {"Gpu": ["__getitem__", "`.cuda()`"]}


def test_without_the_other_file_the_dataset_is_unknown(tmp_path: Path) -> None:
    """Checked alone, the loader's file cannot know what the dataset does: no finding, and
    ``NoProject`` answers the registered question with "unknown" without a method of its own."""
    from torchfix_codemods.analysis.project import NO_PROJECT, NoProject

    source = PROJECTS / "project_dataset_of_another_file" / "case.py"
    assert findings(source.read_text(), ["TFC303"]) == []
    assert "dataset_cuda_work" not in vars(NoProject)
    assert NO_PROJECT.dataset_cuda_work("data.Features") is None


def test_an_edit_of_the_dataset_file_invalidates_the_loader_files_cached_result(
        tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from torchfix_codemods.cli import app

    folder = PROJECTS / "project_dataset_of_another_file"
    for name in ("data.py", "case.py"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")

    def check() -> list[str]:
        result = CliRunner().invoke(app, ["check", "--format", "json", "--select", "TFC303",
                                          "--config", str(tmp_path / "pyproject.toml"),
                                          str(tmp_path)])
        assert result.exit_code in (0, 1), result.output
        return [f["path"].rsplit("/", 1)[-1] for f in json.loads(result.output)["findings"]]

    assert check() == ["case.py"]
    assert check() == ["case.py"]  # from the cache
    data = tmp_path / "data.py"
    data.write_text(data.read_text().replace(".to(DEVICE)", ""))
    assert check() == []
