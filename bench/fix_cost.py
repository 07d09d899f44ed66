"""What ``fix --unsafe-fixes --diff`` costs beside a cold ``check``, and the check beside the
``ast.parse`` floor, in CPU seconds.

Each measurement runs the CLI (``python -m torchfix_codemods``, ``--jobs 1``: one forked
worker) as a child process and reads the user+system CPU time of it and of its workers
from ``getrusage(RUSAGE_CHILDREN)``: the CPU the work took, whatever the machine's load
does to wall time. It runs in an empty temporary directory, so neither command finds a
result or summary cache: both are cold.

``--tree NAME=PATH`` (repeatable) measures several checkouts of the code, alternating
them, and the two commands, in every round (interleaved rounds); medians are printed, with
``fix / check`` (issue 23's target: 1.5x at most) and ``check / floor``, the floor being a
fresh Python that reads and ``ast.parse``-s the same ``.py`` files (``bench.py``'s, measured
once a round; the target: 10x at most).

Usage::

    python bench/fix_cost.py DIRS --tree before=/tmp/old-checkout --tree after=. --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import FLOOR

COMMANDS = {
    "check": ["check", "--no-cache", "--format", "json"],
    "fix": ["fix", "--unsafe-fixes", "--diff"],
}


def _measure(tree: str, command: str, paths: list[str]) -> float:
    """CPU seconds (user + system) of one CLI run and its workers."""
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as empty:
        subprocess.run([sys.executable, "-m", "torchfix_codemods", *COMMANDS[command],
                        "--jobs", "1", *paths], env=env, cwd=empty, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _floor(paths: list[str]) -> float:
    """CPU seconds of a fresh Python reading and ``ast.parse``-ing the ``.py`` files."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", FLOOR, *paths], stdout=subprocess.DEVNULL,
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a checkout to measure (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    paths = [str(Path(path).resolve()) for path in args.paths]
    trees = [tuple(spec.split("=", 1)) for spec in args.tree] or [
        ("this", str(Path(__file__).resolve().parent.parent))]
    cpu: dict[tuple[str, str], list[float]] = {}
    load = [os.getloadavg()[0]]
    floors = []
    for index in range(args.rounds):
        floors.append(_floor(paths))
        order = trees if index % 2 == 0 else trees[::-1]
        for command in COMMANDS:
            for name, tree in order:
                seconds = _measure(tree, command, paths)
                cpu.setdefault((name, command), []).append(seconds)
                print(f"round {index + 1} {name} {command}: {seconds:.2f} CPU s", file=sys.stderr)
    load.append(os.getloadavg()[0])
    print(f"load average {load[0]:.2f} at the start, {load[1]:.2f} at the end; "
          f"medians of {args.rounds} interleaved rounds, CPU seconds of the CLI and its workers\n")
    floor = statistics.median(floors)
    print(f"the ast.parse floor: {floor:.2f} CPU s\n")
    print("| code | check --no-cache | fix --unsafe-fixes --diff | fix / check | check / floor |")
    print("|---|---|---|---|---|")
    for name, _ in trees:
        check = statistics.median(cpu[(name, "check")])
        fix = statistics.median(cpu[(name, "fix")])
        print(f"| {name} | {check:.2f} | {fix:.2f} | {fix / check:.2f}x | {check / floor:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
