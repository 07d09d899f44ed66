"""The project index: per-file summaries (stdlib ``ast``) combined into cross-file facts.

Each test writes a small project to a temporary folder, summarises its files and asks the
index what a rule would ask, from the file a rule would be looking at.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from torchfix_codemods.analysis.project.index import FileFacts, ProjectIndex
from torchfix_codemods.analysis.project.summary import (
    FileSummary,
    site_of_text,
    summarize,
)


def project(tmp_path: Path, files: dict[str, str], pairable: list[str] | None = None,
            ) -> ProjectIndex:
    summaries = {}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        summaries[str(path)] = summarize(path.read_text(encoding="utf-8"))
    allowed = None if pairable is None else {str(tmp_path / p): True for p in pairable}
    return ProjectIndex.build(summaries, pairable=allowed)


def view(index: ProjectIndex, tmp_path: Path, name: str) -> FileFacts:
    return index.view(str(tmp_path / name))


MODELS = """\
    import torch
    from torch import nn

    class Base(nn.Module):
        pass

    class Net(Base):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

    class Plain(object):
        pass

    class Mystery(SomethingUnimported):
        pass

    def build():
        return Net()

    def loader(dataset):
        return torch.utils.data.DataLoader(dataset)

    def features(model, x):
        return model(x).detach().cpu()

    def zeros():
        return torch.zeros(3)

    def weights():
        return torch.zeros(3, requires_grad=True).cpu()
