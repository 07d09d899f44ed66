"""Measurements behind the mixed-precision, accumulation and distributed-training rules.

Run: ``python docs/measurements/amp_and_distributed.py`` (CPU is enough). The output of the
run on torch 2.13.0 (CPU) is kept in ``amp_and_distributed.txt`` beside this file.
"""

from __future__ import annotations

import os
import random
import tempfile

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def grad_scaler_on_cpu() -> None:
    print("== GradScaler('cpu') ==")
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    print("enabled:", scaler.is_enabled(), "initial scale:", scaler.get_scale())
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    with torch.amp.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaled = model.weight.grad.norm().item()
    model.zero_grad()
    loss2 = nn.functional.mse_loss(model(x), y)
    loss2.backward()
    print("grad norm with scaler.scale(loss):", scaled, "without:", model.weight.grad.norm().item(),
          "ratio:", scaled / model.weight.grad.norm().item())
    # clip the scaled gradients (the mistake) vs after unscale_
    for unscale in (False, True):
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        opt.zero_grad()
        scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
        if unscale:
            scaler.unscale_(opt)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        before = model.weight.detach().clone()
        scaler.step(opt)
        scaler.update()
        print(f"unscale_ before clip={unscale}: clip saw norm {norm:.4g}, step moved weight by",
              f"{(model.weight.detach() - before).norm().item():.4g}")
    # optimizer.step() around the scaler: the step uses scaled gradients
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    before = model.weight.detach().clone()
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    opt.step()
    print("optimizer.step() after scaler.scale(loss).backward(): weight moved by",
          (model.weight.detach() - before).norm().item())
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    scaler.step(opt)
    print("scaler.step(opt) instead: weight moved by", (model.weight.detach() - before).norm().item())
    # inf gradient: scaler.step skips, optimizer.step applies
    for use_scaler_step in (False, True):
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        scaler.scale((model(x) * float("inf")).sum()).backward()
        if use_scaler_step:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        print(f"inf gradient, {'scaler.step' if use_scaler_step else 'optimizer.step'}: "
              f"weight finite={torch.isfinite(model.weight).all().item()}, "
              f"scale after={scaler.get_scale()}")
    # scaler.update() missing: the scale never adapts
    for update in (False, True):
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", growth_interval=2)
        skipped = 0
        for i in range(6):
            opt.zero_grad()
            bad = i % 3 == 0
            loss = (model(x) * (float("inf") if bad else 1.0)).sum()
            scaler.scale(loss).backward()
            before = model.weight.detach().clone()
            try:
                scaler.step(opt)
            except RuntimeError as error:
                print(f"  update={update} iteration {i}: RuntimeError: {error}")
                break
            skipped += int(torch.equal(before, model.weight.detach()))
            if update:
                scaler.update()
        print(f"scaler.update() called={update}: scale at the end {scaler.get_scale()}, "
              f"steps skipped {skipped}")
    # a second update with no step in between (an update added where the caller has one)
    try:
        scaler.update()
    except AssertionError as error:
        print("scaler.update() twice after one step: AssertionError:", error)
    # a disabled scaler: no crash without update
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    for _ in range(3):
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
    print("disabled scaler, three steps without update: no error")
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    grad = model.weight.grad.clone()
    scaler.unscale_(opt)
    print("disabled scaler: unscale_ leaves the gradients as they are:",
          torch.equal(grad, model.weight.grad))


def bf16_needs_no_scaler() -> None:
    print("== bfloat16 range ==")
    print("autocast('cpu') default dtype:", torch.get_autocast_dtype("cpu"),
          "autocast('cuda') default dtype:", torch.get_autocast_dtype("cuda"))
    print("finfo(bfloat16).max:", torch.finfo(torch.bfloat16).max, "float32:",
          torch.finfo(torch.float32).max, "float16:", torch.finfo(torch.float16).max)
    print("smallest normal bf16:", torch.finfo(torch.bfloat16).tiny, "fp16:",
          torch.finfo(torch.float16).tiny)
    g = torch.tensor(1e-8)
    print("1e-8 in fp16:", g.half().item(), "in bf16:", g.bfloat16().item())


