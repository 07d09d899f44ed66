"""The line diff behind ``fix --diff``'s hunks and its rule labels (``textdiff.LineMatcher``):
difflib's exact answer on ordinary files, and a true alignment, in linear time, on long files
whose lines repeat (where difflib's cost is quadratic)."""

from __future__ import annotations

import difflib
import random
from itertools import pairwise

import pytest

from torchfix_codemods import textdiff
from torchfix_codemods.textdiff import LineMatcher, estimated_cost, hunks, split_lines


def _edited(lines: list[str], seed: int) -> list[str]:
    """``lines`` with random insertions, deletions and replacements, from a small alphabet
    so that equal lines repeat (blank lines, ``)``) as in real code."""
    chooser = random.Random(seed)
    out = list(lines)
    for _ in range(chooser.randint(0, 12)):
        where = chooser.randint(0, len(out))
        action = chooser.choice(("insert", "delete", "replace"))
        if action == "insert" or not out:
            out.insert(where, chooser.choice("abcxyz\n") + "\n")
        elif action == "delete":
            del out[min(where, len(out) - 1)]
        else:
            out[min(where, len(out) - 1)] = f"changed {chooser.random()}\n"
    return out


def _source(seed: int, size: int) -> list[str]:
    chooser = random.Random(seed)
    return [chooser.choice(["\n", ")\n", "x = 1\n", f"line {i}\n", "return x\n"])
            for i in range(size)]


@pytest.mark.parametrize("seed", range(60))
def test_within_the_exact_cost_it_is_difflib(seed: int) -> None:
    a = _source(seed, random.Random(seed).randint(0, 80))
    b = _edited(a, seed)
    expected = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert LineMatcher(a, b).get_opcodes() == expected


def _assert_true_alignment(a: list[str], b: list[str], opcodes: list) -> None:
    """The opcodes cover both texts in order, and every line called equal is equal."""
    assert opcodes[0][1] == 0 and opcodes[0][3] == 0
    assert opcodes[-1][2] == len(a) and opcodes[-1][4] == len(b)
    for (_, _, i2, _, j2), (_, i1, _, j1, _) in pairwise(opcodes):
        assert (i2, j2) == (i1, j1)
    rebuilt: list[str] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        rebuilt.extend(a[i1:i2] if tag == "equal" else b[j1:j2])
    assert rebuilt == b


@pytest.mark.parametrize("seed", range(60))
def test_past_the_exact_cost_it_is_a_true_alignment(monkeypatch, seed: int) -> None:
    monkeypatch.setattr(textdiff, "EXACT_COST", 0)
    a = _source(seed, random.Random(seed).randint(0, 120))
    b = _edited(a, seed + 1000)
    _assert_true_alignment(a, b, LineMatcher(a, b).get_opcodes())


def test_a_long_file_with_a_change_every_few_lines_is_diffed_fast_and_exactly() -> None:
    """A generated file of 3,000 blocks (18,000 lines, blank lines and ``)`` repeated
    thousands of times), a line changed in every block: difflib's cost estimate is past the
    exact cost, so the anchored matcher runs; its opcodes are a true alignment that changes
    exactly the edited lines (each unique, so no other alignment is as short)."""
    a = []
    for n in range(3000):
        a += [f"def train{n}(loader):\n", "    out = model(x)\n", "    return out.numpy()\n",
              ")\n", "\n", "\n"]
    b = [line.replace(".numpy()", f".detach().cpu().numpy()  # {i}") for i, line in
         enumerate(a)]
    assert estimated_cost(a, b) > textdiff.EXACT_COST
    opcodes = LineMatcher(a, b).get_opcodes()
    _assert_true_alignment(a, b, opcodes)
    changed = [(i1, i2) for tag, i1, i2, _, _ in opcodes if tag != "equal"]
    assert changed == [(6 * n + 2, 6 * n + 3) for n in range(3000)]


def test_the_diff_of_a_long_file_shows_only_its_changed_lines() -> None:
    old = "".join(f"def f{n}():\n    return x.numpy()\n\n\n" for n in range(4000))
    new = old.replace("x.numpy()", "x.detach().cpu().numpy()", 4000)
    assert estimated_cost(split_lines(old), split_lines(new)) > textdiff.EXACT_COST
    shown = hunks(old, new)
    removed = [line for hunk in shown for tag, line in hunk.lines if tag == "-"]
    added = [line for hunk in shown for tag, line in hunk.lines if tag == "+"]
    assert removed == ["    return x.numpy()\n"] * 4000
    assert added == ["    return x.detach().cpu().numpy()\n"] * 4000
