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


# --- the held-out (test) set: tests/realcode/heldout/ -----------------------------------------

HELDOUT = Path(__file__).parent / "realcode" / "heldout"


@pytest.mark.parametrize("name", sorted(catalog.HELDOUT_SETS))
def test_heldout_set_loads_with_unique_keys_and_shares_no_repository_with_dev(repos, name):
    heldout = catalog.load_set(name, CODES)
    assert heldout.repos, "no held-out repositories"
    assert not set(heldout.repos) & set(repos)
    assert len({label.key for label in heldout.labels}) == len(heldout.labels)
    assert {label.verdict for label in heldout.labels} <= set(catalog.VERDICTS)
    assert len({review.key for review in heldout.reviews}) == len(heldout.reviews)


def test_the_heldout_sets_share_no_repository():
    seen: dict[str, str] = {}
    for name in catalog.HELDOUT_SETS:
        for repo in catalog.load_set(name, CODES).repos:
            assert repo not in seen, f"{repo} is held out in both {seen[repo]} and {name}"
            seen[repo] = name


def test_a_repository_in_two_heldout_sets_is_rejected(tmp_path):
    first = next(iter(catalog.load_set("heldout", CODES).repos.values()))
    again = (f'[[repo]]\nname = "{first.name}"\ncommit = "{"d" * 40}"\npaths = ["."]\n'
             'kind = "k"\n')
    folder = _heldout_folder(tmp_path, _HELD_REPO + again)
    with pytest.raises(catalog.CatalogError, match=f"{first.name} is in both held-out sets "
                                                   "heldout2 and heldout"):
        catalog.load_set("heldout2", CODES, folder=folder)


def test_dev_set_is_what_the_ecosystem_files_hold(repos, labels):
    dev = catalog.load_set("dev", CODES)
    assert dev.repos == repos and dev.labels == labels and dev.reviews == []


def _heldout_folder(tmp_path: Path, repos_a: str, labels_a: str = "", **extra: str) -> Path:
    folder = tmp_path / "heldout"
    folder.mkdir(parents=True)
    (folder / "repos-a.toml").write_text(repos_a)
    (folder / "labels-a.toml").write_text(labels_a)
    for name, text in extra.items():
        (folder / f"{name.replace('_', '-')}.toml").write_text(text)
    return folder


_HELD_REPO = '[[repo]]\nname = "someone/held"\ncommit = "{}"\npaths = ["."]\nkind = "k"\n'.format("b" * 40)
_HELD_LABEL = _GOOD_LABEL.replace('repo = "karpathy/nanoGPT"', 'repo = "someone/held"')


def test_a_repository_in_both_sets_is_rejected(tmp_path):
    dev_repo = '[[repo]]\nname = "karpathy/nanoGPT"\ncommit = "{}"\npaths = ["."]\nkind = "k"\n'
    folder = _heldout_folder(tmp_path, _HELD_REPO + dev_repo.format("c" * 40))
    with pytest.raises(catalog.CatalogError, match="karpathy/nanoGPT is in both the dev set"):
        catalog.load_set("heldout", CODES, folder=folder)
    folder = _heldout_folder(tmp_path / "ok", _HELD_REPO, _HELD_LABEL)
    assert [label.repo for label in catalog.load_set("heldout", CODES, folder=folder).labels] == [
        "someone/held"]


def test_heldout_files_of_two_labellers_may_not_overlap(tmp_path):
    folder = _heldout_folder(tmp_path, _HELD_REPO, _HELD_LABEL, repos_b=_HELD_REPO)
    with pytest.raises(catalog.CatalogError, match="repos-b.toml: someone/held is already listed in "
                                                  "repos-a.toml"):
        catalog.load_set("heldout", CODES, folder=folder)
    folder = _heldout_folder(tmp_path / "two", _HELD_REPO, _HELD_LABEL, labels_b=_HELD_LABEL)
    with pytest.raises(catalog.CatalogError, match="labels-b.toml: someone/held train.py:3 TFC001 "
                                                  "is also labelled in labels-a.toml"):
        catalog.load_set("heldout", CODES, folder=folder)


_DIFF = """--- a/train.py
+++ b/train.py
@@ -2,5 +2,5 @@ TFC001 (unsafe), TFC102 (safe)
 import torch
-net.load_state_dict(torch.load(p))
+net.load_state_dict(torch.load(p, weights_only=True))
 -- not a header: a context line
--- x
+++ y
@@ -40 +40 @@ TFC102 (safe)
-print(loss.data[0])
+print(loss.item())
--- a/nb.ipynb
+++ b/nb.ipynb
@@ -7,3 +7,3 @@ cell 4: TFC001 (unsafe)
   "a",
-  "torch.load(p)"
+  "torch.load(p, weights_only=True)"
\\ No newline at end of file
"""


def test_parse_diff_reads_path_old_start_codes_cell_and_hash_of_each_hunk():
    hunks = catalog.parse_diff(_DIFF)
    assert [(h.path, h.line, h.codes, h.cell) for h in hunks] == [
        ("train.py", 2, ("TFC001", "TFC102"), None),
        ("train.py", 40, ("TFC102",), None),
        ("nb.ipynb", 7, ("TFC001",), 4),
    ]
    # the hash names the edit: context lines and the header do not enter it
    assert hunks[1].text_hash == catalog.hunk_hash(["-print(loss.data[0])", "+print(loss.item())"])
    assert hunks[0].text_hash == catalog.hunk_hash(
        ["-net.load_state_dict(torch.load(p))", "+net.load_state_dict(torch.load(p, weights_only=True))",
         "--- x", "+++ y"])
    assert hunks[0].text_hash != catalog.hunk_hash(["-net.load_state_dict(torch.load(p))"])


