"""After the branch is built: the PR body on disk, ``--push``, and ``--open-pr`` through ``gh``.

Nothing leaves the machine without ``--push``. ``gh`` opens the PR when it is
installed and logged in; otherwise the exact command is kept for the user to
run. The body is written under the repository's ``.git`` directory, so the
user's checkout stays byte-identical.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

from torchfix_codemods.migrate import git, prbody
from torchfix_codemods.migrate.git import GitError
from torchfix_codemods.migrate.model import MigrateOptions, RepoOutcome
from torchfix_codemods.migrate.repository import Target

TITLE_CODES = 6


def publish(outcome: RepoOutcome, target: Target, options: MigrateOptions) -> None:
    """Body, push and PR for a repository whose branch has commits; errors go to the outcome."""
    if outcome.error is not None:
        return
    tip = outcome.commits[-1].sha if outcome.commits else target.base
    outcome.link_base = prbody.github_blob_base(
        git.remote_url(target.root, options.push or "origin"), tip)
    outcome.pr_body = prbody.render(outcome, options)
    if not outcome.commits:
        return
    outcome.pr_body_path = _write_body(target.root, options.branch, outcome.pr_body)
    if options.push is None:
        return
    try:
        git.push(target.root, options.push, options.branch, force=target.rebuild)
    except GitError as error:
        outcome.error = f"push to {options.push} failed: {error}"
        return
    outcome.pushed = True
    if options.open_pr:
        _open_pr(outcome, target, options)


def _write_body(root: str, branch: str, body: str) -> str:
    directory = os.path.join(git.common_dir(root), "torchfix-codemods")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, re.sub(r"[^A-Za-z0-9._-]+", "-", branch) + ".md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(body)
    return path


def title(outcome: RepoOutcome) -> str:
    codes = sorted({code for commit in outcome.commits for code in commit.codes})
    shown = ", ".join(codes[:TITLE_CODES]) + (", ..." if len(codes) > TITLE_CODES else "")
    return f"PyTorch fixes by torchfix-codemods ({shown})"


def pr_command(outcome: RepoOutcome, target: Target, options: MigrateOptions) -> list[str]:
    command = ["gh", "pr", "create", "--head", options.branch, "--title", title(outcome),
               "--body-file", outcome.pr_body_path or "PR_BODY.md"]
    base_branch = git.current_branch(target.root)
    if base_branch is not None:
        command[5:5] = ["--base", base_branch]
    return command


def _gh_ready() -> bool:
    if shutil.which("gh") is None:
        return False
    done = subprocess.run(["gh", "auth", "status"], capture_output=True, check=False)
    return done.returncode == 0


def _open_pr(outcome: RepoOutcome, target: Target, options: MigrateOptions) -> None:
    command = pr_command(outcome, target, options)
    printable = f"cd {shlex.quote(target.root)} && {shlex.join(command)}"
    if not _gh_ready():
        outcome.pr_command = printable
        return
    done = subprocess.run(command, cwd=target.root, capture_output=True, text=True, check=False)
    urls = re.findall(r"https://\S+", done.stdout)
    if done.returncode != 0 or not urls:
        detail = (done.stderr.strip() or done.stdout.strip() or "no URL printed").splitlines()[-1]
        outcome.error = f"gh pr create failed: {detail}"
        outcome.pr_command = printable
        return
    outcome.pr_url = urls[-1]