"""


# --- modules and classes ------------------------------------------------------------------------

def test_module_names_follow_packages_and_src_layouts(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "src/pkg/__init__.py": "", "src/pkg/models.py": "x = 1\n",
        "src/pkg/sub/__init__.py": "", "src/pkg/sub/train.py": "y = 2\n",
        "scripts/run.py": "z = 3\n",
    })
    facts = view(index, tmp_path, "scripts/run.py")
    assert facts.module_name(str(tmp_path / "src/pkg/models.py")) == "pkg.models"
    assert facts.module_name(str(tmp_path / "src/pkg/sub/train.py")) == "pkg.sub.train"
    assert facts.module_name(str(tmp_path / "src/pkg/__init__.py")) == "pkg"
    assert facts.module_name(str(tmp_path / "scripts/run.py")) == "run"


def test_classes_are_modules_transitively_across_files(tmp_path: Path) -> None:
    index = project(tmp_path, {"models.py": MODELS, "train.py": "from models import Net\n"})
    facts = view(index, tmp_path, "train.py")
    net = facts.class_facts("models.Net")
    assert net is not None and net.is_module is True and net.is_dataset is False
    assert net.qualified == "models.Net" and net.path.endswith("models.py")
    plain = facts.class_facts("models.Plain")
    assert plain is not None and plain.is_module is False
    mystery = facts.class_facts("models.Mystery")
    assert mystery is not None and mystery.is_module is None  # a base the run cannot see
    assert facts.class_facts("models.Nope") is None
    assert facts.class_facts("torch.nn.Linear") is None  # not a class of the run


def test_relative_imports_and_re_exports_resolve(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "bert/__init__.py": "",
        "bert/model/__init__.py": "from .bert import BERT\n",
        "bert/model/bert.py": "import torch.nn as nn\nclass BERT(nn.Module):\n    pass\n",
        "bert/trainer/__init__.py": "",
        "bert/trainer/pretrain.py": "from ..model import BERT\n",
    })
    facts = view(index, tmp_path, "bert/trainer/pretrain.py")
    found = facts.class_facts("..model.BERT")
    assert found is not None and found.is_module is True
    assert found.qualified == "bert.model.bert.BERT"
    # a relative import above the top package means nothing
    assert facts.class_facts("....model.BERT") is None


def test_same_module_name_in_sibling_folders_is_told_apart_by_import_root(
        tmp_path: Path) -> None:
    index = project(tmp_path, {
        "a/models.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
        "b/models.py": "class Net:\n    pass\n",
        "a/train.py": "from models import Net\n",
        "b/train.py": "from models import Net\n",
    })
    a_net = view(index, tmp_path, "a/train.py").class_facts("models.Net")
    b_net = view(index, tmp_path, "b/train.py").class_facts("models.Net")
    assert a_net is not None and a_net.is_module is True
    assert b_net is not None and b_net.is_module is False


def test_a_directory_without_init_is_a_namespace_package(tmp_path: Path) -> None:
    """uoguelph-mlrg/Cutout@287f934 train.py: ``from model.resnet import ResNet18`` with no
    ``model/__init__.py`` (PEP 420): the file at ``model/resnet.py`` under the script's import
    root, whose own module name is ``resnet``."""
    index = project(tmp_path, {
        "model/resnet.py": "import torch.nn as nn\nclass ResNet(nn.Module):\n    pass\n"
                           "def ResNet18(num_classes=10):\n    return ResNet()\n",
        "train.py": "from model.resnet import ResNet18\n",
    })
    facts = view(index, tmp_path, "train.py")
    found = facts.class_facts("model.resnet.ResNet")
    assert found is not None and found.is_module is True
    returned = facts.returns("model.resnet.ResNet18")
    assert returned is not None and returned.kind == "module"
    # a name no file of that path defines stays unknown
    assert facts.class_facts("model.nope.ResNet") is None


def test_a_script_imports_its_siblings_from_its_own_directory(tmp_path: Path) -> None:
    """abhiskk/fast-neural-style@df08530 neural_style/neural_style.py: a script in a package
    directory runs with its own directory on ``sys.path``, so ``from transformer_net import
    TransformerNet`` is the sibling file (module ``neural_style.transformer_net``). A file of
    another directory that says the same finds nothing there."""
    index = project(tmp_path, {
        "neural_style/__init__.py": "",
        "neural_style/transformer_net.py": "import torch.nn as nn\n"
                                           "class TransformerNet(nn.Module):\n    pass\n",
        "neural_style/neural_style.py": "from transformer_net import TransformerNet\n",
        "other/run.py": "from transformer_net import TransformerNet\n",
    })
    found = view(index, tmp_path, "neural_style/neural_style.py").class_facts(
        "transformer_net.TransformerNet")
    assert found is not None and found.is_module is True
    assert found.qualified == "neural_style.transformer_net.TransformerNet"
    assert view(index, tmp_path, "other/run.py").class_facts(
        "transformer_net.TransformerNet") is None


def test_function_returns(tmp_path: Path) -> None:
    index = project(tmp_path, {"models.py": MODELS, "train.py": "import models\n"})
    facts = view(index, tmp_path, "train.py")
    built = facts.returns("models.build")
    assert built is not None and built.kind == "module" and built.built_from == "models.Net"
    loader = facts.returns("models.loader")
    assert loader is not None and loader.kind == "dataloader"
    for name, kind in (("features", "detached-cpu-tensor"), ("zeros", "detached-cpu-tensor"),
                       ("weights", "cpu-tensor")):
        found = facts.returns(f"models.{name}")
        assert found is not None and found.kind == kind, name
    assert facts.returns("models.Net") is None


def test_returned_tensors_are_on_the_cpu_only_where_the_factory_says_so(tmp_path: Path) -> None:
    """A ``*_like`` factory and ``as_tensor`` keep their argument's device (a CUDA tensor's
    copy is on the GPU); the typed constructors and ``range`` make CPU tensors; a view or a
    cast of a CPU tensor stays one. The summary reads these from the vocabulary's sets."""
    index = project(tmp_path, {"ops.py": (
        "import torch\n"
        "def like(x):\n    return torch.zeros_like(x)\n"
        "def ones(x):\n    return torch.ones_like(x)\n"
        "def converted(x):\n    return torch.as_tensor(x)\n"
        "def typed():\n    return torch.DoubleTensor(3)\n"
        "def counted():\n    return torch.range(0, 3)\n"
        "def narrowed(x):\n    return x.detach().cpu().narrow(0, 0, 1).short()\n"
        "def described(x):\n    return x.detach().cpu().type()\n"), "train.py": "import ops\n"})
    facts = view(index, tmp_path, "train.py")
    kinds = {name: getattr(facts.returns(f"ops.{name}"), "kind", None)
             for name in ("like", "ones", "converted", "typed", "counted", "narrowed", "described")}
    assert kinds == {"like": None, "ones": None, "converted": None,
                     "typed": "detached-cpu-tensor", "counted": "detached-cpu-tensor",
                     "narrowed": "detached-cpu-tensor", "described": None}


def test_dataset_subclasses(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "data.py": "from torch.utils.data import Dataset\nclass Pairs(Dataset):\n    pass\n",
        "train.py": "from data import Pairs\n",
    })
    pairs = view(index, tmp_path, "train.py").class_facts("data.Pairs")
    assert pairs is not None and pairs.is_dataset is True and pairs.is_module is False


MODE_MODELS = """\
    import torch.nn as nn
    import torch.nn.functional as F


    class Net(nn.Module):  # pytorch/examples super_resolution/model.py: eval() changes nothing
        def __init__(self, upscale_factor):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)


    class Dropper(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).to("cpu")


    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Dropper()


    class Child(Dropper):
        pass


    class Functional(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.5, self.training)


    class Given(nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body


    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 8, 1, batch_first=True)


    class StackedDropout(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 8, 2, True, True, 0.3)
"""


