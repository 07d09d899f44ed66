"""Order rules (TFC505-TFC507) and the branches of an ``if``.

An event in the ``else`` of the branch holding a clip, a reset or a scheduler step never
runs in the same iteration as it, so it is not "after" it; and a move never takes a
statement out of the branch that holds it (its condition, or a name only that branch
binds, would no longer hold). Reduced from kamalkraj/BERT-NER (heldout6 review).
"""

from __future__ import annotations

import libcst as cst
import pytest
from support import findings, fixed_text

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.statements import exclusive

BRANCHES = """\
import torch
for x in data:
    if fp16:
        scaled.backward()
        torch.nn.utils.clip_grad_norm_(master(opt), 1.0)
    elif bf16:
        other.backward()
    else:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
"""


def _calls(source: str) -> tuple[NameIndex, dict[str, cst.Call]]:
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    calls: dict[str, cst.Call] = {}

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.setdefault(module.code_for_node(node.func), node)

    module.visit(Collect())
    return names, calls


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("torch.nn.utils.clip_grad_norm_", "loss.backward", True),   # if body / else
    ("torch.nn.utils.clip_grad_norm_", "other.backward", True),  # if body / elif
    ("other.backward", "loss.backward", True),                   # elif / its else
    ("scaled.backward", "torch.nn.utils.clip_grad_norm_", False),  # one branch
    ("loss.backward", "opt.step", False),                        # branch, then after the if
])
def test_exclusive_tells_branches_of_one_if_apart(first: str, second: str,
                                                  expected: bool) -> None:
    names, calls = _calls(BRANCHES)
    assert exclusive(names, calls[first], calls[second]) is expected
    assert exclusive(names, calls[second], calls[first]) is expected


def test_a_clip_after_the_backward_of_its_own_branch_is_not_reported() -> None:
    source = BRANCHES.replace("    elif bf16:\n        other.backward()\n", "")
    assert [f for f in findings(source, ["TFC506"]) if f.code == "TFC506"] == []


def test_a_clip_is_never_moved_out_of_the_branch_that_holds_it() -> None:
    source = (
        "import torch\nfor x in data:\n    opt.zero_grad()\n"
        "    if clip:\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "        print('clipped')\n"
        "    model(x).sum().backward()\n    opt.step()\n"
    )
    found = [f for f in findings(source, ["TFC506"]) if f.code == "TFC506"]
    assert len(found) == 1 and "no fix: it would leave the branch that holds it" in found[0].message
    assert fixed_text(source, ["TFC506"], unsafe=True) == source


def test_a_scheduler_in_one_branch_does_not_see_the_other_branchs_step() -> None:
    source = (
        "import torch\nfor x in data:\n"
        "    if warmup:\n        scheduler.step()\n"
        "    else:\n        model(x).sum().backward()\n        optimizer.step()\n"
    )
    assert [f for f in findings(source, ["TFC507"]) if f.code == "TFC507"] == []
