"""``migrate`` driving real git: temporary repositories, a bare repository as the remote.

Every test builds its repositories from scratch with ``git init``, so nothing
depends on this machine's git configuration beyond git itself.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods.cli import app
from torchfix_codemods.migrate.model import EXIT_STATUS, JUNIT, SuiteOutcome
from torchfix_codemods.migrate.testcmd import comparable, newly_failing

ROOT = Path(__file__).resolve().parent.parent
BRANCH = "torchfix-codemods/migrate"
runner = CliRunner()

# Three rules, three files, no two fixes on one call: the rule-by-rule branch must end
# byte-identical to one `fix` run.
LOADER = """\
import torch


def restore(model, path):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state)
"""
AMP = """\
import torch


def step(model, batch):
    with torch.cuda.amp.autocast():
        return model(batch)
"""
ACTIVATIONS = """\
import torch.nn.functional as F


def gate(x):
    return F.upsample(x, scale_factor=2)
"""
README = "A training project.\n"


def sh(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com",
                           *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    sh(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    sh(path, "add", "-A")
    sh(path, "commit", "-q", "-m", "initial")
    return path


def snapshot(repo: Path) -> dict[str, bytes]:
    """The user's checkout: every file of the working tree, HEAD and the index."""
    files = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(repo).parts}
    files[".git/HEAD"] = (repo / ".git" / "HEAD").read_bytes()
    files[".git/index"] = (repo / ".git" / "index").read_bytes()
    return files


def migrate(*args: str):
    return runner.invoke(app, ["migrate", *args])


def migrate_json(*args: str) -> dict:
    result = migrate("--format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def subjects(repo: Path, base: str = "main") -> list[str]:
    return sh(repo, "log", "--reverse", "--format=%s", f"{base}..{BRANCH}").splitlines()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project", {"loader.py": LOADER, "amp.py": AMP,
                                            "activations.py": ACTIVATIONS, "README.md": README})