def test_whether_eval_changes_a_class_of_another_file(tmp_path: Path) -> None:
    index = project(tmp_path, {"models.py": MODE_MODELS, "train.py": "import models\n"})
    facts = view(index, tmp_path, "train.py")

    def mode(name: str) -> bool | None:
        found = facts.class_facts(f"models.{name}")
        assert found is not None
        return found.changes_with_mode

    assert mode("Net") is False
    assert mode("Dropper") is True  # a Dropout inside a Sequential, through .to(...)
    assert mode("Wrapper") is True  # a submodule built from a class of the run
    assert mode("Child") is True  # a base of the run
    assert mode("Functional") is True  # F.dropout and .training
    assert mode("Given") is None  # a module passed in: cannot tell
    assert mode("Recurrent") is False  # no dropout between stacked layers
    assert mode("StackedDropout") is True  # dropout passed by position


# --- version flags ----------------------------------------------------------------------------

FLAGS = """\
    import operator
    import importlib.metadata
    import torch
    from packaging import version
    from packaging.version import parse
    from lightning_utilities.core.imports import RequirementCache, compare_version

    _TORCH_GREATER_EQUAL_2_2 = compare_version("torch", operator.ge, "2.2.0")
    _TORCHMETRICS_1 = compare_version("torchmetrics", operator.ge, "1.0.0")
    _TORCH_2_1 = RequirementCache("torch>=2.1")
    _NUMPY = RequirementCache("numpy")
    TORCH_2 = version.parse(torch.__version__) >= version.parse("2.0")
    OLD = torch.__version__ < "1.13"
    TORCH_VERSION = tuple(int(x) for x in torch.__version__.split(".")[:2])
    MODERN = TORCH_VERSION >= (2, 0)
    EITHER = _TORCH_GREATER_EQUAL_2_2 or OLD
    NEITHER = not EITHER
    torch_version = parse(importlib.metadata.version("torch"))
    IS_WINDOWS = False
    NAME = "torch"

    def compare_versions(library_or_version, operation, requirement_version):
        return operation(library_or_version, parse(requirement_version))

    def is_torch_version(operation, wanted):
        return compare_versions(torch_version, operation, wanted)

    def helper():
        return 3
"""


@pytest.mark.parametrize("name", [
    "_TORCH_GREATER_EQUAL_2_2", "_TORCH_2_1", "TORCH_2", "OLD", "MODERN", "EITHER", "NEITHER",
    "is_torch_version",
])
def test_version_flags(tmp_path: Path, name: str) -> None:
    index = project(tmp_path, {"pkg/__init__.py": "", "pkg/imports.py": FLAGS,
                               "pkg/use.py": "from .imports import _TORCH_2_1\n"})
    assert view(index, tmp_path, "pkg/use.py").version_flag(f".imports.{name}") is True


@pytest.mark.parametrize("name", ["_TORCHMETRICS_1", "_NUMPY", "IS_WINDOWS", "NAME",
                                  "TORCH_VERSION", "torch_version", "helper"])
def test_names_that_are_not_version_flags(tmp_path: Path, name: str) -> None:
    index = project(tmp_path, {"pkg/__init__.py": "", "pkg/imports.py": FLAGS,
                               "pkg/use.py": "x = 1\n"})
    assert view(index, tmp_path, "pkg/use.py").version_flag(f"pkg.imports.{name}") is False


def test_version_flags_through_imports_and_re_exports(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "pkg/__init__.py": "from .imports import _TORCH_2_1\n",
        "pkg/imports.py": FLAGS,
        "pkg/versions.py": "from .imports import torch_version\nfrom packaging.version import "
                           "parse\nNEW = torch_version >= parse('2.4')\n",
        "user.py": "import pkg\n",
    })
    facts = view(index, tmp_path, "user.py")
    assert facts.version_flag("pkg._TORCH_2_1") is True
    assert facts.version_flag("pkg.versions.NEW") is True
    assert facts.version_flag("pkg.nothing_here") is None
    assert facts.version_flag("elsewhere.FLAG") is None


# --- checkpoints --------------------------------------------------------------------------------

def saved(index: ProjectIndex, tmp_path: Path, name: str, path_text: str, function: str = ""):
    site = site_of_text(path_text)
    assert site is not None
    return view(index, tmp_path, name).saved_content(function, site)


