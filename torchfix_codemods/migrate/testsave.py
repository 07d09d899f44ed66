"""Test runs kept between ``migrate`` runs, by the tree they ran on and the command.

A re-run that finds the branch as it left it would otherwise run the whole suite
again on the base and on the branch, to learn what it already knows: a tree id
is the whole content of the checkout, so the same command on the same tree is
the same run (up to the environment, whose Python and torch versions are kept
beside the results and shown in the PR body). The file lives beside the PR body
under the repository's ``.git`` directory, never in the checkout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

from torchfix_codemods.migrate import git
from torchfix_codemods.migrate.model import SuiteOutcome
from torchfix_codemods.writing import replace_file

MAX_RUNS = 200


@dataclasses.dataclass
class Kept:
    """What an earlier run learnt for one command: outcomes by tree, and the versions."""

    command: str
    runs: dict[str, SuiteOutcome] = dataclasses.field(default_factory=dict)
    versions: str | None = None


def _path(root: str, branch: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", branch)
    return os.path.join(git.common_dir(root), "torchfix-codemods", f"{name}.tests.json")


def load(root: str, branch: str, command: str) -> Kept:
    """The runs kept for ``command`` on this branch's repository; none when there are none,
    the file is damaged, or they were made with another command."""
    try:
        with open(_path(root, branch), encoding="utf-8") as handle:
            raw = json.load(handle)
        if raw.get("command") != command:
            return Kept(command)
        runs = {tree: SuiteOutcome(**{**value, "failed": tuple(value["failed"]),
                                      "passing": tuple(value.get("passing", ()))})
                for tree, value in raw["runs"].items()}
        return Kept(command, runs, raw.get("versions"))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return Kept(command)


def save(root: str, branch: str, kept: Kept) -> None:
    """Best effort: a repository whose ``.git`` cannot be written to only loses the reuse."""
    runs = dict(list(kept.runs.items())[-MAX_RUNS:])
    data = {"command": kept.command, "versions": kept.versions,
            "runs": {tree: dataclasses.asdict(outcome) for tree, outcome in runs.items()}}
    path = _path(root, branch)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # The one atomic writer: its temporary file never outlives a failure.
        replace_file(path, json.dumps(data).encode("utf-8"), durable=False)
    except OSError:
        return
