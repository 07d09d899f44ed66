"""Where a cold ``check`` spends its CPU time, by stage, without a profiler (issue 23).

``cold_profile.py`` gives the order of the costs, but cProfile inflates the stages that
make many small Python calls (the walks) against LibCST's native parser. This runs
``check --no-cache --jobs 1 --format json`` in this process (no fork, no deep-stack
thread, the workers' garbage-collector settings) and times each stage with
``time.process_time`` around the stage's function, so the seconds are CPU seconds
(beside the ``ast.parse`` floor that ``fix_cost.py`` prints for the same files).
Nested stages are indented; their time is part of the stage above.

Usage::

    python bench/cold_stages.py DIRS
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import time
from collections.abc import Callable
from typing import Any

STAGES: list[tuple[str, str, str]] = [
    ("the project index, in all", "torchfix_codemods.indexing", "build_project"),
    ("  the ast summaries (ast.parse not included)",
     "torchfix_codemods.analysis.project.summary", "summarize"),
    ("  the prefilter's words, from the summaries' trees", "torchfix_codemods.prefilter",
     "tree_facts"),
    ("the analysis of every file (engine.process)", "torchfix_codemods.engine", "process"),
    ("  the prefilter", "torchfix_codemods.engine", "_prefilter"),
    ("  LibCST parsing", "torchfix_codemods.engine", "parse_unchecked"),
    ("  the name index", "torchfix_codemods.engine", "NameIndex.build"),
    ("  the rules' shared walk, with the analyses they call", "torchfix_codemods.engine",
     "_BatchedVisitor.run"),
    ("  positions of the nodes with findings", "torchfix_codemods.engine", "positions_of"),
]


def _timed(function: Callable[..., Any], label: str, seconds: dict[str, float],
           calls: dict[str, int]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[label] = seconds.get(label, 0.0) + time.process_time() - started
            calls[label] = calls.get(label, 0) + 1
    return timed


def _instrument(seconds: dict[str, float], calls: dict[str, int]) -> None:
    for label, module_name, attribute in STAGES:
        module = importlib.import_module(module_name)
        owner_name, _, name = attribute.rpartition(".")
        if owner_name:  # a method, or a classmethod (NameIndex.build), of a class there
            owner = getattr(module, owner_name)
            raw = owner.__dict__[name]
            if isinstance(raw, classmethod):
                inner = _timed(raw.__func__, label, seconds, calls)
                setattr(owner, name, classmethod(inner))
            else:
                setattr(owner, name, _timed(raw, label, seconds, calls))
        else:
            setattr(module, name, _timed(getattr(module, name), label, seconds, calls))
    # Functions imported by name elsewhere: the importer's binding is the one called.
    from torchfix_codemods import indexing
    from torchfix_codemods.analysis.project import summary

    indexing.summarize = summary.summarize  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__)
        return 2
    from torchfix_codemods import isolation, workers
    from torchfix_codemods.entry import main as run

    workers.can_fork = lambda: False  # type: ignore[assignment]
    workers._collect_less()
    isolation._DEEP.active = True
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    seconds: dict[str, float] = {}
    calls: dict[str, int] = {}
    _instrument(seconds, calls)
    started = time.process_time()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        run(["check", "--no-cache", "--jobs", "1", "--format", "json", *paths])
    total = time.process_time() - started
    print(f"total {total:.2f} CPU s in this process (imports before the run not counted)\n")
    print("| stage | CPU s | share | calls |")
    print("|---|---|---|---|")
    accounted = 0.0
    for label, _, _ in STAGES:
        spent = seconds.get(label, 0.0)
        if not label.startswith(" "):
            accounted += spent
        print(f"| {label} | {spent:.2f} | {100 * spent / total:.0f}% | {calls.get(label, 0)} |")
    rest = total - accounted
    print(f"| everything else (discovery, reading, hashing, warm-up, output) | {rest:.2f} | "
          f"{100 * rest / total:.0f}% | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
