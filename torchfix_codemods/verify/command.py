"""``torchfix-codemods verify [FIXTURE...]``: verify every executable case under the paths.

Exit codes follow the rest of the CLI: 0 every case passed, 1 some case
failed, 2 bad usage (a path that does not exist, a file that is not an
executable fixture, or nothing executable to verify).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torchfix_codemods.verify.fixtures import (
    PROJECT_ENTRY,
    collect_projects,
    defines_run,
    is_expected_file,
    is_project_dir,
    iter_case_files,
)
from torchfix_codemods.verify.harness import VerifyOutcome, verify_case
from torchfix_codemods.verify.runner import DEFAULT_TIMEOUT

Echo = Callable[[str], None]


def default_jobs() -> int:
    """Cases at once: each runs two interpreters side by side, so half the CPUs, at most 4."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def find_cases(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    """Executable cases under ``paths`` (in order, without duplicates) and usage errors."""
    cases: list[Path] = []
    errors: list[str] = []
    seen: set[Path] = set()
    for raw in paths or ["."]:
        path = Path(raw)
        if not path.exists():
            errors.append(f"{raw}: no such file or directory")
            continue
        if path.is_file():
            if path.suffix != ".py" or is_expected_file(path) or not _executable(path):
                errors.append(f"{raw}: not an executable fixture (no top-level `def run(device)`)")
                continue
            found = [path]
        elif is_project_dir(path):
            if not _executable(path / PROJECT_ENTRY):
                errors.append(f"{raw}: not an executable project (no `def run(device)` in its "
                              f"{PROJECT_ENTRY})")
                continue
            found = [path]
        else:
            found = [case for case in iter_case_files(path) if _executable(case)]
            found += [project.path for project in collect_projects(path) if project.executable]
            if not found:
                errors.append(f"{raw}: no executable fixtures (a top-level `def run(device)`)")
                continue
        for case in found:
            key = case.resolve()
            if key not in seen:
                seen.add(key)
                cases.append(case)
    return cases, errors


def _executable(path: Path) -> bool:
    try:
        return defines_run(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def run_verify(
    paths: Sequence[str],
    echo: Echo = print,
    *,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> int:
    """Verify every executable case under ``paths``; print one line per case; exit code."""
    cases, errors = find_cases(paths)
    if errors:
        for error in errors:
            echo(f"error: {error}")
        return 2
    if importlib.util.find_spec("torch") is None:
        echo("warning: torch is not installed here; fixtures that import it will fail "
             "(pip install 'torchfix-codemods[verify]')")
    outcomes: list[VerifyOutcome] = []
    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        futures = [pool.submit(verify_case, case, timeout=timeout) for case in cases]
        for future in futures:  # in input order, as each one finishes
            outcome = future.result()
            outcomes.append(outcome)
            echo(outcome.line())
    failed = sum(not outcome.ok for outcome in outcomes)
    echo(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if failed else 0
