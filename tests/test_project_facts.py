"""Cross-file facts as modules that register themselves (analysis/project/registry.py), and
the first of them: what a star import binds (analysis/project/stars.py).

Each project test writes a small project to a temporary folder, summarises it and asks the
index from the importing file, as the name index of a rule does.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.project import NO_PROJECT, NoProject
from torchfix_codemods.analysis.project.index import ProjectIndex
from torchfix_codemods.analysis.project.registry import FACTS, QUESTIONS, Fact, Question, register
from torchfix_codemods.analysis.project.summary import FileSummary, summarize
from torchfix_codemods.indexing import project_of_bytes


def project(tmp_path: Path, files: dict[str, str]) -> ProjectIndex:
    summaries = {}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        summaries[str(path)] = summarize(path.read_text(encoding="utf-8"))
    return ProjectIndex.build(summaries)


def stars(tmp_path: Path, files: dict[str, str], importer: str, module: str):
    return project(tmp_path, files).view(str(tmp_path / importer)).star_names(module)


# --- registration ---------------------------------------------------------------------------

@pytest.fixture
def registered_question():
    """A fact registered for one test, and removed after it (the registry is global)."""
    name = "_test_only_question"
    register(Fact("_test_only_fact", None, {
        name: Question(lambda index, file, word: f"{word} from {file.module}", unknown=()),
    }))
    yield name
    del QUESTIONS[name]
    del FACTS["_test_only_fact"]


def test_a_registered_question_is_unknown_without_an_index(registered_question: str) -> None:
    assert getattr(NO_PROJECT, registered_question)("anything") == ()

    class Fake(NoProject):
        """A test fake that knows nothing of the new fact and is not edited for it."""

    assert getattr(Fake(), registered_question)("anything") == ()


def test_a_registered_question_is_answered_by_the_index(registered_question: str,
                                                        tmp_path: Path) -> None:
    index = project(tmp_path, {"train.py": "x = 1\n"})
    assert getattr(index.view(str(tmp_path / "train.py")), registered_question)("hi") == \
        "hi from train"


@pytest.mark.parametrize(("question", "args", "unknown"), [
    ("class_facts", ("models.Net",), None),
    ("returns", ("utils.make_loader",), None),
    ("module_arguments", ("evaluate",), None),
    ("training_loaders", (), ()),
    ("loader_shard", ("data.make_loader",), None),
    ("loaders_passed_to", ("Trainer",), ()),
    ("passed_loader_shard", ("Trainer",), None),
    ("version_flag", ("utils.LEGACY",), None),
    ("star_names", ("utils",), None),
    ("saved_content", ("", "file:model.pt"), None),
    ("module_pair", ("", "file:model.pt"), None),
])
def test_every_cross_file_question_is_a_registered_fact_and_unknown_without_an_index(
        question: str, args: tuple[str, ...], unknown: object) -> None:
    """NoProject and the test fakes define none of these: each fact module registers its
    questions (classes, returns, callers, loader shards, flags, stars, checkpoints)."""
    assert question in QUESTIONS
    assert question not in vars(NoProject)
    assert getattr(NO_PROJECT, question)(*args) == unknown


def test_an_unregistered_question_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        NO_PROJECT.no_such_question  # noqa: B018


def test_a_question_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(Fact("again", None, {"star_names": Question(lambda *a: None)}))


def test_fact_parts_survive_the_summary_cache() -> None:
    summary = summarize("import torch\n__all__ = ['Net']\nclass Net: pass\n")
    again = FileSummary.from_json(summary.to_json())
    assert again.facts == summary.facts
    assert again.facts["stars"]["all"] == ["Net"]


# --- star imports ---------------------------------------------------------------------------

UTILS = """\
    import torch
    import torch.nn as nn
    import numpy as np
    from .helpers import accuracy

    class Net(nn.Module):
        pass

    def load(path):
        return open(path).read()

    _private = 1
