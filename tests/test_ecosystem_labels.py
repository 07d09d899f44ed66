"""The ecosystem check's data files are well-formed (the scoring itself needs mirrors: see
tests/realcode/ecosystem/README.md).

``repos.toml`` and ``labels.toml`` are read by the same loader ``score.py`` uses, so a
label with an unknown rule code, verdict or repository, a duplicate key or a malformed
hash fails here, in CI, instead of at scoring time on someone's machine.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from torchfix_codemods.rules.registry import all_rules

ECOSYSTEM = Path(__file__).parent / "realcode" / "ecosystem"


def _load_catalog():
    spec = importlib.util.spec_from_file_location("ecosystem_catalog", ECOSYSTEM / "catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


catalog = _load_catalog()
CODES = [rule.code for rule in all_rules()]


@pytest.fixture(scope="module")
def repos():
    return catalog.load_repos()


@pytest.fixture(scope="module")
def labels(repos):
    return catalog.load_labels(repos, CODES)


def test_labels_file_loads_with_unique_keys_known_codes_and_verdicts(labels):
    assert len({label.key for label in labels}) == len(labels)
    assert {label.verdict for label in labels} <= set(catalog.VERDICTS)
    assert {label.code for label in labels} <= set(CODES)


def test_labels_cover_every_rule_family_with_real_mistakes_and_traps(labels):
    families = {code[:4] for code in CODES if code != "TFC000"}
    for family in sorted(families):
        verdicts = {label.verdict for label in labels if label.code.startswith(family)}
        assert "must-not-touch" in verdicts, f"{family}: no trap labelled"
        assert verdicts & {"must-fix", "report-only"}, f"{family}: no real mistake labelled"


def test_labels_span_many_repositories(repos, labels):
    per_repo = Counter(label.repo for label in labels)
    assert len(per_repo) >= 10
    assert set(per_repo) <= set(repos)


def test_hunk_review_covers_the_two_repositories_of_issue_16(labels):
    reviewed = Counter(label.repo for label in labels if label.review)
    assert reviewed["pytorch/examples"] > 0 and reviewed["ultralytics/yolov5"] > 0


def test_line_hash_ignores_surrounding_whitespace_only():
    assert catalog.line_hash("    x = torch.load(p)  \n") == catalog.line_hash("x = torch.load(p)")
    assert catalog.line_hash("x = torch.load(p)") != catalog.line_hash("x = torch.load(q)")


_GOOD_LABEL = """
[[label]]
repo = "karpathy/nanoGPT"
path = "train.py"
line = 3
code = "TFC001"
verdict = "must-fix"
reason = "why"
hash = "0123abcd"
"""


@pytest.mark.parametrize(("change", "message"), [
    (('code = "TFC001"', 'code = "TFC999"'), "unknown rule code 'TFC999'"),
    (('verdict = "must-fix"', 'verdict = "fix"'), "verdict 'fix' is not one of"),
    (('hash = "0123abcd"', 'hash = "0123"'), "hash must be 8 lowercase hex digits"),
    (('repo = "karpathy/nanoGPT"', 'repo = "someone/else"'), "repo 'someone/else' is not in repos.toml"),
    (('line = 3', 'line = 0'), "line must be a positive integer"),
    (('path = "train.py"', 'path = "nb.ipynb"'), "a notebook label needs a positive integer cell"),
    (('reason = "why"', 'reason = ""'), "reason must be a non-empty string"),
    (('line = 3', 'line = 3\ncolour = "red"'), "unknown key 'colour'"),
    (('verdict = "must-fix"', 'verdict = "must-fix"\nreview = "fine"'), "review 'fine' is not one of"),
])
def test_a_malformed_label_is_rejected_with_its_position(tmp_path, repos, change, message):
    path = tmp_path / "labels.toml"
    path.write_text(_GOOD_LABEL.replace(*change))
    with pytest.raises(catalog.CatalogError, match="label #1") as error:
        catalog.load_labels(repos, CODES, path)
    assert message in str(error.value)


def test_a_duplicate_label_is_rejected(tmp_path, repos):
    path = tmp_path / "labels.toml"
    path.write_text(_GOOD_LABEL + _GOOD_LABEL)
    duplicate = "label #2: same repo, path, cell, line and code as label #1"
    with pytest.raises(catalog.CatalogError, match=duplicate):
        catalog.load_labels(repos, CODES, path)
    path.write_text(_GOOD_LABEL)
    assert len(catalog.load_labels(repos, CODES, path)) == 1


def test_a_label_outside_the_checked_paths_is_rejected(tmp_path, repos):
    path = tmp_path / "labels.toml"
    path.write_text(_GOOD_LABEL.replace('repo = "karpathy/nanoGPT"', 'repo = "DLR-RM/stable-baselines3"'))
    with pytest.raises(catalog.CatalogError, match="outside DLR-RM/stable-baselines3's checked paths"):
        catalog.load_labels(repos, CODES, path)


def test_repos_are_pinned_to_full_commits_and_listed_once(tmp_path):
    path = tmp_path / "repos.toml"
    entry = '[[repo]]\nname = "a/b"\ncommit = "{}"\npaths = ["."]\nkind = "k"\n'
    path.write_text(entry.format("abc123"))
    with pytest.raises(catalog.CatalogError, match="commit must be 40 lowercase hex digits"):
        catalog.load_repos(path)
    path.write_text(entry.format("a" * 40) * 2)
    with pytest.raises(catalog.CatalogError, match="a/b is listed twice"):
        catalog.load_repos(path)
    path.write_text(entry.format("a" * 40))
    assert catalog.load_repos(path)["a/b"].slug == "a+b"


# --- score.py end to end, on a tiny repository mirrored locally (no network) ------------------

_TRAIN = """import torch

