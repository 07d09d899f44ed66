"""Checkpoint helpers shared by train.py, evaluate.py and predict.py.

A run directory holds `last.pt` (everything needed to resume), `weights.pt`
(state_dict only), `model_best.pt` and `history.pkl` (the metrics curves).
"""

import os
import pickle
import shutil

import torch
import torch.nn as nn


def unwrap(model):
    """The bare module, whether or not it is wrapped for multi-GPU."""
    return model.module if isinstance(model, nn.DataParallel) else model


def save_checkpoint(state, path, is_best=False):
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)  # never leave a half-written checkpoint behind
    if is_best:
        shutil.copyfile(path, os.path.join(os.path.dirname(path), "best.pt"))


def export_model(model, path):
    """Whole model, so the demo notebook does not need our code on its path."""
    torch.save(unwrap(model), path)


def resume(path, model, optimizer, scheduler, ema=None):
    """Restore a run from last.pt; returns (start_epoch, best_acc)."""
    ckpt = torch.load(path)
    unwrap(model).load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    if ema is not None and "ema" in ckpt:
        for name, buf in ema.ema.state_dict().items():
            buf.copy_(ckpt["ema"][name])
    torch.set_rng_state(ckpt["rng_state"])
    return ckpt["epoch"] + 1, ckpt.get("best_acc", 0.0)


def load_weights(model, optimizer, run_dir):
    """Warm-start from a run that saved model and optimizer separately."""
    model.load_state_dict(torch.load(os.path.join(run_dir, "model.pth")))
    optimizer.load_state_dict(torch.load(os.path.join(run_dir, "optim.pth")))


def load_for_inference(path):
    state = torch.load(path, weights_only=True, map_location="cpu")
    return state.get("model", state)


def average_checkpoints(paths):
    """Uniform weight averaging of the last k checkpoints (a cheap SWA)."""
    avg = None
    for p in paths:
        state = torch.load(p, map_location="cpu")["model"]
        if avg is None:
            avg = {k: v.clone().float() for k, v in state.items()}
        else:
            for k, v in state.items():
                avg[k] += v.float()
    return {k: v / len(paths) for k, v in avg.items()}


def load_legacy(path):
    # checkpoints from the 2019 codebase were written with pickle protocol 2
    with open(path, "rb") as f:
        return torch.load(f, pickle_module=pickle)


def load_any(path, **kwargs):
    return torch.load(path, **kwargs)


def save(history, path):
    """Metrics history (lists of floats) next to the checkpoints."""
    with open(path, "wb") as f:
        pickle.dump(history, f)


def load(path):
    """Counterpart of save(): our own pickle of plain floats, not a torch checkpoint."""
    with open(path, "rb") as f:
        return pickle.load(f)
