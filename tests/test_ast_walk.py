"""The fast ``ast`` walks yield exactly what the standard library's do, in the same order."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchfix_codemods.analysis.core import ast_walk

SOURCE = '''
import torch
from torch import nn as tnn

@decorator(arg=1)
class Model(tnn.Module, metaclass=Meta):
    def forward(self, x, *args, y: int = 2, **kw):
        import numpy as np
        total = [i * 2 for i in range(3) if i]
        with torch.no_grad(), open("f") as handle:
            try:
                value = lambda z: z + 1
            except (ValueError, TypeError) as error:
                raise RuntimeError("no") from error
            else:
                from os import path
            finally:
                del handle
        while x:
            x -= 1
            if x > 3:
                break
        else:
            pass
        match x:
            case {"a": 1, **rest}:
                import json
            case [first, *others] if first:
                pass
            case Point(x=0) | None:
                global counter
        return f"{x!r:>{y}}" if x else (yield from args)

async def run():
    async with lock:
        async for item in stream:
            await item
    nonlocal_free = {k: v for k, v in {}.items()}
    assert nonlocal_free, "message"
'''


def _trees() -> list[ast.AST]:
    trees = [ast.parse(SOURCE)]
    package = Path(ast_walk.__file__).resolve().parent.parent.parent
    trees += [ast.parse(path.read_text(encoding="utf-8"))
              for path in sorted(package.glob("analysis/project/*.py"))]
    return trees


@pytest.mark.parametrize("tree", _trees(), ids=lambda tree: str(len(ast.dump(tree))))
def test_walk_and_children_match_the_standard_library(tree: ast.AST) -> None:
    expected = list(ast.walk(tree))
    assert [id(node) for node in ast_walk.walk(tree)] == [id(node) for node in expected]
    for node in expected:
        assert list(ast_walk.iter_child_nodes(node)) == list(ast.iter_child_nodes(node))


@pytest.mark.parametrize("tree", _trees(), ids=lambda tree: str(len(ast.dump(tree))))
def test_statements_are_the_walks_statements_in_its_order(tree: ast.AST) -> None:
    expected = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    assert [id(node) for node in ast_walk.statements(tree)] == [id(node) for node in expected]


def test_statements_reach_imports_in_every_kind_of_block() -> None:
    tree = ast.parse(SOURCE)
    imported = [alias.name for node in ast_walk.statements(tree)
                if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names]
    assert sorted(imported) == ["json", "nn", "numpy", "path", "torch"]


def test_walk_of_a_subtree_starts_there() -> None:
    call = ast.parse("f(a, b=c)").body[0].value  # type: ignore[attr-defined]
    assert [type(node).__name__ for node in ast_walk.walk(call)] == [
        "Call", "Name", "Name", "keyword", "Load", "Load", "Name", "Load"]
