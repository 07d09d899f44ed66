"""The git plumbing ``migrate`` needs, as small functions over ``git`` subprocesses.

Everything runs with an explicit working directory and without prompts, and a
failing command becomes a :class:`GitError` whose message is one line naming
the command and git's own complaint.
"""

from __future__ import annotations

import os
import subprocess

BOT_NAME = "torchfix-codemods"
BOT_EMAIL = "torchfix-codemods@users.noreply.invalid"


class GitError(Exception):
    """A git command failed; the message is the line a user sees."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    for variable in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(variable, None)  # set by a calling hook, they would point git elsewhere
    return env


def git(cwd: str, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        hooks: bool = False, whole: bool = False) -> str:
    """Run ``git args`` in ``cwd``; its stdout, or a GitError with its last stderr line.

    The repository's hooks run only where asked (``push``): a post-checkout or
    post-commit hook has no business in a temporary worktree. ``--no-optional-locks``
    keeps ``git status`` from rewriting the user's index. ``whole``: the error carries all
    of git's output, not its last line (a rejected push explains itself over several lines:
    the ref, the remote's or a hook's reason, git's hints).
    """
    command = ["git", "--no-optional-locks", "-c", "core.quotepath=off"]
    if not hooks:
        command += ["-c", f"core.hooksPath={os.devnull}"]
    try:
        done = subprocess.run([*command, *args], cwd=cwd, input=stdin, capture_output=True,
                              text=True, env=env or _env(), check=False)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    if done.returncode != 0:
        detail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        if whole:
            detail = [line.rstrip() for line in (done.stdout + done.stderr).splitlines()
                      if line.strip() and line.strip() != "Done"]
            detail = ["\n".join(detail)] if detail else []
        message = detail[-1] if detail else f"exit status {done.returncode}"
        raise GitError(f"git {' '.join(args[:2])}: {message}")
    return done.stdout


def succeeds(cwd: str, *args: str) -> bool:
    try:
        git(cwd, *args)
    except GitError:
        return False
    return True


def toplevel(path: str) -> str:
    return git(path, "rev-parse", "--show-toplevel").strip()


def head(repo: str) -> str:
    return git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()


def current_branch(repo: str) -> str | None:
    """The checked-out branch's short name; None on a detached HEAD."""
    try:
        return git(repo, "symbolic-ref", "--quiet", "--short", "HEAD").strip() or None
    except GitError:
        return None


def dirty_files(repo: str) -> list[str]:
    """Modified, staged and untracked (not ignored) paths, as ``git status`` lists them."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    entries = out.split("\0")
    paths = []
    skip = False
    for entry in entries:
        if skip:  # the source path of a rename
            skip = False
            continue
        if not entry:
            continue
        paths.append(entry[3:])
        skip = entry[0] in "RC"
    return paths


def branch_sha(repo: str, branch: str) -> str | None:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip() or None
    except GitError:
        return None


def valid_branch_name(repo: str, branch: str) -> bool:
    return succeeds(repo, "check-ref-format", "--branch", branch)


def is_ancestor(repo: str, ancestor: str, descendant: str) -> bool:
    return succeeds(repo, "merge-base", "--is-ancestor", ancestor, descendant)


def checked_out_at(repo: str, branch: str) -> str | None:
    """The path of a worktree (the main checkout included) that has ``branch`` checked out."""
    path = None
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree "):]
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def add_worktree(repo: str, path: str, start: str) -> None:
    """A detached checkout of ``start`` at ``path``: no branch is touched until the end."""
    git(repo, "worktree", "add", "--quiet", "--detach", path, start)


def remove_worktree(repo: str, path: str) -> None:
    try:
        git(repo, "worktree", "remove", "--force", path)
    except GitError:
        git(repo, "worktree", "prune")


def tracked_files(worktree: str) -> set[str]:
    """Repository-relative paths of every tracked file."""
    return {p for p in git(worktree, "ls-files", "-z").split("\0") if p}


def reset_hard(worktree: str, revision: str) -> None:
    git(worktree, "reset", "--quiet", "--hard", revision)


def identity_env(worktree: str) -> dict[str, str]:
    """The environment for committing: the user's identity, else the tool's own."""
    env = _env()
    for key, variable, fallback in (("user.name", "NAME", BOT_NAME), ("user.email", "EMAIL", BOT_EMAIL)):
        if not succeeds(worktree, "config", key) and f"GIT_AUTHOR_{variable}" not in env:
            env[f"GIT_AUTHOR_{variable}"] = fallback
            env[f"GIT_COMMITTER_{variable}"] = fallback
    return env


def commit(worktree: str, paths: list[str], message: str) -> str:
    """Commit exactly ``paths`` (repository-relative) with ``message``; the new commit's sha.

    ``--no-verify``: the repository's own commit hooks may not be installed where the
    campaign runs, and must not rewrite or refuse a machine-made commit halfway.
    """
    git(worktree, "add", "--", *paths)
    git(worktree, "commit", "--quiet", "--no-verify", "-F", "-", stdin=message,
        env=identity_env(worktree))
    return head(worktree)


def stage_tree(worktree: str, paths: list[str]) -> str:
    """The tree object the worktree would commit with ``paths`` staged (nothing committed)."""
    if paths:
        git(worktree, "add", "--", *paths)
    return git(worktree, "write-tree").strip()


def tree_of(repo: str, revision: str) -> str:
    return git(repo, "rev-parse", f"{revision}^{{tree}}").strip()


def changed_paths(repo: str, first: str, second: str) -> list[str]:
    return [p for p in git(repo, "diff", "--name-only", "-z", first, second).split("\0") if p]


def read_blob(repo: str, treeish: str, path: str) -> bytes | None:
    """A file's bytes in a commit or tree; None when it has no such file."""
    done = subprocess.run(["git", "cat-file", "blob", f"{treeish}:{path}"], cwd=repo,
                          capture_output=True, env=_env(), check=False)
    return done.stdout if done.returncode == 0 else None


def log_messages(repo: str, base: str, tip: str) -> list[tuple[str, str]]:
    """(sha, full message) of the commits in ``base..tip``, oldest first."""
    out = git(repo, "log", "--reverse", "--format=%H%x1f%B%x1e", f"{base}..{tip}")
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if record:
            sha, _, message = record.partition("\x1f")
            commits.append((sha, message))
    return commits


def update_branch(repo: str, branch: str, new: str, old: str | None) -> None:
    """Point ``branch`` at ``new``, only if it still is where it was (``old``, or absent)."""
    git(repo, "update-ref", "-m", "torchfix-codemods migrate", f"refs/heads/{branch}", new,
        old or "0" * 40)


def remote_url(repo: str, remote: str) -> str | None:
    try:
        return git(repo, "remote", "get-url", remote).strip() or None
    except GitError:
        return None


def push(repo: str, remote: str, branch: str, force: bool) -> None:
    refspec = f"refs/heads/{branch}:refs/heads/{branch}"
    args = ["push", "--quiet", "--porcelain"]
    if force:
        args.append("--force")  # the user asked to rebuild the branch (--force)
    git(repo, *args, remote, refspec, hooks=True,  # a pre-push hook is the remote's policy
        whole=True)


def common_dir(repo: str) -> str:
    """The repository's shared .git directory (where the PR body is kept)."""
    path = git(repo, "rev-parse", "--git-common-dir").strip()
    return os.path.normpath(os.path.join(repo, path))
