"""The value facts behind TFC101/TFC107: may a tensor require grad, may it live on an
accelerator, is it integer-typed, each with the reason a reviewer reads after ``why:``.

Each case is a small module whose last simple statement is ``probe = <expression>`` (or a
``return``); the facts of that expression are asserted with a piece of their reason.
The torch behaviour each kind of evidence relies on is measured in
``test_the_torch_behaviour_the_facts_rely_on`` on the installed torch.
"""

from __future__ import annotations

import libcst as cst
import pytest
from support import FakeProject, fixed_text, probe

from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.grad_mode import grad_mode_at
from torchfix_codemods.analysis.facts.values import (
    TensorFacts,
    conversion_facts,
    no_history,
    tensor_facts,
)
from torchfix_codemods.analysis.project import ReturnFacts


def _facts(source: str, decorators: tuple[str, ...] = ()) -> TensorFacts:
    names, value = probe(source)
    return tensor_facts(names, value, decorators)


NET = "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 2)\n"
_SCRIPT = "if __name__ == '__main__':\n    main()\n"

NO_GRAD = [
    (NET + "with torch.no_grad():\n    probe = net(x)\n", "computed under `torch.no_grad`"),
    (NET + "@torch.inference_mode()\ndef f(x):\n    probe = net(x)\n",
     "under `torch.inference_mode`"),
    (NET + "with torch.no_grad():\n    y = predict(x)\ndef predict(x):\n    return net(x)\n",
     "every call of `predict` in this file is under `torch.no_grad`"),
    (NET + "probe = net(x).detach()\n", "`.detach()`"),
    (NET + "probe = net(x).data\n", "`.data`"),
    (NET + "probe = net(x).argmax(1)\n", "integer-typed"),
    (NET + "probe = torch.argmax(net(x), dim=1)\n", "integer-typed (`torch.argmax`)"),
    (NET + "probe = torch.max(net(x), 1)[1]\n", "integer indices of `torch.max`"),
    (NET + "probe = net(x).max(1)[1]\n", "integer indices of `.max()`"),
    (NET + "_, probe = torch.max(net(x), 1)\nprobe = probe\n", "integer indices of `torch.max`"),
    (NET + "values, indices = net(x).topk(3)\nprobe = indices\n", "integer indices of `.topk()`"),
    (NET + "probe = net(x).long()\n", "integer-typed (`.long()`)"),
    (NET + "probe = net(x) > 0\n", "a comparison (bool)"),
    (NET + "probe = net(x).eq(y)\n", "integer-typed (`.eq()`)"),
    ("import torch\nimport numpy as np\nprobe = torch.from_numpy(np.ones(3))\n",
     "`torch.from_numpy` makes a tensor without grad"),
    ("import torch\nprobe = torch.zeros(3)\n", "without `requires_grad=True`"),
    ("import torch\nw = torch.zeros(3, requires_grad=True)\nprobe = torch.tensor(w)\n",
     "made by `torch.tensor` without `requires_grad=True`"),
    ("import torch\nimport numpy as np\nprobe = torch.Tensor(np.ones(3))\n",
     "made by `torch.Tensor` without `requires_grad=True`"),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, 4)\n"
     "for images, labels in loader:\n    probe = labels\n", "a DataLoader batch"),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, 4)\n"
     "for i, (images, labels) in enumerate(loader):\n    probe = images\n", "a DataLoader batch"),
    ("import torch\nimport torch.utils.data\nloader = torch.utils.data.DataLoader(ds)\n"
     "images, labels = next(iter(loader))\nprobe = images\n", "a DataLoader batch"),
    ("import torch\nfrom torch.utils.data import DataLoader\nit = iter(DataLoader(ds))\n"
     "images, labels = it.next()\nprobe = images\n", "a DataLoader batch"),
    (NET + "def f(t):\n    if t.requires_grad:\n        return t.detach()\n    else:\n"
     "        probe = t\n", "guarded by a `t.requires_grad` test"),
    (NET + "x = net(x)\nx = x.detach()\nprobe = x\n", "`.detach()`"),
    (NET + "outs = []\nfor b in batches:\n    outs.append(net(b).argmax(1))\n"
     "probe = torch.cat(outs)\n", "integer-typed"),
    (NET + "def predict(x):\n    with torch.no_grad():\n        return net(x)\n"
     "probe = predict(x)\n", "computed under `torch.no_grad`"),
    ("import torch\nd = torch.distributions.Categorical(logits=l)\nprobe = d.sample()\n",
     "`Distribution.sample()` runs without grad"),
    (NET + "buf = torch.zeros(3)\nwith torch.no_grad():\n    buf[0] = net(x).sum()\n"
     "probe = buf\n", "without `requires_grad=True`"),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
     "it = iter(loader)\nfor step in range(9):\n    if step % 3 == 0:\n        it = iter(loader)\n"
     "    x, y = next(it)\n    x, y = x.to(device), y.to(device)\n    probe = x\n",
     "a DataLoader batch"),
    ("import torch\nimport torch.nn.functional as F\ndef f(size):\n"
     "    probe = F.interpolate(torch.zeros(1, 1, 4, 4), size=size, mode='bilinear')\n",
     "without `requires_grad=True`"),
    ("import torch\nimport torch.nn.functional as F\nprobe = F.one_hot(labels, 10).float()\n",
     "integer-typed (`torch.nn.functional.one_hot`)"),
    (NET + "with torch.no_grad():\n    actions = net(x)\nactions = actions.cpu()\nprobe = actions\n",
     "computed under `torch.no_grad`"),
    ("import torch\ndef decode(model, src, n):\n"
     "    ys = torch.ones(1, 1).fill_(0).type(torch.long)\n"
     "    for _ in range(n):\n        nxt = model(ys).argmax(1)\n"
     "        ys = torch.cat([ys, nxt.view(1, 1)], dim=0)\n    return ys\n"
     "probe = decode(m, s, 5)\n", "integer-typed"),
]


