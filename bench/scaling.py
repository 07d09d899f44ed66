"""Files per second and peak memory at growing sizes, for ``check`` and ``fix --unsafe-fixes``.

Samples of 100, 300, 1,000 and 3,000 files are drawn from the repositories of
bench/repos.toml (a fixed, path-hashed order, so each sample contains the
smaller ones) and each is run as a fresh process:

* ``check --no-cache`` (cold);
* ``check`` with its cache filled (warm);
* ``fix --unsafe-fixes`` on a fresh copy of the sample (the copy is not timed).

Peak memory is the largest total resident size of the process and its
workers, and of the largest single process, sampled every 0.2 s from /proc
(a short peak between samples can be missed). Timings are medians of
``--rounds`` runs; nothing is asserted.

Usage::

    python bench/materialise.py --out /tmp/tfc-bench
    python bench/scaling.py --repos /tmp/tfc-bench --sizes 100 300 1000 3000
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from materialise import load_repos, sample  # noqa: E402  (sibling script, not a package)

PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc/<pid>/task/*/children."""
    found = [pid]
    for current in found:
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    found.extend(int(child) for child in handle.read().split())
            except (OSError, ValueError):
                continue
    return found


def measure(command: list[str], cwd: Path) -> tuple[float, int, int, int]:
    """(wall seconds, peak total RSS of the tree, largest single process RSS, exit status)."""
    peak = largest = 0
    done = threading.Event()
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def poll() -> None:
        nonlocal peak, largest
        while not done.is_set():
            sizes = [_rss(pid) for pid in _tree(process.pid)]
            peak = max(peak, sum(sizes))
            largest = max(largest, *sizes, 0)
            done.wait(0.2)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    status = process.wait()
    wall = time.perf_counter() - started
    done.set()
    poller.join()
    return wall, peak, largest, status


def _mib(pair: tuple[int, int]) -> str:
    return f"{pair[0] / 2**20:.0f} MiB ({pair[1] / 2**20:.0f} MiB)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, required=True,
                        help="the directory bench/materialise.py extracted into")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ours", default=f"{sys.executable} -m torchfix_codemods")
    args = parser.parse_args(argv)
    directories = [args.repos / repo.directory for repo in load_repos()]
    missing = [str(d) for d in directories if not d.is_dir()]
    if missing:
        parser.error(f"not extracted (run bench/materialise.py): {', '.join(missing)}")
    ours = args.ours.split()
    scratch = Path(tempfile.mkdtemp(prefix="tfc-scaling-"))
    one, five, _ = os.getloadavg()
    print(f"{os.cpu_count()} CPUs; load average {one:.2f} (5 min {five:.2f}) at start; "
          f"medians of {args.rounds} run(s)\n")
    print("| files | check cold files/s | check warm files/s | fix --unsafe-fixes files/s "
          "| peak memory check (largest process) | peak memory fix (largest process) |")
    print("|---|---|---|---|---|---|")
    try:
        for size in args.sizes:
            corpus = scratch / f"sample-{size}"
            count = sample(directories, size, corpus)
            walls: dict[str, list[float]] = {"cold": [], "warm": [], "fix": []}
            memory: dict[str, tuple[int, int]] = {}
            work = scratch / "work"
            work.mkdir(exist_ok=True)
            measure([*ours, "check", "--format", "json", str(corpus)], work)  # fill the cache
            for _ in range(args.rounds):
                wall, peak, largest, _ = measure(
                    [*ours, "check", "--no-cache", "--format", "json", str(corpus)], work)
                walls["cold"].append(wall)
                memory["check"] = max(memory.get("check", (0, 0)), (peak, largest))
                wall, _, _, _ = measure([*ours, "check", "--format", "json", str(corpus)], work)
                walls["warm"].append(wall)
                copy = scratch / "fix-copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(corpus, copy)
                wall, peak, largest, _ = measure(
                    [*ours, "fix", "--unsafe-fixes", "--format", "json", str(copy)], work)
                walls["fix"].append(wall)
                memory["fix"] = max(memory.get("fix", (0, 0)), (peak, largest))

            rates = {key: f"{count / statistics.median(runs):.0f}" for key, runs in walls.items()}
            print(f"| {count} | {rates['cold']} | {rates['warm']} | {rates['fix']} "
                  f"| {_mib(memory['check'])} | {_mib(memory['fix'])} |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    one, five, _ = os.getloadavg()
    print(f"\nload average {one:.2f} (5 min {five:.2f}) at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
