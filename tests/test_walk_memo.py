"""The per-file memo of ``children`` and the ``type() is`` tests that replaced ``isinstance``
in the hottest walks (issue 23): same answers, computed once."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchfix_codemods.analysis.core import walk
from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.walk import (
    children,
    children_memoized,
    preorder,
    walk_local,
)

SOURCE = '''
import torch
from torch import nn as tnn

class Net(tnn.Module):
    def forward(self, x):
        return self.fc(x).relu()

def evaluate(model, loader, train=False):
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            if not train:
                print(out.data.cpu().numpy(), [i for i in y], lambda z: z.grad)
    return torch.nn.functional.softmax(out, dim=1)
'''


def _every_node(module: cst.Module) -> list[cst.CSTNode]:
    found, stack = [], [module]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children(node))
    return found


def test_memoized_children_are_the_computed_ones_and_computed_once() -> None:
    module = cst.parse_module(SOURCE)
    plain = {id(node): children(node) for node in _every_node(module)}
    with children_memoized():
        nodes = _every_node(module)
        assert len(nodes) == len(plain)
        for node in nodes:
            first = children(node)
            assert first == plain[id(node)]
            assert children(node) is first  # from the memo, not recomputed
    assert walk._MEMO is None  # dropped with the block
    assert children(module) is not children(module)  # no memo outside a block


def test_memo_is_reentrant_and_holds_its_nodes() -> None:
    with children_memoized():
        outer = walk._MEMO
        with children_memoized():
            assert walk._MEMO is outer  # an inner block shares the outer memo
            module = cst.parse_module("x = a.b\n")
            children(module)
        assert walk._MEMO is outer
        del module
        # the entry keeps its node alive, so its id cannot be reused by a new node
        assert all(entry[0] is not None for entry in outer.values())
    assert walk._MEMO is None


def test_memo_is_dropped_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), children_memoized():
        raise RuntimeError("boom")
    assert walk._MEMO is None


@pytest.mark.parametrize("node_type", [
    cst.FunctionDef, cst.ClassDef, cst.If, cst.Lambda, cst.With, cst.Name, cst.Attribute,
    cst.Arg, cst.Call,
])
def test_classes_tested_by_type_have_no_subclass(node_type: type) -> None:
    """``type(node) is X`` equals ``isinstance(node, X)`` only while LibCST has no subclass of X."""
    assert node_type.__subclasses__() == []


def test_walk_local_and_dotted_names_unchanged() -> None:
    module = cst.parse_module(SOURCE)
    evaluate = next(node for node in module.body
                    if isinstance(node, cst.FunctionDef) and node.name.value == "evaluate")
    local = list(walk_local(evaluate.body))
    assert not any(isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
                   for node in local)
    assert any(isinstance(node, cst.ListComp) for node in local)
    assert dotted_name(cst.parse_expression("torch.nn.functional.softmax")) == \
        "torch.nn.functional.softmax"
    assert dotted_name(cst.parse_expression("f().x")) is None


def _libcst_visiting_order(root: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    root.visit(_Collect())
    return found


def _real_sources() -> list[Path]:
    """Every example, and every third fixture (LibCST's visitor is slow: a thousand files
    took a minute)."""
    root = Path(__file__).resolve().parent.parent
    fixtures = sorted((root / "tests/fixtures").rglob("*.py"))[::3]
    return sorted((root / "examples").rglob("*.py")) + fixtures


def test_preorder_is_libcst_visiting_order_without_layout() -> None:
    """``preorder`` replaced LibCST visitors whose readers compare source order (``_before``
    of the inference analysis) and look for calls and attributes (``_class_nodes``): the
    same nodes in the same order, layout nodes aside, on every example and fixture."""
    checked = 0
    for path in _real_sources():
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        expected = [node for node in _libcst_visiting_order(module)
                    if walk._meaningful(type(node))]
        with children_memoized():
            assert [id(node) for node in preorder(module)] == [id(node) for node in expected], \
                path
        checked += 1
    assert checked > 100
