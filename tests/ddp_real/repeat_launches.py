"""Launches migrated scripts of this folder again and again under torchrun, to show there is no
race (issue 24: "across 20 repeated torchrun launches of each"). Not a test: run by hand.

Usage: python tests/ddp_real/repeat_launches.py N SCRIPT... (from the repository root). For each
script: the original runs once as plain python, the script is migrated by TFC301 into a
temporary folder (with the modules of this folder it imports), the migrated script runs once as
plain python, then N launches of ``torchrun --standalone --nproc_per_node=2`` (gloo, CPU), one
at a time. The plain run passes when it exits 0 with the original's weights (rtol 1e-5) and
no process group left at exit; a launch passes when it exits 0, rank 0's weights match the
original's, rank 1 wrote no file and printed nothing, and neither rank left a process group
or a running gloo thread at exit. Prints one line per script: whether the plain run passed,
the launches that passed out of N, and the first failure's reason. A script that scales its
batch by the GPU count runs with ``torch.cuda.device_count()`` reporting 2, as in
tests/test_ddp_real_scripts.py.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ENV = {k: v for k, v in os.environ.items()
       if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
ENV.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")


MODULES = {"mixup_progress_bar.py": ("mixup_utils.py",),
           "soft_filter_pruning.py": ("pruning_utils.py",),
           "classification_logger.py": ("classification_utils.py",)}
"""The modules of this folder a script imports, migrated in the same run (the project index
reads them: a helper there that only prints or writes files runs on rank 0, an object of a
class there that only writes files is a no-op object on the other ranks)."""
FAKE_GPUS = {"pickled_checkpoint.py": "2"}
"""What ``torch.cuda.device_count()`` reports to a script (its batch scales with it)."""


def _run(args: list[str], cwd: Path, fake: str | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = dict(ENV, **({"TFC301_FAKE_GPUS": fake} if fake else {}))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300, check=False)


def _check_plain(out: Path, stem: str, reference: dict[str, torch.Tensor]) -> str | None:
    weights = out / f"{stem}.plain.pt"
    if not weights.exists():
        return "wrote no weights"
    got = _weights(weights)
    for key, value in reference.items():
        if key not in got or not torch.allclose(got[key], value, rtol=1e-5, atol=1e-6):
            return f"{key} differs"
    record = json.loads((out / f"{stem}.plain.exit").read_text())
    return "left a process group" if record["initialized"] is not False else None


def _weights(path: Path) -> dict[str, torch.Tensor]:
    """The state dict a run saved; a script that pickles the whole model (our own file, so
    trusted) gives the model's, unwrapped where the original saved the DataParallel."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        net = torch.load(path, map_location="cpu", weights_only=False)["net"]
        return getattr(net, "module", net).state_dict()


def _check(out: Path, stem: str, label: str, reference: dict[str, torch.Tensor]) -> str | None:
    weights = out / f"{stem}.{label}.rank0.pt"
    if not weights.exists():
        return "rank 0 wrote no weights"
    got = _weights(weights)
    if set(got) != set(reference):
        return f"keys differ: {sorted(got)}"
    for key, value in reference.items():
        if not torch.allclose(got[key], value, rtol=1e-5, atol=1e-6):
            return f"{key} differs by {(got[key] - value).abs().max().item():.3g}"
    if (out / f"{stem}.{label}.rank1.pt").exists() or \
            any((out / f"{stem}.{label}.rank1.files").iterdir()):
        return "rank 1 wrote a file"
    if (out / f"{stem}.{label}.rank1.stdout").read_text():
        return "rank 1 printed"
    for rank in (0, 1):
        record = json.loads((out / f"{stem}.{label}.rank{rank}.exit").read_text())
        if record["initialized"] is not False:
            return f"rank {rank} left a process group"
        if record.get("gloo_threads") not in (0, None):
            return f"rank {rank} left {record['gloo_threads']} gloo threads running at exit"
    return None


def main() -> None:
    count, scripts = int(sys.argv[1]), sys.argv[2:]
    for name in scripts:
        stem = Path(name).stem
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            migrated, out = root / "migrated", root / "out"
            shutil.copytree(HERE, migrated)
            out.mkdir()
            fixed = _run(["-m", "torchfix_codemods", "fix", "--select", "TFC301",
                          "--unsafe-fixes", str(migrated / name),
                          *(str(migrated / m) for m in MODULES.get(name, ()))], Path.cwd())
            fake = FAKE_GPUS.get(name)
            original = _run([str(HERE / "run_one.py"), str(HERE / name), str(out), "original"],
                            root, fake)
            if original.returncode != 0 or "_ddp_wrap(" not in (migrated / name).read_text():
                print(f"{name}: not run ({fixed.stdout}{original.stdout}{original.stderr})")
                continue
            reference = _weights(out / f"{stem}.original.pt")
            plain = _run([str(migrated / "run_one.py"), str(migrated / name), str(out), "plain"],
                         root, fake)
            plain_why = (f"exit {plain.returncode}: {plain.stderr[-300:]}"
                         if plain.returncode != 0 else _check_plain(out, stem, reference))
            passes, first = 0, None
            for index in range(count):
                label = f"launch{index}"
                launch = _run(["-m", "torch.distributed.run", "--standalone",
                               "--nproc_per_node=2", str(migrated / "run_one.py"),
                               str(migrated / name), str(out), label], root, fake)
                why = (f"exit {launch.returncode}: {launch.stdout[-300:]}{launch.stderr[-300:]}"
                       if launch.returncode != 0 else _check(out, stem, label, reference))
                passes += why is None
                first = first or why
            print(f"{name}: plain python " + ("passed" if plain_why is None else
                                                f"FAILED ({plain_why})")
                  + f"; {passes}/{count} torchrun launches passed"
                  + (f"; first failure: {first}" if first else ""), flush=True)


if __name__ == "__main__":
    main()