"""


def test_a_star_import_binds_public_names_and_the_modules_own_imports(tmp_path: Path) -> None:
    found = stars(tmp_path, {"utils.py": UTILS, "main.py": "from utils import *\n"},
                  "main.py", "utils")
    assert found is not None
    assert found["torch"] == "torch"
    assert found["nn"] == "torch.nn"
    assert found["np"] == "numpy"
    assert found["Net"] == "utils.Net"
    assert found["load"] == "utils.load"  # the module's own load, not torch.load
    assert "_private" not in found


def test_all_decides_what_a_star_import_binds(tmp_path: Path) -> None:
    found = stars(tmp_path, {
        "model.py": "import torch\n__all__ = ['Net', 'resnet']\nclass Net: pass\n",
        "main.py": "from model import *\n",
    }, "main.py", "model")
    assert found == {"Net": "model.Net", "resnet": "model.resnet"}


def test_a_computed_all_is_unknown(tmp_path: Path) -> None:
    assert stars(tmp_path, {
        "model.py": "import torch\n__all__ = [n for n in dir() if n[0] != '_']\n",
        "main.py": "from model import *\n",
    }, "main.py", "model") is None


def test_star_imports_chain_through_a_package(tmp_path: Path) -> None:
    files = {
        "models/__init__.py": "from .lenet import *\nfrom .vgg import *\n",
        "models/lenet.py": "import torch\nimport torch.nn as nn\nclass LeNet(nn.Module): pass\n",
        "models/vgg.py": "__all__ = ['VGG']\nimport torch\nclass VGG: pass\n",
        "main.py": "from models import *\n",
    }
    found = stars(tmp_path, files, "main.py", "models")
    assert found is not None
    assert found["LeNet"] == "models.lenet.LeNet"
    assert found["VGG"] == "models.vgg.VGG"
    assert found["torch"] == "torch"


def test_a_star_import_of_a_module_outside_the_run_is_unknown(tmp_path: Path) -> None:
    assert stars(tmp_path, {"main.py": "from numpy import *\n"}, "main.py", "numpy") is None


def test_a_cycle_of_star_imports_ends(tmp_path: Path) -> None:
    found = stars(tmp_path, {
        "a.py": "from b import *\nimport torch\n",
        "b.py": "from a import *\nclass B: pass\n",
        "main.py": "from a import *\n",
    }, "main.py", "a")
    assert found is not None and found["torch"] == "torch"


def test_a_name_bound_two_ways_is_bound_to_nothing_known(tmp_path: Path) -> None:
    found = stars(tmp_path, {
        "utils.py": "try:\n    from torch import load\nexcept ImportError:\n"
                    "    from mylib import load\n",
        "main.py": "from utils import *\n",
    }, "main.py", "utils")
    assert found == {"load": None}


def _qualified(files: dict[str, str], importer: str, expression: str) -> str | None:
    index = project_of_bytes({name: text.encode() for name, text in files.items()})
    module = cst.parse_module(files[importer])
    names = NameIndex.build(module, index.view(importer))
    found: list[str | None] = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if cst.Module([]).code_for_node(node.func) == expression:
                found.append(names.qualified_name(node.func))

    module.visit(Visit())
    return found[0]


def test_the_name_index_sees_torch_through_a_star_import(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = {"utils.py": "import torch\n", "main.py": "from utils import *\nx = torch.load('m.pt')\n"}
    assert _qualified(files, "main.py", "torch.load") == "torch.load"


def test_the_importers_own_binding_wins_over_the_star(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = {"utils.py": "from torch import load\n",
             "main.py": "from utils import *\ndef load(p):\n    return p\nload('m.pt')\n"}
    # The file's own `def load` is what `load` means after it: never `torch.load`.
    assert _qualified(files, "main.py", "load") is None
    files["main.py"] = "from utils import *\nimport torch\nx = torch.load('m.pt')\n"
    files["utils.py"] = "torch = None\n"
    assert _qualified(files, "main.py", "torch.load") == "torch.load"  # the explicit import


def test_without_an_index_a_star_import_binds_nothing() -> None:
    module = cst.parse_module("from utils import *\nx = torch.load('m.pt')\n")
    names = NameIndex.build(module)
    call = module.body[1].body[0].value  # type: ignore[attr-defined]
    assert names.qualified_name(call.func) is None


# --- managed imports where a name arrives only through a star import -------------------------

def _reference(files: dict[str, str], importer: str):
    from torchfix_codemods.edits.references import Imports

    index = project_of_bytes({name: text.encode() for name, text in files.items()})
    module = cst.parse_module(files[importer])
    names = NameIndex.build(module, index.view(importer))
    at = module.body[-1]
    return Imports(names).reference("torch.no_grad", at)


def test_a_star_bound_torch_the_file_already_reads_is_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = _reference({"utils.py": "import torch\n",
                        "main.py": "from utils import *\nx = torch.ones(2)\ny = x\n"}, "main.py")
    assert found.code == "torch.no_grad" and found.needs is None


def test_a_fix_that_would_first_read_a_star_bound_torch_imports_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = _reference({"utils.py": "import torch\nclass Net: pass\n",
                        "main.py": "from utils import *\nnet = Net()\ny = net\n"}, "main.py")
    assert found.code == "torch.no_grad"
    assert found.needs is not None and found.needs.module == "torch"


# --- checkpoint contents through a trainer's save() method ----------------------------------

TRAINER = """\
    import torch

    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer

        def save(self, save_optimizer=False, save_path='checkpoints/model.pth', **kwargs):
            save_dict = dict()
            save_dict['model'] = self.model.state_dict()
            save_dict['other_info'] = kwargs
            torch.save(save_dict, save_path)
