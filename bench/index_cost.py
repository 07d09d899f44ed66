"""What the project index costs a run: its first pass over every file, cold and warm.

The index (indexing.build_project) summarises every file with the standard ``ast``
and combines the summaries; summaries are cached by content digest beside the check
cache. This times, in one process and for the same files, the two things a run
pays for it: building the index with an empty summary cache (a cold run) and with
a filled one (a warm run), plus the part of a warm run that keys the result cache
by each file's index fingerprint. Medians of ``--rounds``; nothing is asserted.

Usage::

    python bench/index_cost.py /tmp/tfc-bench/pytorch+examples /tmp/tfc-bench/ultralytics+yolov5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from torchfix_codemods.cache import content_digest
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import discover
from torchfix_codemods.indexing import build_project
from torchfix_codemods.settings import Overrides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    paths = [os.path.abspath(path) for path in args.paths]
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # the summary cache lives beside the run's configuration
        configuration = Configuration(Overrides())
        files = discover(paths, configuration)
        work = [(path, configuration.settings_for(path)) for path in files]
        contents = {}
        for path in files:
            with open(path, "rb") as handle:
                data = handle.read()
            contents[path] = (data, content_digest(data))
        cold, warm, keys = [], [], []
        for _ in range(args.rounds):
            for entry in os.scandir(scratch):
                if entry.is_dir():
                    shutil.rmtree(entry.path)
            started = time.perf_counter()
            build_project(work, configuration.run, 1, contents)
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            project = build_project(work, configuration.run, 1, contents)
            warm.append(time.perf_counter() - started)
            started = time.perf_counter()
            for path in files:
                project.fingerprint(path)
            keys.append(time.perf_counter() - started)
    print(f"{len(files)} files, medians of {args.rounds} rounds, one process")
    print("| what | s | ms/file |")
    print("|---|---|---|")
    for label, times in (("index, empty summary cache (cold run)", cold),
                         ("index, filled summary cache (warm run)", warm),
                         ("index fingerprints for the cache keys (warm run)", keys)):
        median = statistics.median(times)
        print(f"| {label} | {median:.3f} | {1000 * median / len(files):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
