"""When does a gloo process group really end? (TFC301's exit teardown relies on this.)

Run: ``python docs/measurements/ddp_group_teardown.py`` (Linux: reads thread names from /proc).
Each case runs in a fresh interpreter and prints how many of gloo's threads still run after
``destroy_process_group()``. Measured on torch 2.13.0 (CPU), 2026-11-25:

    no DDP                                   0
    DDP wrapper alive                        3
    DDP wrapper deleted                      3   (torch._dynamo imported by DDP after the group)
    dynamo first, DDP deleted                0
    dynamo first, wrapper alive, released    0   (reducer/logger/process_group dropped first)
    wrapper alive, released, dynamo after    3

A group whose threads outlive the exit hooks runs into interpreter shutdown; the migrated
scripts of tests/ddp_real/ aborted there in 3 of 165 torchrun launches ("terminate called
without an active exception", SIGABRT) before the teardown released the group.
"""
import subprocess
import sys

CASE = r'''
import gc, os, sys
import torch, torch.distributed as dist
from torch import nn
case = sys.argv[1]
if case.startswith("dynamo first"):
    import torch._dynamo
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
if case != "no DDP":
    m = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    m(torch.randn(2, 4)).sum().backward()
    if "released" in case:
        for name in ("reducer", "logger", "process_group"):
            m.__dict__.pop(name, None)
    if "deleted" in case:
        del m
gc.collect()
dist.destroy_process_group()
gc.collect()
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
print(sum(n.startswith(("gloo", "pt_gloo")) for n in names))
'''

CASES = ("no DDP", "DDP wrapper alive", "DDP wrapper deleted", "dynamo first, DDP deleted",
         "dynamo first, wrapper alive, released", "wrapper alive, released, dynamo after")

for case in CASES:
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", CASE, case],
                         capture_output=True, text=True, check=True).stdout.split()[-1]
    print(f"{case:40s} {out}")