def test_a_numpy_array_saved_in_another_file_is_not_allow_listed(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "generate.py": """\
            import numpy as np
            import torch
            x = np.empty((3, 4), 'int64')
            data = np.sin(x / 1.0).astype('float64')
            torch.save(data, open('traindata.pt', 'wb'))
        """,
        "train.py": "import torch\ndata = torch.load('traindata.pt')\n",
    })
    content = saved(index, tmp_path, "train.py", "'traindata.pt'")
    assert content is not None
    assert content.allow_listed is False and content.cpu_only is True
    assert content.what == "a numpy array" and content.where.endswith("generate.py")
    assert content.matched_by == "path"


def test_state_dicts_tensors_and_primitives_are_allow_listed(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "models.py": MODELS,
        "train.py": """\
            import os
            import torch
            from models import Net
            model = Net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            def save(out_dir, epoch):
                checkpoint = {"model": model.state_dict(), "opt": opt.state_dict(),
                              "epoch": 3, "name": "net", "mask": torch.zeros(3)}
                torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
        """,
        "sample.py": """\
            import os
            import torch
            ckpt_path = os.path.join("out", "ckpt.pt")
            checkpoint = torch.load(ckpt_path)
        """,
    })
    content = saved(index, tmp_path, "sample.py", "ckpt_path")
    assert content is not None and content.allow_listed is True
    assert content.cpu_only is None  # a model's state dict may hold CUDA tensors


def test_a_whole_module_saved_elsewhere_is_not_allow_listed(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "models.py": MODELS,
        "train.py": "import torch\nfrom models import Net\nnet = Net()\n"
                    "torch.save(net, 'net.pt')\n",
        "predict.py": "import torch\nnet = torch.load('net.pt')\n",
    })
    content = saved(index, tmp_path, "predict.py", "'net.pt'")
    assert content is not None and content.allow_listed is False and content.whole_module
    assert "models.Net" in content.what


def test_saved_content_follows_a_helper_parameter_to_its_callers(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "utils.py": """\
            import torch
            def save_checkpoint(filepath, obj):
                torch.save(obj, filepath)
            def load_checkpoint(filepath, device):
                return torch.load(filepath, map_location=device)
        """,
        "train.py": """\
            from utils import save_checkpoint
            from models import Net
            out = "cp"
            steps = 1
            generator = Net()
            save_checkpoint(f"{out}/g_{steps:08d}", {"generator": generator.state_dict(),
                                                    "steps": steps})
        """,
        "models.py": MODELS,
    })
    content = saved(index, tmp_path, "utils.py", "filepath", "load_checkpoint")
    assert content is not None and content.allow_listed is True
    assert content.matched_by == "path"  # the same parameter name in the same file


def test_an_in_memory_buffer_of_an_arbitrary_object_is_a_transport(tmp_path: Path) -> None:
    index = project(tmp_path, {"xla.py": """\
        import io
        import torch
        def broadcast(obj, src=0):
            buffer = io.BytesIO()
            torch.save(obj, buffer)
            data = send(buffer.getbuffer())
            buffer = io.BytesIO(data)
            return torch.load(buffer)
    """})
    content = saved(index, tmp_path, "xla.py", "buffer", "broadcast")
    assert content is not None and content.transport and content.allow_listed is None


def test_path_keys_from_argparse_defaults_and_constants(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "consts.py": "SCALER_NAME = 'scaler.pt'\n",
        "save.py": """\
            import torch
            from consts import SCALER_NAME
            def save(scaler, out):
                torch.save(scaler.state_dict(), out.joinpath(SCALER_NAME))
        """,
        "load.py": """\
            import argparse, os
            import torch
            from consts import SCALER_NAME
            p = argparse.ArgumentParser()
            p.add_argument('--resume', default='runs/scaler.pt')
            args = p.parse_args()
            a = torch.load(os.path.join('x', SCALER_NAME))
            b = torch.load(args.resume)
        """,
    })
    for text in ("os.path.join('x', SCALER_NAME)", "args.resume"):
        content = saved(index, tmp_path, "load.py", text)
        assert content is not None and content.allow_listed is True
        assert content.cpu_only is True  # a grad scaler's state holds Python numbers


def test_same_file_names_in_unrelated_folders_do_not_match(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "a/gen.py": "import numpy as np\nimport torch\ntorch.save(np.ones(3), 'model.pt')\n",
        "b/load.py": "import torch\nm = torch.load('model.pt')\n",
    })
    assert saved(index, tmp_path, "b/load.py", "'model.pt'") is None