def test_one_commit_per_rule_and_the_checkout_is_untouched(repo: Path, tmp_path: Path) -> None:
    before = snapshot(repo)
    head = sh(repo, "rev-parse", "HEAD")
    document = migrate_json(str(repo))

    assert snapshot(repo) == before
    assert sh(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert sh(repo, "worktree", "list").count("\n") == 0  # the temporary worktree is gone
    assert subjects(repo) == [
        "TFC001: add `weights_only=True` (1 fix in 1 file)",
        "TFC401: use `torch.amp.autocast` (1 fix in 1 file)",
        "TFC402: use `torch.nn.functional.interpolate` (1 fix in 1 file)",
    ]
    # Each commit changes exactly its rule's file.
    shas = sh(repo, "log", "--reverse", "--format=%H", f"main..{BRANCH}").splitlines()
    touched = [sh(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha) for sha in shas]
    assert touched == ["loader.py", "amp.py", "activations.py"]
    body = sh(repo, "log", "-1", "--format=%B", shas[0])
    assert "TFC001 torch-load-without-weights-only: With `weights_only=False`" in body
    assert "- 1 x add `weights_only=True` (TFC001, safe)" in body
    assert "Fix safety: safe (1)." in body
    assert "Torchfix-Codemods-Rule: TFC001" in body

    # The branch ends where one `fix` run over a copy of the base ends.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    assert runner.invoke(app, ["fix", str(copy)]).exit_code == 0
    for name in ("loader.py", "amp.py", "activations.py"):
        assert sh(repo, "show", f"{BRANCH}:{name}") + "\n" == (copy / name).read_text()

    [entry] = document["repositories"]
    assert entry["base"] == head and entry["branch"] == BRANCH
    assert [(c["code"], c["files"], c["fixes"], c["safety"]) for c in entry["commits"]] == [
        ("TFC001", 1, 1, {"safe": 1}), ("TFC401", 1, 1, {"safe": 1}),
        ("TFC402", 1, 1, {"safe": 1})]
    assert [c["sha"] for c in entry["commits"]] == shas
    assert entry["dropped"] == [] and entry["differs_from_single_run"] == []
    assert entry["tests"] is None and entry["pushed"] is False and entry["pr_url"] is None
    assert document["summary"]["new_commits"] == 3 and document["summary"]["fixes"] == 3


def test_running_again_adds_no_commit(repo: Path) -> None:
    assert migrate(str(repo)).exit_code == 0
    tip = sh(repo, "rev-parse", BRANCH)
    document = migrate_json(str(repo))
    assert sh(repo, "rev-parse", BRANCH) == tip
    entry = document["repositories"][0]
    assert document["summary"]["new_commits"] == 0
    assert [c["new"] for c in entry["commits"]] == [False, False, False]
    # The PR body still describes the whole branch, read back from its commits.
    assert "| TFC401 `cuda-amp` | use `torch.amp.autocast` | safe | 1 | 1 |" in entry["pr_body"]


def test_a_dirty_repository_is_refused(repo: Path) -> None:
    (repo / "amp.py").write_text(AMP + "# work in progress\n")
    (repo / "notes.py").write_text("x = 1\n")
    result = migrate(str(repo))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert f"{repo}: uncommitted changes (amp.py, notes.py)" in lines[0]
    assert "--allow-dirty" in lines[0]
    assert sh(repo, "branch", "--list", BRANCH) == ""


def test_allow_dirty_migrates_the_last_commit_and_keeps_the_changes(repo: Path) -> None:
    edited = AMP + "# work in progress\n"
    (repo / "amp.py").write_text(edited)
    result = migrate("--allow-dirty", str(repo))
    assert result.exit_code == 0, result.output
    assert (repo / "amp.py").read_text() == edited
    assert "# work in progress" not in sh(repo, "show", f"{BRANCH}:amp.py")
    assert "torch.amp.autocast" in sh(repo, "show", f"{BRANCH}:amp.py")


def test_not_a_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = migrate(str(tmp_path / "plain"))
    assert result.exit_code == 2
    assert result.output.strip() == f"torchfix-codemods: error: {tmp_path / 'plain'}: not a git repository"


GOLDEN_CHECK = """\
import pathlib
import sys

expected = pathlib.Path("amp.golden").read_text()
if pathlib.Path("amp.py").read_text() != expected:
    print("FAILED test_golden.py::test_amp_source - amp.py differs from amp.golden")
    sys.exit(1)
print("1 passed")
"""


def test_test_cmd_drops_the_commit_that_breaks_the_tests(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {
        "loader.py": LOADER, "amp.py": AMP, "amp.golden": AMP, "check.py": GOLDEN_CHECK})
    result = migrate("--format", "json", "--test-cmd", "python check.py", str(repo))
    assert result.exit_code == 1, result.output
    entry = json.loads(result.stdout)["repositories"][0]
    assert subjects(repo) == ["TFC001: add `weights_only=True` (1 fix in 1 file)"]
    assert [d["code"] for d in entry["dropped"]] == ["TFC401"]
    dropped = entry["dropped"][0]
    assert dropped["reason"].startswith("tests passed on the base and fail after this commit")
    assert "amp.py differs from amp.golden" in dropped["output"]
    assert entry["tests"]["command"] == "python check.py"
    assert entry["tests"]["before"]["passed"] is True
    assert entry["tests"]["after"]["passed"] is True
    assert "**Dropped** TFC401" in entry["pr_body"]
    assert "amp.py differs from amp.golden" in entry["pr_body"]
    # The dropped rule's file is not reported as a rule-by-rule difference.
    assert entry["differs_from_single_run"] == []


def _outcome(passed: bool, failed: tuple[str, ...] = (), code: int | None = 1,
             reader: str = JUNIT) -> SuiteOutcome:
    return SuiteOutcome(passed, 0 if passed else code, 1.0, failed, "", reader,
                        3 if reader == JUNIT else None)


def test_new_failures_are_told_apart_from_failures_the_base_already_had() -> None:
    green, red = _outcome(True), _outcome(False, ("t.py::a",))
    assert newly_failing(green, green) is None
    assert "passed on the base" in (newly_failing(green, red) or "")
    assert newly_failing(red, red) is None
    assert "t.py::b" in (newly_failing(red, _outcome(False, ("t.py::a", "t.py::b"))) or "")
    assert "time limit" in (newly_failing(red, _outcome(False, code=None)) or "")
    # Ids are compared whole: a new failure behind a base failure with the same prefix.
    spaced = _outcome(False, ("t::test_io[a b]",))
    assert "t::test_io[a c]" in (newly_failing(spaced, _outcome(
        False, ("t::test_io[a b]", "t::test_io[a c]"))) or "")
    # No report where the base wrote one: a crash, or pytest stopped before the tests.
    assert "without its JUnit report" in (newly_failing(red, _outcome(
        False, code=-11, reader=EXIT_STATUS)) or "")
    # The same failures, but the command now ends another way (pytest: internal error).
    assert "exit status 3" in (newly_failing(red, _outcome(False, ("t.py::a",), code=3)) or "")


def test_a_base_that_cannot_be_compared_says_why() -> None:
    assert comparable(_outcome(True)) is None
    assert comparable(_outcome(False, ("t.py::a",))) is None
    assert "time limit" in (comparable(_outcome(False, code=None, reader=EXIT_STATUS)) or "")
    assert "no JUnit report" in (comparable(_outcome(False, reader=EXIT_STATUS)) or "")
    exit_only = _outcome(True, reader=EXIT_STATUS)
    assert "exit status 2" in (newly_failing(exit_only, _outcome(
        False, code=2, reader=EXIT_STATUS)) or "")


def test_push_sends_the_branch_to_the_remote_and_nothing_is_pushed_without_it(
        repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    sh(repo, "remote", "add", "origin", str(remote))
    assert migrate(str(repo)).exit_code == 0
    listed = subprocess.run(["git", "--git-dir", str(remote), "branch", "--list"],
                            capture_output=True, text=True, check=True).stdout
    assert listed == ""
    document = migrate_json("--push", "origin", str(repo))
    assert document["repositories"][0]["pushed"] is True
    pushed = subprocess.run(["git", "--git-dir", str(remote), "rev-parse", f"refs/heads/{BRANCH}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert pushed == sh(repo, "rev-parse", BRANCH)


def test_open_pr_without_a_logged_in_gh_prints_the_command(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # gh, where installed, is not logged in with an empty config and no token.
    monkeypatch.setenv("GH_CONFIG_DIR", str(tmp_path / "gh-config"))
    for variable in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    sh(repo, "remote", "add", "origin", str(remote))
    result = migrate("--push", "origin", "--open-pr", str(repo))
    assert result.exit_code == 0, result.output
    entry = migrate_json(str(repo))["repositories"][0]
    body_path = entry["pr_body_path"]
    assert body_path == str(repo / ".git" / "torchfix-codemods" / "torchfix-codemods-migrate.md")
    line = next(line for line in result.output.splitlines() if "open the pull request with:" in line)
    command = line.split("open the pull request with: ", 1)[1]
    words = shlex.split(command)
    assert words[:3] == ["cd", str(repo), "&&"]
    assert words[3:] == ["gh", "pr", "create", "--head", BRANCH, "--base", "main", "--title",
                         "PyTorch fixes by torchfix-codemods (TFC001, TFC401, TFC402)",
                         "--body-file", body_path]
    assert Path(body_path).read_text() == entry["pr_body"]


def test_open_pr_needs_push(repo: Path) -> None:
    result = migrate("--open-pr", str(repo))
    assert result.exit_code == 2
    assert "--open-pr needs --push REMOTE" in result.output


def test_commit_per_family_and_all(tmp_path: Path) -> None:
    files = {"loader.py": LOADER, "amp.py": AMP, "activations.py": ACTIVATIONS}
    family = make_repo(tmp_path / "family", files)
    assert migrate("--commit-per", "family", str(family)).exit_code == 0
    assert subjects(family) == [
        "TFC001: add `weights_only=True` (1 fix in 1 file)",
        "TFC4xx: TFC401, TFC402 (2 fixes in 2 files)",
    ]
    together = make_repo(tmp_path / "all", files)
    assert migrate("--commit-per", "all", str(together)).exit_code == 0
    assert subjects(together) == ["torchfix-codemods: TFC001, TFC401, TFC402 (3 fixes in 3 files)"]


def test_an_existing_branch_that_lacks_head_needs_force(repo: Path) -> None:
    assert migrate(str(repo)).exit_code == 0
    (repo / "more.py").write_text("import torch\n\n\ndef restore(model):\n"
                                  "    model.load_state_dict(torch.load('m.pt', map_location='cpu'))\n")
    sh(repo, "add", "more.py")
    sh(repo, "commit", "-q", "-m", "more")
    refused = migrate(str(repo))
    assert refused.exit_code == 2
    assert "does not contain HEAD" in refused.output and "--force" in refused.output
    assert migrate("--force", str(repo)).exit_code == 0
    assert sh(repo, "merge-base", "--is-ancestor", "main", BRANCH) == ""
    assert subjects(repo)[0] == "TFC001: add `weights_only=True` (2 fixes in 2 files)"


def test_pr_body_lists_rules_findings_with_links_and_how_to_reproduce(tmp_path: Path) -> None:
    evaluate = ("import torch\n\n\ndef evaluate(model, batch):\n"
                "    return model(batch).argmax(1)\n")
    repo = make_repo(tmp_path / "project", {"amp.py": AMP, "evaluate.py": evaluate})
    sh(repo, "remote", "add", "origin", "git@github.com:acme/vision.git")
    entry = migrate_json("--select", "TFC2,TFC4", str(repo))["repositories"][0]
    body = entry["pr_body"]
    tip = sh(repo, "rev-parse", BRANCH)
    assert "| TFC401 `cuda-amp` | use `torch.amp.autocast` | safe | 1 | 1 |" in body
    assert (f"- [ ] [`evaluate.py:5`](https://github.com/acme/vision/blob/{tip}/evaluate.py#L5) "
            "TFC201 `missing-eval`") in body
    assert "torchfix-codemods migrate --select TFC2,TFC4 ." in body
    assert entry["base"] in body
    # The safe no_grad fix is a commit; the unsafe eval() is left for a person, at its line on
    # the branch (after the decorator the fix added).
    assert [c["code"] for c in entry["commits"]] == ["TFC202", "TFC401"]
    assert [(f["code"], f["line"]) for f in entry["remaining"]] == [("TFC201", 5)]
    assert sh(repo, "show", f"{BRANCH}:evaluate.py").splitlines()[4] == "def evaluate(model, batch):"


def test_ddp_migration_gives_the_launch_line(tmp_path: Path) -> None:
    script = (ROOT / "tests" / "fixtures" / "TFC301" / "train_dp.py").read_text()
    repo = make_repo(tmp_path / "project", {"scripts/train.py": script})
    entry = migrate_json("--unsafe-fixes", "--select", "TFC301", str(repo))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC301"]
    assert "torchrun --nproc_per_node=N scripts/train.py" in entry["pr_body"]
    assert "Torchfix-Codemods-Launch: scripts/train.py" in sh(repo, "log", "-1", "--format=%B", BRANCH)


def test_several_repositories_run_in_parallel(tmp_path: Path) -> None:
    first = make_repo(tmp_path / "first", {"loader.py": LOADER})
    second = make_repo(tmp_path / "second", {"amp.py": AMP})
    document = migrate_json("--jobs", "2", str(first), str(second))
    assert [r["path"] for r in document["repositories"]] == [str(first), str(second)]
    assert [[c["code"] for c in r["commits"]] for r in document["repositories"]] == [
        ["TFC001"], ["TFC401"]]
    assert document["summary"]["repositories"] == 2 and document["summary"]["migrated"] == 2


def test_nothing_to_fix_creates_no_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "clean", {"ok.py": "import torch\nx = torch.ones(2)\n"})
    result = migrate(str(repo))
    assert result.exit_code == 0, result.output
    assert "Nothing to fix" in result.output
    assert sh(repo, "branch", "--list", BRANCH) == ""


def test_config_noqa_and_selection_are_honoured(tmp_path: Path) -> None:
    silenced = LOADER.replace('map_location="cpu")', 'map_location="cpu")  # noqa: TFC001')
    repo = make_repo(tmp_path / "project", {
        "loader.py": silenced, "amp.py": AMP, "activations.py": ACTIVATIONS,
        "pyproject.toml": '[tool.torchfix-codemods]\nignore = ["TFC402"]\n'})
    assert migrate(str(repo)).exit_code == 0
    assert subjects(repo) == ["TFC401: use `torch.amp.autocast` (1 fix in 1 file)"]


def test_config_takes_key_value_settings_as_check_and_fix_do(tmp_path: Path) -> None:
    """`--config 'KEY = VALUE'` is a setting (a busy machine's `file-timeout`), laid over the
    repository's own; it is not a file to look for. The reproduce line keeps it."""
    repo = make_repo(tmp_path / "project", {"loader.py": LOADER, "amp.py": AMP,
                                            "activations.py": ACTIVATIONS})
    entry = migrate_json("--config", 'ignore = ["TFC402"]', "--config", "file-timeout = 120",
                         str(repo))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001", "TFC401"]
    assert "--config 'ignore = [\"TFC402\"]' --config 'file-timeout = 120'" in entry["pr_body"]


def test_bad_commit_per_is_a_usage_error(repo: Path) -> None:
    result = migrate("--commit-per", "file", str(repo))
    assert result.exit_code == 2 and "--commit-per" in result.output


def test_environment_without_git_identity_still_commits(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for variable in [v for v in os.environ if v.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))]:
        monkeypatch.delenv(variable)
    assert migrate(str(repo)).exit_code == 0
    assert sh(repo, "log", "-1", "--format=%an <%ae>", BRANCH) == (
        "torchfix-codemods <torchfix-codemods@users.noreply.invalid>")


def test_a_directory_inside_the_repository_migrates_only_that_part(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {"src/loader.py": LOADER, "tools/amp.py": AMP})
    entry = migrate_json(str(repo / "src"))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001"]
    assert sh(repo, "diff", "--name-only", "main", BRANCH) == "src/loader.py"
    assert "torchfix-codemods migrate src\n" in entry["pr_body"]


def test_migrate_has_help() -> None:
    result = migrate("--help")
    assert result.exit_code == 0 and "--test-cmd" in result.output and "--commit-per" in result.output


def test_readme_shows_the_pr_body_migrate_writes_for_the_examples() -> None:
    from torchfix_codemods.readme import replace_migrate_example

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert replace_migrate_example(readme, ROOT / "examples") == readme, (
        "README migrate example is stale: run `python -m torchfix_codemods.readme`")
    # One commit per rule: the examples once gave TFC102 two (its first pass, over its own
    # files only, missed a fix that needs model.py's facts; the next pass made a second).
    rows = re.findall(r"^\| (TFC\d+) `[^`]+` \|.*\| (\d+) \| (\d+) \|$", readme, re.MULTILINE)
    codes = [code for code, _, _ in rows]
    assert len(codes) > 10 and len(codes) == len(set(codes))
    # (train.py's `logits.data` is the fix that needs model.py; utils.py's EMA reads are the
    # other two. Its gradient-norm read `p.grad.data` is left alone: a gradient has no history.)
    assert ("TFC102", "2", "3") in rows


def test_excludes_are_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {"src/loader.py": LOADER, "vendor/amp.py": AMP})
    assert migrate("--extend-exclude", "vendor/", str(repo)).exit_code == 0
    assert sh(repo, "diff", "--name-only", "main", BRANCH) == "src/loader.py"


# A real pytest suite in the generated repository: one parametrised test whose ids have
# spaces, and a check that breaks when TFC401 rewrites amp.py (the source is compared).
SUITE = '''\
import pathlib

import pytest


@pytest.mark.parametrize("case", ["a b", "a c"])
def test_sources(case):
    if case == "a b" and pathlib.Path("RED").exists():
        raise AssertionError("broken on the base")
    assert "torch.cuda.amp" in pathlib.Path("amp.py").read_text()


def test_loader():
    assert "torch.load" in pathlib.Path("loader.py").read_text()
'''
PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest --color=yes -p no:cacheprovider"


def _suite_repo(tmp_path: Path, red: bool = False) -> Path:
    files = {"loader.py": LOADER, "amp.py": AMP, "test_suite.py": SUITE}
    if red:
        files["RED"] = "the base already fails one test\n"
    return make_repo(tmp_path / "project", files)


def test_pytest_with_colour_drops_the_commit_that_breaks_a_test(tmp_path: Path) -> None:
    repo = _suite_repo(tmp_path)
    result = migrate("--format", "json", "--test-cmd", PYTEST, str(repo))
    assert result.exit_code == 1, result.output
    entry = json.loads(result.stdout)["repositories"][0]
    assert subjects(repo) == ["TFC001: add `weights_only=True` (1 fix in 1 file)"]
    [dropped] = entry["dropped"]
    assert dropped["code"] == "TFC401"
    assert dropped["reason"] == ("tests that passed on the base fail after this commit: "
                                 "test_suite::test_sources[a b], test_suite::test_sources[a c]")
    tests = entry["tests"]
    assert tests["before"]["read_from"] == "junit" and tests["before"]["tests"] == 3
    assert tests["before"]["passed"] is True and tests["after"]["passed"] is True
    assert tests["untested"] is None
    assert "torch " in tests["versions"] and "Python 3." in tests["versions"]
    body = entry["pr_body"]
    assert "read test by test from the JUnit XML report" in body
    assert f"The tests ran on {tests['versions']}." in body


def test_the_versions_are_those_of_the_interpreter_the_command_names(tmp_path: Path) -> None:
    """Past `NAME=value` assignments and `env`: the `python...` the command runs, or the one
    on the `#!` line of the `pytest` script it starts; not the `python` on PATH."""
    from torchfix_codemods.migrate.testcmd import interpreter_of, versions

    shim = tmp_path / "venv" / "bin" / "python3.99"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/bin/sh\necho 'Python 3.99.0'\necho 'torch 9.9.9'\n")
    shim.chmod(0o755)
    script = shim.parent / "pytest"
    script.write_text(f"#!{shim}\nimport sys\n")
    script.chmod(0o755)
    assert interpreter_of(f"PYTHONPATH=. {shim} -m pytest -q tests") == str(shim)
    assert interpreter_of(f"env CUDA_VISIBLE_DEVICES= {script} -q") == str(shim)
    assert interpreter_of("make test") is None
    assert versions(f"PYTHONPATH=. OMP_NUM_THREADS=1 {shim} -m pytest", str(tmp_path)) == \
        "Python 3.99.0, torch 9.9.9"
    assert versions(f"{script} -x", str(tmp_path)) == "Python 3.99.0, torch 9.9.9"


def test_a_red_base_gives_the_failing_lists_and_ids_with_spaces_are_whole(tmp_path: Path) -> None:
    repo = _suite_repo(tmp_path, red=True)
    entry = migrate_json("--test-cmd", PYTEST, str(repo))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001"]
    [dropped] = entry["dropped"]
    # `test_sources[a b]` failed on the base; `test_sources[a c]` is new, although the two
    # ids agree up to the first space.
    assert dropped["reason"] == ("tests that passed on the base fail after this commit: "
                                 "test_suite::test_sources[a c]")
    assert entry["tests"]["before"]["failed"] == ["test_suite::test_sources[a b]"]
    assert entry["tests"]["after"]["failed"] == ["test_suite::test_sources[a b]"]
    body = entry["pr_body"]
    assert ("- failing on the base (1):\n  - `test_suite::test_sources[a b]`\n"
            "- failing on this branch (1):\n  - `test_suite::test_sources[a b]`\n"
            "- new on this branch: none\n- passing again on this branch: none") in body
    assert "failed (exit status 1, 1 failing test; 3 tests," in body


def test_a_collection_error_after_a_commit_drops_it(tmp_path: Path) -> None:
    suite = "import amp_helpers  # noqa: F401\n\n\ndef test_nothing():\n    pass\n"
    repo = make_repo(tmp_path / "project", {
        "amp.py": AMP, "test_imports.py": suite,
        # a helper the tests import, which the commit makes fail at import time
        "amp_helpers.py": "import pathlib\n\nif 'torch.amp.' in pathlib.Path('amp.py').read_text():"
                          "\n    raise ImportError('changed')\n"})
    entry = migrate_json("--test-cmd", PYTEST, str(repo))["repositories"][0]
    assert entry["commits"] == []
    [dropped] = entry["dropped"]
    assert dropped["reason"] == "tests that passed on the base fail after this commit: test_imports"


def test_a_commit_that_makes_passing_tests_skip_is_dropped(tmp_path: Path) -> None:
    """A green run after a commit proves nothing about tests that no longer run: the commit
    breaks an import a test module guards with a module-level skip (as a suite does for an
    API the installed torch lacks), so its tests are skipped and pytest exits 0."""
    guarded = ("import pytest\n\ntry:\n    import amp_helpers\nexcept ImportError:\n"
               "    pytest.skip('needs a newer torch', allow_module_level=True)\n\n\n"
               "def test_step():\n    assert amp_helpers.READY\n")
    repo = make_repo(tmp_path / "project", {
        "amp.py": AMP, "loader.py": LOADER, "test_guarded.py": guarded,
        "test_plain.py": "def test_always():\n    pass\n",
        "amp_helpers.py": "import pathlib\n\nif 'torch.amp.' in pathlib.Path('amp.py').read_text():"
                          "\n    raise ImportError('changed')\nREADY = True\n"})
    result = migrate("--format", "json", "--test-cmd", PYTEST, str(repo))
    assert result.exit_code == 1, result.output
    entry = json.loads(result.stdout)["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001"]
    [dropped] = entry["dropped"]
    assert dropped["code"] == "TFC401"
    assert dropped["reason"] == ("tests that passed on the base were skipped or did not run "
                                 "after this commit: test_guarded::test_step")
    assert entry["tests"]["after"]["passed"] is True


@pytest.mark.parametrize(("base", "after", "why"), [
    # passed, then skipped (or gone): the commit is worse
    ((("t::a", "t::b"), ()), (("t::a",), ()), "skipped or did not run after this commit: t::b"),
    # skipped on the base too: nothing lost
    ((("t::a",), ()), (("t::a",), ()), None),
    # passed, then failed: told as a failure, not as a skip
    ((("t::a", "t::b"), ()), (("t::a",), ("t::b",)), "fail after this commit: t::b"),
])
def test_tests_that_stop_running_are_a_regression(base, after, why) -> None:
    before_outcome = SuiteOutcome(True, 0, 1.0, base[1], "", JUNIT, 2, base[0])
    passed = not after[1]
    after_outcome = SuiteOutcome(passed, 0 if passed else 1, 1.0, after[1], "", JUNIT, 2,
                                 after[0])
    reason = newly_failing(before_outcome, after_outcome)
    assert (reason is None) if why is None else (why in (reason or "")), reason


def test_the_junit_reader_counts_expected_failures_as_run_and_skips_as_not(
        tmp_path: Path) -> None:
    from torchfix_codemods.migrate.testcmd import read_junit

    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="t" name="passed"/>'
        '<testcase classname="t" name="xfailed"><skipped type="pytest.xfail" message="x"/>'
        '</testcase>'
        '<testcase classname="t" name="skipped"><skipped type="pytest.skip" message="s"/>'
        '</testcase>'
        '<testcase classname="t" name="failed"><failure message="f"/></testcase>'
        '<testcase classname="" name="test_broken"><error message="collection"/></testcase>'
        '</testsuite></testsuites>')
    assert read_junit(str(report)) == (("t::failed", "test_broken"), 5, ("t::passed",
                                                                          "t::xfailed"))


def test_a_base_past_the_time_limit_claims_no_commit_tested(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {"amp.py": AMP})
    result = migrate("--format", "json", "--test-timeout", "1", "--test-cmd",
                     "python -c 'import time; time.sleep(30)'", str(repo))
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC401"]
    assert entry["tests"]["before"]["returncode"] is None
    assert entry["tests"]["after"] is None  # not run again on the branch
    assert entry["tests"]["untested"] == "the test command ran past its time limit on the base"
    body = entry["pr_body"]
    assert ("**The commits were not checked against the tests**: the test command ran past "
            "its time limit on the base.") in body
    assert "ran on the base and after each commit" not in body
    assert "stopped at the time limit" in body


def test_a_rerun_that_adds_no_commit_runs_no_test(tmp_path: Path) -> None:
    repo = _suite_repo(tmp_path)
    log = tmp_path / "runs.log"
    command = f"echo run >> {shlex.quote(str(log))}; {PYTEST}"
    first = migrate_json("--test-cmd", command, str(repo))["repositories"][0]
    runs = log.read_text().count("run")
    assert runs == 3  # the base, TFC001, TFC401 (dropped); the branch is TFC001's tree
    second = migrate_json("--test-cmd", command, str(repo))["repositories"][0]
    assert log.read_text().count("run") == runs
    assert [c["new"] for c in second["commits"]] == [False]
    assert second["tests"]["before"] == first["tests"]["before"]
    assert second["tests"]["after"] == first["tests"]["after"]
    assert [d["code"] for d in second["dropped"]] == ["TFC401"]
    assert second["tests"]["reused_runs"] == 3
    assert "3 test runs were read back from an earlier `migrate`" in second["pr_body"]


def test_test_runs_are_kept_with_the_one_atomic_writer(repo: Path) -> None:
    """A save that cannot replace its file (a directory stands there) leaves no temporary
    file beside it: the kept runs are written by ``writing.replace_file``."""
    from torchfix_codemods.migrate import testsave

    kept = testsave.Kept("pytest", {"abc": SuiteOutcome(True, 0, 1.5, (), "ok")})
    testsave.save(str(repo), "torchfix/fixes", kept)
    assert testsave.load(str(repo), "torchfix/fixes", "pytest") == kept
    folder = repo / ".git" / "torchfix-codemods"
    blocked = folder / "blocked.tests.json"
    blocked.mkdir()
    (blocked / "inside").write_text("")
    before = sorted(p.name for p in folder.iterdir())
    testsave.save(str(repo), "blocked", kept)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_cross_file_fix_reaches_the_branch(tmp_path: Path) -> None:
    """train.py's fix needs models.py's facts (``Net`` is a module) although models.py has
    nothing to fix: the index covers the whole repository, as in one ``fix`` run."""
    fixture = ROOT / "tests" / "fixtures" / "TFC003" / "project_whole_model"
    repo = make_repo(tmp_path / "project", {
        name: (fixture / name).read_text() for name in ("models.py", "train.py", "predict.py")})
    entry = migrate_json("--unsafe-fixes", "--select", "TFC003", str(repo))["repositories"][0]
    assert [(c["code"], c["files"]) for c in entry["commits"]] == [("TFC003", 2)]
    for name in ("train.py", "predict.py"):
        expected = (fixture / name.replace(".py", ".expected.py")).read_text()
        assert sh(repo, "show", f"{BRANCH}:{name}") + "\n" == expected
    assert entry["differs_from_single_run"] == [] and entry["remaining"] == []


def test_a_rerun_never_gives_a_rule_a_second_commit(repo: Path) -> None:
    assert migrate(str(repo)).exit_code == 0
    # A reviewer's commit on the branch brings one more `torch.load`.
    sh(repo, "checkout", "-q", BRANCH)
    (repo / "more.py").write_text(LOADER)
    sh(repo, "add", "more.py")
    sh(repo, "commit", "-q", "-m", "reviewer: one more loader")
    sh(repo, "checkout", "-q", "main")
    again = migrate_json(str(repo))["repositories"][0]
    assert [c["code"] for c in again["commits"] if c["new"]] == []
    assert sh(repo, "log", "--format=%s", f"main..{BRANCH}").count("TFC001") == 1
    assert any(note.startswith("TFC001 has 1 fix more than its commit on the branch")
               for note in again["notes"])
    assert ("more.py", "TFC001") in {(f["path"], f["code"]) for f in again["remaining"]}


def test_a_rule_that_finds_more_after_later_rules_is_moved_not_committed_twice(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When a rule finds more to fix only after a later rule's commit, the branch is rebuilt
    with that rule last: still one commit per rule, with all its fixes."""
    from torchfix_codemods.migrate import repository

    real_fix = repository._Migration._fix

    def fix(self, codes, paths, settings):  # TFC001 "needs" TFC401's fix for one more edit
        applied, touched = real_fix(self, codes, paths, settings)
        loader = Path(self.worktree) / "loader.py"
        if (codes == ("TFC001",) and "torch.amp.autocast" in (Path(self.worktree) / "amp.py")
                .read_text() and "# more" not in loader.read_text()):
            loader.write_text(loader.read_text() + "# more\n")
            touched = sorted({*touched, "loader.py"})
        return applied, touched

    monkeypatch.setattr(repository._Migration, "_fix", fix)
    assert migrate(str(repo)).exit_code == 0
    assert [s.split(":")[0] for s in subjects(repo)] == ["TFC401", "TFC402", "TFC001"]
    assert sh(repo, "show", f"{BRANCH}:loader.py").endswith("# more")


def test_a_fix_another_rule_exposes_stays_in_its_rule_s_one_commit(tmp_path: Path) -> None:
    """The same as above with nothing simulated: `torch` is unbound in init.py until TFC110's
    fix adds `import torch`, so TFC001 finds that load only after TFC110's commit, when it
    already has its commit for loader.py (on kornia a rule got two commits this way)."""
    repo = make_repo(tmp_path / "project", {
        "loader.py": LOADER,
        "init.py": "y = torch.load(x)\nimport torch.nn as nn\n\nm = nn.Linear(3, 2)\n"
                   "m.weight.normal_(0, 0.02)\n"})
    entry = migrate_json("--unsafe-fixes", str(repo))["repositories"][0]
    assert subjects(repo) == ["TFC110: make the update under `torch.no_grad()` (1 fix in 1 file)",
                              "TFC001: add `weights_only=True` (2 fixes in 2 files)"]
    assert [c["code"] for c in entry["commits"]] == ["TFC110", "TFC001"]
    assert "torch.load(x, weights_only=True)" in sh(repo, "show", f"{BRANCH}:init.py")


def test_a_failed_push_shows_the_whole_reason(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    sh(repo, "remote", "add", "origin", str(remote))
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\necho 'policy: branches need a ticket number' >&2\n"
                    "echo 'see CONTRIBUTING.md, section Branches' >&2\nexit 1\n")
    hook.chmod(0o755)
    result = migrate("--push", "origin", str(repo))
    assert result.exit_code == 1
    assert "push to origin failed" in result.output
    assert "policy: branches need a ticket number" in result.output
    assert "see CONTRIBUTING.md, section Branches" in result.output
    assert "failed to push some refs" in result.output


def test_one_subject_style_whatever_the_fixes(tmp_path: Path) -> None:
    # TFC401 with two descriptions (autocast and GradScaler) is named by its rule, in the
    # same `CODE: WHAT (COUNTS)` shape as a rule with one description.
    scaled = AMP.replace("import torch\n", "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n")
    repo = make_repo(tmp_path / "project", {"amp.py": scaled, "loader.py": LOADER})
    assert migrate(str(repo)).exit_code == 0
    assert subjects(repo) == ["TFC001: add `weights_only=True` (1 fix in 1 file)",
                              "TFC401: cuda-amp (2 fixes in 1 file)"]


def test_progress_ends_each_repository_with_how_it_ended(tmp_path: Path) -> None:
    from torchfix_codemods.migrate.campaign import migrate_all, prepare_all
    from torchfix_codemods.migrate.model import MigrateOptions

    first = make_repo(tmp_path / "first", {"loader.py": LOADER})
    second = make_repo(tmp_path / "second", {"ok.py": "x = 1\n"})
    options = MigrateOptions()
    targets, refusals = prepare_all([str(first), str(second)], options)
    assert refusals == []
    events: list[tuple[int, str]] = []
    migrate_all(targets, options, lambda index, what, done, total: events.append((index, what)))
    last = {index: what for index, what in events}
    assert last == {0: "done: 1 new commit", 1: "done: 0 new commits"}


def test_the_pr_body_keeps_the_checklist_for_work(tmp_path: Path) -> None:
    """No torchrun line for a library module or a test file, unparsable files named once as
    not analysed (not as syntax errors to fix), "no migration needed" told, not listed."""
    script = (ROOT / "tests" / "fixtures" / "TFC301" / "train_dp.py").read_text()
    library = script[:script.index('if __name__ == "__main__":')]
    notebook = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                      "execution_count": None, "source": ["def (:\n"]}],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    evaluation = ("import torch\nimport torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))"
                  "\nmodel.eval()\nwith torch.no_grad():\n    y = model(torch.ones(1, 2))\n")
    repo = make_repo(tmp_path / "project", {
        "train.py": script, "lib/trainer.py": library, "tests/test_train.py": script,
        "evaluate.py": evaluation, "broken.py": "def (:\n", "explore.ipynb": notebook})
    entry = migrate_json("--unsafe-fixes", str(repo))["repositories"][0]
    body = entry["pr_body"]
    assert [(c["code"], c["files"]) for c in entry["commits"]] == [("TFC301", 3)]
    assert "torchrun --nproc_per_node=N train.py\n```" in body
    assert body.count("torchrun --nproc_per_node=N") == 3  # the script, the module, evaluate.py
    assert "test_train.py" not in body and "trainer.py`" not in body.split("### Launching")[0]
    assert ("`lib/trainer.py` is a module, not run on its own: start the scripts that train "
            "with it with `torchrun --nproc_per_node=N script.py`") in body
    assert "The tool could not parse `broken.py`, `explore.ipynb`" in body
    assert "TFC000" not in body
    assert "### For information (no change needed)\n\n- `evaluate.py:4` TFC301" in body
    assert "- [ ]" not in body


def test_a_notebook_with_shell_assignments_is_migrated_not_listed_as_unparsable(
        tmp_path: Path) -> None:
    """`files = !ls *.pt` and `t = %timeit -o ...` are IPython, not syntax errors: the
    notebook is analysed and fixed, the magics come back byte for byte, and the PR body names
    no file as not analysed."""
    cells = ["import torch\n", "files = !ls *.pt\n", "state = torch.load(files[0])\n",
             "t = %timeit -o sum(range(9))\n"]
    notebook = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                      "execution_count": None, "source": [line]}
                                     for line in cells],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    repo = make_repo(tmp_path / "project", {"explore.ipynb": notebook + "\n"})
    entry = migrate_json("--unsafe-fixes", str(repo))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001"]
    fixed = json.loads(sh(repo, "show", f"{BRANCH}:explore.ipynb"))
    assert [c["source"] for c in fixed["cells"]] == [
        [cells[0]], [cells[1]], ["state = torch.load(files[0], weights_only=True)\n"],
        [cells[3]]]
    assert "could not parse" not in entry["pr_body"] and "TFC000" not in entry["pr_body"]


STYLED_EVALUATE = """\
import os

from torch import nn

from project.data import load_batches


def evaluate(model: nn.Module, folder):
    model.eval()
    batches = load_batches(os.path.join(folder, "val"))
    return [model(batch).argmax(1) for batch in batches]
"""
STYLED_LOADER = """\
import torch


def restore(model, checkpoint_path_of_this_run):
    state = torch.load(checkpoint_path_of_this_run, map_location="cpu")
    model.load_state_dict(state)
"""
# Not clean by the project's own standard on the base (unsorted imports, a long line the
# fix does not touch): only the line the fix changes may be reformatted.
UNKEPT_LOADER = """\
import torch
import os


def restore(model, checkpoint_path_of_this_run):
    state = torch.load(checkpoint_path_of_this_run, map_location="cpu")
    model.load_state_dict(state); print("restored from", os.path.basename(checkpoint_path_of_this_run))
"""
RUFF_CONFIG = """\
[tool.ruff]
line-length = 80

[tool.ruff.lint]
select = ["E", "F", "I"]

[tool.ruff.lint.isort]
known-first-party = ["project"]

[tool.black]
line-length = 80
"""


def _ruff(repo: Path, *files: str) -> subprocess.CompletedProcess:
    from torchfix_codemods.migrate.style import find

    ruff = find("ruff")
    assert ruff is not None, "ruff is a test dependency"
    return subprocess.run([ruff, "check", "--no-cache", "--select", "I,E501", *files],
                          cwd=repo, capture_output=True, text=True, check=False)


def test_the_repository_s_own_linter_accepts_the_edits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {
        "pyproject.toml": RUFF_CONFIG, "evaluate.py": STYLED_EVALUATE,
        "loader.py": STYLED_LOADER, "legacy/loader.py": UNKEPT_LOADER})
    assert _ruff(repo, "evaluate.py", "loader.py").returncode == 0  # clean on the base
    # Without the project's style, the fixes break it: the engine's own placement.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    assert runner.invoke(app, ["fix", str(copy)]).exit_code == 0
    unstyled = _ruff(copy, "evaluate.py", "loader.py").stdout
    assert "I001" in unstyled and "E501" in unstyled

    entry = migrate_json(str(repo))["repositories"][0]
    sh(repo, "checkout", "-q", BRANCH)
    judged = _ruff(repo, "evaluate.py", "loader.py")
    assert judged.returncode == 0, judged.stdout
    assert "import torch\nfrom torch import nn\n" in (repo / "evaluate.py").read_text()
    assert "@torch.no_grad()\ndef evaluate" in (repo / "evaluate.py").read_text()
    # The file that was not clean keeps every line the fix did not change.
    legacy = (repo / "legacy" / "loader.py").read_text()
    assert legacy.startswith("import torch\nimport os\n")
    assert 'model.load_state_dict(state); print("restored from"' in legacy
    assert "weights_only=True" in legacy
    assert all(len(line) <= 80 for line in legacy.splitlines()
               if "torch.load" in line or "weights_only" in line)
    sh(repo, "checkout", "-q", "main")
    body = entry["pr_body"]
    assert "### The repository's style" in body
    assert "- `ruff check --select I` (the repository's configuration) on the changed files: " \
           "`evaluate.py`" in body
    assert "`ruff check --select I` not run on `legacy/loader.py`: not clean by it" in body
    assert "Configured but not installed where this ran, so not run: `black`." in body
    assert entry["differs_from_single_run"] == []


def test_the_style_section_names_only_what_ran_on_each_file(tmp_path: Path) -> None:
    """A file not clean by the import sorter on the base: the sorter is said not to have run
    on it, and the formatter that ran on its changed lines is named with that file, not
    claimed for "the changed files" beside a line saying the sorter did not run."""
    unsorted = UNKEPT_LOADER.replace(
        'model.load_state_dict(state); print("restored from", os.path.basename('
        'checkpoint_path_of_this_run))', "model.load_state_dict(state)")
    config = '[tool.ruff]\nline-length = 120\n\n[tool.ruff.lint]\nselect = ["E", "F", "I"]\n'
    repo = make_repo(tmp_path / "project", {"pyproject.toml": config, "loader.py": unsorted})
    body = migrate_json(str(repo))["repositories"][0]["pr_body"]
    section = body[body.index("### The repository's style"):].split("\n\n")[1]
    assert section.splitlines() == [
        "- `ruff format --range` ran on `loader.py` and found nothing to change.",
        "- `ruff check --select I` not run on `loader.py`: not clean by it on the base, so the "
        "tool would change lines this branch did not touch."]


def test_imports_are_sorted_only_where_the_project_s_ruff_selects_the_isort_rules(
        tmp_path: Path) -> None:
    """A `[tool.ruff.lint.isort]` table with a selection that leaves out `I` configures rules
    nobody turned on: the project does not sort imports with ruff, so the branch keeps the
    engine's placement and the PR body does not name `ruff check --select I`; the formatter
    the project does configure still runs."""
    config = ('[tool.ruff]\nline-length = 80\n\n[tool.ruff.lint]\nselect = ["E4", "E7", "E9", "F"]\n'
              '\n[tool.ruff.lint.isort]\nknown-first-party = ["project"]\n\n[tool.ruff.format]\n'
              'quote-style = "double"\n')
    repo = make_repo(tmp_path / "project", {"pyproject.toml": config,
                                            "evaluate.py": STYLED_EVALUATE})
    entry = migrate_json(str(repo))["repositories"][0]
    evaluate = sh(repo, "show", f"{BRANCH}:evaluate.py")
    assert "from project.data import load_batches\nimport torch\n" in evaluate
    body = entry["pr_body"]
    assert "ruff check --select I" not in body
    assert "- `ruff format` ran on `evaluate.py` and found nothing to change." in body


def test_an_isort_configuration_gets_imports_isort_accepts(tmp_path: Path) -> None:
    """A project that sorts imports with isort (setup.cfg `[isort]`, no ruff): the engine's
    own placement puts `import torch` below the first-party block; the branch has it where
    the project's isort wants it, and `isort --check-only` accepts every changed file."""
    from torchfix_codemods.migrate.style import find

    isort = find("isort")
    assert isort is not None, "isort is a test dependency"
    config = "[isort]\nprofile = black\nknown_first_party = project\nline_length = 80\n"
    repo = make_repo(tmp_path / "project", {"setup.cfg": config, "evaluate.py": STYLED_EVALUATE,
                                            "loader.py": STYLED_LOADER})

    def accepted(root: Path) -> subprocess.CompletedProcess:
        return subprocess.run([isort, "--check-only", "evaluate.py", "loader.py"], cwd=root,
                              capture_output=True, text=True, check=False)

    assert accepted(repo).returncode == 0  # clean on the base
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    assert runner.invoke(app, ["fix", str(copy)]).exit_code == 0
    assert accepted(copy).returncode == 1  # the engine's placement alone breaks it
    entry = migrate_json(str(repo))["repositories"][0]
    assert [c["code"] for c in entry["commits"]] == ["TFC001", "TFC202"]
    sh(repo, "checkout", "-q", BRANCH)
    judged = accepted(repo)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "import os\n\nimport torch\nfrom torch import nn\n" in (repo / "evaluate.py").read_text()
    sh(repo, "checkout", "-q", "main")
    assert "- `isort` (the repository's configuration) on the changed files: `evaluate.py`" \
        in entry["pr_body"]


def test_sigterm_leaves_no_worktree_and_no_test_process(repo: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "tests.pid"
    command = f"echo $$ > {shlex.quote(str(pid_file))}; exec sleep 60"
    process = subprocess.Popen(
        [sys.executable, "-m", "torchfix_codemods", "migrate", "--test-cmd", command, str(repo)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    assert sh(repo, "worktree", "list").count("\n") == 1  # the migration's own worktree
    process.terminate()
    process.wait(timeout=30)
    assert sh(repo, "worktree", "list").count("\n") == 0
    tests_pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(tests_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(tests_pid)
    assert sh(repo, "branch", "--list", BRANCH) == ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init in a container) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True