@pytest.mark.parametrize(("source", "reason"), NO_GRAD)
def test_evidence_that_it_does_not_require_grad(source: str, reason: str) -> None:
    facts = _facts(source)
    assert facts.requires_grad.answer == "no", facts
    assert reason in facts.requires_grad.reason, facts.requires_grad.reason


MAY_REQUIRE_GRAD = [
    (NET + "probe = net(x)\n", "yes", "output of a module"),
    (NET + "probe = net(x).cpu()\n", "yes", "output of a module"),
    (NET + "probe = net(x).float()\n", "yes", "output of a module"),
    (NET + "probe = net.weight\n", "yes", "a parameter (`.weight` of a module)"),
    (NET + "with torch.no_grad():\n    probe = net.weight\n", "yes", "a parameter"),
    ("import torch\nprobe = torch.zeros(3, requires_grad=True)\n", "yes",
     "with `requires_grad=True`"),
    (NET + "for p in net.parameters():\n    probe = p\n", "yes", "loop over `.parameters()`"),
    ("import torch\nw = torch.zeros(3, requires_grad=True)\nprobe = torch.Tensor(w)\n", "yes",
     "with `requires_grad=True`"),
    (NET + "buf = torch.zeros(3)\nbuf[0] = net(x).sum()\nprobe = buf\n", "yes",
     "output of a module"),
    (NET + "buf = torch.zeros(3)\nbuf.copy_(net(x))\nprobe = buf\n", "yes", "output of a module"),
    ("import torch\nt = torch.zeros(3)\nt.requires_grad_()\nprobe = t\n", "yes",
     "`t.requires_grad_()`"),
    (NET + "def f(t):\n    if t.requires_grad:\n        probe = t\n", "yes",
     "guarded by a `t.requires_grad` test"),
    (NET + "x = net(x).detach()\nif c:\n    x = net(x)\nprobe = x\n", "yes", "output of a module"),
    (NET + "total = torch.zeros(1)\nfor b in batches:\n    total += net(b).sum()\nprobe = total\n",
     "yes", "output of a module"),
    ("import torch\ndef f(t):\n    probe = t\n", "unknown", "not known"),
    ("import torch\nprobe = make()\n", "unknown", "a call the analysis does not follow"),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, collate_fn=c)\n"
     "for x in loader:\n    probe = x\n", "unknown", "not known"),
    ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
     "w = torch.ones(3, requires_grad=True)\nloader = DataLoader(TensorDataset(w))\n"
     "for x in loader:\n    probe = x\n", "yes", "with `requires_grad=True`"),
]


@pytest.mark.parametrize(("source", "answer", "reason"), MAY_REQUIRE_GRAD)
def test_evidence_that_it_may_require_grad(source: str, answer: str, reason: str) -> None:
    facts = _facts(source)
    assert facts.requires_grad.answer == answer, facts
    assert reason in facts.requires_grad.reason, facts.requires_grad.reason