def test_unknown_path_falls_back_to_the_same_files_saves(tmp_path: Path) -> None:
    index = project(tmp_path, {"main.py": """\
        import torch
        import numpy as np
        def save_checkpoint(state, filename):
            torch.save(state, filename)
        def resume(args):
            return torch.load(args.resume)
        save_checkpoint(np.zeros(3), 'checkpoint.pth.tar')
    """})
    content = saved(index, tmp_path, "main.py", "args.resume", "resume")
    assert content is not None and content.matched_by == "file"
    assert content.allow_listed is False


# --- whole-module pairs -------------------------------------------------------------------------

PAIR = {
    "models.py": MODELS,
    "train.py": "import torch\nfrom models import Net\nmodel = Net()\n"
                "torch.save(model, 'model.pt')\n",
    "predict.py": "import torch\nmodel = torch.load('model.pt', weights_only=False)\n",
}


def test_a_whole_module_pair_is_offered_to_both_sides(tmp_path: Path) -> None:
    index = project(tmp_path, {**PAIR, "predict.py": "import torch\nfrom models import Net\n"
                               "model = torch.load('model.pt', weights_only=False)\n"})
    site = site_of_text("'model.pt'")
    assert site is not None
    saving = view(index, tmp_path, "train.py").module_pair("", site)
    loading = view(index, tmp_path, "predict.py").module_pair("", site)
    assert saving is not None and saving.role == "save"
    assert loading is not None and loading.role == "load"
    assert loading.qualified == "models.Net" and loading.arguments == "" and \
        loading.target == "model"
    assert saving.other_path.endswith("predict.py") and loading.other_path.endswith("train.py")


@pytest.mark.parametrize("change", [
    {"other.py": "import torch\nm = torch.load('model.pt')\n"},  # two loads: which one?
    {"predict.py": "import torch\nmodel = torch.load('model.pt')  # noqa: TFC003\n"},
    {"predict.py": "import torch\nprint(torch.load('model.pt'))\n"},  # not assigned
    {"predict.py": "import torch\nmodel = torch.load('model.pt'); model.eval()\n"},  # shared line
    {"predict.py": "import torch\nNet = None\nmodel = torch.load('model.pt')\n"},  # name taken
    {"predict.py": "import torch\ndef f(Net):\n    model = torch.load('model.pt')\n"},
    {"predict.py": "import torch\nfrom other import Net\nmodel = torch.load('model.pt')\n"},
    {"train.py": "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    pass\n"
                 "model = Net()\ntorch.save(model, 'model.pt')\n"},  # class of the script
    {"train.py": "import torch\nfrom models import Net\nmodel = Net(size)\n"
                 "torch.save(model, 'model.pt')\n"},  # arguments not literal
])
def test_no_pair_when_both_sides_cannot_be_rewritten_together(
        tmp_path: Path, change: dict[str, str]) -> None:
    index = project(tmp_path, {**PAIR, **change})
    site = site_of_text("'model.pt'")
    assert site is not None
    assert view(index, tmp_path, "train.py").module_pair("", site) is None
    assert view(index, tmp_path, "predict.py").module_pair("", site) is None


def test_no_pair_when_the_rule_does_not_run_on_one_side(tmp_path: Path) -> None:
    index = project(tmp_path, PAIR, pairable=["train.py", "models.py"])
    site = site_of_text("'model.pt'")
    assert site is not None
    assert view(index, tmp_path, "train.py").module_pair("", site) is None


def test_no_pair_when_the_sides_have_different_fix_policies(tmp_path: Path) -> None:
    index = project(tmp_path, PAIR)
    index.pairable = {str(tmp_path / "train.py"): True, str(tmp_path / "predict.py"): False}
    site = site_of_text("'model.pt'")
    assert site is not None
    assert view(index, tmp_path, "train.py").module_pair("", site) is None


# --- callers ------------------------------------------------------------------------------------

def test_module_arguments_from_callers_in_other_files(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "models.py": MODELS,
        "utils.py": "def evaluate(m, loader, steps=3):\n    return m(loader)\n",
        "train.py": "from models import Net, build\nfrom utils import evaluate\nnet = Net()\n"
                    "evaluate(net, [1])\nevaluate(build().cuda(), [2], steps=4)\n",
    })
    found = view(index, tmp_path, "utils.py").module_arguments("evaluate")
    assert found is not None and set(found) == {"m"}
    assert "models.Net" in found["m"]