"""


def _saved(tmp_path: Path, train: str):
    index = project(tmp_path, {"trainer.py": TRAINER, "train.py": train})
    facts = index.view(str(tmp_path / "train.py"))
    load = index.files[str(tmp_path / "train.py")].summary.loads[0]
    return facts.saved_content(load.function, load.site)


def test_keyword_arguments_of_a_trainers_save_are_in_the_file(tmp_path: Path) -> None:
    """The shape issue 21 describes (a trainer's `save(**kwargs)` given `best_map =
    np.nanmean(ap)`): the path is the method's default, the numpy scalar is in the file."""
    saved = _saved(tmp_path, """\
        import numpy as np
        import torch
        from trainer import Trainer

        def train(model, optimizer, ap):
            trainer = Trainer(model, optimizer)
            best_map = np.nanmean(ap)
            trainer.save(best_map=best_map)
            return torch.load('checkpoints/model.pth')
    """)
    assert saved is not None and saved.allow_listed is False and saved.named
    assert "numpy" in saved.what


def test_plain_numbers_through_a_trainers_save_are_no_reason_to_refuse(tmp_path: Path) -> None:
    """Calls passing only numbers are not recorded (summaries stay small), so what the
    `**kwargs` hold is unknown here: never a refusal, at most an unsafe `True`."""
    saved = _saved(tmp_path, """\
        import torch
        from trainer import Trainer

        def train(model, optimizer, ap):
            trainer = Trainer(model, optimizer)
            trainer.save(best_map=float(ap))
            return torch.load('checkpoints/model.pth')
    """)
    assert saved is not None and saved.allow_listed is not False


def test_a_save_path_given_by_every_call_replaces_the_default(tmp_path: Path) -> None:
    saved = _saved(tmp_path, """\
        import numpy as np
        import torch
        from trainer import Trainer

        def train(model, optimizer, ap):
            trainer = Trainer(model, optimizer)
            trainer.save(save_path='other.pth', best_map=np.nanmean(ap))
            return torch.load('checkpoints/model.pth')
    """)
    assert saved is None  # nothing of the run writes checkpoints/model.pth


# --- the tagged value language and its cache format ------------------------------------------

def test_every_value_kind_round_trips_through_the_cache_format() -> None:
    import json

    from torchfix_codemods.analysis.project import values as v

    kinds = [v.LIT, v.Str("m.pt"), v.Tensor(True, False), v.Tensor(False, True),
             v.StateDict(True), v.StateDict(False), v.NUMPY, v.NAMESPACE,
             v.Dict((v.LIT, v.NUMPY)), v.Seq((v.Str("a"),)), v.AnyOf((v.LIT, v.UNKNOWN)),
             v.Call("models.Net"), v.Param("Trainer.save", -1, "kwargs"), v.Ref("cfg.PATH"),
             v.SUBMODULE, v.VERSION, v.FLAG, v.Cmp((v.Ref("a.b"),)),
             v.Flagged((v.Ref("x"), v.FLAG)), v.UNKNOWN]
    for value in kinds:
        assert v.decode(json.loads(json.dumps(v.encode(value)))) == value


def test_a_summary_with_values_survives_the_cache() -> None:
    import json

    text = textwrap.dedent("""\
        import argparse
        import numpy as np
        import torch
        from cfg import PATH

        LEGACY = torch.__version__ < "2.0"
        args = argparse.ArgumentParser().parse_args()

        def save(model, ap, **kwargs):
            state = {"model": model.state_dict(), "map": np.nanmean(ap), **kwargs}
            state["args"] = args
            torch.save(state, PATH)
            return torch.zeros(2).cpu().detach()
    """)
    summary = summarize(text)
    again = FileSummary.from_json(json.loads(json.dumps(summary.to_json())))
    assert again == summary


def test_star_imports_resolve_whatever_the_selection(tmp_path: Path) -> None:
    """TFC101 reads no project fact; the run still builds the index for the star import,
    so what `torch` means in main.py does not depend on `--select`."""
    import json
    import subprocess
    import sys

    (tmp_path / "utils.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "main.py").write_text(
        "from utils import *\n\nw = torch.ones(2, requires_grad=True)\nprint((w * 2).numpy())\n",
        encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "torchfix_codemods", "check", "--no-cache",
                           "--format", "json", "--select", "TFC101", "."],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    codes = [(f["path"], f["code"]) for f in json.loads(done.stdout)["findings"]]
    assert codes == [("main.py", "TFC101")], done.stderr


def test_an_optimizer_object_in_a_checkpoint_is_not_allow_listed(tmp_path: Path) -> None:
    """Measured on torch 2.13 (docs/measurements/weights_only_contents.txt): the optimizer
    and LR scheduler objects fail under weights_only=True, their state_dict()s load."""
    index = project(tmp_path, {"train.py": """\
        import torch
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
        torch.save({'model': model.state_dict(), 'optimizer': optimizer}, 'a.pt')
        torch.save({'optimizer': optimizer.state_dict(), 'sched': scheduler.state_dict()}, 'b.pt')
        a = torch.load('a.pt')
        b = torch.load('b.pt')
    """})
    facts = index.view(str(tmp_path / "train.py"))
    first, second = index.files[str(tmp_path / "train.py")].summary.loads
    refused = facts.saved_content(first.function, first.site)
    assert refused is not None and refused.allow_listed is False
    assert "torch.optim.SGD" in refused.what
    loaded = facts.saved_content(second.function, second.site)
    assert loaded is not None and loaded.allow_listed is True


def test_a_saving_file_is_named_as_the_loading_file_sees_it() -> None:
    """The message names the writer relative to the reader, never where the run was made."""
    from torchfix_codemods.analysis.project.checkpoints import _seen_from

    assert _seen_from("/tmp/run-x/demo/model.py", "/tmp/run-x/demo/predict.py") == "model.py"
    assert _seen_from("/tmp/run-x/train.py", "/tmp/run-x/tools/eval.py") == "../train.py"
    assert _seen_from("utils/save.py", "main.py") == "utils/save.py"


# --- an import another file reads from this one stays ----------------------------------------

def test_names_other_files_import_from_a_file(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "utils.py": "from torch.autograd import Variable\nimport torch\n",
        "model.py": "__all__ = ['Net']\nimport torch\nclass Net: pass\n",
        "train.py": "from utils import *\nfrom model import Net\n",
        "alone.py": "import torch\n",
    })
    assert index.view(str(tmp_path / "utils.py")).imported_names() >= {"Variable", "torch"}
    assert index.view(str(tmp_path / "model.py")).imported_names() == {"Net"}
    assert index.view(str(tmp_path / "alone.py")).imported_names() == frozenset()
    assert NO_PROJECT.imported_names() == frozenset()


def test_a_computed_all_star_imported_keeps_every_name(tmp_path: Path) -> None:
    from torchfix_codemods.analysis.project.stars import EVERY_NAME

    index = project(tmp_path, {
        "utils.py": "import torch\n__all__ = [n for n in dir() if n[0] != '_']\n",
        "train.py": "from utils import *\n",
    })
    assert EVERY_NAME in index.view(str(tmp_path / "utils.py")).imported_names()


# Reduced from ethanfetaya/NRI: train.py calls `Variable`, which it gets only through
# `from utils import *` and `from modules import *`; TFC106's fixes in utils.py and
# modules.py left both `from torch.autograd import Variable` unused there and removed them,
# and train.py raised NameError.
@pytest.mark.parametrize("consumer", [
    "from utils import *\n",
    "from utils import Variable, ones\n",
])
def test_fix_keeps_an_import_another_file_reads_from_this_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, consumer: str) -> None:
    import subprocess
    import sys

    from typer.testing import CliRunner

    from torchfix_codemods.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "utils.py").write_text(
        "import torch\nfrom torch.autograd import Variable\n\n\n"
        "def ones(n):\n    return Variable(torch.ones(n))\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(
        consumer + "import torch\n\nx = Variable(torch.zeros(3), volatile=False)\n"
        "print(float(x.sum()) + float(ones(2).sum()))\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["fix", "--unsafe-fixes", "--select", "ALL", "."])
    assert result.exit_code in (0, 1), result.output
    utils = (tmp_path / "utils.py").read_text(encoding="utf-8")
    assert "return torch.ones(n)" in utils  # the fix itself is made
    assert "from torch.autograd import Variable" in utils
    ran = subprocess.run([sys.executable, "train.py"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2.0"


def test_the_program_files_that_pickle_whole_modules(tmp_path: Path) -> None:
    index = project(tmp_path, {
        "blocks.py": "from torch import nn\nclass Block(nn.Module): pass\n",
        "train.py": "import torch\nfrom blocks import Block\n"
                    "torch.save(Block(), 'block.pt')\ntorch.save(Block().state_dict(), 's.pt')\n",
        # the class comes through an import the index cannot follow: the saved name tells
        "word/test.py": "import torch\nfrom TCN.word.model import *\nmodel = TCN(3)\n"
                        "with open('m.pt', 'wb') as f:\n    torch.save(model, f)\n",
        "word/stats.py": "import torch\nstats = {'loss': 1.0}\ntorch.save(stats, 'stats.pt')\n",
    })
    assert index.view(str(tmp_path / "blocks.py")).module_saves() == ("train.py", "word/test.py")
    assert NO_PROJECT.module_saves() == ()


def test_a_second_fix_run_finds_nothing_after_a_whole_module_save_is_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by tests/test_kill_and_concurrency.py: the index reads `torch.save(net, path)`
    # (a whole module) before TFC003 rewrites it to `net.state_dict()`, so the first run's
    # later round refused `weights_only=True` on the load and a second run added it.
    from typer.testing import CliRunner

    from torchfix_codemods.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\ncache = false\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "def train_and_reload(path):\n    net = Net()\n    torch.save(net, path)\n"
        "    net = torch.load(path)\n    return net\n", encoding="utf-8")
    first = CliRunner().invoke(app, ["fix", "--unsafe-fixes", "."])
    assert first.exit_code in (0, 1), first.output
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "net.load_state_dict(torch.load(path, weights_only=True))" in fixed, fixed
    CliRunner().invoke(app, ["fix", "--unsafe-fixes", "."])
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == fixed


# --- scalar returns (analysis/project/scalar_returns.py) -------------------------------------

def _scalar(tmp_path: Path, helper: str, name: str):
    index = project(tmp_path, {"utils.py": helper, "train.py": "import torch\n"})
    return index.view(str(tmp_path / "train.py")).scalar_return(f"utils.{name}")


def test_a_whole_sum_divided_by_sizes_is_a_proven_scalar_return(tmp_path: Path) -> None:
    found = _scalar(tmp_path, """\
        import numpy as np
        import torch

        def nll_gaussian(preds, target, variance, add_const=False):
            neg_log_p = ((preds - target) ** 2 / (2 * variance))
            if add_const:
                neg_log_p += 0.5 * np.log(2 * np.pi * variance)
            return neg_log_p.sum() / (target.size(0) * target.size(1))
        """, "nll_gaussian")
    assert found is not None and found.proven
    assert not found.tensor  # nothing in utils.py says `preds` is a tensor: the caller's `.data`
    assert "utils.nll_gaussian" in found.reason and "utils.py" in found.reason


def test_a_sum_divided_by_a_parameter_is_an_unproven_tensor_scalar(tmp_path: Path) -> None:
    found = _scalar(tmp_path, """\
        import torch

        def kl_categorical(preds, log_prior, num_atoms, eps=1e-16):
            kl_div = preds * (torch.log(preds + eps) - log_prior)
            return kl_div.sum() / (num_atoms * preds.size(0))
        """, "kl_categorical")
    assert found is not None and not found.proven and found.tensor


@pytest.mark.parametrize("helper", [
    "import torch\ndef f(x):\n    return x.sum(1) / x.size(0)\n",  # a dimension kept
    "import torch\ndef f(x):\n    return x.sum(dim=0)\n",
    "import torch\ndef f(x):\n    return x.mean(keepdim=True)\n",
    "import torch\ndef f(x):\n    return torch.sum(x, 0)\n",
    "import torch\nimport torch.nn.functional as F\n"
    "def f(x, y):\n    return F.mse_loss(x, y, reduction='none')\n",
    "import torch\ndef f(x, weights):\n    return x.sum() * weights\n",  # a vector, maybe
    "import torch\ndef f(x):\n    return x.numpy().sum()\n",  # a numpy scalar, not a tensor
    "import torch\ndef f(x, full):\n    if full:\n        return x\n    return x.sum()\n",
    "import torch\ndef f(x):\n    yield x.sum()\n",
    "import pandas as pd\nimport torch\ndef f(frame):\n    return frame.sum()\n",
    "def f(x):\n    return x.sum()\n",  # no torch in the file
])
def test_what_is_not_a_scalar_return(tmp_path: Path, helper: str) -> None:
    assert _scalar(tmp_path, helper, "f") is None
