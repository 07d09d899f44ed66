"""Projects whose scripts import a folder put on ``sys.path`` at run time (issue 21, heldout4's
microsoft/human-pose-estimation.pytorch: ``import _init_paths`` adds ``lib/``), and what a
checkpoint holds when it is unpacked from a helper or built from a star-imported class.

The project index resolves such imports by the one run file whose path ends with the dotted
name; what it still cannot resolve is the project's own code that no rewrite may assume
harmless (TFC301 withholds its migration and says why).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_project_facts import project as _project

from torchfix_codemods.analysis.project.summary import summarize
from torchfix_codemods.analysis.project.values import Item
from torchfix_codemods.verify.fixtures import load_project
from torchfix_codemods.verify.harness import fix_project

FIXTURES = Path(__file__).parent / "fixtures"




POSE = {
    "tools/train.py": """
        import _init_paths
        from core.function import validate
        from core.config import get_model_name
        from tqdm import tqdm
    """,
    "lib/core/function.py": "def validate(loader):\n    return 0.0\n",
    "lib/utils/utils.py": "def save_checkpoint(states, path):\n    pass\n",
}


def test_a_dotted_import_resolves_to_the_one_run_file_its_path_ends_with(tmp_path: Path) -> None:
    index = _project(tmp_path, POSE)
    view = index.view(str(tmp_path / "tools/train.py"))
    assert view.defined_in_run("core.function.validate") == str(tmp_path / "lib/core/function.py")
    # lib/ is a sys.path folder of train.py: its other files are of the program too
    assert index.sys_path_folders(view.file) == (str(tmp_path / "lib"),)


def test_project_code_the_index_cannot_resolve_is_named_with_its_folder(tmp_path: Path) -> None:
    view = _project(tmp_path, POSE).view(str(tmp_path / "tools/train.py"))
    why = view.unresolved_project_code("core.config.get_model_name")
    assert why is not None and "`core`" in why and "lib/core/" in why
    assert view.unresolved_project_code("core.function.validate") is None  # resolved
    assert view.unresolved_project_code("tqdm.tqdm") is None  # not the project's
    assert view.unresolved_project_code("torch.save") is None


def test_a_dotted_name_two_run_files_end_with_stays_unresolved(tmp_path: Path) -> None:
    files = {"app/main.py": "from core.function import run\n",
             "one/core/function.py": "def run():\n    pass\n",
             "two/core/function.py": "def run():\n    pass\n"}
    view = _project(tmp_path, files).view(str(tmp_path / "app/main.py"))
    assert view.defined_in_run("core.function.run") is None
    assert view.unresolved_project_code("core.function.run") is not None


def test_names_unpacked_from_a_helper_are_its_returned_elements(tmp_path: Path) -> None:
    summary = summarize(textwrap.dedent("""
        import torch

        class Voc:
            pass

        def read():
            voc = Voc()
            pairs = [["a", "b"]]
            return voc, pairs

        def prepare(path):
            voc, pairs = read()
            torch.save(voc, path + "voc.tar")
            torch.save(pairs, path + "pairs.tar")
    """))
    saved = {save.obj: save.content for save in summary.saves}
    assert saved["voc"] == Item("@.read", 0, 2)
    assert saved["pairs"] == Item("@.read", 1, 2)
    index = _project(tmp_path, {"load.py": textwrap.dedent("""
        import torch

        class Voc:
            pass

        def read():
            voc = Voc()
            pairs = [["a", "b"]]
            return voc, pairs

        def prepare(path):
            voc, pairs = read()
            torch.save(voc, path + "voc.tar")
    """)})
    indexed = next(iter(index.files.values()))
    content = index.content(Item("@.read", 0, 2), indexed)
    assert content.allow is False and "Voc" in content.what
    assert index.content(Item("@.read", 1, 2), indexed).allow is True
    assert index.content(Item("@.read", 0, 3), indexed).allow is None  # counts disagree


def _messages(folder: str) -> list[str]:
    project = load_project(FIXTURES / folder)
    return [f.message for result in fix_project(project).values() for f in result.findings]


def test_the_migration_names_the_code_it_cannot_see() -> None:
    [message] = [m for m in _messages("TFC301/trap_project_library_on_sys_path")
                 if "DataParallel" in m]
    assert "no automatic rewrite" in message
    assert "`core.config.get_model_name`" in message and "lib/core/" in message


def test_the_migration_names_the_unsharded_loader_another_file_evaluates() -> None:
    [message] = [m for m in _messages("TFC301/trap_project_validation_loader_elsewhere")
                 if "DataParallel" in m]
    assert "`valid_loader`" in message and "`validate`" in message


def test_a_whole_module_into_load_state_dict_is_reported_without_a_fix() -> None:
    project = load_project(FIXTURES / "TFC001/project_whole_model_saved_later_into_load_state_dict")
    findings = [f for r in fix_project(project).values() for f in r.findings if f.code == "TFC001"]
    assert len(findings) == 1
    assert "whole `nn.Module`" in findings[0].message and findings[0].fix is None
