"""Runs over several files: the project index is built, read by the rules, and cached.

A fact from another file changes a file's findings (``Net`` of ``models.py`` is an
``nn.Module``, so ``torch.save(model, ...)`` in ``train.py`` saves a whole module), and an
edit of that other file invalidates the cached result of the first.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods.cli import app
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.indexing import index_needed
from torchfix_codemods.settings import Overrides

runner = CliRunner()

MODELS = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    pass\n"
TRAIN = "import torch\nfrom models import Net\n\nmodel = Net()\ntorch.save(model, 'net.pt')\n"


def _check(project: Path, *args: str) -> dict:
    result = runner.invoke(app, ["check", "--format", "json", "--config",
                                 str(project / "pyproject.toml"), *args, str(project)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _codes(report: dict, name: str) -> list[str]:
    return sorted(f["code"] for f in report["findings"] if f["path"].endswith(name))


def _write(project: Path, files: dict[str, str]) -> None:
    (project / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    for name, text in files.items():
        (project / name).write_text(text)


def test_a_class_from_another_file_is_known_to_be_a_module(tmp_path: Path) -> None:
    _write(tmp_path, {"models.py": MODELS, "train.py": TRAIN})
    assert _codes(_check(tmp_path, "--no-cache"), "train.py") == ["TFC003"]
    # alone, train.py cannot know what Net is
    alone = runner.invoke(app, ["check", "--format", "json", "--no-cache", "--config",
                                str(tmp_path / "pyproject.toml"), str(tmp_path / "train.py")])
    assert json.loads(alone.output)["findings"] == []


def test_an_edit_of_the_other_file_invalidates_the_cached_result(tmp_path: Path) -> None:
    _write(tmp_path, {"models.py": MODELS, "train.py": TRAIN})
    first = _check(tmp_path)
    assert _codes(first, "train.py") == ["TFC003"]
    assert list((tmp_path / ".torchfix_cache").rglob("summaries-*.json"))
    assert _check(tmp_path)["findings"] == first["findings"]
    (tmp_path / "models.py").write_text(MODELS.replace("class Net(nn.Module)", "class Net"))
    assert _codes(_check(tmp_path), "train.py") == []
    (tmp_path / "models.py").write_text(MODELS)
    assert _codes(_check(tmp_path), "train.py") == ["TFC003"]


def test_the_index_is_built_for_every_selection_but_the_syntax_check(tmp_path: Path) -> None:
    """Rules read it through their own facts, and every rule through the engine's
    compatibility guards (another file's torch-version flag): a selection of rules that
    declare no fact still needs it, or its results would differ from the default run's."""
    _write(tmp_path, {"models.py": MODELS, "train.py": TRAIN})
    path = str(tmp_path / "train.py")

    def needed(*select: str) -> bool:
        configuration = Configuration(Overrides(select=select), cwd=str(tmp_path))
        return index_needed([(path, configuration.settings_for(path))])

    assert needed("TFC003") and needed("TFC1") and needed("TFC401", "TFC403")
    assert not needed("TFC000")


BERT = {
    "bert/__init__.py": "",
    "bert/model/__init__.py": "from .bert import BERT\n",
    "bert/model/bert.py": "import torch.nn as nn\n\n\nclass BERT(nn.Module):\n    pass\n",
    "bert/trainer/__init__.py": "",
    "bert/trainer/pretrain.py": (
        "import torch\n\nfrom ..model import BERT\n\n\nclass BERTTrainer:\n"
        "    def __init__(self, bert: BERT):\n        self.bert = bert\n\n"
        "    def save(self, epoch, file_path='output/bert_trained.model'):\n"
        "        output_path = file_path + '.ep%d' % epoch\n"
        "        torch.save(self.bert.cpu(), output_path)\n"),
}


def test_a_whole_module_saved_through_an_attribute_of_a_trainer(tmp_path: Path) -> None:
    """codertimo/BERT-pytorch d10dc4f9 bert_pytorch/trainer/pretrain.py:148: `self.bert`
    is the `bert: BERT` parameter, BERT an nn.Module of another package module."""
    for name in BERT:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    _write(tmp_path, BERT)
    report = _check(tmp_path, "--no-cache", "--select", "TFC003")
    found = [f for f in report["findings"] if f["path"].endswith("pretrain.py")]
    assert [f["code"] for f in found] == ["TFC003"]
    assert "bert.model.bert.BERT" in found[0]["reason"] and found[0]["fix"] is None


PAIR = {
    "models.py": MODELS,
    "train.py": TRAIN,
    "predict.py": "import torch\n\nmodel = torch.load('net.pt', weights_only=False)\n"
                  "model.eval()\n",
}


def _fix(project: Path, *args: str) -> None:
    result = runner.invoke(app, ["fix", "--unsafe-fixes", "--config",
                                 str(project / "pyproject.toml"), *args, str(project)])
    assert result.exit_code in (0, 1), result.output


def test_fix_rewrites_both_sides_of_a_whole_module_pair(tmp_path: Path) -> None:
    _write(tmp_path, PAIR)
    _fix(tmp_path, "--select", "TFC003")
    assert "torch.save(model.state_dict(), 'net.pt')" in (tmp_path / "train.py").read_text()
    assert (tmp_path / "predict.py").read_text() == (
        "import torch\n\nfrom models import Net\nmodel = Net()\n"
        "model.load_state_dict(torch.load('net.pt', weights_only=False))\nmodel.eval()\n")


def test_a_pair_with_one_side_excluded_is_rewritten_on_neither(tmp_path: Path) -> None:
    _write(tmp_path, PAIR)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.torchfix-codemods]\nper-file-ignores = {'predict.py' = ['TFC003']}\n")
    _fix(tmp_path, "--select", "TFC003")
    assert (tmp_path / "train.py").read_text() == TRAIN
    assert (tmp_path / "predict.py").read_text() == PAIR["predict.py"]


