"""The fix loop's rounds analyse the tree the fixes rewrote, not a parse of its code
(``engine.REUSE_TREE``): that is only sound while every rewritten tree equals, node for node
and whitespace for whitespace, what LibCST parses from its code. Proved here for the
rewrite of every fixture, both tiers, and for the findings and text of a whole fix."""

from __future__ import annotations

import dataclasses

import libcst as cst
import pytest

from tests.test_fixtures import FIXTURES, ROOT, _fix
from torchfix_codemods import engine
from torchfix_codemods.verify.fixtures import Fixture


def _id(fixture: Fixture) -> str:
    return str(fixture.path.relative_to(ROOT))


@pytest.mark.parametrize("fixture", FIXTURES, ids=_id)
def test_every_rewritten_tree_is_the_parse_of_its_code(fixture: Fixture, monkeypatch) -> None:
    real = engine._apply
    rewrites: list[cst.Module] = []

    def apply(*args, **kwargs) -> cst.Module:
        rewrites.append(real(*args, **kwargs))
        return rewrites[-1]

    monkeypatch.setattr(engine, "_apply", apply)
    data = fixture.path.read_bytes()
    reused = _fix(fixture, data, unsafe=True)
    for rewrite in rewrites:
        assert rewrite.deep_equals(cst.parse_module(rewrite.code)), rewrite.code
    monkeypatch.setattr(engine, "REUSE_TREE", False)
    parsed = _fix(fixture, data, unsafe=True)
    assert (reused.fixed, reused.findings) == (parsed.fixed, parsed.findings)
    assert [dataclasses.astuple(f) for f in reused.findings] == [
        dataclasses.astuple(f) for f in parsed.findings]
