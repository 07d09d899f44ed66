"""The ast prefilter skips rules (and LibCST parses) only where nothing could be reported.

Every rule's ``needs`` must be a necessary condition. These tests run every
inline example, fixture, example project file, parity-corpus file and real-code
snippet with all rules and no prefilter, and require every rule that reports to
be one the prefilter keeps; sources with fixes are fixed with and without it,
with the same result. bench/prefilter_check.py does the same over real
repositories.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchfix_codemods import engine
from torchfix_codemods.engine import process
from torchfix_codemods.options import FileOptions
from torchfix_codemods.prefilter import ANY_CODE, FileFacts, Needs, could_match, file_facts
from torchfix_codemods.rules.base import Rule
from torchfix_codemods.rules.registry import all_rules
from torchfix_codemods.source import SourceUnit

ROOT = Path(__file__).resolve().parent.parent
EVERY_RULE = FileOptions(codes=tuple(rule.code for rule in all_rules()), unsafe_fixes=True)


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.code != "TFC000"],
                         ids=lambda rule: rule.code)
def test_every_rule_states_its_prefilter_words(rule: type[Rule]) -> None:
    """A new rule must say what its code needs (or choose ``ANY_CODE`` on purpose); one
    inheriting nothing would silently run on every file its triggers match."""
    stated = [cls for cls in rule.__mro__ if cls is not Rule and (
        "needs" in vars(cls) or "file_needs" in vars(cls))]
    assert stated, f"{rule.code}: set `needs = Needs.any_of(...)` (see prefilter.py)"
    needs = rule.file_needs()
    assert needs is ANY_CODE or needs.groups, rule.code


def _sources() -> Iterator[tuple[str, str]]:
    for rule in all_rules():
        for number, text in enumerate(rule.valid):
            yield f"{rule.code}-valid-{number}", text
        for number, example in enumerate(rule.invalid):
            yield f"{rule.code}-invalid-{number}", example.before
            if example.after is not None:
                yield f"{rule.code}-after-{number}", example.after
    folders = ("tests/fixtures", "examples", "tests/parity/corpus", "tests/parity/corpus_main",
               "tests/realcode/snippets")
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            yield str(path.relative_to(ROOT)), text


SOURCES = list(_sources())


@pytest.mark.parametrize(("name", "text"), SOURCES, ids=[name for name, _ in SOURCES])
def test_every_rule_that_reports_is_kept_by_the_prefilter(name: str, text: str) -> None:
    """Run without the prefilter: each rule that reports must be one the prefilter keeps.

    Rules do not see each other's reports, so the rules kept give the same findings.
    """
    reporting = {finding.code for finding in
                 process(SourceUnit("case.py", text), EVERY_RULE, apply_fixes=False).findings}
    kept = {rule.code for rule in could_match(all_rules(), text).rules}
    assert reporting - kept - {"TFC000"} == set()


FIXED = [(name, text) for name, text in SOURCES if "-invalid-" in name or name.startswith(
    "tests/fixtures/") and Path(ROOT / name).with_suffix(".expected.py").exists()]


@pytest.mark.parametrize(("name", "text"), FIXED, ids=[name for name, _ in FIXED])
def test_fixes_are_the_same_with_and_without_the_prefilter(
        name: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = []
    for use_ast in (True, False):
        monkeypatch.setattr(engine, "USE_AST_PREFILTER", use_ast)
        result = process(SourceUnit("case.py", text), EVERY_RULE, apply_fixes=True)
        outcomes.append(([dataclasses.astuple(f) for f in result.findings], result.fixed))
    assert outcomes[0] == outcomes[1]


def test_a_file_whose_words_meet_no_rule_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = engine.cst.parse_module
    monkeypatch.setattr(engine.cst, "parse_module", lambda text: parsed.append(text) or real(text))
    # "torch", "load", "data", "eval" and "[0]" occur, but only in comments and strings.
    text = ('import torch  # torch.load(path) and x.data and model.eval()\n'
            'NOTE = "loss[0] += 1; loss.backward()"\n\n\ndef helper(values):\n'
            '    return sorted(values)\n')
    assert process(SourceUnit("m.py", text), EVERY_RULE, apply_fixes=False).findings == []
    assert parsed == []
    process(SourceUnit("m.py", text + "state = torch.load('m.pt')\n"), EVERY_RULE,
            apply_fixes=False)
    assert len(parsed) == 1


def test_file_words() -> None:
    facts = file_facts(
        "import torch.nn.functional as F\nfrom torch.utils.data import DataLoader as DL\n"
        "def evalEpoch(model, loader):\n    total = 0\n    for x in loader:\n"
        "        total += F.cross_entropy(model(x), y, size_average=False)[0]\n"
        "def test_eval(): pass\ndef train_and_score(): pass\n"
        "class MyLoss:\n    pass\n")
    assert facts is not None
    for word in ("torch", "nn", "functional", "F", "utils", "data", "DataLoader", "DL",
                 "cross_entropy", ".cross_entropy", "size_average=", "root:eval", "root:epoch",
                 "+=", "[0]", "import:torch.nn.functional"):
        assert word in facts.words, word
    for absent in ("model", "loader", "total", "MyLoss", "evalEpoch", "x", ".data", ".F",
                   "root:test", "root:score", "root:train",
                   "import:torch.utils.data"):
        assert absent not in facts.words, absent
    assert facts.has_fragment("Loss") and facts.has_fragment("Epoch")
    writes = file_facts("w.data.mul_(2)\nb *= 3\ny[0] = 1\n")
    assert writes is not None and {"._", "op=", "[]="} <= writes.words
    reads = file_facts("w.requires_grad_(True)\nx.__init__()\nc = d = y[0]\ny[0]: int = 1\n")
    # `requires_grad_` is left to the rule to tell apart; `__init__` is no write
    assert reads is not None and "._" in reads.words
    assert {"op=", "[]="}.isdisjoint(reads.words)
    assert "._" not in file_facts("x.__init__()\n").words  # type: ignore[union-attr]
    assert file_facts("def f(:\n") is None
    assert file_facts("x = 1\0") is None


def test_needs_are_groups_of_alternatives() -> None:
    facts = FileFacts(frozenset({"backward", "+="}), "\0".join(["MSELoss", "backward", "+="]))
    assert Needs.any_of("append", "+=").met_by(facts)
    assert not (Needs.any_of("+=") & Needs.any_of("step")).met_by(facts)
    assert (Needs.any_of("+=") & Needs.any_of("mean", fragments=("Loss",))).met_by(facts)
    assert (Needs.any_of("step") | Needs.any_of("backward")).met_by(facts)
    with pytest.raises(ValueError):
        (Needs.any_of("a") & Needs.any_of("b")) | Needs.any_of("c")


def test_a_name_is_met_by_an_equal_identifier_only() -> None:
    # The first and the last identifier of the file are matched too (the NUL padding).
    facts = file_facts("from torch import *\nexpand(x).sum()\nlog_t = t(y)\n")
    assert facts is not None
    for name in ("expand", "sum", "t", "log_t", "torch", "x", "y"):
        assert Needs.any_of(names=(name,)).met_by(facts), name
    for absent in ("exp", "log", "sum_", "xpand", "log_", ""):
        assert not Needs.any_of(names=(absent,)).met_by(facts), absent
    assert Needs.any_of(fragments=("exp",)).met_by(facts)
    assert (Needs.any_of("+=", names=("t",)) & Needs.any_of(names=("sum",))).met_by(facts)
    assert not (Needs.any_of(names=("t",)) & Needs.any_of(names=("log",))).met_by(facts)


def test_unparsable_python_keeps_every_candidate_rule() -> None:
    rules = [rule for rule in all_rules() if rule.code in ("TFC001", "TFC102")]
    text = "import torch\nx = torch.load(p\n"  # ast cannot read it: LibCST and TFC000 decide
    selection = could_match(rules, text)
    assert selection.rules == [rule for rule in rules if rule.code == "TFC001"]
    assert selection.parses is False


_SUMMARISED = ("import torch\nfrom torch.utils import data\n\ndef eval_epoch(model, loader):\n"
               "    total = 0\n    for x in loader:\n        total += model(x)[0]\n"
               "    return torch.load('m.pt', map_location='cpu')\n")


def test_the_summary_pass_gives_the_prefilter_the_facts_of_its_own_parse() -> None:
    from torchfix_codemods.indexing import _summarize_with_facts, summarize_bytes

    summary, known = _summarize_with_facts("a.py", _SUMMARISED.encode())
    assert summary == summarize_bytes("a.py", _SUMMARISED.encode())
    assert known is not None
    length, digest, facts = known
    assert (length, digest) == (len(_SUMMARISED), hash(_SUMMARISED))
    assert facts == file_facts(_SUMMARISED)
    assert _summarize_with_facts("b.py", b"def f(:\n")[1] is None


def test_known_facts_are_used_only_for_the_text_they_were_read_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from torchfix_codemods import prefilter

    facts = file_facts(_SUMMARISED)
    assert facts is not None
    monkeypatch.setitem(prefilter.KNOWN_FACTS, "a.py",
                        (len(_SUMMARISED), hash(_SUMMARISED), facts))
    assert prefilter.known_facts("a.py", _SUMMARISED) is facts
    changed = _SUMMARISED.replace("total", "count")  # same length, another text
    assert len(changed) == len(_SUMMARISED)
    assert prefilter.known_facts("a.py", changed) is None
    assert prefilter.known_facts("b.py", _SUMMARISED) is None
    rules = list(all_rules())
    assert could_match(rules, _SUMMARISED, known=facts) == could_match(rules, _SUMMARISED)


def test_a_run_hands_its_facts_to_the_analysis_and_leaves_none_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchfix_codemods import prefilter, runner
    from torchfix_codemods.configuration import Configuration
    from torchfix_codemods.settings import Overrides

    paths = []
    for index in range(3):
        path = tmp_path / f"m{index}.py"
        path.write_text(_SUMMARISED)
        paths.append(str(path))
    known_at_analysis: list[set[str]] = []
    compute = runner._compute

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        known_at_analysis.append(set(prefilter.KNOWN_FACTS))
        yield from compute(*args, **kwargs)

    monkeypatch.setattr(runner, "_compute", spy)
    configuration = Configuration(Overrides(select=("ALL",)), cwd=str(tmp_path))
    results = runner.run_paths(paths, configuration, runner.Mode.CHECK)
    assert all(result.findings for result in results)
    assert known_at_analysis == [set(paths)]
    assert prefilter.KNOWN_FACTS == {}