def test_a_pair_is_not_rewritten_when_only_one_side_is_in_the_run(tmp_path: Path) -> None:
    _write(tmp_path, PAIR)
    result = runner.invoke(app, ["fix", "--unsafe-fixes", "--select", "TFC003",
                                 "--config", str(tmp_path / "pyproject.toml"),
                                 str(tmp_path / "train.py"), str(tmp_path / "models.py")])
    assert result.exit_code in (0, 1), result.output
    assert (tmp_path / "train.py").read_text() == TRAIN


EVALUATE = {
    "models.py": MODELS,
    "utils.py": "import torch\n\n\ndef evaluate(m, batches):\n    correct = 0\n"
                "    for x, y in batches:\n        correct += (m(x).argmax(1) == y).sum().item()\n"
                "    return correct\n\n\ndef validate(fn, batches):\n"
                "    return [step(fn, x) for x in batches]\n\n\ndef step(f, x):\n    return f(x)\n",
    "train.py": "import torch\nfrom models import Net\nfrom utils import evaluate, validate\n\n"
                "model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for epoch in range(3):\n    model(torch.ones(1)).sum().backward()\n"
                "    opt.step()\n    evaluate(model, [])\n    validate(model, [])\n",
}


def test_an_inference_function_called_with_a_model_from_another_file(tmp_path: Path) -> None:
    """`evaluate(m, ...)` in utils.py calls its parameter `m`; only train.py shows that `m`
    is an nn.Module (`Net` of models.py), passed from its training loop."""
    _write(tmp_path, EVALUATE)
    report = _check(tmp_path, "--no-cache", "--select", "TFC201,TFC202")
    found = sorted((f["code"], f["line"]) for f in report["findings"]
                   if f["path"].endswith("utils.py"))
    assert found == [("TFC201", 4), ("TFC201", 11), ("TFC202", 4), ("TFC202", 11)]
    reasons = {f["reason"] for f in report["findings"] if f["code"] == "TFC201"}
    assert all("models.Net" in reason and "train.py" in reason for reason in reasons)
    alone = runner.invoke(app, ["check", "--format", "json", "--no-cache", "--select",
                                "TFC201,TFC202", "--config", str(tmp_path / "pyproject.toml"),
                                str(tmp_path / "utils.py")])
    assert json.loads(alone.output)["findings"] == []