model = torch.nn.Linear(2, 2)
model.load_state_dict(torch.load("model.pt"))
"""


def _mirror(tmp_path: Path) -> tuple[Path, str]:
    """A bare mirror ``<tmp>/mirrors/someone+tiny`` of a one-file repository; its commit."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(_TRAIN)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "train.py"], ["commit", "-qm", "one"]):
        subprocess.run([*git, *args], cwd=work, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True,
                            text=True).stdout.strip()
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(mirrors / "someone+tiny")],
                   check=True)
    return mirrors, commit


def _score(tmp_path: Path, mirrors: Path, commit: str, verdict: str, text_hash: str):
    (tmp_path / "repos.toml").write_text(
        f'[[repo]]\nname = "someone/tiny"\ncommit = "{commit}"\npaths = ["."]\nkind = "test"\n')
    (tmp_path / "labels.toml").write_text(
        f'[[label]]\nrepo = "someone/tiny"\npath = "train.py"\nline = 4\ncode = "TFC001"\n'
        f'verdict = "{verdict}"\nreason = "test"\nhash = "{text_hash}"\n')
    return subprocess.run(
        [sys.executable, str(ECOSYSTEM / "score.py"), "--mirrors", str(mirrors), "--cache",
         str(tmp_path / "cache"), "--repos-file", str(tmp_path / "repos.toml"), "--labels-file",
         str(tmp_path / "labels.toml"), "--jobs", "1"],
        capture_output=True, text=True, timeout=300)


_needs_git_and_ruff = pytest.mark.skipif(
    shutil.which("git") is None or importlib.util.find_spec("ruff") is None,
    reason="score.py needs git (mirrors) and ruff (undefined-name check)")


@_needs_git_and_ruff
def test_score_counts_a_fixed_must_fix_and_fails_on_a_fixed_must_not_touch(tmp_path):
    mirrors, commit = _mirror(tmp_path)
    line_hash = catalog.line_hash(_TRAIN.splitlines()[3])
    good = _score(tmp_path, mirrors, commit, "must-fix", line_hash)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "recall: 1 of 1 real mistakes reported (100%)" in good.stdout
    assert "must-fix fixed: 1 of 1 (safe 1, unsafe 0)" in good.stdout
    bad = _score(tmp_path, mirrors, commit, "must-not-touch", line_hash)
    assert bad.returncode == 1
    assert "FIXED (safe) must-not-touch: someone/tiny train.py:4 TFC001" in bad.stdout


@_needs_git_and_ruff
def test_score_fails_on_a_label_whose_line_changed(tmp_path):
    mirrors, commit = _mirror(tmp_path)
    drifted = _score(tmp_path, mirrors, commit, "must-fix", "00000000")
    assert drifted.returncode == 1
    assert "drifted labels: 1" in drifted.stdout
    assert "line now reads 'model.load_state_dict(torch.load(\"model.pt\"))'" in drifted.stdout


def test_score_says_which_mirror_is_missing(tmp_path):
    result = _score(tmp_path, tmp_path / "no-mirrors", "a" * 40, "must-fix", "00000000")
    assert result.returncode == 2
    assert "no git mirror of someone/tiny under" in result.stderr
    assert "Traceback" not in result.stderr
