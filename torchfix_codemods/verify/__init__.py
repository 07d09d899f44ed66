"""Verifying rewrites by execution: a fix is proven by running the code before and after it.

An executable fixture defines ``run(device)``; the harness runs the input and
its fixed version in processes of their own with the same seeds and compares their
results by the fixture's contract. Importing this package never imports torch:
torch is an optional extra, needed only by the subprocesses (and, lazily, to
unpickle the tensors they return).
"""

from torchfix_codemods.verify.command import find_cases, run_verify
from torchfix_codemods.verify.compare import compare
from torchfix_codemods.verify.fixtures import (
    Fixture,
    FixtureArgs,
    FixtureError,
    ProjectFixture,
    collect_fixtures,
    collect_projects,
    executable_fixtures,
    fixture_settings,
    load_fixture,
    parse_fixture_args,
)
from torchfix_codemods.verify.harness import VerifyOutcome, fix_project, verify_case
from torchfix_codemods.verify.runner import DEFAULT_TIMEOUT
from torchfix_codemods.verify.spec import ExecSpec, read_spec

__all__ = [
    "DEFAULT_TIMEOUT",
    "ExecSpec",
    "Fixture",
    "FixtureArgs",
    "FixtureError",
    "ProjectFixture",
    "VerifyOutcome",
    "collect_fixtures",
    "collect_projects",
    "compare",
    "executable_fixtures",
    "find_cases",
    "fix_project",
    "fixture_settings",
    "load_fixture",
    "parse_fixture_args",
    "read_spec",
    "run_verify",
    "verify_case",
]