_EVALUATOR = ("import torch\nclass Base:\n    def __init__(self):\n"
              "        self._cpu_device = torch.device({device!r})\n{more}"
              "class Evaluator(Base):\n    def process(self, out):\n"
              "        probe = out.cuda().to(self._cpu_device)\n")

ACCELERATOR = [
    # detectron2's evaluators: `self._cpu_device`, assigned once in the class or its base
    (_EVALUATOR.format(device="cpu", more=""), "no", "on `cpu`"),
    (_EVALUATOR.format(device="cuda", more=""), "yes", "on `cuda`"),
    (_EVALUATOR.format(device="cpu", more="    def move(self, d):\n"
                                          "        self._cpu_device = d\n"),
     "unknown", "moved with `.to(self._cpu_device)`"),
    (NET + "probe = net(x).cpu()\n", "no", "`.cpu()`"),
    (NET + "probe = net(x).to('cpu')\n", "no", "on `cpu`"),
    (NET + "probe = net(x).to(torch.device('cpu'))\n", "no", "on `cpu`"),
    (NET + "probe = net(x).cpu().float().view(-1)\n", "no", "`.cpu()`"),
    (NET + "probe = net(x).cpu().argmax(1)\n", "no", "`.cpu()`"),
    ("import torch\nimport numpy as np\nprobe = torch.from_numpy(np.ones(3)) * 2\n", "no",
     "a CPU tensor"),
    ("import torch\nprobe = torch.zeros(3)\n", "no", "without `device=`"),
    ("import torch\nprobe = torch.tensor([1, 2])\n", "no", "without `device=`"),
    ("import torch\ndevice = 'cpu'\nprobe = torch.ones(2).to(device)\n", "no", "on `cpu`"),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, 4)\n"
     "for images, labels in loader:\n    probe = images\n", "no", "collated on the CPU"),
    (NET + "net.to(device)\nprobe = net(x)\n", "unknown", "the module's parameters"),
    # A file that places nothing anywhere: torch makes the parameters on the CPU and nothing
    # moves them (a docstring naming `.cuda()` is prose, not a placement).
    ('"""Runs on `.cuda()` too."""\n' + NET + _SCRIPT + "probe = net(x)\n", "no",
     "places nothing"),
    # ... but not a library module (no `__main__` block: its callers may pass a moved model),
    # not one that names a device or loads something, not one that imports its own project
    (NET + "probe = net(x)\n", "unknown", "the module's parameters"),
    (NET + _SCRIPT + "print('cuda' if x else 'cpu')\nprobe = net(x)\n", "unknown",
     "the module's parameters"),
    (NET + _SCRIPT + "import numpy as np\nw = np.load(p)\nprobe = net(x)\n", "unknown",
     "the module's parameters"),
    (NET + _SCRIPT + "from models import build\nprobe = net(x)\n", "unknown",
     "the module's parameters"),
    ("import torch\nprobe = torch.ones(2).to(device)\n", "unknown", "moved with `.to(device)`"),
    ("import torch\nprobe = torch.zeros(3, device=dev)\n", "unknown", "chosen at run time"),
    ("import torch\nprobe = torch.zeros(3).cuda()\n", "yes", "`.cuda()`"),
    ("import torch\nprobe = torch.zeros(3, device='cuda:1')\n", "yes", "on `cuda:1`"),
    ("import torch\ntorch.set_default_device('cuda')\nprobe = torch.zeros(3)\n", "unknown",
     "changes the default device"),
    ("import torch\nwith torch.device('cuda'):\n    probe = torch.zeros(3)\n", "unknown",
     "changes the default device"),
    ("import torch\ndef f(t):\n    probe = torch.tensor(t)\n", "unknown", "not known"),
    ("import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass OnDevice(Dataset):\n"
     "    def __getitem__(self, i):\n        return self.x[i].to(self.device)\n"
     "loader = DataLoader(OnDevice(), 4)\nfor batch in loader:\n    probe = batch\n",
     "unknown", "not known"),
    ("import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass OnCpu(Dataset):\n"
     "    def __getitem__(self, i):\n        return self.x[i]\n"
     "loader = DataLoader(OnCpu(), 4)\nfor batch in loader:\n    probe = batch\n",
     "no", "collated on the CPU"),
]


