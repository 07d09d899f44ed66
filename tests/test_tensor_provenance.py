"""The tensor-provenance analysis behind TFC101-TFC107, and the reasons it shows users.

Each case is a small module whose last statement is ``probe = <expression>``;
the analysis must call that expression a tensor, not a tensor, or unknown, and
say why in words a reviewer can check.
"""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from support import findings, probe
from typer.testing import CliRunner

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.tensors import Provenance, provenance, scalar_reason
from torchfix_codemods.cli import app
from torchfix_codemods.verify.fixtures import collect_fixtures

FIXTURES = Path(__file__).parent / "fixtures"
TENSOR_CODES = [f"TFC10{i}" for i in range(1, 8)]


TENSORS = [
    ("import torch\nprobe = torch.randn(3)\n", "result of `torch.randn`"),
    ("import torch as T\nprobe = T.zeros(2).float().cuda()\n", "`.cuda()` on a tensor"),
    ("import torch.nn.functional as F\nimport torch\nprobe = F.softmax(torch.ones(2), 0)\n",
     "result of `torch.nn.functional.softmax`"),
    ("import torch.nn as nn\nnet = nn.Linear(2, 2)\nprobe = net(x)\n",
     "output of a module (instance of `torch.nn.Linear`)"),
    ("import torch.nn as nn\nclass Net(nn.Module):\n    pass\nmodel = Net()\nprobe = model(x)\n",
     "an nn.Module subclass in this file"),
    ("import torch.nn as nn\nnet = nn.Linear(2, 2)\nfor p in net.parameters():\n    probe = p\n",
     "loop variable over `net.parameters()`"),
    ("import torch.nn as nn\nnet = nn.Linear(2, 2)\nfor n, p in net.named_parameters():\n"
     "    probe = p\n", "loop variable over `net.named_parameters()`"),
    ("import torch.nn as nn\nnet = nn.Linear(2, 2)\nprobe = net.weight\n",
     "`.weight` of a module"),
    ("import torch\nw = torch.randn(2, requires_grad=True)\nprobe = w.grad\n",
     "`.grad` of a tensor"),
    ("import torch.nn as nn\nimport torch\nprobe = nn.Parameter(torch.ones(2))\n",
     "an `nn.Parameter`"),
    ("import torch\ndef f(t: torch.Tensor):\n    return t\n", "annotated `torch.Tensor`"),
    ("import torch\nprobe = torch.max(torch.ones(2, 2), 1)[1]\n", "an item of `torch.max`"),
    # carpedm20/BEGAN-pytorch trainer.py: TensorFlow imported inside `__init__` only, to write
    # summaries; another method's module outputs are torch tensors.
    ("import torch\nimport torch.nn as nn\nclass T:\n    def __init__(self):\n"
     "        import tensorflow as tf\n        self.w = tf.summary\n"
     "    def train(self):\n        net = nn.Linear(2, 2)\n        probe = net(x)\n",
     "output of a module"),
    # laiguokun/LSTNet main.py: `predict = None` before the loop; `.data` raises on None, so
    # the read that succeeds sees the loop's tensor.
    ("import torch\npredict = None\nfor x in xs:\n    predict = torch.ones(2)\n"
     "probe = predict.data\n", "`.data` of a tensor"),
    # The same trainer builds its networks in a method `__init__` calls.
    ("import torch.nn as nn\nclass T:\n    def __init__(self):\n        self.build()\n"
     "    def build(self):\n        self.D = nn.Linear(2, 2)\n"
     "    def train(self, x):\n        probe = self.D(x)\n", "`self.D` of `T`"),
    ("import torch\nx = make()\nx = torch.ones(2)\nprobe = x\n", "result of `torch.ones`"),
    ("import torch\nx = torch.ones(3)\nprobe = x / x.size(0) + 1\n", "arithmetic on a tensor"),
    ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
     "        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
     "    def forward(self, x):\n        return self.fc(x)\n",
     "`self.fc` of `Net`, assigned instance of `torch.nn.Linear`"),
    # ethanfetaya/NRI utils.py: a sampler of this file whose every return is a tensor.
    ("import torch\nimport torch.nn.functional as F\ndef sample(logits, tau=1):\n"
     "    y = logits + torch.rand(logits.size())\n    return F.sigmoid(y / tau)\n"
     "probe = sample(x)\n", "`sample()` returns a tensor on every path"),
    ("import torch\ndef noise(shape, flag):\n    if flag:\n        return torch.rand(shape)\n"
     "    return torch.zeros(shape)\nprobe = noise(3, True)\n", "returns a tensor on every path"),
    # A parallel assignment gives each name the item at its position.
    ("import torch\nout, h = torch.ones(2), 1\nprobe = out\n", "result of `torch.ones`"),
    # chenyuntc/pytorch-book@4c5b4a1 Chapter10/main.py: `netg, netd = NetG(opt), NetD(opt)`.
    ("import torch.nn as nn\nnetg, netd = nn.Linear(2, 2), nn.Conv2d(1, 1, 1)\n"
     "probe = netg(x)\n", "output of a module (instance of `torch.nn.Linear`)"),
    # A-Jacobson/CNN_Sentence_Classification@6094274 train_utils.py `predict`: a parameter
    # switched to eval (or asked for its parameters) and called is a module.
    ("import torch\ndef predict(model, data):\n    model.eval()\n    probe = model(data)\n",
     "parameter `model` is called and switched or queried like a module"),
    ("import torch\ndef fit(net, x):\n    opt = make(net.parameters())\n    probe = net(x)\n",
     "parameter `net` is called and switched or queried like a module"),
]


