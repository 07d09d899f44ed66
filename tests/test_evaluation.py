"""The evaluator core (analysis/core/evaluation.py): memo, cycle guard and depth bound, once;
and the one evidence type the value analyses answer with (analysis/core/evidence.py).

Every value analysis walks expressions through it; these tests pin the three guards on a
toy question and check that the per-expression analyses really share their answers per
module.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core import callees
from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.evidence import Evidence
from torchfix_codemods.analysis.core.memo import ModuleMemo, Slot
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.devices import cuda_device
from torchfix_codemods.analysis.facts.modules import module_evidence
from torchfix_codemods.analysis.facts.tensors import provenance
from torchfix_codemods.analysis.facts.values import tensor_facts

_TOY: Slot[Evaluation[str]] = Slot("test.toy")


def _names_and_value(source: str) -> tuple[NameIndex, cst.BaseExpression]:
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    last = module.body[-1]
    assert isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Expr)
    return names, last.body[0].value


def _follow(names: NameIndex, evaluation: Evaluation[str], calls: list[str]):
    """A toy question: the string a name is finally bound to, following single bindings."""

    def step(expr: cst.BaseExpression, depth: int) -> str:
        calls.append(cst.Module([]).code_for_node(expr))
        if isinstance(expr, cst.SimpleString):
            return str(expr.evaluated_value)
        if isinstance(expr, cst.Name):
            bindings = names.bindings_of(expr)
            if len(bindings) == 1 and bindings[0].value is not None:
                return evaluation(bindings[0].value, depth, step)
        return "unknown"

    return step


def test_an_answer_is_computed_once_per_expression() -> None:
    names, value = _names_and_value("a = 'cuda'\nb = a\nb\n")
    evaluation = Evaluation({}, 8, cycle="cycle", too_deep="too deep")
    calls: list[str] = []
    step = _follow(names, evaluation, calls)
    assert evaluation(value, 0, step) == "cuda"
    assert evaluation(value, 0, step) == "cuda"
    assert calls == ["b", "a", "'cuda'"]


def test_an_expression_met_while_it_is_evaluated_is_a_cycle() -> None:
    evaluation = Evaluation({}, 8, cycle="cycle", too_deep="too deep")
    loop = cst.parse_expression("x")
    steps: list[int] = []

    def step(expr: cst.BaseExpression, depth: int) -> str:
        steps.append(depth)
        return evaluation(expr, depth, step)  # asks about itself, as `x = x + 1` would

    assert evaluation(loop, 0, step) == "cycle"
    assert steps == [1]


def test_past_the_bound_the_answer_is_too_deep() -> None:
    source = "a0 = 'cuda'\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, 12)) + "a11\n"
    names, value = _names_and_value(source)
    calls: list[str] = []
    shallow = Evaluation({}, 4, cycle="cycle", too_deep="too deep")
    assert shallow(value, 0, _follow(names, shallow, calls)) == "too deep"
    deep = Evaluation({}, 16, cycle="cycle", too_deep="too deep")
    assert deep(value, 0, _follow(names, deep, [])) == "cuda"


def test_a_module_keeps_one_evaluation_per_question() -> None:
    memo = ModuleMemo()
    first = module_evaluation(memo, _TOY, 4, cycle="c", too_deep="d")
    assert module_evaluation(memo, _TOY, 4, cycle="c", too_deep="d") is first
    assert module_evaluation(ModuleMemo(), _TOY, 4, cycle="c", too_deep="d") is not first


def test_per_expression_analyses_share_their_answers_per_module() -> None:
    names, value = _names_and_value("import torch\nnet = torch.nn.Linear(2, 2)\nnet\n")
    found = module_evidence(names, value)
    assert found is not None and module_evidence(names, value) is found
    names, value = _names_and_value("device = 'cuda:0'\nplace = device\nplace\n")
    reason = cuda_device(names, value)
    assert reason == "`'cuda:0'`" and cuda_device(names, value) is reason


def test_the_class_of_an_instance_is_followed_through_the_core() -> None:
    """``core/callees.class_of_instance`` was the last LibCST walk with a bound of its own."""
    names, value = _names_and_value("class D:\n    pass\nd = D()\ne = d\ne\n")
    found = callees.class_of_instance(names, value)
    assert found is not None and found.name.value == "D"
    assert names.memo[callees._INSTANCE].memo[id(value)] is found
    names, value = _names_and_value("a = b\nb = a\na\n")
    assert callees.class_of_instance(names, value) is None  # a cycle: unknown
    chain = "class D:\n    pass\nv0 = D()\n" + "".join(f"v{i} = v{i - 1}\n" for i in range(1, 6))
    names, value = _names_and_value(chain + "v3\n")
    assert callees.class_of_instance(names, value) is not None  # four names: followed
    names, value = _names_and_value(chain + "v4\n")
    assert callees.class_of_instance(names, value) is None  # five: past the bound


def test_the_value_analyses_answer_with_one_evidence_type() -> None:
    names, value = _names_and_value("import torch\nx = torch.zeros(3)\nx\n")
    found = provenance(names, value)
    assert isinstance(found, Evidence) and found.answer == "yes" and found.kind == "tensor"
    assert "torch.zeros" in found.reason
    facts = tensor_facts(names, value)
    assert isinstance(facts.requires_grad, Evidence) and facts.requires_grad.is_no
    names, value = _names_and_value("n = 3\nn\n")
    found = provenance(names, value)
    assert found.is_no and found.kind == "not-tensor" and found.numeric
