"""The per-module memo (analysis/core/memo.py): one fact per slot, a stored None is an answer."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.memo import ModuleMemo, Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.statements import spans

_FLAG: Slot[bool] = Slot("test.flag")
_MAYBE: Slot[str | None] = Slot("test.maybe")
_PER_KEY: Slot[dict[int, str]] = Slot("test.per_key")


def test_a_stored_none_is_remembered_not_recomputed() -> None:
    memo = ModuleMemo()
    assert _MAYBE not in memo and memo.get(_MAYBE) is None
    memo[_MAYBE] = None
    assert _MAYBE in memo and memo[_MAYBE] is None


def test_slots_with_the_same_name_and_key_share_a_value_and_keys_separate_them() -> None:
    memo = ModuleMemo()
    memo.setdefault(_PER_KEY.keyed(("torch.no_grad",)), {})[1] = "a"
    assert memo[Slot("test.per_key", (("torch.no_grad",),))] == {1: "a"}
    assert _PER_KEY.keyed(()) not in memo and _PER_KEY not in memo
    memo[_FLAG] = False
    assert memo.setdefault(_FLAG, True) is False


def test_a_module_fact_is_computed_once_per_name_index() -> None:
    names = NameIndex.build(cst.parse_module("x = 1\ny = x\n"))
    assert spans(names) is spans(names)
    assert spans(names) is not spans(NameIndex.build(cst.parse_module("x = 1\ny = x\n")))