def test_calls_and_classes_through_star_imports(tmp_path: Path) -> None:
    """AnubhavGupta3377/Text-Classification-Models-Pytorch@8571fe6 Model_TextCNN/train.py:
    ``from utils import *`` and ``from model import *``, then ``model = TextCNN(...)`` and
    ``evaluate_model(model, ...)``: both names arrive through star imports, and the call
    reaches utils.py's function with a module. A later star import of a module outside the
    run may bind the same name: then nothing is known."""
    index = project(tmp_path, {
        "models.py": MODELS,
        "utils.py": "import torch\ndef evaluate(m, loader):\n    return m(loader)\n",
        "train.py": "from utils import *\nfrom models import *\nnet = Net()\n"
                    "evaluate(net, [1])\n",
        "other.py": "from utils import *\nfrom models import *\nfrom numpy import *\n"
                    "evaluate(Net(), [1])\n",
        "helpers.py": "def evaluate(m, loader):\n    return m(loader)\n",
        "notebook_like.py": "from helpers import *\nevaluate(print, [1])\n",
    })
    found = view(index, tmp_path, "utils.py").module_arguments("evaluate")
    assert found is not None and "models.Net" in found["m"]
    callers = view(index, tmp_path, "utils.py").caller_files("evaluate")
    assert [Path(c).name for c in callers] == ["train.py"]
    # a star-imported function called with something else is no module argument
    assert view(index, tmp_path, "helpers.py").module_arguments("evaluate") is None
    callers = view(index, tmp_path, "helpers.py").caller_files("evaluate")
    assert [Path(c).name for c in callers] == ["notebook_like.py"]


def test_no_module_arguments_when_one_caller_passes_something_else(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "models.py": MODELS,
        "utils.py": "def evaluate(m):\n    return m(1)\n",
        "a.py": "from models import Net\nfrom utils import evaluate\nevaluate(Net())\n",
        "b.py": "from utils import evaluate\nevaluate({'x': 1})\n",
    })
    assert view(index, tmp_path, "utils.py").module_arguments("evaluate") is None


def test_a_function_handed_to_apply_in_another_file_receives_submodules(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "utils.py": "def init_weights(m, std=0.02):\n    m.weight.data.normal_(0, std)\n",
        "models.py": "import torch.nn as nn\nfrom utils import init_weights\n"
                     "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                     "        self.convs = nn.ModuleList([nn.Conv1d(1, 1, 1)])\n"
                     "        self.convs.apply(init_weights)\n",
    })
    found = view(index, tmp_path, "utils.py").module_arguments("init_weights")
    assert found is not None and set(found) == {"m"}
    assert "`.apply()`" in found["m"] and "models.py" in found["m"]


def test_a_name_bound_twice_passes_a_module_only_when_every_binding_is_one(tmp_path: Path) -> None:
    utils = "def evaluate(m):\n    return m(1)\n"
    rebuilt = ("from models import Net, build\nfrom utils import evaluate\nmodel = Net()\n"
               "model = build()\nevaluate(model)\n")
    index = project(tmp_path, {"models.py": MODELS, "utils.py": utils, "train.py": rebuilt})
    found = view(index, tmp_path, "utils.py").module_arguments("evaluate")
    assert found is not None and "models.Net" in found["m"]
    mixed = rebuilt.replace("model = build()", "model = {'x': 1}")
    index = project(tmp_path, {"models.py": MODELS, "utils.py": utils, "train.py": mixed})
    assert view(index, tmp_path, "utils.py").module_arguments("evaluate") is None


def test_a_notebook_reaches_its_own_functions(tmp_path: Path) -> None:
    """A notebook has no module name, but `model = load()` of a function of its own cells
    still returns what `load` returns (the summary text stands for the joined cells)."""
    index = project(tmp_path, {
        "models.py": MODELS,
        "utils.py": "def evaluate(m):\n    return m(1)\n",
        "demo.ipynb": "from models import Net\nfrom utils import evaluate\n"
                      "def load():\n    return Net()\nmodel = Net()\nmodel = load()\n"
                      "evaluate(model)\n",
    })
    found = view(index, tmp_path, "utils.py").module_arguments("evaluate")
    assert found is not None and "models.Net" in found["m"] and "demo.ipynb" in found["m"]


# --- fingerprints and plain data ----------------------------------------------------------------

def test_fingerprint_follows_what_a_file_can_read(tmp_path: Path) -> None:
    before = project(tmp_path, PAIR)
    again = project(tmp_path, PAIR)
    assert before.fingerprint(str(tmp_path / "train.py")) == \
        again.fingerprint(str(tmp_path / "train.py"))
    # a class hierarchy changes in models.py: train.py's analysis may change
    changed = project(tmp_path, {**PAIR, "models.py": MODELS.replace("class Base(nn.Module)",
                                                                      "class Base(object)")})
    assert changed.fingerprint(str(tmp_path / "train.py")) != \
        before.fingerprint(str(tmp_path / "train.py"))
    # predict.py gains a second load of the file: the pair is gone for train.py
    second = project(tmp_path, {**PAIR, "predict.py": PAIR["predict.py"] +
                                "other = torch.load('model.pt')\n"})
    assert second.fingerprint(str(tmp_path / "train.py")) != \
        before.fingerprint(str(tmp_path / "train.py"))
    # lines move in predict.py: nothing train.py reads changes
    moved = project(tmp_path, {**PAIR, "predict.py": "\n\n# moved\n" + PAIR["predict.py"]})
    assert moved.fingerprint(str(tmp_path / "train.py")) == \
        before.fingerprint(str(tmp_path / "train.py"))