@pytest.mark.parametrize(("source", "reason"), TENSORS)
def test_tensor_evidence(source: str, reason: str) -> None:
    names, value = probe(source)
    found = provenance(names, value)
    assert found.kind == "tensor", found
    assert reason in found.reason, found.reason


NOT_TENSORS = [
    ("import numpy as np\narr = np.zeros(3)\nprobe = arr\n", "numpy"),
    ("import pandas as pd\ndf = pd.read_csv('x')\nprobe = df\n", "pandas"),
    ("import argparse\nargs = argparse.ArgumentParser().parse_args()\nprobe = args\n",
     "argparse"),
    ("import torchvision\nds = torchvision.datasets.MNIST('d')\nprobe = ds\n",
     "torchvision dataset"),
    ("import torch.utils.data\nprobe = torch.utils.data\n", "module path `torch.utils.data`"),
    ("from torch.nn.utils.rnn import pack_padded_sequence\n"
     "probe = pack_padded_sequence(x, lengths)\n", "PackedSequence"),
    ("import tensorflow as tf\nimport torch\nprobe = torch.randn(3)\n", "imports TensorFlow"),
    ("import jax\nimport torch\nprobe = torch.randn(3)\n", "imports JAX"),
    ("import paddle\nimport torch\nprobe = torch.randn(3)\n", "imports Paddle"),
    # An import inside the function (or an enclosing one) covers what the function computes.
    ("import torch\ndef f():\n    import tensorflow as tf\n    def g():\n"
     "        probe = torch.randn(3)\n", "imports TensorFlow"),
    ("import keras\nimport torch\nprobe = torch.randn(3)\n", "imports Keras"),
    ("from torch.utils.data import Dataset\nimport torch\nclass D(Dataset):\n"
     "    def f(self):\n        return self.data\n", "Dataset subclass"),
    ("import torch\nprobe = torch.randn(3).numpy()\n", "numpy array"),
]


@pytest.mark.parametrize(("source", "reason"), NOT_TENSORS)
def test_negative_evidence(source: str, reason: str) -> None:
    names, value = probe(source)
    found = provenance(names, value)
    assert found.kind == "not-tensor", found
    assert reason in found.reason, found.reason


