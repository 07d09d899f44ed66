"""Where a cold ``check`` spends its time: cProfile of one process, grouped by stage (from speed).

Runs ``check --no-cache --jobs 1`` in this process under cProfile and prints
each stage's share of the total. The run's forked workers and its deep-stack
thread (``isolation.call_deep``) are switched off for the profile, and the
workers' garbage-collector settings switched on, so that every file's summary
and analysis run in the profiled thread as in a worker (a profile of the CLI as
it is saw the parent process alone: start-up, discovery and output).
Profiling inflates the parts that make many small Python calls (the walks)
against LibCST's native parser, so read the shares as an order, not as exact
figures. ``--stats FILE`` keeps the raw profile for ``python -m pstats``.

Usage::

    python bench/cold_profile.py /tmp/tfc-bench/pytorch+examples /tmp/tfc-bench/ultralytics+yolov5
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys
from pathlib import Path

from torchfix_codemods import isolation, workers
from torchfix_codemods.entry import main as run

STAGES = [
    ("LibCST parsing", "libcst/_parser/entrypoints.py", "parse_module"),
    ("the ast prefilter (its ast.parse included)", "torchfix_codemods/prefilter.py",
     "could_match"),
    ("the name index", "torchfix_codemods/analysis/core/names.py", "build"),
    ("the rules' shared walk, with the analyses they call", "torchfix_codemods/engine.py",
     "run"),
    ("  of which the inference analysis (TFC201-TFC203)",
     "torchfix_codemods/analysis/facts/inference.py", "_collect"),
    ("positions of the nodes with findings", "torchfix_codemods/analysis/core/positions.py",
     "positions_of"),
    ("importing the rules", "torchfix_codemods/rules/registry.py", "all_rules"),
    ("the project index (ast summaries of every file, combined)",
     "torchfix_codemods/indexing.py", "build_project"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--stats", type=Path, help="write the raw profile here")
    args = parser.parse_args(argv)
    # Every file in this thread: no fork (the workers' time would be lost to the profile)
    # and no deep-stack thread (cProfile follows one thread).
    workers.can_fork = lambda: False  # type: ignore[assignment]
    workers._collect_less()
    isolation._DEEP.active = True
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    profile = cProfile.Profile()
    profile.enable()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        run(["check", "--no-cache", "--jobs", "1", "--format", "json", *args.paths])
    profile.disable()
    if args.stats:
        profile.dump_stats(str(args.stats))
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]

    def cumulative(path: str, function: str) -> tuple[float, int]:
        for (filename, _, name), (_, calls, _, total, _) in stats.items():
            if filename.replace("\\", "/").endswith(path) and name == function:
                return total, calls
        return 0.0, 0

    total, _ = cumulative("torchfix_codemods/entry.py", "main")
    print(f"total {total:.1f} s (profiled, one process)\n")
    print("| stage | seconds | share | calls |")
    print("|---|---|---|---|")
    accounted = 0.0
    for label, path, function in STAGES:
        seconds, calls = cumulative(path, function)
        if not label.startswith(" "):
            accounted += seconds
        print(f"| {label} | {seconds:.1f} | {100 * seconds / total:.0f}% | {calls} |")
    rest = total - accounted
    print(f"| everything else (start-up, discovery, reading, hashing, TFC000 checks, output) "
          f"| {rest:.1f} | {100 * rest / total:.0f}% | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