def test_summaries_are_plain_json(tmp_path: Path) -> None:
    summary = summarize(textwrap.dedent(MODELS) + "import torch\ntorch.save(build(), 'm.pt')\n")
    data = json.loads(json.dumps(summary.to_json()))
    assert FileSummary.from_json(data) == summary


def test_positional_tuples_survive_the_summary_cache() -> None:
    """A returned tuple keeps its elements in their places through the JSON cache (the
    `ordered` mark included), so `metrics[2]` reads the same third value on a warm run."""
    summary = summarize(textwrap.dedent(FCN_UTILS))
    returns = summary.functions["label_accuracy_score"].returns
    assert returns.ordered and len(returns.items) == 4  # type: ignore[union-attr]
    data = json.loads(json.dumps(summary.to_json()))
    assert FileSummary.from_json(data) == summary


def test_a_file_that_does_not_parse_has_an_empty_summary() -> None:
    summary = summarize("def broken(:\n")
    assert not summary.parsed and not summary.classes and not summary.saves


def test_site_ids_ignore_formatting() -> None:
    assert site_of_text("os.path.join( a,'b.pt' )") == site_of_text("os.path.join(a, 'b.pt')")
    assert site_of_text("os.path.join(\n    a,  # dir\n    'b.pt',\n)") == \
        site_of_text("os.path.join(a, 'b.pt')")
    assert site_of_text("(") is None


def test_index_paths_are_independent_of_the_working_directory(tmp_path: Path,
                                                               monkeypatch) -> None:
    index = project(tmp_path, PAIR)
    monkeypatch.chdir(tmp_path)
    relative = index.view("train.py")
    assert relative.class_facts("models.Net") is not None
    assert os.path.isabs(next(iter(index.files)))


