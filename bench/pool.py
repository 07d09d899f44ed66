"""Pool or inline: a cold ``check`` of N real files in one process against N files in a pool.

The runner analyses a batch in its own process below ``POOL_MIN_FILES`` files
or ``POOL_MIN_BYTES`` bytes, and in a process pool above; this measures where
the pool starts to pay on this machine. Each run is a fresh process (start-up,
imports and forking included), inline and pooled runs alternate, and the
thresholds are lifted for the pooled runs so the pool is used at every size.

Usage::

    python bench/materialise.py --out /tmp/tfc-bench
    python bench/pool.py --repos /tmp/tfc-bench --sizes 2 4 8 16 32 64 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from materialise import load_repos, sample  # noqa: E402  (sibling script, not a package)

RUN = """
import sys
from torchfix_codemods import runner
from torchfix_codemods.commands import check_command
jobs = int(sys.argv[1])
if jobs > 1:
    runner.POOL_MIN_FILES, runner.POOL_MIN_BYTES = 1, 0
sys.exit(check_command([sys.argv[2]], output_format="json", jobs=jobs, no_cache=True))
"""


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    directories = [args.repos / repo.directory for repo in load_repos()]
    scratch = Path(tempfile.mkdtemp(prefix="tfc-pool-"))
    one, five, _ = os.getloadavg()
    print(f"load average {one:.2f} (5 min {five:.2f}); medians of {args.rounds} alternated "
          f"rounds; pool of {args.jobs}\n")
    print("| files | KiB | inline s | pool s | pool / inline |")
    print("|---|---|---|---|---|")
    try:
        for size in args.sizes:
            corpus = scratch / f"sample-{size}"
            count = sample(directories, size, corpus)
            kib = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file()) / 1024
            inline: list[float] = []
            pooled: list[float] = []
            for _ in range(args.rounds):
                inline.append(timed([sys.executable, "-c", RUN, "1", str(corpus)]))
                pooled.append(timed([sys.executable, "-c", RUN, str(args.jobs), str(corpus)]))
            a, b = statistics.median(inline), statistics.median(pooled)
            print(f"| {count} | {kib:.0f} | {a:.2f} | {b:.2f} | {b / a:.2f} |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
