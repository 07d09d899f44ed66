"""Time torchfix-codemods against TorchFix 0.7.0 on real repositories, in one run.

Every configuration runs as a fresh process over the same directories, once
per round, and the rounds are interleaved (the order rotates each round) so
that a burst of load on the machine hits every configuration alike. Reported:
the median and the best wall time of the rounds, CPU time (the process and
every worker it waited for), files per second, and ratios. Timings are
printed, never asserted.

Configurations:

* ``torchfix``: ``torchfix --select ALL DIRS`` (every TorchFix rule);
* ``ours cold``: ``check --no-cache --format json DIRS``;
* ``ours warm``: ``check --format json DIRS`` with its cache filled by an
  untimed run first (the cache lives in a scratch working directory);
* ``ours fix --diff``: ``fix --unsafe-fixes --diff DIRS``, what a
  migration campaign runs (every fix round and its validation, writing nothing);
* ``ast.parse floor``: a fresh Python that reads and ``ast.parse``-s the same
  ``.py`` files, one process: what any Python linter pays at least;
* ``python -c pass`` and ``ours, empty folder``: start-up alone.

Usage (the repositories come from bench/materialise.py)::

    python bench/materialise.py --out /tmp/tfc-bench
    python bench/bench.py /tmp/tfc-bench/* --torchfix /path/to/tfvenv/bin/torchfix --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

OK_EXIT_CODES = (0, 1)
FLOOR = """
import ast, os, sys
count = 0
for top in sys.argv[1:]:
    for directory, _, names in os.walk(top):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), "rb") as handle:
                    source = handle.read()
                try:
                    ast.parse(source)
                except (SyntaxError, ValueError):
                    pass
                count += 1
print(count)
"""


@dataclass
class Config:
    label: str
    command: list[str]
    runs: list[tuple[float, float]] = field(default_factory=list)
    """(wall seconds, CPU seconds) per round."""
    failures: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(wall for wall, _ in self.runs)

    @property
    def best(self) -> float:
        return min(wall for wall, _ in self.runs)

    @property
    def cpu(self) -> float:
        return statistics.median(cpu for _, cpu in self.runs)


def run_once(command: list[str], cwd: Path, timeout: float) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of one run, its exit status and the tail of its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=timeout, env=dict(os.environ, NO_COLOR="1"))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stderr.decode(errors="replace")[-400:]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min: {five:.2f})"


def count_files(directories: list[Path]) -> tuple[int, int]:
    """(.py files, .ipynb files) under the directories."""
    py = notebooks = 0
    for directory in directories:
        for _, _, names in os.walk(directory):
            py += sum(name.endswith(".py") for name in names)
            notebooks += sum(name.endswith(".ipynb") for name in names)
    return py, notebooks


def find_torchfix(explicit: str | None) -> list[str] | None:
    candidate = explicit or os.environ.get("TORCHFIX") or shutil.which("torchfix")
    if not candidate:
        return None
    command = shlex.split(candidate)
    if not (shutil.which(command[0]) or Path(command[0]).is_file()):
        raise SystemExit(f"bench: TorchFix command not found: {command[0]}")
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", type=Path, help="directories of real code")
    parser.add_argument("--torchfix", help="TorchFix 0.7.0 command (default: $TORCHFIX, or "
                        "torchfix on PATH); without one, ours only")
    parser.add_argument("--ours", default=f"{shlex.quote(sys.executable)} -m torchfix_codemods",
                        help="our command (default: this Python -m torchfix_codemods)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, help="also write the raw runs here")
    args = parser.parse_args(argv)
    directories = [d.resolve() for d in args.directories]
    for directory in directories:
        if not directory.is_dir():
            parser.error(f"{directory} is not a directory")
    py_files, notebooks = count_files(directories)
    ours = shlex.split(args.ours)
    torchfix = find_torchfix(args.torchfix)
    paths = [str(d) for d in directories]
    scratch = Path(tempfile.mkdtemp(prefix="tfc-bench-"))
    empty = scratch / "empty"
    empty.mkdir()
    configs = []
    if torchfix:
        configs.append(Config("torchfix", [*torchfix, "--select", "ALL", *paths]))
    configs += [
        Config("ours cold", [*ours, "check", "--no-cache", "--format", "json", *paths]),
        Config("ours warm", [*ours, "check", "--format", "json", *paths]),
        Config("ours fix --diff", [*ours, "fix", "--unsafe-fixes", "--diff", *paths]),
        Config("ast.parse floor", [sys.executable, "-c", FLOOR, *paths]),
        Config("python -c pass", [sys.executable, "-c", "pass"]),
        Config("ours, empty folder", [*ours, "check", "--format", "json", str(empty)]),
    ]
    print(f"files:    {py_files} .py and {notebooks} .ipynb in {len(directories)} directories "
          "(TorchFix and the floor read the .py files; ours reads both)")
    print(f"machine:  {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average {load()} at start")
    try:
        for config in configs:  # untimed: fill our cache, warm the disk cache and .pyc files
            run_once(config.command, scratch, args.timeout)
        for round_number in range(args.rounds):
            shift = round_number % len(configs)
            for config in configs[shift:] + configs[:shift]:
                print(f"  round {round_number + 1}/{args.rounds}: {config.label} ...",
                      file=sys.stderr, flush=True)
                wall, cpu, status, tail = run_once(config.command, scratch, args.timeout)
                if status not in OK_EXIT_CODES:
                    config.failures.append(f"exit {status}: {tail}")
                config.runs.append((wall, cpu))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(configs, py_files, args.rounds)
    if args.json:
        args.json.write_text(json.dumps({
            "files": py_files, "notebooks": notebooks, "directories": paths,
            "runs": {c.label: c.runs for c in configs},
        }, indent=2))
    failed = [c for c in configs if c.failures]
    for config in failed:
        print(f"{config.label} failed: {config.failures[0]}", file=sys.stderr)
    return 2 if failed else 0


def report(configs: list[Config], files: int, rounds: int) -> None:
    print(f"load average {load()} at end; medians of {rounds} interleaved rounds\n")
    print("| what | median s | best s | CPU s | .py files/s |")
    print("|---|---|---|---|---|")
    for config in configs:
        rate = f"{files / config.median:.0f}" if "pass" not in config.label and \
            "empty" not in config.label else "-"
        print(f"| {config.label} | {config.median:.2f} | {config.best:.2f} | {config.cpu:.2f} "
              f"| {rate} |")
    by = {config.label: config.median for config in configs}
    cpu = {config.label: config.cpu for config in configs}
    print()
    if "torchfix" in by:
        print(f"ours cold is {by['torchfix'] / by['ours cold']:.1f}x faster than TorchFix "
              f"(CPU: {cpu['torchfix'] / cpu['ours cold']:.1f}x); "
              f"ours warm {by['torchfix'] / by['ours warm']:.1f}x")
    floor = by["ast.parse floor"]
    print(f"ours cold takes {by['ours cold'] / floor:.1f}x the ast.parse floor "
          f"(CPU: {cpu['ours cold'] / cpu['ast.parse floor']:.1f}x); "
          f"ours warm {by['ours warm'] / floor:.1f}x")
    print(f"fix --unsafe-fixes --diff takes {by['ours fix --diff'] / by['ours cold']:.1f}x a cold "
          f"check (CPU: {cpu['ours fix --diff'] / cpu['ours cold']:.1f}x)")
    print(f"start-up: python -c pass {1000 * by['python -c pass']:.0f} ms, ours on an empty "
          f"folder {1000 * by['ours, empty folder']:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