def test_building_the_index_imports_no_libcst() -> None:
    """The first pass must stay cheap: summaries are read with the standard ast."""
    import subprocess
    import sys

    code = ("import sys\nfrom torchfix_codemods.indexing import project_of_bytes\n"
            "project_of_bytes({'a.py': b'import torch\\ntorch.save(1, \"x.pt\")\\n', "
            "'b.ipynb': b'{\"cells\": []}'})\nassert 'libcst' not in sys.modules, 'libcst'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# Reduced from wkentaro/pytorch-fcn 4b988509bfd1a613d5e8482595a1c6654047d69b:
# torchfcn/utils.py:12-35, torchfcn/trainer.py:20-161, examples/voc/train_fcn32s.py:107-114
# (the scored paths leave out torchfcn/__init__.py, so `torchfcn` is a namespace package).
FCN_UTILS = """\
    import numpy as np

    def label_accuracy_score(label_trues, label_preds, n_class):
        hist = np.zeros((n_class, n_class))
        acc = np.diag(hist).sum() / hist.sum()
        acc_cls = np.diag(hist) / hist.sum(axis=1)
        acc_cls = np.nanmean(acc_cls)
        iu = np.diag(hist) / hist.sum(axis=1)
        mean_iu = np.nanmean(iu)
        fwavacc = (hist * iu).sum()
        return acc, acc_cls, mean_iu, fwavacc
"""
FCN_TRAINER = """\
    import os.path as osp
    import torch
    import torchfcn

    class Trainer(object):
        def __init__(self, model, optimizer, out):
            self.model = model
            self.optim = optimizer
            self.out = out
            self.epoch = 0
            self.iteration = 0
            self.best_mean_iu = 0

        def validate(self):
            label_trues, label_preds = [], []
            metrics = torchfcn.utils.label_accuracy_score(label_trues, label_preds, 21)
            mean_iu = metrics[2]
            is_best = mean_iu > self.best_mean_iu
            if is_best:
                self.best_mean_iu = mean_iu
            torch.save({
                'epoch': self.epoch,
                'iteration': self.iteration,
                'arch': self.model.__class__.__name__,
                'optim_state_dict': self.optim.state_dict(),
                'model_state_dict': self.model.state_dict(),
                'best_mean_iu': self.best_mean_iu,
            }, osp.join(self.out, 'checkpoint.pth.tar'))
"""
FCN_SCRIPT = """\
    import argparse
    import torch
    import torchfcn

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument('--resume')
        args = parser.parse_args()
        model = torchfcn.models.FCN32s(n_class=21)
        if args.resume:
            checkpoint = torch.load(args.resume)
            model.load_state_dict(checkpoint['model_state_dict'])
            start_epoch = checkpoint['epoch']
            start_iteration = checkpoint['iteration']
"""


def _fcn(tmp_path: Path, trainer: str = FCN_TRAINER, utils: str = FCN_UTILS,
         package_init: bool = False) -> ProjectIndex:
    files = {"torchfcn/utils.py": utils, "torchfcn/trainer.py": trainer,
             "torchfcn/models/__init__.py": "from .fcn32s import FCN32s\n",
             "torchfcn/models/fcn32s.py": "import torch.nn as nn\n\n"
                                          "class FCN32s(nn.Module):\n    pass\n",
             "examples/voc/train_fcn32s.py": FCN_SCRIPT}
    if package_init:
        files["torchfcn/__init__.py"] = "from . import models, utils\n" \
                                        "from .trainer import Trainer\n"
    return project(tmp_path, files)


@pytest.mark.parametrize("package_init", [False, True])
def test_a_checkpoint_attribute_holds_an_element_of_a_helper_tuple(
        tmp_path: Path, package_init: bool) -> None:
    """pytorch-fcn's Trainer saves `self.best_mean_iu`, assigned `0` in `__init__` and
    `metrics[2]` in `validate`, where `metrics` is what another file's helper returns:
    `np.nanmean(...)` in the third place. A script in `examples/voc/` that calls into the
    `torchfcn` package reads the checkpoint by its keys: the content is not allow-listed."""
    index = _fcn(tmp_path, package_init=package_init)
    content = saved(index, tmp_path, "examples/voc/train_fcn32s.py", "args.resume", "main")
    assert content is not None
    assert content.allow_listed is False and content.what == "a numpy array"
    assert content.matched_by == "keys" and content.where.endswith("trainer.py")


def test_other_elements_of_the_helper_tuple_and_plain_attributes_are_not_numpy(
        tmp_path: Path) -> None:
    """The trap side: `metrics[3]` is an element the summary cannot tell (a product's
    `.sum()`), and an attribute assigned only numbers and an epoch counter is a number."""
    trainer = FCN_TRAINER.replace("mean_iu = metrics[2]", "mean_iu = metrics[3]")
    content = saved(_fcn(tmp_path / "a", trainer), tmp_path / "a",
                    "examples/voc/train_fcn32s.py", "args.resume", "main")
    assert content is not None and content.allow_listed is None
    numbers = FCN_TRAINER.replace("self.best_mean_iu = mean_iu", "self.best_mean_iu = 1.0") \
        .replace("self.model.__class__.__name__", "'FCN32s'")
    content = saved(_fcn(tmp_path / "b", numbers), tmp_path / "b",
                    "examples/voc/train_fcn32s.py", "args.resume", "main")
    assert content is not None and content.allow_listed is True


def test_an_attribute_also_bumped_in_place_is_not_followed(tmp_path: Path) -> None:
    """`self.x += ...` adds what the summary does not follow: the attribute is unknown,
    neither proof of numbers (no `weights_only=True` promise) nor of numpy."""
    bumped = FCN_TRAINER.replace("self.best_mean_iu = mean_iu", "self.best_mean_iu += 1") \
        .replace("self.model.__class__.__name__", "'FCN32s'")
    content = saved(_fcn(tmp_path, bumped), tmp_path, "examples/voc/train_fcn32s.py",
                    "args.resume", "main")
    assert content is not None and content.allow_listed is None


def test_sibling_example_folders_of_one_package_stay_apart(tmp_path: Path) -> None:
    """A script that calls into a package of the run is of that package's program, not of
    another example folder that imports the same package."""
    index = project(tmp_path, {
        "pkg/__init__.py": "", "pkg/models.py": "class Net:\n    pass\n",
        "examples/a/train.py": "import torch\nimport pkg.models\nnet = pkg.models.Net()\n"
                               "torch.save({'net': 1, 'best': __import__('numpy').float64(1)},"
                               " 'best.pt')\n",
        "examples/b/eval.py": "import torch\nimport pkg.models\nnet = pkg.models.Net()\n"
                              "ck = torch.load(path)\nx = ck['net']\n",
    })
    assert saved(index, tmp_path, "examples/b/eval.py", "path") is None