def test_no_inference_finding_when_a_caller_passes_something_else(tmp_path: Path) -> None:
    _write(tmp_path, {**EVALUATE, "other.py": "from utils import evaluate\n\n"
                      "evaluate({'not': 'a model'}, [])\n"})
    report = _check(tmp_path, "--no-cache", "--select", "TFC201,TFC202")
    assert [f for f in report["findings"] if f["path"].endswith("utils.py")
            and f["line"] == 4] == []


def test_the_output_of_an_imported_model_is_a_tensor(tmp_path: Path) -> None:
    """TFC101: `.numpy()` on `Net()(x)` with `Net` from models.py is a module's output (a
    tensor that requires grad), so the fix is safe; alone, train.py cannot tell, and a value
    nothing shows a risk for is not reported."""
    _write(tmp_path, {"models.py": MODELS, "train.py": "import torch\nfrom models import Net\n\n"
                      "model = Net()\nprint(model(torch.ones(1, 4)).numpy())\n"})
    report = _check(tmp_path, "--no-cache", "--select", "TFC101")
    (found,) = report["findings"]
    assert found["fix"]["safety"] == "safe" and "models.Net" in found["reason"]
    alone = runner.invoke(app, ["check", "--format", "json", "--no-cache", "--select", "TFC101",
                                "--config", str(tmp_path / "pyproject.toml"),
                                str(tmp_path / "train.py")])
    assert json.loads(alone.output)["findings"] == []


def test_summaries_made_in_worker_processes_equal_those_made_here(tmp_path: Path) -> None:
    from torchfix_codemods.indexing import POOL_MIN_FILES, build_project

    files = {f"m{i}.py": f"import torch\nfrom torch import nn\n\n\nclass C{i}(nn.Module):\n"
             f"    pass\n\n\ntorch.save(C{i}(), 'c{i}.pt')\n" for i in range(POOL_MIN_FILES + 2)}
    _write(tmp_path, files)
    configuration = Configuration(Overrides(cache=False), cwd=str(tmp_path))
    work = [(str(tmp_path / name), configuration.settings_for(str(tmp_path / name)))
            for name in files]
    alone = build_project(work, configuration.run, jobs=1)
    pooled = build_project(work, configuration.run, jobs=2)
    assert {p: f.summary for p, f in alone.files.items()} == \
        {p: f.summary for p, f in pooled.files.items()}
    assert alone.fingerprint(work[0][0]) == pooled.fingerprint(work[0][0])


SUPER_RESOLUTION = {
    # pytorch/examples super_resolution: Net (Conv2d, ReLU, PixelShuffle) lives in model.py
    "model.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.conv = nn.Conv2d(1, 4, 3)\n"
                "        self.shuffle = nn.PixelShuffle(2)\n\n\nclass Dropping(nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n"
                "        self.body = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Dropout(0.5))\n",
    "main.py": "import torch\nfrom model import Net\n\nmodel = Net()\n\n\ndef test(loader):\n"
               "    with torch.no_grad():\n        for x, y in loader:\n            model(x)\n",
}


def test_eval_is_not_asked_of_an_imported_model_it_would_not_change(tmp_path: Path) -> None:
    """TFC201 on a model whose class, in another file, has no layer that depends on the
    mode: `eval()` changes nothing there (the index reads the class body)."""
    _write(tmp_path, SUPER_RESOLUTION)
    assert _codes(_check(tmp_path, "--no-cache", "--select", "TFC201"), "main.py") == []
    dropping = SUPER_RESOLUTION["main.py"].replace("Net", "Dropping")
    _write(tmp_path, {**SUPER_RESOLUTION, "main.py": dropping})
    assert _codes(_check(tmp_path, "--no-cache", "--select", "TFC201"), "main.py") == ["TFC201"]
