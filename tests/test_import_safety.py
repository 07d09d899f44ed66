"""Import safety (issue 9 item 4): a fix names things with what is bound where it edits.

The engine-wide form of this guarantee runs every rule's examples inside a function
(``test_lazy_imports_stay_lazy`` in test_engine_guarantees.py). These are the shapes
behind it: the bundled ``examples/model.py``, whose safe fix once turned a lazy
``import torchvision.models as models`` into a module-level ``import torchvision``, and
the order of bindings inside one scope.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from support import findings, fixed_text

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.edits.references import Imports, ImportUnavailable

ROOT = Path(__file__).resolve().parent.parent

_WITHOUT_TORCHVISION = (
    "import sys\n"
    "sys.modules['torchvision'] = None  # `import torchvision` now raises ImportError\n"
    "import model\n"
    "net = model.build_model('smallcnn')\n"
    "try:\n"
    "    model.build_model('resnet18')\n"
    "except ImportError:\n"
    "    print('resnet18 needs torchvision')\n"
    "print(type(net).__name__)\n"
)


def test_fixed_examples_model_imports_without_torchvision(tmp_path: Path) -> None:
    """The safe fix of examples/model.py keeps torchvision lazy: the module imports, and
    builds its own models, where torchvision is not installed."""
    shutil.copy(ROOT / "examples" / "model.py", tmp_path / "model.py")
    source = (tmp_path / "model.py").read_text(encoding="utf-8")
    fixed = fixed_text(source, ["TFC408", "TFC409"])
    assert "weights=models.ResNet18_Weights.IMAGENET1K_V1" in fixed
    module_level_imports = [
        cst.Module([]).code_for_node(small) for line in cst.parse_module(fixed).body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body if isinstance(small, (cst.Import, cst.ImportFrom))]
    assert not [code for code in module_level_imports if "torchvision" in code]
    (tmp_path / "model.py").write_text(fixed, encoding="utf-8")
    completed = subprocess.run([sys.executable, "-c", _WITHOUT_TORCHVISION], cwd=tmp_path,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["resnet18 needs torchvision", "SmallCNN"]


def _reference(source: str, qualified: str, anchor: str, module: str | None = None) -> str:
    """How ``Imports`` names ``qualified`` at the first call whose code is ``anchor``."""
    tree = cst.parse_module(source)
    names = NameIndex.build(tree)
    calls: list[cst.Call] = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if cst.Module([]).code_for_node(node) == anchor:
                calls.append(node)

    tree.visit(_Find())
    reference = Imports(names).reference(qualified, calls[0], module)
    needs = reference.needs
    where = "" if needs is None else (
        f" + import {needs.module}" + (" (lazy)" if needs.after is not None else " (module)"))
    return reference.code + where


def test_a_name_bound_later_in_the_scope_is_not_reused() -> None:
    source = ("import torchvision\n\n"
              "def build():\n"
              "    net = torchvision.models.resnet18(pretrained=True)\n"
              "    import torchvision.models as models\n"
              "    return net, models\n")
    assert _reference(source, "torchvision.models.ResNet18_Weights",
                      "torchvision.models.resnet18(pretrained=True)") == \
        "torchvision.models.ResNet18_Weights"


def test_a_name_bound_in_one_branch_is_not_reused_in_another() -> None:
    source = ("def build(arch):\n"
              "    if arch == 'a':\n"
              "        import torchvision.models as models\n"
              "    else:\n"
              "        net = f(pretrained=True)\n")
    with pytest.raises(ImportUnavailable, match="only lazily or conditionally"):
        _reference(source, "torchvision.models.ResNet18_Weights", "f(pretrained=True)")


def test_an_import_is_added_after_the_functions_own_lazy_import() -> None:
    source = ("def build():\n"
              "    from torchvision.models import resnet18\n"
              "    return resnet18(pretrained=True)\n")
    assert _reference(source, "torchvision.models.ResNet18_Weights",
                      "resnet18(pretrained=True)", "torchvision") == \
        "torchvision.models.ResNet18_Weights + import torchvision (lazy)"
    fixed = fixed_text(source, ["TFC408"])
    assert fixed == ("def build():\n"
                     "    from torchvision.models import resnet18\n"
                     "    import torchvision\n"
                     "    return resnet18(weights=torchvision.models.ResNet18_Weights."
                     "IMAGENET1K_V1)\n")


def test_a_package_imported_only_lazily_elsewhere_gets_no_module_level_import() -> None:
    source = ("def helper():\n"
              "    import torch\n"
              "    return torch\n\n\n"
              "def evaluate(model, x):\n"
              "    model.eval()\n"
              "    return model(x)\n")
    with pytest.raises(ImportUnavailable, match="only lazily or conditionally"):
        _reference(source, "torch.no_grad", "model(x)")


def test_a_conditional_module_level_import_is_not_made_eager() -> None:
    """``try: import torch`` guards a missing package: the decorator a fix would add runs
    when the module is imported, so it cannot use ``torch``, and no eager import is added."""
    source = ("try:\n"
              "    import torch\n"
              "except ImportError:\n"
              "    pass\n\n\n"
              "def evaluate(model, x):\n"
              "    model.eval()\n"
              "    return model(x)\n")
    assert fixed_text(source, ["TFC202"], unsafe=True) == source
    [finding] = findings(source, ["TFC202"])
    assert "no fix: 'torch' is imported here only on some paths" in finding.message


def test_standard_library_and_eager_packages_still_get_a_module_level_import() -> None:
    source = "from torch import nn\n\n\ndef f():\n    return g(1)\n"
    assert _reference(source, "torch.no_grad", "g(1)") == "torch.no_grad + import torch (module)"
    assert _reference(source, "os.environ", "g(1)", "os") == "os.environ + import os (module)"
