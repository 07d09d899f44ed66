"""The pre-commit hooks and the GitHub Action, run for real from this checkout.

The hooks are installed by pre-commit itself (into a private PRE_COMMIT_HOME)
from a git snapshot of this working tree, so what is tested is what a user's
``.pre-commit-config.yaml`` gets. The Action cannot run outside GitHub; its
``run:`` steps are executed here with the inputs GitHub would give them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = str(Path(sys.executable).parent)

LOADS = """\
import torch


def restore(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com",
                           *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _snapshot_of_this_checkout(destination: Path) -> str:
    """A git repository holding this working tree's files (committed or not); its HEAD sha."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git(destination, "init", "-q")
    git(destination, "add", "-A")
    git(destination, "commit", "-q", "-m", "snapshot")
    return git(destination, "rev-parse", "HEAD")


def test_pre_commit_hooks_report_and_fix(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    rev = _snapshot_of_this_checkout(hooks)
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "loads.py").write_text(LOADS)
    (project / "third_party").mkdir()
    (project / "third_party" / "x.py").write_text(LOADS)
    (project / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nextend-exclude = ["third_party/"]\n')
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n"
        "  - id: torchfix-codemods\n  - id: torchfix-codemods-fix\n")
    git(project, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}

    def pre_commit(hook: str, *files: str) -> subprocess.CompletedProcess[str]:
        which = ["--files", *files] if files else ["--all-files"]
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", hook, *which],
                              cwd=project, env=env, capture_output=True, text=True, timeout=900,
                              check=False)

    # pre-commit names the staged files; the configured exclude holds all the same.
    vendored = pre_commit("torchfix-codemods", "third_party/x.py")
    assert vendored.returncode == 0, vendored.stdout + vendored.stderr
    assert "TFC001" not in vendored.stdout

    check = pre_commit("torchfix-codemods")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "loads.py:5:27: TFC001 [*]" in check.stdout
    assert (project / "loads.py").read_text() == LOADS

    fix = pre_commit("torchfix-codemods-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr
    assert "files were modified by this hook" in fix.stdout
    assert 'torch.load(path, map_location="cpu", weights_only=True)' in (
        project / "loads.py").read_text()

    git(project, "add", "-A")
    again = pre_commit("torchfix-codemods")
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(r"torchfix-codemods\.+Passed", again.stdout)


def _action_steps() -> dict[str, dict]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return {step.get("name", step.get("uses")): step for step in action["runs"]["steps"]}


def _run_step(step: dict, inputs: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A ``run:`` step as GitHub runs it: ``${{ inputs.x }}`` expanded into its ``env:``."""
    assert "${{" not in step["run"], "inputs reach scripts through env only"
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    for name, value in step.get("env", {}).items():
        env[name] = re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], value)
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


def _defaults() -> dict[str, str]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    return {name: spec.get("default", "") for name, spec in action["inputs"].items()}


def test_action_annotates_findings_and_writes_sarif(tmp_path: Path) -> None:
    steps = _action_steps()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "loads.py").write_text(LOADS)
    inputs = {**_defaults(), "args": "src --select TFC0", "sarif": "true"}

    sarif = _run_step(steps["Write SARIF"], inputs, tmp_path)
    assert sarif.returncode == 0, sarif.stderr
    document = json.loads((tmp_path / inputs["sarif-file"]).read_text())
    assert document["version"] == "2.1.0"
    assert [r["ruleId"] for r in document["runs"][0]["results"]] == ["TFC001"]
    assert steps["Upload SARIF"]["uses"].startswith("github/codeql-action/upload-sarif@")

    annotate = _run_step(steps["Annotate findings"], inputs, tmp_path)
    assert annotate.returncode == 1
    assert annotate.stdout.startswith("::warning title=TFC001 torch-load-without-weights-only,"
                                      "file=src/loads.py,line=5,col=27")

    install = steps["Install torchfix-codemods"]
    assert install["env"]["TFC_ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install --quiet "$TFC_ACTION_PATH"' in install["run"]


def test_action_args_are_split_like_a_shell_and_never_globbed(tmp_path: Path) -> None:
    """``--extend-exclude legacy/*`` stays one pattern (unquoted, bash globbed it into a file
    list whose second file was then checked); a quoted path with a space stays one path."""
    steps = _action_steps()
    (tmp_path / "my src").mkdir()
    (tmp_path / "my src" / "loads.py").write_text(LOADS)
    (tmp_path / "legacy").mkdir()
    for name in ("a.py", "b.py"):
        (tmp_path / "legacy" / name).write_text(LOADS)
    inputs = {**_defaults(), "args": "'my src' legacy --select TFC0 --extend-exclude legacy/*"}
    annotate = _run_step(steps["Annotate findings"], inputs, tmp_path)
    assert annotate.returncode == 1, annotate.stderr
    files = re.findall(r"file=([^,]+),", annotate.stdout)
    assert files == ["my src/loads.py"], annotate.stdout
    unbalanced = _run_step(steps["Annotate findings"], {**inputs, "args": "'my src"}, tmp_path)
    assert unbalanced.returncode == 1 and "args: No closing quotation" in unbalanced.stderr
    assert unbalanced.stdout == ""


def test_action_migrate_step_builds_the_branch_with_the_test_command(tmp_path: Path) -> None:
    steps = _action_steps()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "loads.py").write_text(LOADS)
    (repo / "check.py").write_text("print('FAILED t.py::nothing')\nraise SystemExit(0)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    inputs = {**_defaults(), "command": "migrate", "args": ". --select TFC0 --format json",
              "test-cmd": "python check.py"}
    done = _run_step(steps["Migrate"], inputs, repo)
    assert done.returncode == 0, done.stderr
    [entry] = json.loads(done.stdout)["repositories"]
    assert [c["code"] for c in entry["commits"]] == ["TFC001"]
    assert entry["tests"]["command"] == "python check.py"
    assert git(repo, "log", "-1", "--format=%s", "torchfix-codemods/migrate").startswith("TFC001:")


def test_action_refuses_an_unknown_command(tmp_path: Path) -> None:
    done = _run_step(_action_steps()["Check inputs"], {**_defaults(), "command": "chek"}, tmp_path)
    assert done.returncode == 2
    assert "'command' must be check or migrate, got 'chek'" in done.stdout
    assert _run_step(_action_steps()["Check inputs"], _defaults(), tmp_path).returncode == 0
