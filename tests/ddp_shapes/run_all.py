"""Runs several scripts in one process, one after another, so torch starts once per mode.

Usage: run_all.py OUT_DIR LABEL SCRIPT... Each script runs as `__main__` from its own folder,
with $TFC301_WEIGHTS set to OUT_DIR/<script stem>.<LABEL>[.rank<N>].pt; a process group a
script leaves behind is destroyed before the next one starts. Under torchrun the scripts
share one process group: a group destroyed and made again in the same processes waits
forever on the launcher's store, so `destroy_process_group` is deferred to the end.
"""
import gc
import os
import runpy
import sys
from pathlib import Path

import torch.distributed as dist


def main() -> None:
    out, label, scripts = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    rank = os.environ.get("RANK")
    suffix = f".rank{rank}" if rank is not None else ""
    destroy = dist.destroy_process_group
    if rank is not None:
        dist.destroy_process_group = lambda group=None: None
    for script in map(Path, scripts):
        os.environ["TFC301_WEIGHTS"] = str(out / f"{script.parent.name}.{script.stem}.{label}{suffix}.pt")
        before = set(sys.modules)
        sys.path.insert(0, str(script.parent))
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.path.remove(str(script.parent))
            for name in set(sys.modules) - before:
                if name.startswith("ddp_shape_"):
                    del sys.modules[name]
            if rank is None and dist.is_initialized():
                destroy()
            # The script's DDP models (their reducers hold gloo work) go now, while the
            # process group they talk to is alive, not at interpreter exit.
            gc.collect()
    if dist.is_initialized():
        dist.barrier()
        destroy()


if __name__ == "__main__":
    main()
