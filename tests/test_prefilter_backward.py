"""TFC107 reports only beside a ``.backward()`` of something else (``_has_other_backward``), so
the prefilter keeps it only in files whose code has a ``.backward`` attribute (issue 23: it
was kept in 125 files of six repositories and reported in none, 66 of them had no backward)."""

from __future__ import annotations

from torchfix_codemods import engine
from torchfix_codemods.engine import process
from torchfix_codemods.options import FileOptions
from torchfix_codemods.prefilter import could_match
from torchfix_codemods.rules.loss_accumulation import AccumulateLossTensor
from torchfix_codemods.source import SourceUnit

EVALUATION = (
    "import torch.nn.functional as F\n"
    "def evaluate(model, loader):\n"
    "    total = 0\n"
    "    for x, y in loader:\n"
    "        loss = F.mse_loss(model(x), y)\n"
    "        total += loss\n"
    "    print(total)\n"
)
TRAINING = EVALUATION.replace("        total += loss\n",
                              "        loss.backward()\n        total += loss\n")
OPTIONS = FileOptions(codes=("TFC107",))


def _codes(text: str) -> list[str]:
    return [finding.code for finding in
            process(SourceUnit("t.py", text), OPTIONS, apply_fixes=False).findings]


def test_kept_only_where_the_code_calls_backward() -> None:
    assert could_match([AccumulateLossTensor], EVALUATION).rules == []
    assert could_match([AccumulateLossTensor], TRAINING).rules == [AccumulateLossTensor]
    # "backward" in a comment or a string is not code
    commented = EVALUATION.replace("print(total)", "print(total, 'backward')  # .backward()")
    assert could_match([AccumulateLossTensor], commented).rules == []


def test_the_rule_itself_is_silent_without_backward(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The condition is necessary: with the prefilter off, the rule reports the training loop
    and not the same loop without a backward."""
    monkeypatch.setattr(engine, "USE_AST_PREFILTER", False)
    assert _codes(TRAINING) == ["TFC107"]
    assert _codes(EVALUATION) == []