_REVIEW = """
[[hunk]]
repo = "someone/held"
path = "train.py"
line = 2
codes = ["TFC001"]
verdict = "wrong"
reason = "why"
hash = "0123abcd"
"""


@pytest.mark.parametrize(("change", "message"), [
    (('codes = ["TFC001"]', 'codes = ["TFC999"]'), "unknown rule code 'TFC999'"),
    (('codes = ["TFC001"]', 'codes = []'), "codes must be a non-empty list"),
    (('verdict = "wrong"', 'verdict = "bad"'), "verdict 'bad' is not one of correct, noise, wrong"),
    (('hash = "0123abcd"', 'hash = "xyz"'), "hash must be 8 lowercase hex digits"),
    (('repo = "someone/held"', 'repo = "karpathy/nanoGPT"'), "repo 'karpathy/nanoGPT' is not in"),
    (('line = 2', 'line = 2\ncell = 3'), "cell must be a positive integer, for .ipynb paths only"),
    (('reason = "why"', 'reason = " "'), "reason must be a non-empty string"),
])
def test_a_malformed_hunk_review_is_rejected_with_its_position(tmp_path, change, message):
    folder = _heldout_folder(tmp_path, _HELD_REPO, review_a=_REVIEW.replace(*change))
    with pytest.raises(catalog.CatalogError, match="review-a.toml: hunk #1") as error:
        catalog.load_set("heldout", CODES, folder=folder)
    assert message in str(error.value)


def test_a_hunk_reviewed_twice_is_rejected(tmp_path):
    folder = _heldout_folder(tmp_path, _HELD_REPO, review_a=_REVIEW + _REVIEW)
    with pytest.raises(catalog.CatalogError, match="hunk #2: same repo, path, line and hash"):
        catalog.load_set("heldout", CODES, folder=folder)
    folder = _heldout_folder(tmp_path / "ok", _HELD_REPO, review_a=_REVIEW)
    assert catalog.load_set("heldout", CODES, folder=folder).reviews[0].verdict == "wrong"


def _score_heldout(tmp_path: Path, mirrors: Path, commit: str, review: str):
    dev = tmp_path / "dev-repos.toml"
    dev.write_text('[[repo]]\nname = "karpathy/nanoGPT"\ncommit = "{}"\npaths = ["."]\nkind = "k"\n'
                   .format("a" * 40))
    folder = tmp_path / "heldout"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "repos-a.toml").write_text(
        f'[[repo]]\nname = "someone/tiny"\ncommit = "{commit}"\npaths = ["."]\nkind = "test"\n')
    (folder / "labels-a.toml").write_text(
        f'[[label]]\nrepo = "someone/tiny"\npath = "train.py"\nline = 4\ncode = "TFC001"\n'
        f'verdict = "must-fix"\nreason = "test"\nhash = "{catalog.line_hash(_TRAIN.splitlines()[3])}"\n')
    (folder / "review-a.toml").write_text(review)
    return subprocess.run(
        [sys.executable, str(ECOSYSTEM / "score.py"), "--set", "heldout", "--heldout-dir", str(folder),
         "--repos-file", str(dev), "--mirrors", str(mirrors), "--cache", str(tmp_path / "cache"),
         "--jobs", "1"],
        capture_output=True, text=True, timeout=300)


@_needs_git_and_ruff
def test_score_heldout_tallies_the_review_and_lists_new_and_gone_hunks(tmp_path):
    mirrors, commit = _mirror(tmp_path)
    stale = _REVIEW.replace("someone/held", "someone/tiny").replace('"wrong"', '"correct"')
    first = _score_heldout(tmp_path, mirrors, commit, stale)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "recall: 1 of 1 real mistakes reported (100%)" in first.stdout
    assert "hunk review (fix --unsafe-fixes --diff): 1 hunks: correct 0, noise 0, wrong 0, unjudged 1" \
        in first.stdout
    new = first.stdout.split("hunks new or changed since the last review (unjudged): 1\n")[1]
    where, _, text_hash = new.splitlines()[0].strip().rpartition(" hash ")
    assert where.startswith("someone/tiny train.py:") and "TFC001" in where
    assert "reviewed hunks no longer produced: 1" in first.stdout
    line = int(where.split(":")[1].split()[0])
    judged = stale.replace("line = 2", f"line = {line}").replace("0123abcd", text_hash)
    second = _score_heldout(tmp_path, mirrors, commit, judged.replace('"correct"', '"wrong"'))
    assert second.returncode == 1
    assert "wrong 1, unjudged 0" in second.stdout
    assert "hunks judged wrong still produced: 1" in second.stdout
    assert "reviewed hunks no longer produced: 0" in second.stdout
    third = _score_heldout(tmp_path, mirrors, commit, judged)
    assert third.returncode == 0 and "correct 1, noise 0, wrong 0, unjudged 0" in third.stdout
