"""The fast walk visits the same meaningful nodes as LibCST's visitor, in the same order."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchfix_codemods.analysis.core.walk import _LAYOUT, walk

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "torchfix_codemods").rglob("*.py"))

TRICKY = '''
@decorator(arg)
async def f(a, /, b: int = 1, *args, c=lambda x: x, **kw) -> "T":
    x = [i for i in range(3) if i] + {k: v for k, v in kw.items()}
    y = a if b else c
    async with ctx() as (p, q), other():
        await thing()
    try:
        pass
    except (ValueError, TypeError) as error:
        raise RuntimeError() from error
    else:
        del x[0]
    finally:
        print(f"{y!r:>{width}}", *args, sep="")
    match command:
        case [a, *rest] if a > 0:
            return {"k": a, **kw}
        case Point(x=0) | None:
            yield from rest
    global g
    return (yield)
class C(Base, metaclass=Meta):
    attr: int = 3
    while True:
        break
'''


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, _LAYOUT):
            self.seen.append(("enter", id(node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if not isinstance(original_node, _LAYOUT):
            self.seen.append(("leave", id(original_node)))


def _walk_order(module: cst.Module) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []

    def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        seen.append(("enter", id(node)))
        return True

    walk(module, enter, lambda node: seen.append(("leave", id(node))))
    return seen


@pytest.mark.parametrize("source", [TRICKY] + [p.read_text(encoding="utf-8") for p in FILES[:25]])
def test_walk_matches_libcst_visitor_order(source: str) -> None:
    module = cst.parse_module(source)
    recorder = _Recorder()
    module.visit(recorder)
    assert _walk_order(module) == recorder.seen


def test_deep_nesting_does_not_hit_the_recursion_limit() -> None:
    module = cst.parse_module("x = " + " + ".join(["a"] * 1100) + "\n")
    count = 0

    def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        nonlocal count
        count += 1
        return True

    walk(module, enter, lambda node: None)
    assert count > 2200
