"""The inputs that hung or crashed a run (issue 23), each beside an ordinary file, timed.

Each case is a directory of two files: ``bad.py`` (the pathological input) and
``good.py`` (one ``torch.load`` to fix). For each, a fresh process runs ``check
--no-cache`` and ``fix --unsafe-fixes`` on the directory (a copy of it), and the
table says: wall and CPU seconds (the process and the workers it waited for), the
exit status, what the run said of ``bad.py`` (its TFC000 line), whether ``fix``
left ``bad.py`` as it was and fixed ``good.py``. Timings are printed, never
asserted (tests/test_budget.py and tests/test_isolation.py assert the behaviour).

Cases: weights exported as a 5 MB dict literal; 5 MB and 20 MB of generated
training code (``size_scaling.generate``); a 750 KB one-line expression with a
``torch.load``; ``1 + 1 + ...`` chains of 10,000 and 50,000 terms; 2,000 nested
lists (a segmentation fault in LibCST's native parser before issue 27).

Usage::

    python bench/pathological.py [--cases chain10k nested2000 ...] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from size_scaling import generate  # noqa: E402

GOOD = "import torch\nstate = torch.load('ckpt.pt')\nprint(state)\n"


def weights(size: int) -> str:
    rows, length, number = ["import torch\n", "WEIGHTS = {\n"], 0, 0
    while length < size:
        values = ", ".join(f"{(number * 31 + i) % 997 * 0.001:.6f}" for i in range(64))
        row = f"    'layer{number}.weight': [{values}],\n"
        rows.append(row)
        length += len(row)
        number += 1
    return "".join(rows) + "}\n\nstate = torch.load('x.pt')\n"


def one_line(terms: int) -> str:
    values = ", ".join(f"{i % 1000}.{i % 7}" for i in range(terms))
    return f"import torch\nstate = torch.load('w.pt'); x = [{values}]\n"


def chain(terms: int) -> str:
    return "import torch\nx = " + " + ".join(["1"] * terms) + "\ny = torch.load('a.pt')\n"


def nested(levels: int) -> str:
    return "import torch\nx = " + "[" * levels + "]" * levels + "\ny = torch.load('a.pt')\n"


CASES: dict[str, Callable[[], str]] = {
    "weights5m": lambda: weights(5 << 20),
    "gen5m": lambda: generate(5 << 20),
    "gen20m": lambda: generate(20 << 20),
    "oneline750k": lambda: one_line(112_000),
    "chain10k": lambda: chain(10_000),
    "chain50k": lambda: chain(50_000),
    "nested2000": lambda: nested(2000),
}


def run(command: list[str], cwd: Path, timeout: float) -> tuple[float, float, str, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, NO_COLOR="1"))
        status, output = str(done.returncode), done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        status, output = f"killed after {timeout:.0f} s", ""
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    said = next((line.split(" TFC000 ", 1)[1] for line in output.splitlines()
                 if line.startswith("bad.py") and " TFC000 " in line), "(no TFC000)")
    return wall, cpu, status, said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--ours", default=f"{shlex.quote(sys.executable)} -m torchfix_codemods")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    args = parser.parse_args(argv)
    ours = shlex.split(args.ours)
    scratch = Path(tempfile.mkdtemp(prefix="tfc-patho-"))
    one, five, _ = os.getloadavg()
    print(f"{os.cpu_count()} CPUs; load average {one:.2f} (5 min {five:.2f}) at start\n")
    print("| input | bytes | command | wall s | CPU s | exit | bad.py | fix kept bad.py, "
          "fixed good.py |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for name in args.cases:
            source = scratch / name
            source.mkdir()
            (source / "bad.py").write_text(CASES[name]())
            (source / "good.py").write_text(GOOD)
            size = (source / "bad.py").stat().st_size
            for label, command in (("check", [*ours, "check", "--no-cache", "."]),
                                   ("fix", [*ours, "fix", "--unsafe-fixes", "."])):
                work = scratch / f"{name}-{label}"
                shutil.copytree(source, work)
                wall, cpu, status, said = run(command, work, args.timeout)
                kept = ""
                if label == "fix":
                    same = (work / "bad.py").read_bytes() == (source / "bad.py").read_bytes()
                    fixed = (work / "good.py").read_text() != GOOD
                    kept = f"{'yes' if same else 'NO'}, {'yes' if fixed else 'NO'}"
                print(f"| {name} | {size:,} | {label} | {wall:.1f} | {cpu:.1f} | {status} "
                      f"| {said[:110]} | {kept} |", flush=True)
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
