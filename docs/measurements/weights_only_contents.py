"""What `torch.load(f, weights_only=True)` loads, measured (run: python this_file.py).

Backs TFC001's allow-list and its `weights_only=False` fix for files the same project
writes. Each line prints the content saved and whether the weights-only load succeeds,
then the first words of torch's error (which proposes `weights_only=False`).
"""

import argparse
import io
import sys

import numpy as np
import torch
from torch import nn


class RunningStats:
    """A plain object of the project's own class (ikostrikov's RunningMeanStd)."""

    def __init__(self) -> None:
        self.mean = np.zeros(2)


class Voc:
    """pytorch-chatbot's vocabulary (load.py:12), saved bare as voc.tar (load.py:86)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.word2index: dict[str, int] = {}
        self.index2word = {0: "SOS", 1: "EOS", 2: "PAD"}
        self.n_words = 3


def _fsdp_optim_state_dict() -> dict:
    """What a torch `*state_dict` builder returns: FSDP's full optimizer state dict (one
    process, gloo, on the CPU)."""
    import os

    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29513")
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        wrapped = FSDP(nn.Linear(2, 2), device_id=torch.device("cpu"))
        optimizer = torch.optim.SGD(wrapped.parameters(), lr=0.1)
        wrapped(torch.ones(1, 2)).sum().backward()
        optimizer.step()
        return FSDP.full_optim_state_dict(wrapped, optimizer)
    finally:
        dist.destroy_process_group()


def main() -> None:
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    cases = {
        "state_dict": model.state_dict(),
        "optimizer.state_dict()": optimizer.state_dict(),
        "dict of tensors, ints, floats, str, None": {"w": torch.ones(2), "epoch": 3,
                                                       "loss": 0.5, "name": "x", "n": None},
        "float(np.float64)": {"best": float(np.float64(0.5))},
        "np.float64 scalar": {"best": np.float64(0.5)},
        "np.nanmean(...) result": {"map": np.nanmean(np.array([0.1, np.nan, 0.3]))},
        "np.int64 scalar": {"step": np.int64(3)},
        "numpy array": {"a": np.ones(3)},
        "argparse.Namespace": {"args": argparse.Namespace(lr=0.1)},
        "vars(argparse.Namespace)": {"args": vars(argparse.Namespace(lr=0.1))},
        "whole nn.Module": {"net": model},
        "optimizer object": {"optimizer": optimizer},
        "lr_scheduler object": {"scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1)},
        "scheduler.state_dict()": {"scheduler":
                                   torch.optim.lr_scheduler.StepLR(optimizer, 1).state_dict()},
        "torch.Size": {"shape": torch.Size([2, 3])},
        "tuple/list nesting": {"pairs": [(torch.ones(1), 2)]},
        "[module, object] list (a policy with its stats)": [model, RunningStats()],
        "int from range() (a loop's epoch)": {"epoch": next(iter(range(3, 5)))},
        "FSDP.full_optim_state_dict(...)": _fsdp_optim_state_dict(),
        "a bare object of the project's class (chatbot's Voc)": Voc("corpus"),
        "a list of [str, str] lists (chatbot's pairs.tar)": [["hi .", "hello ."]] * 2,
        "a bare whole nn.Module (NER's torch.save(model, path))": model,
    }
    print(f"torch {torch.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    for label, content in cases.items():
        buffer = io.BytesIO()
        torch.save(content, buffer)
        buffer.seek(0)
        try:
            torch.load(buffer, weights_only=True)
            outcome = "loads"
        except Exception as error:  # noqa: BLE001 - the failure is the measurement
            first = str(error).strip().splitlines()[0][:90]
            outcome = f"FAILS ({type(error).__name__}: {first})"
        print(f"{label:45s} {outcome}")
    buffer = io.BytesIO()
    torch.save({"args": argparse.Namespace(lr=0.1)}, buffer)
    buffer.seek(0)
    try:
        torch.load(buffer, weights_only=True)
    except Exception as error:  # noqa: BLE001
        proposes = "`weights_only` set to `False`" in str(error)
        print(f"the error proposes weights_only=False: {proposes}")
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    print(f"weights_only=False loads it: {loaded['args'].lr == 0.1}")
    # NER-pytorch train.py:247 reads a file it saves with torch.save(model, path) (line 414)
    # into load_state_dict: with weights_only=False it loads, and load_state_dict refuses it.
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    try:
        nn.Linear(2, 2).load_state_dict(torch.load(buffer, weights_only=False))
        outcome = "loads"
    except Exception as error:  # noqa: BLE001
        outcome = f"FAILS ({type(error).__name__}: {str(error).splitlines()[0][:70]})"
    print(f"whole module, weights_only=False, into load_state_dict: {outcome}")


if __name__ == "__main__":
    main()
