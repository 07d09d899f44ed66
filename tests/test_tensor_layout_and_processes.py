"""The analyses behind TFC109-TFC110 and TFC302-TFC306, asked directly.

The fixtures show what the rules do with these answers; these tests pin the answers
themselves where a wrong one would silently change several rules: a tensor's known rank,
whether autograd records at a statement, which code runs when a file is imported.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchfix_codemods.analysis.core.import_time import runs_on_import, script_tail
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.walk import walk
from torchfix_codemods.analysis.facts.devices import cuda_device, has_cpu_fallback
from torchfix_codemods.analysis.facts.grad_mode import grad_enabled
from torchfix_codemods.analysis.facts.layout import rank_of, view_argument
from torchfix_codemods.analysis.facts.leaves import leaf_requiring_grad


def _index(source: str) -> tuple[cst.Module, NameIndex]:
    module = cst.parse_module(textwrap.dedent(source))
    return module, NameIndex.build(module)


def _nodes(module: cst.Module, kind: type) -> list:
    found: list = []
    walk(module, lambda node, parent: found.append(node) or True, lambda node: None)
    return [node for node in found if isinstance(node, kind)]


def _named(module: cst.Module, name: str) -> cst.Name:
    """The last read of ``name`` in the module."""
    return [n for n in _nodes(module, cst.Name) if n.value == name][-1]


@pytest.mark.parametrize(("source", "rank"), [
    ("import torch\nx = torch.randn(2, 3, 4)\nx\n", 3),
    ("import torch\nx = torch.zeros((2, 3))\nx\n", 2),
    ("def f(q, b, t):\n    x = q.view(b, t, 4, 8).transpose(1, 2)\n    x\n", 4),
    ("import torch.nn.functional as F\ndef f(a, b):\n    x = F.softmax(a.view(2, 3, 4) @ "
     "b.view(2, 4, 3) / 8, dim=-1)\n    x\n", 3),
    ("def f(a):\n    x = a.unsqueeze(0)\n    x\n", None),
    ("def f(a):\n    x = a.view(2, -1).unsqueeze(0)\n    x\n", 3),
    ("def f(a):\n    x = a.view(2, -1)\n    x = x.t()\n    x\n", None),
])
def test_rank_is_read_from_the_code_or_unknown(source: str, rank: int | None) -> None:
    module, names = _index(source)
    assert rank_of(names, _named(module, "x")) == rank


@pytest.mark.parametrize(("call", "kind"), [
    ("t.view(2, -1)", "shape"), ("t.view(-1)", "shape"), ("t.view(*s)", "shape"),
    ("t.view(torch.int32)", "not-shape"), ("t.view(dtype=torch.half)", "not-shape"),
    ("t.view(target_dtype)", "not-shape"), ("t.view('a', 'b')", "not-shape"),
    ("t.view(shape)", "unknown"), ("t.view(x.shape)", "shape"), ("t.view(x.size())", "shape"),
])
def test_view_argument(call: str, kind: str) -> None:
    module, names = _index(f"import torch\n{call}\n")
    assert view_argument(names, _nodes(module, cst.Call)[0]) == kind


@pytest.mark.parametrize(("source", "leaf"), [
    ("import torch\nw = torch.randn(3, requires_grad=True)\nw\n", True),
    ("import torch\nw = torch.randn(3)\nw\n", False),
    ("import torch\nw = torch.randn(3).to('cpu').requires_grad_()\nw\n", True),
    ("import torch\nw = (torch.randn(3, requires_grad=True) * 2).requires_grad_()\nw\n", False),
    ("import torch\nw = torch.nn.Parameter(torch.ones(2))\nw\n", True),
    ("import torch\nw = torch.nn.Parameter(torch.ones(2), False)\nw\n", False),
    ("import torch\nw = torch.randn(3, requires_grad=True)\nw = w * 2\nw\n", False),
    ("import torch\nw = torch.randn(3, requires_grad=True)\nw -= 1\nw\n", True),
    ("def f(model):\n    for w in model.parameters():\n        w\n", True),
    ("def f(model):\n    for w, p in model.named_parameters():\n        w\n", False),
])
def test_leaf_requiring_grad_needs_evidence_for_every_binding(source: str, leaf: bool) -> None:
    module, names = _index(source)
    assert (leaf_requiring_grad(names, _named(module, "w")) is not None) is leaf


@pytest.mark.parametrize(("source", "mode"), [
    ("w\n", True),
    ("import torch\nwith torch.no_grad():\n    w\n", False),
    ("import torch\nwith torch.no_grad():\n    with torch.enable_grad():\n        w\n", True),
    ("import torch\nwith torch.set_grad_enabled(train):\n    w\n", None),
    ("import torch\nwith torch.set_grad_enabled(False):\n    w\n", False),
    ("import torch\ntorch.set_grad_enabled(False)\nw\n", None),
    ("import torch\n@torch.inference_mode()\ndef f():\n    w\n", False),
    ("import torch\ndef f():\n    w\nwith torch.no_grad():\n    f()\n", False),
    ("import torch\ndef f():\n    w\nwith torch.no_grad():\n    f()\nf()\n", True),
    ("import torch\ndef f():\n    w\ncallbacks = [f]\nwith torch.no_grad():\n    f()\n", True),
    ("import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n"
     "    def forward(ctx, x):\n        w\n", False),
    ("import torch\nclass O:\n    @some_decorator\n    def step(self):\n        w\n", None),
    ("def f():\n    g()\n    w\ndef g():\n    f()\n", True),
])
def test_grad_enabled(source: str, mode: bool | None) -> None:
    module, names = _index(source)
    assert grad_enabled(names, _named(module, "w")) is mode


def test_import_time_code_and_the_script_tail() -> None:
    module, names = _index("""
        import torch

        def helper():
            a

        def main():
            helper()
            b

        def unused():
            c

        class Trainer:
            def __init__(self):
                d

            def fit(self):
                e

        try:
            import apex
        except ImportError:
            apex = None
        SIZE = 4
        main()
        Trainer().fit()
        if __name__ == "__main__":
            f
        if __name__ != "__main__":
            g
        else:
            h
    """)
    ran = {name: runs_on_import(names, _named(module, name)) for name in "abcdefgh"}
    assert ran == {"a": True, "b": True, "c": False, "d": True, "e": True, "f": False,
                   "g": True, "h": False}
    tail = script_tail(module)
    assert [cst.Module([]).code_for_node(s).strip().split("\n")[0] for s in tail] == [
        "SIZE = 4", "main()", "Trainer().fit()", 'if __name__ == "__main__":',
        'if __name__ != "__main__":']


@pytest.mark.parametrize(("expr", "cuda"), [
    ('"cuda"', True), ('"cuda:1"', True), ('f"cuda:{rank}"', True), ('"cpu"', False),
    ('torch.device("cuda", 0)', True), ('torch.device("cpu")', False),
    ('"cuda" if torch.cuda.is_available() else "cpu"', True),
    ('"cuda" if args.gpu else "cpu"', False), ("device", False),
])
def test_cuda_device(expr: str, cuda: bool) -> None:
    module, names = _index(f"import torch\nx = {expr}\n")
    value = _nodes(module, cst.Assign)[0].value
    assert (cuda_device(names, value) is not None) is cuda


@pytest.mark.parametrize(("source", "fallback"), [
    ("import torch\nx = torch.zeros(1).cuda()\n", False),
    ("import torch\nok = torch.cuda.is_available()\n", True),
    ("import torch as T\nok = T.backends.mps.is_available()\n", True),
    ("import torch\nd = 'cuda' if use_gpu else 'cpu'\n", True),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--no-cuda')\n", True),
    ("import torch\ntorch.cuda.synchronize()\n", False),
])
def test_cpu_fallback(source: str, fallback: bool) -> None:
    _, names = _index(source)
    assert has_cpu_fallback(names) is fallback