def accumulation_without_division() -> None:
    print("== gradient accumulation ==")
    g = torch.Generator().manual_seed(2)
    batches = [(torch.randn(4, 3, generator=g), torch.randn(4, 1, generator=g)) for _ in range(4)]
    results = {}
    for divide in (False, True):
        torch.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(model(x), y)
            if divide:
                loss = loss / 2
            loss.backward()
            if (i + 1) % 2 == 0:
                if i == 1:
                    results[divide] = model.weight.grad.clone()
                opt.step()
                opt.zero_grad()
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x = torch.cat([b[0] for b in batches[:2]])
    y = torch.cat([b[1] for b in batches[:2]])
    nn.functional.mse_loss(model(x), y).backward()
    print("accumulated grad / grad of the 8-sample batch, undivided:",
          (results[False] / model.weight.grad).flatten().tolist())
    print("divided by k:", (results[True] / model.weight.grad).flatten().tolist())


class _Numbers(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int):
        return np.random.rand(), random.random(), torch.rand(()).item()


class _OwnGenerator(Dataset):
    """A numpy Generator made once in __init__: each worker gets a copy of the same state."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int):
        return self.rng.random()


def dataloader_worker_seeds() -> None:
    print("== DataLoader workers and numpy/random ==")
    np.random.seed(0)
    random.seed(0)
    torch.manual_seed(0)
    loader = DataLoader(_Numbers(), batch_size=1, num_workers=2)
    for epoch in range(2):
        rows = [(round(float(a), 6), round(float(b), 6), round(float(c), 6)) for a, b, c in loader]
        print(f"epoch {epoch}: (numpy, random, torch) per item, items 0 and 2 from worker 0, "
              f"1 and 3 from worker 1:", rows)
    loader = DataLoader(_OwnGenerator(), batch_size=1, num_workers=2)
    rows = [round(float(v), 6) for v in loader]
    print("np.random.default_rng(0) made in __init__, items 0..3 (workers alternate):", rows)


def distributed_sampler_set_epoch() -> None:
    print("== DistributedSampler.set_epoch ==")
    data = list(range(8))
    for rank in (0, 1):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=0)
        orders = [list(sampler)]
        orders.append(list(sampler))
        sampler.set_epoch(1)
        orders.append(list(sampler))
        print(f"rank {rank}: epoch 0 {orders[0]}, again without set_epoch {orders[1]}, "
              f"after set_epoch(1) {orders[2]}")
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=False)
    before = list(sampler)
    sampler.set_epoch(5)
    print("shuffle=False: order unchanged by set_epoch:", before == list(sampler))
    # what set_epoch changes on the sampler: only .epoch
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True)
    state = dict(vars(sampler))
    sampler.set_epoch(3)
    print("attributes set_epoch changed:",
          sorted(k for k in vars(sampler) if vars(sampler)[k] != state.get(k)))


def ddp_state_dict_keys() -> None:
    print("== DDP state_dict keys ==")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    model = nn.Linear(2, 1)
    ddp = nn.parallel.DistributedDataParallel(model)
    print("ddp.state_dict() keys:", list(ddp.state_dict()))
    print("ddp.module.state_dict() keys:", list(ddp.module.state_dict()))
    try:
        nn.Linear(2, 1).load_state_dict(ddp.state_dict())
    except RuntimeError as error:
        print("load into an unwrapped model:", str(error).splitlines()[0])
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(ddp.module.state_dict(), os.path.join(tmp, "m.pt"))
        fresh = nn.Linear(2, 1)
        fresh.load_state_dict(torch.load(os.path.join(tmp, "m.pt")))
        print("module.state_dict() loads into an unwrapped model:",
              torch.equal(fresh.weight, model.weight))
    dist.destroy_process_group()


if __name__ == "__main__":
    print("torch", torch.__version__)
    grad_scaler_on_cpu()
    bf16_needs_no_scaler()
    accumulation_without_division()
    dataloader_worker_seeds()
    distributed_sampler_set_epoch()
    ddp_state_dict_keys()