@pytest.mark.parametrize(("source", "answer", "reason"), ACCELERATOR)
def test_accelerator_evidence(source: str, answer: str, reason: str) -> None:
    facts = _facts(source)
    assert facts.accelerator.answer == answer, facts
    assert reason in facts.accelerator.reason, facts.accelerator.reason


INTEGER = [
    (NET + "probe = net(x).argmax(1)\n", "yes", "`.argmax()`"),
    (NET + "probe = torch.max(net(x), 1)[1]\n", "yes", "indices of `torch.max`"),
    (NET + "probe = torch.max(net(x), 1)[0]\n", "unknown", "a module's output"),
    (NET + "probe = torch.max(net(x), other)\n", "unknown", "torch.max"),
    ("import torch\nprobe = torch.zeros(3, dtype=torch.long)\n", "yes", "dtype `torch.long`"),
    ("import torch\nprobe = torch.randint(0, 3, (2,))\n", "yes", "made by `torch.randint`"),
    ("import torch\nprobe = torch.arange(5)\n", "yes", "`torch.arange` of integers"),
    ("import torch\nprobe = torch.zeros(3)\n", "no", "a float tensor"),
    ("import torch\nprobe = torch.zeros(3).long().float()\n", "no", "`.float()`"),
    (NET + "probe = net(x) == y\n", "yes", "a comparison"),
]


@pytest.mark.parametrize(("source", "answer", "reason"), INTEGER)
def test_integer_evidence(source: str, answer: str, reason: str) -> None:
    facts = _facts(source)
    assert facts.integer.answer == answer, facts
    assert reason in facts.integer.reason, facts.integer.reason


def test_requires_grad_guard_in_a_conditional_expression() -> None:
    source = "import torch\ndef f(t):\n    return t.detach().cpu() if t.requires_grad else t.cpu()\n"
    names, value = probe(source)
    assert isinstance(value, cst.IfExp)
    guarded = tensor_facts(names, value.orelse)
    assert guarded.requires_grad.answer == "no"
    assert "guarded by a `t.requires_grad` test" in guarded.requires_grad.reason
    assert tensor_facts(names, value.body).requires_grad.answer == "no"
    assert not tensor_facts(names, value).numpy_can_fail
    still_open = _facts("import torch\ndef f(t):\n    if c:\n        probe = t.cpu()\n")
    assert still_open.requires_grad.answer == "unknown"


def test_what_a_function_of_another_file_returns_comes_from_the_project() -> None:
    source = "import torch\nfrom utils import predict\nprobe = predict(model, x)\n"
    module = cst.parse_module(source)
    value = module.body[-1].body[0].value  # type: ignore[attr-defined]
    alone = tensor_facts(NameIndex.build(module), value)
    assert alone.requires_grad.answer == "unknown" and alone.accelerator.answer == "unknown"
    project = FakeProject(returns={"utils.predict": ReturnFacts(
        "detached-cpu-tensor", "`utils.predict` returns `.detach().cpu()` (utils.py)")})
    facts = tensor_facts(NameIndex.build(module, project), value)
    assert facts.requires_grad.answer == "no" and facts.accelerator.answer == "no"
    assert "utils.py" in facts.requires_grad.reason
    cpu_only = FakeProject(returns={"utils.predict": ReturnFacts("cpu-tensor", "returns `.cpu()`")})
    facts = tensor_facts(NameIndex.build(module, cpu_only), value)
    assert facts.requires_grad.answer == "unknown" and facts.accelerator.answer == "no"


def test_configured_inference_decorator_turns_grad_off() -> None:
    source = NET + "from utils import smart_inference_mode\n@smart_inference_mode()\n" \
                   "def run(x):\n    probe = net(x)\n"
    assert _facts(source).requires_grad.answer == "yes"
    facts = _facts(source, ("utils.smart_inference_mode",))
    assert facts.requires_grad.answer == "no"
    assert "configured inference decorator" in facts.requires_grad.reason


def test_enable_grad_inside_no_grad_turns_it_back_on() -> None:
    source = NET + "with torch.no_grad():\n    with torch.enable_grad():\n        probe = net(x)\n"
    assert _facts(source).requires_grad.answer == "yes"


def test_a_parameter_converted_under_no_grad_cannot_fail_for_grad() -> None:
    """torch checks ``requires_grad`` in ``.numpy()`` only while grad mode is on."""
    source = NET + "with torch.no_grad():\n    probe = net.weight\n"
    names, value = probe(source)
    assert tensor_facts(names, value).requires_grad.answer == "yes"
    converted = conversion_facts(names, value)
    assert converted.requires_grad.answer == "no"
    assert "where torch does not check grad" in converted.requires_grad.reason


