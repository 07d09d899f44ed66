"""Targeted positions equal LibCST's PositionProvider for every node of real files."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchfix_codemods.analysis.core.positions import positions_of

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests" / "fixtures").glob("*/*.py"))


class _All(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


@pytest.mark.parametrize("path", FILES[:20], ids=lambda p: p.name)
def test_positions_match_position_provider(path: Path) -> None:
    try:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
    except cst.ParserSyntaxError:
        pytest.skip("not parseable")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    collector = _All()
    module.visit(collector)
    # Every node at once, and each of a sample alone (hoisting must work without neighbours).
    found = positions_of(module, collector.nodes)
    for node in collector.nodes:
        assert found[id(node)] == expected[node], type(node).__name__
    for node in collector.nodes[::37]:
        assert positions_of(module, [node])[id(node)] == expected[node], type(node).__name__


def test_crlf_and_tabs() -> None:
    module = cst.parse_module("import torch\r\nif x:\r\n\ty = torch.load(p)\r\n")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    collector = _All()
    module.visit(collector)
    found = positions_of(module, collector.nodes)
    assert all(found[id(n)] == expected[n] for n in collector.nodes)
