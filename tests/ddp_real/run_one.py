"""Runs one script of this folder as `__main__` and records how it ended.

Usage: run_one.py SCRIPT OUT_DIR LABEL. The script writes its weights to $TFC301_WEIGHTS,
OUT_DIR/<stem>.<LABEL>[.rank<N>].pt. At exit (after the script's own exit hooks, which run
first) OUT_DIR/<stem>.<LABEL>[.rank<N>].exit records whether a process group is still
initialised and how many of gloo's threads still run. A rank other than 0 has its prints
captured in OUT_DIR/<...>.stdout, which must stay empty. Each process runs in
OUT_DIR/<...>.files/, where the files it writes by a relative path land (rank 1's must stay
empty). $TFC301_FAKE_GPUS makes `torch.cuda.device_count()`
report that many GPUs (a script that scales its batch by the GPU count, run on CPU).
"""
import atexit
import json
import os
import runpy
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def _gloo_threads() -> int | None:
    """How many of gloo's threads still run (Linux names them); None where threads have no
    names to read. A group that outlives the exit hooks keeps them running into interpreter
    shutdown, where they can abort the process ("terminate called without an active
    exception", SIGABRT)."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return None
    names = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
    return sum(name.startswith(("gloo", "pt_gloo")) for name in names)


def main() -> None:
    script, out, label = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    rank = os.environ.get("RANK")
    stem = f"{script.stem}.{label}" + (f".rank{rank}" if rank is not None else "")
    fake = os.environ.get("TFC301_FAKE_GPUS")
    if fake:
        torch.cuda.device_count = lambda: int(fake)
    os.environ["TFC301_WEIGHTS"] = str(out / f"{stem}.pt")
    # Each process works in a folder of its own, so the files rank 1 writes are seen.
    files = out / f"{stem}.files"
    files.mkdir()
    os.chdir(files)
    if rank not in (None, "0"):
        sys.stdout = open(out / f"{stem}.stdout", "w")  # noqa: SIM115 (open until exit)
    exit_record = out / f"{stem}.exit"
    atexit.register(lambda: exit_record.write_text(json.dumps(
        {"initialized": dist.is_initialized(), "gloo_threads": _gloo_threads()})))
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