def test_numpy_can_fail_and_its_risks_in_words() -> None:
    facts = _facts(NET + "probe = net(x).cpu()\n")
    assert facts.numpy_can_fail
    assert facts.risks() == ["it requires grad (output of a module (instance of "
                             "`torch.nn.Linear`) with autograd on)"]
    assert not _facts(NET + "probe = net(x).detach().cpu()\n").numpy_can_fail


def test_the_torch_behaviour_the_facts_rely_on() -> None:
    """Each kind of evidence above, measured on the installed torch (CPU is enough)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    w = torch.randn(3, requires_grad=True)
    assert not w.argmax().requires_grad and w.argmax().dtype == torch.int64
    assert not torch.max(w.view(1, 3), 1)[1].requires_grad
    assert torch.max(w.view(1, 3), 1)[0].requires_grad
    assert not w.topk(2)[1].requires_grad and not w.sort()[1].requires_grad
    assert not w.long().requires_grad and not w.long().float().requires_grad
    assert not (w > 0).requires_grad and (w > 0).dtype == torch.bool
    assert w.cpu().requires_grad and w.to("cpu").requires_grad  # .cpu() keeps grad
    assert not w.detach().requires_grad and not w.data.requires_grad
    with torch.no_grad():
        assert not (w * 2).requires_grad and w.requires_grad
        with torch.enable_grad():
            assert (w * 2).requires_grad
        assert w.numpy().shape == (3,)  # no grad check while grad mode is off
    with torch.inference_mode():
        assert not (w * 2).requires_grad
    with pytest.raises(RuntimeError, match="requires grad"):
        w.numpy()
    t = torch.from_numpy(np.zeros(3))
    assert not t.requires_grad and t.device.type == "cpu"
    z = torch.zeros(3)
    assert not z.requires_grad and z.device.type == "cpu" and z.dtype == torch.float32
    assert torch.arange(5).dtype == torch.int64 and torch.randint(0, 3, (2,)).dtype == torch.int64
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(4, 2), torch.arange(4)), batch_size=2)
    images, labels = next(iter(loader))
    assert not images.requires_grad and images.device.type == "cpu"
    distribution = torch.distributions.Categorical(logits=w)
    assert not distribution.sample().requires_grad
    with pytest.warns(UserWarning):
        assert not torch.tensor(w).requires_grad  # a copy, detached
    assert torch.Tensor(w).requires_grad  # the legacy constructor aliases a tensor argument
    with pytest.raises(TypeError):
        torch.FloatTensor(w, 3)  # ... but a tensor and a size are refused: two ints are sizes
    assert not torch.FloatTensor(2, 3).requires_grad
    assert torch.Tensor(torch.zeros(2, device="meta")).device.type == "meta"
    buf = torch.zeros(3)
    buf[0] = (w * 2).sum()  # writing a value that requires grad makes the buffer require it
    assert buf.requires_grad


# ------------------------------------------------------------------ flow and grad mode
def _reads(source: str, name: str) -> tuple[NameIndex, list[cst.Name]]:
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    assert names.module_scope is not None
    reads = [read for scope in names.all_scopes for read in scope.loads.get(name, [])]
    return names, reads


def _lines_of(names: NameIndex, read: cst.Name) -> list[str]:
    return [cst.Module([]).code_for_node(b.node).strip().splitlines()[0]
            for b in reaching_bindings(names, read)]


def test_the_latest_binding_that_certainly_ran_hides_earlier_ones() -> None:
    names, reads = _reads("x = a()\nx = x.cpu()\nuse(x)\n", "x")
    assert _lines_of(names, reads[-1]) == ["x = x.cpu()"]
    assert _lines_of(names, reads[0]) == ["x = a()"]  # the read inside `x.cpu()`


def test_a_conditional_binding_joins_the_one_before_it() -> None:
    names, reads = _reads("x = a()\nif c:\n    x = b()\nuse(x)\n", "x")
    assert _lines_of(names, reads[-1]) == ["x = a()", "x = b()"]


def test_a_later_binding_in_a_loop_reaches_the_next_iteration() -> None:
    names, reads = _reads("x = a()\nfor i in r:\n    use(x)\n    x = b()\n", "x")
    assert _lines_of(names, reads[0]) == ["x = a()", "x = b()"]
    names, reads = _reads("for i in r:\n    x = a()\n    use(x)\n    x = b()\n", "x")
    assert _lines_of(names, reads[0]) == ["x = a()"]


def test_an_if_whose_every_branch_binds_dominates_like_one_binding() -> None:
    # znxlwm/pytorch-generative-model-collections GAN.py `visualize_results`: the samples of
    # either branch reach the conversion; the rebinding to a numpy array below does not.
    source = ("def f(fix, gpu):\n    if fix:\n        s = g(a)\n    else:\n        s = g(b)\n"
              "    if gpu:\n        s = s.cpu().numpy()\n    else:\n        s = s.numpy()\n"
              "    s = (s + 1) / 2\n")
    names, reads = _reads(source, "s")
    assert _lines_of(names, reads[0]) == ["s = g(a)", "s = g(b)"]
    assert _lines_of(names, reads[1]) == ["s = g(a)", "s = g(b)"]  # not the sibling branch
    assert _lines_of(names, reads[2]) == ["s = s.cpu().numpy()", "s = s.numpy()"]
    names, reads = _reads("if c:\n    x = a()\nelif d:\n    x = b()\nelse:\n    x = e()\n"
                          "use(x)\nx = 3\n", "x")
    assert _lines_of(names, reads[0]) == ["x = a()", "x = b()", "x = e()"]


def test_an_if_without_else_or_a_loop_keeps_every_binding() -> None:
    names, reads = _reads("if c:\n    x = a()\nelif d:\n    x = b()\nuse(x)\nx = 3\n", "x")
    assert _lines_of(names, reads[0]) == ["x = a()", "x = b()", "x = 3"]
    # In a loop, the other branch's binding reaches the next iteration.
    names, reads = _reads("x = a()\nfor i in r:\n    if c:\n        x = b()\n"
                          "    else:\n        use(x)\n", "x")
    assert _lines_of(names, reads[0]) == ["x = a()", "x = b()"]


def test_a_binding_in_a_with_body_holds_after_it() -> None:
    names, reads = _reads("import torch\nwith torch.no_grad():\n    y = f()\ny = y.cpu()\n", "y")
    assert _lines_of(names, reads[0]) == ["y = f()"]
    names, reads = _reads("import contextlib\ny = a()\nwith contextlib.suppress(E):\n"
                          "    y = f()\nuse(y)\n", "y")
    assert _lines_of(names, reads[0]) == ["y = a()", "y = f()"]


def test_augmented_assignment_extends_what_reaches_it() -> None:
    names, reads = _reads("x = a()\nx += b()\nuse(x)\n", "x")
    assert _lines_of(names, reads[-1]) == ["x = a()", "x += b()"]


def test_grad_mode_reasons() -> None:
    source = ("import torch\n@torch.no_grad()\ndef f():\n    a = 1\n"
              "def g():\n    with torch.set_grad_enabled(flag):\n        b = 2\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    assigns = [node for node in _walk_assigns(module)]
    first, second = (grad_mode_at(names, node) for node in assigns)
    assert first.enabled is False and "torch.no_grad" in first.reason
    assert second.enabled is None and "set_grad_enabled" in second.reason


def _walk_assigns(module: cst.Module) -> list[cst.Assign]:
    found: list[cst.Assign] = []

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.append(node)

    module.visit(Collect())
    return found


# `probe = out` judged where it stands: a module output whose input an earlier line converted.
_EXPORT = ("import torch\n\n\ndef to_numpy(example):\n    import onnxruntime\n"
           "    return onnxruntime.run({'x': example.numpy()})\n\n\n"
           "def export(model: torch.nn.Module, example=None):\n"
           "    if example is None:\n        example = torch.randn(2, 3)\n"
           "    with torch.inference_mode():\n        out = model(example)\n")


@pytest.mark.parametrize("body", [
    "    ref = to_numpy(example)\n    probe = out\n",
    "    ref = to_numpy(example=example)\n    probe = out\n",
    "    ref = example.numpy()\n    probe = out\n",
    "    if check:\n        ref = to_numpy(example)\n        probe = out\n",
])
def test_a_module_output_from_an_input_converted_before_is_on_the_cpu(body: str) -> None:
    """timm's onnx_export: `original_out.numpy()` after `onnx_forward(f, example_input)`
    converted the input: a GPU model would have raised on that CPU input first."""
    names, value = probe(_EXPORT + body)
    facts = conversion_facts(names, value)
    assert facts.accelerator.answer == "no", facts.accelerator
    assert "a module on an accelerator would have raised on it" in facts.accelerator.reason
    assert not facts.numpy_can_fail


@pytest.mark.parametrize("body", [
    # the conversion does not run on every path to the line judged
    "    if check:\n        ref = to_numpy(example)\n    probe = out\n",
    "    ref = to_numpy(example) if check else None\n    probe = out\n",
    # the input was rebound between the module call and the conversion
    "    example = example.cpu()\n    ref = to_numpy(example)\n    probe = out\n",
    # another argument is converted, not the module's input
    "    ref = to_numpy(other)\n    probe = out\n",
    # the earlier conversion is itself a device finding: it proves nothing
    "    example = example.to(device)\n    out = model(example)\n    ref = example.numpy()\n"
    "    probe = out\n",
])
def test_a_module_output_stays_suspected_without_a_conversion_before(body: str) -> None:
    names, value = probe(_EXPORT + body)
    facts = conversion_facts(names, value)
    assert facts.accelerator.answer == "unknown" and facts.accelerator.suspected, facts.accelerator


@pytest.mark.parametrize("helper", [
    # the conversion sits under a condition, or after an early return
    "def to_numpy(example):\n    if fast:\n        return example.numpy()\n    return None\n",
    "def to_numpy(example):\n    if cached:\n        return cache\n    return example.numpy()\n",
    # the parameter is rebound before it is converted
    "def to_numpy(example):\n    example = example[0]\n    return example.numpy()\n",
])
def test_a_helper_counts_only_when_every_call_converts_the_parameter(helper: str) -> None:
    source = _EXPORT.replace("def to_numpy(example):\n    import onnxruntime\n"
                             "    return onnxruntime.run({'x': example.numpy()})\n", helper)
    names, value = probe(source + "    ref = to_numpy(example)\n    probe = out\n")
    assert conversion_facts(names, value).accelerator.suspected


def test_a_conversion_after_the_line_judged_proves_nothing_there() -> None:
    source = _EXPORT + "    probe = out\n    ref = to_numpy(example)\n"
    names = NameIndex.build(cst.parse_module(source))
    scope = next(s for s in names.all_scopes if "probe" in s.bindings)
    value = scope.bindings["probe"][0].value
    assert isinstance(value, cst.Name) and value.value == "out"
    assert conversion_facts(names, value).accelerator.suspected


NO_HISTORY = [
    (NET + "for p in net.parameters():\n    probe = p.grad\n", "a gradient"),
    ("import torch\nfrom torch.autograd import Variable\nprobe = Variable(y)\n",
     "`Variable(x)` returns `x.detach()`"),
    ("import torch\nimport numpy as np\ndef main():\n    predict(torch.from_numpy(np.ones(3)))\n"
     "def predict(x_val):\n    probe = x_val\n",
     "every call of `predict` in this file passes a value without grad"),
    (NET + "t = torch.zeros(4).long()\nt[0:1] = net(x)[0]\nprobe = t\n", "integer-typed"),
    # reduced from hunkim/PyTorchZeroToAll@e5a260fac0b4ff1e2ec434fc6f0d962ac97fc289
    # 09_01_softmax_loss.py: a loss of plain tensors
    (NET + "loss = nn.CrossEntropyLoss()\nY = torch.tensor([2, 0])\n"
     "Y_pred = torch.tensor([[0.1, 0.2, 0.9], [1.1, 0.1, 0.2]])\nprobe = loss(Y_pred, Y)\n",
     "without `requires_grad=True`"),
    # carpedm20/BEGAN-pytorch trainer.py: `z_D = Variable(torch.FloatTensor(b, z))`, moved to
    # the GPU, refilled with `z_D.data.normal_(0, 1)`: two positional arguments are sizes.
    ("import torch\nprobe = torch.FloatTensor(self.batch_size, self.z_num).cuda()\n",
     "without `requires_grad=True`"),
]


@pytest.mark.parametrize(("source", "reason"), NO_HISTORY)
def test_values_that_can_carry_no_history(source: str, reason: str) -> None:
    names, value = probe(source)
    found = no_history(names, value)
    assert found is not None and reason in found


MAY_HAVE_HISTORY = [
    # backward(create_graph=True) leaves gradients with a graph
    NET + "net(x).sum().backward(create_graph=True)\nfor p in net.parameters():\n"
    "    probe = p.grad\n",
    "import torch\nfrom torch.autograd import Variable\nprobe = Variable(y, requires_grad=True)\n",
    # a parameter is a leaf that requires grad: not "no history" for the rules that detach
    NET + "probe = net.weight\n",
    # one call passes a value that requires grad
    NET + "def score(x_val):\n    probe = x_val\nscore(torch.zeros(3))\nscore(net.weight)\n",
    # a loss of a module's output
    NET + "loss = nn.CrossEntropyLoss()\nprobe = loss(net(x), y)\n",
    # a float buffer filled with a value that requires grad
    NET + "t = torch.zeros(4)\nt[0:2] = net(x)[0]\nprobe = t\n",
    # one argument of a legacy constructor may be a tensor it aliases
    NET + "probe = torch.FloatTensor(net.weight)\n",
]


@pytest.mark.parametrize("source", MAY_HAVE_HISTORY)
def test_values_that_may_carry_history(source: str) -> None:
    names, value = probe(source)
    assert no_history(names, value) is None


def test_the_torch_behaviour_no_history_relies_on() -> None:
    """Measured on the installed torch: what the rules that detach rely on."""
    torch = pytest.importorskip("torch")
    from torch.autograd import Variable

    w = torch.randn(3, requires_grad=True)
    (w * w).sum().backward()
    assert not w.grad.requires_grad and w.grad.grad_fn is None
    w.grad = None
    (w * w).sum().backward(create_graph=True)
    assert w.grad.requires_grad and w.grad.grad_fn is not None
    x = torch.zeros(2)
    v = Variable(x)
    assert v is not x and not v.requires_grad and v.data_ptr() == x.data_ptr()
    t = torch.zeros(3).long()
    t[0:1] = w[:1] * 2
    assert not t.requires_grad and t.grad_fn is None
    with pytest.raises(RuntimeError, match="floating point"):
        w.argmax().requires_grad_()
    plain = torch.nn.CrossEntropyLoss()(torch.randn(2, 3), torch.tensor([0, 1]))
    assert not plain.requires_grad and plain.grad_fn is None
    assert torch.nn.CrossEntropyLoss()(w.view(1, 3), torch.tensor([0])).requires_grad


def test_a_method_parameter_passed_a_batch_at_every_call_has_no_history() -> None:
    # EmilienDupont/wgan-gp training.py: `self._gradient_penalty(data)` with `data` a loader
    # batch wrapped in `Variable`: tensor provenance follows that call, so the value facts
    # must too, or `real_data.data` would be rewritten as if it hid history.
    from pathlib import Path

    import libcst as cst

    from torchfix_codemods.analysis.core.names import NameIndex
    from torchfix_codemods.analysis.facts.values import no_history

    path = Path(__file__).parent / "fixtures" / "TFC102" / "trap_method_parameter_passed_a_batch.py"
    module = cst.parse_module(path.read_text())
    names = NameIndex.build(module)
    reads: list[cst.BaseExpression] = []

    class Visit(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == "data" and isinstance(node.value, cst.Name):
                reads.append(node.value)

    module.visit(Visit())
    reason = no_history(names, reads[0])
    assert reason is not None and "every call of `_gradient_penalty`" in reason


_LOADER_DICT = """\
import torch
from torch.autograd import Variable
from torch.utils.data import DataLoader

train_loader = DataLoader(train_set, batch_size=2)
val_loader = DataLoader(val_set, batch_size=2)
loaders = {"train": train_loader, "val": val_loader}
{mutation}
for inputs in loaders[phase]:
    inputs = Variable(inputs)
"""


@pytest.mark.parametrize(("mutation", "expected"), [
    ("", "    pass\n"),  # `inputs = inputs` is dropped: the loop body keeps a pass
    ("loaders['val'] = features", "    inputs = inputs.detach()\n"),
    ("loaders.update(extra)", "    inputs = inputs.detach()\n"),
])
def test_an_item_of_a_dict_literal_of_loaders_is_a_batch_without_history(
        mutation: str, expected: str) -> None:
    """``loaders[phase]`` over a dict literal of DataLoaders yields batches (no history:
    the wrapper just goes), unless code stores something else into the dict."""
    fixed = fixed_text(_LOADER_DICT.replace("{mutation}", mutation), ["TFC106"])
    assert fixed.endswith(expected)