UNKNOWN = [
    ("import torch\ndef f(x):\n    return x\n", "no type evidence"),
    ("import torch\nimport numpy as np\nif c:\n    x = torch.ones(2)\nelse:\n    x = np.ones(2)\n"
     "probe = x\n", "bound to a tensor in one place and to something else in another"),
    ("import torch\nif c:\n    x = torch.ones(2)\nelse:\n    x = make()\nprobe = x\n",
     "bound to a tensor in one place"),
    # Only the bindings that reach the read count: here the last one, unknown.
    ("import torch\nx = torch.ones(2)\nx = make()\nprobe = x\n", "a call the analysis does not know"),
    ("import torch\nfor batch in loader:\n    probe = batch['data']\n", "container"),
    ("import torch.nn as nn\nrnn = nn.LSTM(2, 2)\nprobe = rnn(x)\n", "recurrent"),
    ("import torch\nprobe = torch.load('x.pt')\n", "torch.load"),
    ("import torch\nout, h = pair\nprobe = out\n", "unpacked from a tuple"),
    # A starred target or a length mismatch pairs nothing.
    ("import torch\nout, *h = torch.ones(2), 1, 2\nprobe = out\n", "unpacked from a tuple"),
    ("import torch\nout, h = torch.ones(2), (1,), 2\nprobe = out\n", "unpacked from a tuple"),
    # A parameter only called, or `.train(batch)` of a trainer, says nothing of a module.
    ("import torch\ndef predict(model, data):\n    probe = model(data)\n",
     "a call the analysis does not know"),
    ("import torch\ndef step(agent, batch):\n    agent.train(batch)\n    probe = agent(batch)\n",
     "a call the analysis does not know"),
    # ... nor one the function rebinds.
    ("import torch\ndef predict(model, data):\n    model.eval()\n    model = wrap(model)\n"
     "    probe = model(data)\n", "a call the analysis does not know"),
    # A function of this file that may give something else is not one.
    ("import torch\ndef f(x):\n    if x:\n        return torch.ones(2)\nprobe = f(1)\n",
     "a call the analysis does not know"),
    ("import torch\ndef f(x):\n    if x:\n        return torch.ones(2)\n    return x\n"
     "probe = f(1)\n", "a call the analysis does not know"),
    ("import torch\nimport functools\n@functools.lru_cache\ndef f():\n"
     "    return torch.ones(2)\nprobe = f()\n", "a call the analysis does not know"),
    # ... but the name itself may still be None.
    ("import torch\npredict = None\nfor x in xs:\n    predict = torch.ones(2)\nprobe = predict\n",
     "bound to a tensor in one place"),
    # A method `__init__` never calls may run after other code read the attribute.
    ("import torch.nn as nn\nclass T:\n    def __init__(self):\n        pass\n"
     "    def build(self):\n        self.D = nn.Linear(2, 2)\n"
     "    def train(self, x):\n        probe = self.D(x)\n", "a call the analysis does not know"),
    ("import torch\ndef f():\n    yield torch.ones(2)\n    return torch.ones(2)\nprobe = f()\n",
     "a call the analysis does not know"),
]


@pytest.mark.parametrize(("source", "reason"), UNKNOWN)
def test_unknown(source: str, reason: str) -> None:
    names, value = probe(source)
    found = provenance(names, value)
    assert found.kind == "unknown", found
    assert reason in found.reason, found.reason


