"""Cost per byte of one file, from 1 KB to 20 MB: is a run linear in file size?

Real repositories carry large generated Python files (vendored protobufs,
weights exported as literals, long configuration tables). A linter whose cost
grows faster than the file turns them into hangs. This script generates one
file per size from a block of ordinary training-script code (a model, a loop
with findings, a table of numbers), repeated until the size is reached, and
times a fresh process on it alone:

* ``check --no-cache`` (cold);
* ``fix --unsafe-fixes --diff`` (every fix round and its validation, writing nothing).

Reported: wall and CPU seconds (the process and the workers it waited for),
microseconds of CPU per KB, the same past the smallest size's run (start-up taken
off: the cost of the bytes themselves), what the run did with the file (analysed,
or skipped by which budget: ``max-file-size``, ``max-nesting-depth``,
``file-timeout``) and the exit status (a run past ``--timeout`` is killed and shown
as such). Timings are printed, never asserted.

Usage::

    python bench/size_scaling.py --sizes 1K 10K 100K 1M 5M 20M --rounds 1
    # the cost where every size is analysed: the budgets lifted
    python bench/size_scaling.py --sizes 1K 10K 100K 300K 1M --commands check \\
        --config 'max-file-size = 100000000' --config 'file-timeout = 1200'
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BLOCK = '''

class Net{n}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train{n}(loader, device):
    model = Net{n}().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0
    for x, y in loader:
        out = model(x.to(device))
        loss = F.cross_entropy(out, y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss
    state = torch.load("ckpt{n}.pt")
    model.load_state_dict(state)
    return out.numpy(), total


TABLE{n} = [{numbers}]
'''
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
UNITS = {"K": 1024, "M": 1024 * 1024}


def parse_size(text: str) -> int:
    unit = UNITS.get(text[-1].upper())
    return int(float(text[:-1]) * unit) if unit else int(text)


def generate(size: int) -> str:
    """Python source of about ``size`` bytes, made of whole blocks."""
    numbers = ", ".join(f"{i * 0.37:.4f}" for i in range(40))
    parts = [HEADER]
    length = len(HEADER)
    n = 0
    while length < size:
        block = BLOCK.format(n=n, numbers=numbers)
        parts.append(block)
        length += len(block)
        n += 1
    return "".join(parts)


LIMITS = ("max-file-size", "max-nesting-depth", "file-timeout")


def outcome(output: str) -> str:
    """What the run did with the file: analysed, or skipped by which budget."""
    for line in output.splitlines():
        if "TFC000" in line and ": skipped (" in line:
            named = [limit for limit in LIMITS if limit in line]
            return "skipped: " + (named[0] if named else line.split(": skipped (")[1][:40])
    return "analysed"


def run_once(command: list[str], timeout: float) -> tuple[float, float, str, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ, NO_COLOR="1"))
        status = str(done.returncode)
        did = outcome(done.stdout + done.stderr)
    except subprocess.TimeoutExpired:
        status = f"killed after {timeout:.0f} s"
        did = "unfinished"
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, status, did


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1K", "10K", "100K", "1M", "5M", "20M"])
    parser.add_argument("--ours", default=f"{shlex.quote(sys.executable)} -m torchfix_codemods")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run (killed after)")
    parser.add_argument("--commands", nargs="+", choices=("check", "fix"),
                        default=["check", "fix"])
    parser.add_argument("--config", action="append", default=[],
                        help="a 'KEY = VALUE' setting for every run (lift a budget)")
    args = parser.parse_args(argv)
    ours = shlex.split(args.ours)
    settings = [item for setting in args.config for item in ("--config", setting)]
    scratch = Path(tempfile.mkdtemp(prefix="tfc-size-"))
    one, five, _ = os.getloadavg()
    print(f"{os.cpu_count()} CPUs; load average {one:.2f} (5 min {five:.2f}) at start; "
          f"medians of {args.rounds} round(s)\n")
    if args.config:
        print("settings: " + "; ".join(args.config) + "\n")
    print("| size | what | wall s | CPU s | CPU µs/KB | µs/KB past the smallest | file | exit |")
    print("|---|---|---|---|---|---|---|---|")
    first: dict[str, tuple[float, float]] = {}
    try:
        for size_text in args.sizes:
            size = parse_size(size_text)
            path = scratch / f"generated_{size_text}.py"
            path.write_text(generate(size))
            kib = path.stat().st_size / 1024
            commands = {"check": ("check cold", [*ours, "check", *settings, "--no-cache",
                                               str(path)]),
                        "fix": ("fix --diff", [*ours, "fix", *settings, "--unsafe-fixes",
                                             "--diff", str(path)])}
            for label, command in (commands[name] for name in args.commands):
                runs = [run_once(command, args.timeout) for _ in range(args.rounds)]
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                base = first.setdefault(label, (kib, cpu))
                marginal = (f"{1e6 * (cpu - base[1]) / (kib - base[0]):.0f}"
                            if kib > base[0] and runs[-1][3] == "analysed" else "")
                print(f"| {size_text} ({kib:.0f} KiB) | {label} | {wall:.2f} | {cpu:.2f} "
                      f"| {1e6 * cpu / kib:.0f} | {marginal} | {runs[-1][3]} "
                      f"| {runs[-1][2]} |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
