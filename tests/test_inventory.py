"""The legacy-API inventory (``rules/data/legacy_inventory.json``): re-measured on the torch
under test, and every entry accounted for by a rule's data and fixtures or a stated reason."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from torchfix_codemods.catalog import entries_by_code
from torchfix_codemods.rules.registry import rule_by_code
from torchfix_codemods.rules.tables import replacements

ROOT = Path(__file__).resolve().parent.parent


def _load_measure():
    """tests/inventory/measure.py, under a name of its own: tests/realcode has a
    ``measure`` module too, and whichever a test imports first would shadow the other."""
    spec = importlib.util.spec_from_file_location(
        "legacy_inventory_measure", ROOT / "tests" / "inventory" / "measure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


measure = _load_measure()

STORED = json.loads(measure.DATA.read_text(encoding="utf-8"))
ENTRIES = STORED["entries"]
FIXTURES = ROOT / "tests" / "fixtures"
REGENERATE = "regenerate with `python tests/inventory/measure.py --write` and review the diff"


@pytest.fixture(scope="module")
def measured() -> dict:
    return measure.measure()


def test_stored_inventory_is_what_this_torch_does(measured: dict) -> None:
    """A new torch release fails here with exactly the entries whose behaviour changed."""
    changed = {name: (row["measured"], measured["entries"].get(name, {}).get("measured"))
               for name, row in ENTRIES.items()
               if row != measured["entries"].get(name)}
    assert not changed, (f"torch {measured['torch']} (stored: {STORED['torch']}) differs: "
                         f"{json.dumps(changed, indent=1)}; {REGENERATE}")
    assert set(measured["entries"]) == set(ENTRIES), REGENERATE


def test_every_deprecation_the_walk_finds_is_known(measured: dict) -> None:
    """A name torch starts calling deprecated shows up as a new candidate, not silently."""
    new = sorted(set(measured["candidates"]) - set(STORED["candidates"]))
    gone = sorted(set(STORED["candidates"]) - set(measured["candidates"]))
    assert not new and not gone, f"new candidates {new}, gone {gone}; {REGENERATE}"


def test_every_candidate_is_an_entry_or_reviewed() -> None:
    """What the walk finds is either measured by an entry or has a stated reason."""
    covered = {name.split("(")[0] for name in ENTRIES} | set(measure.REVIEWED)
    missing = [name for name in STORED["candidates"] if name not in covered]
    assert not missing, f"walk candidates with no entry and no reason: {missing}"
    assert set(measure.REVIEWED) <= set(STORED["candidates"]), "a reviewed name is gone"


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_entry_is_handled_by_a_rule_or_says_why_not(name: str) -> None:
    row = ENTRIES[name]
    if row["rule"] is None:
        assert row.get("why"), f"{name}: no rule and no reason"
        return
    assert row["rule"] in entries_by_code(), name
    assert row["handled"] in ("safe", "unsafe", "report"), name
    # The measured behaviour is what the rule's docs may claim: a deprecation warns or a
    # removal raises, except the few that are documented deprecations without a warning and
    # the one whose old call now means something else without a word (`ReduceLROnPlateau`'s
    # fifth positional argument, `verbose` before 2.2, is `threshold` today).
    assert row["measured"]["outcome"] in ("warns", "raises") or name in (
        "torch.autograd.Variable", "torch.ger",
        "torch.optim.lr_scheduler.ReduceLROnPlateau(verbose positional)"), name
    if "same" in row["measured"]:
        assert row["measured"]["same"] is True, f"{name}: old and new spellings differ"
    # A rule's fixtures show the entry: `shows` where the entry says how the user's code
    # spells it, else its last name (or its keyword, for `name(keyword=)`).
    word = name.split("(")[0].rsplit(".", 1)[-1]
    if "(" in name:
        word = name.split("(")[1].rstrip(")=").split("=")[0] or word
    word = row.get("shows", word)
    texts = [p.read_text(encoding="utf-8") for p in (FIXTURES / row["rule"]).glob("*.py")]
    assert any(word in text for text in texts), f"{name}: no {row['rule']} fixture shows `{word}`"


@pytest.mark.parametrize("name", sorted(n for n, r in ENTRIES.items()
                                        if r["rule"] in ("TFC402", "TFC406") and "(" not in n))
def test_rule_tables_take_their_replacements_from_the_inventory(name: str) -> None:
    row = ENTRIES[name]
    spec = replacements().get(name)
    assert spec is not None, f"{name}: replacements.toml has no row for an inventory entry"
    assert spec.rule == row["rule"], name
    if spec.new is not None and row["replacement"].startswith("torch.") \
            and " " not in row["replacement"]:
        assert spec.new == row["replacement"], name
    assert (spec.safety.value if spec.safety.value != "none" else "report") == row["handled"] \
        or spec.handler is not None, name


# ------------------------------------------------------- what the rules' docs may claim
_CLASS_NAMED = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Warning))\b")
_VERSION_CLAIM = re.compile(r"\b(removed|deprecated|renamed)(?: since| in)(?: torch| version)? "
                            r"(\d+\.\d+)")


def _entries_of(code: str) -> dict[str, dict]:
    """The entries a rule's claims may rest on: those it handles, and those measured as its
    evidence (``evidence_for``)."""
    return {name: row for name, row in ENTRIES.items()
            if row["rule"] == code or row.get("evidence_for") == code}


def _claims_text(code: str) -> str:
    rule = rule_by_code(code)
    return rule.documentation() + "\n" + rule.message


CODES_WITH_ENTRIES = sorted({row["rule"] for row in ENTRIES.values() if row["rule"]})


@pytest.mark.parametrize("code", CODES_WITH_ENTRIES)
def test_exceptions_and_warnings_a_rule_names_are_measured(code: str) -> None:
    """A rule's docs say an old call raises `TypeError` or warns `FutureWarning` only where
    the inventory measured exactly that for one of the rule's entries."""
    measured = {row["measured"].get("error") or row["measured"].get("warning")
                for row in _entries_of(code).values()}
    named = set(_CLASS_NAMED.findall(_claims_text(code)))
    assert named <= measured, (f"{code}'s docs name {sorted(named - measured)}, which no "
                               f"entry of it measured (measured: {sorted(filter(None, measured))})")


@pytest.mark.parametrize("code", CODES_WITH_ENTRIES)
def test_versions_a_rule_names_are_in_the_history(code: str) -> None:
    """"removed in 1.2", "deprecated since 0.4": the version is in the history of one of the
    rule's entries (the release notes the inventory records)."""
    histories = " ".join(row.get("history", "") for row in _entries_of(code).values())
    for verb, version in _VERSION_CLAIM.findall(_claims_text(code)):
        assert re.search(rf"\b{re.escape(version)}\b", histories), \
            f"{code}'s docs say {verb} in {version}; no entry's history says so"


@pytest.mark.parametrize("name", sorted(n for n in ENTRIES if replacements().get(n) is not None))
def test_table_notes_state_what_was_measured(name: str) -> None:
    """A replacements.toml note that names an error says the one measured, a `removed` row
    was measured raising, and a note that says "deprecated" was measured warning (or, for a
    removed one, raising), apart from the documented deprecations that do not warn."""
    row, spec = ENTRIES[name], replacements()[name]
    measured = row["measured"]
    for error in _CLASS_NAMED.findall(spec.note or ""):
        assert error in (measured.get("error"), measured.get("warning")), (name, error)
    if spec.removed:
        assert measured["outcome"] == "raises", name
    elif "deprecated" in (spec.note or "") and name not in ("torch.ger",):
        assert measured["outcome"] in ("warns", "raises"), name