def test_module_evidence_from_apply_and_isinstance() -> None:
    source = ("import torch.nn as nn\n"
              "def init(m):\n"
              "    if isinstance(m, nn.Conv2d):\n"
              "        guarded = m.weight\n"
              "    applied = m.bias\n"
              "nn.Sequential().apply(init)\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    values: list[Provenance] = []

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            values.append(provenance(names, node.value))

    module.visit(Visit())
    guarded, applied = values
    assert guarded.is_tensor and "isinstance(..., torch.nn.Conv2d)" in guarded.reason
    assert applied.is_tensor and "passed to `.apply()`" in applied.reason


def test_loop_over_modules_and_zip_of_parameters() -> None:
    source = ("import torch.nn as nn\n"
              "class Net(nn.Module):\n"
              "    def init(self, other):\n"
              "        for m in self.modules():\n"
              "            a = m.weight\n"
              "        for p, q in zip(self.parameters(), other.parameters()):\n"
              "            b = q\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    found: list[Provenance] = []

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.append(provenance(names, node.value))

    module.visit(Visit())
    assert [p.kind for p in found] == ["tensor", "tensor"]
    assert "`.modules()`" in found[0].reason and "zipped" in found[1].reason


NMT = ("import torch.nn as nn\ndef init_training(args):\n"
       "    crit = nn.CrossEntropyLoss(size_average=False{reduction})\n"
       "    if args.cuda:\n        crit = crit.cuda()\n    return args.vocab, crit\n"
       "vocab, criterion = init_training(args)\nprobe = criterion(a, b)\n")


@pytest.mark.parametrize(("source", "scalar"), [
    ("import torch.nn as nn\ncrit = nn.CrossEntropyLoss()\nprobe = crit(a, b)\n", True),
    ("import torch.nn as nn\ncrit = nn.CrossEntropyLoss(reduction='none')\nprobe = crit(a, b)\n",
     False),
    ("import torch.nn as nn\ncrit = nn.NLLLoss(reduce=False)\nprobe = crit(a, b)\n", False),
    ("import torch.nn.functional as F\nprobe = F.mse_loss(a, b) / x.size(0)\n", True),
    ("import torch.nn.functional as F\nprobe = F.mse_loss(a, b) * weights\n", False),
    ("import torch\nprobe = torch.ones(3).sum()\n", True),
    ("import torch\nprobe = torch.ones(3).sum(0)\n", False),
    ("import torch\nprobe = torch.ones(3).sum(dim=0)\n", False),
    # pcyin/pytorch_nmt@bf28dae nmt.py: the criterion is an item of the tuple a function of this
    # file returns (`..., cross_entropy_loss = init_training(args)`), moved to the GPU there.
    (NMT.format(reduction=""), True),
    (NMT.format(reduction=", reduction='none'"), False),
    # ... and only the bindings that reach the read count: `loss` is rebound after the loop.
    ("import torch.nn.functional as F\ndef evaluate(x, y, done, total):\n    if done:\n"
     "        loss = total / 3\n        return loss\n    loss = F.cross_entropy(x, y)\n"
     "    probe = loss\n", True),
    ("import torch.nn.functional as F\ndef evaluate(batches):\n    loss = f(0)\n"
     "    for x, y in batches:\n        loss = F.cross_entropy(x, y)\n"
     "    probe = loss\n", False),
])
def test_scalar_evidence(source: str, scalar: bool) -> None:
    names, value = probe(source)
    assert (scalar_reason(names, value) is not None) is scalar


# ------------------------------------------------------------------ fixtures
def _tensor_fixtures():
    return [f for f in collect_fixtures(FIXTURES) if f.code in TENSOR_CODES]


def test_every_tensor_rule_has_five_fixes_and_five_traps() -> None:
    fixtures = _tensor_fixtures()
    for code in TENSOR_CODES:
        mine = [f for f in fixtures if f.code == code]
        traps = [f for f in mine if f.is_trap]
        cases = [f for f in mine if not f.is_trap]
        assert len(traps) >= 5, f"{code} has {len(traps)} traps"
        assert len(cases) >= 5, f"{code} has {len(cases)} flagged cases"


@pytest.mark.parametrize("fixture", [f for f in _tensor_fixtures() if f.is_trap],
                         ids=lambda f: f"{f.code}/{f.path.name}")
def test_trap_gets_no_fix_from_any_tensor_rule(fixture) -> None:
    """Stronger than byte-identical under its own code: no TFC1xx rule offers a fix."""
    text = fixture.read_text()
    found = [f for f in findings(text, TENSOR_CODES, path=str(fixture.path))
             if f.code == fixture.code]
    offered = [f for f in found if f.fix is not None]
    assert offered == [], offered


@pytest.mark.parametrize("fixture", [f for f in _tensor_fixtures() if not f.is_trap],
                         ids=lambda f: f"{f.code}/{f.path.name}")
def test_flagged_case_carries_a_reason(fixture) -> None:
    found = [f for f in findings(fixture.read_text(), [fixture.code], path=str(fixture.path))
             if f.code == fixture.code]
    assert found, "no finding"
    if fixture.code in ("TFC101", "TFC102", "TFC103", "TFC104", "TFC105", "TFC107"):
        assert all(f.reason for f in found), found


def test_reason_in_text_and_json_output(tmp_path: Path) -> None:
    case = tmp_path / "train.py"
    case.write_text("import torch.nn as nn\nnet = nn.Linear(3, 2)\n"
                    "for p in net.parameters():\n    v = p.data\n")
    runner = CliRunner()
    text = runner.invoke(app, ["check", str(case), "--select", "TFC102", "--format", "text"])
    assert "loop variable over `net.parameters()`" in text.output
    result = runner.invoke(app, ["check", str(case), "--select", "TFC102", "--format", "json"])
    payload = json.loads(result.output)
    items = payload if isinstance(payload, list) else payload.get("findings", payload)
    flat = json.dumps(items)
    assert "loop variable over `net.parameters()`" in flat


# ------------------------------------------------------------ real code
def test_real_code_gets_no_safe_fix_where_it_must_be_left_alone() -> None:
    """The headline of tests/realcode: hand-labelled `.data`/`.numpy()` from public repos."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "realcode"))
    try:
        import measure
    finally:
        sys.path.pop(0)
    items = measure.measure()
    assert len(measure.repositories()) >= 10
    assert {i.kind for i in items} == {"data", "numpy"}
    wrong = [i for i in items if i.label == "leave" and i.outcome == "safe"]
    assert wrong == []
    # Every non-trap rewrite the rules offer on real code is on something labelled `fix`.
    fixed = [i for i in items if i.outcome in ("safe", "unsafe")]
    assert fixed and all(i.label == "fix" for i in fixed)


def test_names_rebound_in_terms_of_themselves_stay_fast() -> None:
    """`x = x + y` repeated used to be walked once per path: exponential time."""
    import time

    lines = ["import torch", "import torch.nn as nn", "x = torch.zeros(3)", "y = torch.ones(3)",
             "model = nn.Linear(3, 3)"]
    for _ in range(80):
        lines += ["x = x + y", "y = y * x", "model = model.cuda()"]
    lines += ["z = x.data", "w = y.numpy()", "v = model(x).data"]
    started = time.perf_counter()
    found = findings("\n".join(lines) + "\n", TENSOR_CODES)
    assert time.perf_counter() - started < 20
    last = len(lines)
    # `x = x + y` eighty times deep is past what the analysis follows: no safe fix on it.
    assert all(f.fix is None or f.fix.safety.value != "safe"
               for f in found if f.code == "TFC102" and f.line == last - 2)
    # `model = model.cuda()` keeps the object it rebinds: every binding is the nn.Linear.
    (read,) = [f for f in found if f.code == "TFC102" and f.line == last]
    assert read.fix is not None and read.fix.safety.value == "safe"
    assert "torch.nn.Linear" in (read.reason or "")


@pytest.mark.parametrize("start", ["dist_ap, dist_an = [], []", "dist_an = []\ndist_ap = []"])
def test_a_list_filled_with_outputs_is_not_a_plain_value(start: str) -> None:
    """Cysu/open-reid@3293ca7 reid/loss/triplet.py: `dist_an` starts as an empty list (alone
    or in a parallel assignment), gets a grad-requiring tensor per row, and is concatenated:
    `dist_an.data` of the result hides history, so TFC102 reports it."""
    source = ("import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 1)\n"
              f"{start}\n"
              "for row in torch.randn(4, 3):\n    dist_an.append(net(row))\n"
              "dist_an = torch.cat(dist_an)\nprec = dist_an.data.mean()\n")
    found = [f for f in findings(source, ["TFC102"]) if f.line == source.count("\n")]
    assert len(found) == 1 and found[0].fix is not None


def _probes(source: str) -> dict[str, Provenance]:
    """What the analysis says of every ``probe_<name> = <expression>`` in ``source``."""
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    found: dict[str, Provenance] = {}

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value.startswith("probe_"):
                found[target.value] = provenance(names, node.value)

    module.visit(Visit())
    return found


def test_parameters_of_nested_applied_functions_and_of_functions_passed_tensors() -> None:
    # pix2pix's init_weights, pointer_summarizer's init_wt_normal, TRADES' _pgd_whitebox
    found = _probes(
        "import numpy as np\nimport torch\nimport torch.nn as nn\n"
        "def init_weights(net):\n"
        "    def init_func(m):\n"
        "        probe_applied = m.weight\n"
        "    net.apply(init_func)\n"
        "def init_wt(wt):\n    probe_passed = wt\n"
        "def mixed(x):\n    probe_mixed = x\n"
        "def as_value(y):\n    probe_value = y\n"
        "emb = nn.Embedding(3, 2)\n"
        "init_wt(emb.weight)\n"
        "mixed(torch.ones(2))\nmixed(np.ones(2))\n"
        "as_value(torch.ones(2))\nf = as_value\n")
    assert found["probe_applied"].is_tensor
    assert "parameter of `init_func`, passed to `.apply()`" in found["probe_applied"].reason
    assert found["probe_passed"].is_tensor
    assert "every call of `init_wt` in this file passes a tensor" in found["probe_passed"].reason
    assert found["probe_mixed"].kind == "unknown"
    assert found["probe_value"].kind == "unknown"


def test_a_number_before_the_loop_is_not_what_an_attribute_read_sees() -> None:
    # pytorch-wgan: `Wasserstein_D = 0`, then the loop binds it to a tensor.
    found = _probes(
        "import numpy as np\nimport torch\n"
        "w = 0\nacc = 0\narr = 0\nmean = 0\n"
        "for i in range(3):\n"
        "    w = torch.ones(2, requires_grad=True) * i\n"
        "    acc += torch.ones(2).sum()\n"
        "    arr = np.ones(2)\n"
        "    mean = torch.ones(2)\n"
        "probe_w = w.data\nprobe_acc = acc.data\nprobe_arr = arr.data\n"
        "probe_real = mean.real\n")
    assert found["probe_w"].is_tensor
    assert found["probe_acc"].is_tensor
    assert "starts as a number and has tensors added" in found["probe_acc"].reason
    assert not found["probe_arr"].is_tensor
    # `.real` is an attribute of numbers too: the number binding still counts there.
    assert not found["probe_real"].is_tensor



@pytest.mark.parametrize("first", ["probe_param", "probe_direct"])
def test_answers_do_not_depend_on_which_question_comes_first(first: str) -> None:
    # code-of-learn-deep-learning-with-pytorch char_rnn.ipynb: `pick_top_n(out.data)`, with
    # `out` from a model whose forward is a chain of views. Asking about the helper's
    # parameter first must not leave `out` unknown for the later, direct question (answers
    # are remembered per expression for the module), nor the other way round.
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.project = nn.Linear(4, 4)\n"
        "    def forward(self, x, hs=None):\n"
        "        out = self.project(x)\n"
        "        out = out.view(2, 2, -1)\n"
        "        out = out.permute(1, 0, 2)\n"
        "        out = out.contiguous()\n"
        "        return out.view(-1, 4), hs\n"
        "def pick_top_n(preds):\n"
        "    probe_param = preds\n"
        "model = Net()\n"
        "for i in range(3):\n"
        "    out, state = model(torch.ones(4, 4))\n"
        "    probe_direct = out\n"
        "    pick_top_n(out.data)\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    targets: dict[str, cst.BaseExpression] = {}

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value.startswith("probe_"):
                targets[target.value] = node.value

    module.visit(Visit())
    second = "probe_direct" if first == "probe_param" else "probe_param"
    answers = {key: provenance(names, targets[key]) for key in (first, second)}
    assert answers["probe_direct"].is_tensor, answers
    assert answers["probe_param"].is_tensor, answers
