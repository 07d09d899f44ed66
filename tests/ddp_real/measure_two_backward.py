"""One forward returning two losses, two backward passes (issue 24 item 3), vs one process.

A measurement, not a test (TFC301 refuses this shape). In one folder run
`python measure_two_backward.py`, then for each VARIANT in `whole`, `parts` and `average`
`VARIANT=... torchrun --standalone --nproc_per_node=2 measure_two_backward.py`, then
`python measure_two_backward.py compare`. The variants under torchrun:

- whole: the module holding G and D in one DDP (what a plain migration would write);
- parts: G and D each in a DDP of its own (``model.G = DDP(model.G)``), the module unwrapped;
- average: no DDP; before each optimizer step, every gradient that optimizer steps is
  all-reduced and divided by the world size.

Torch 2.13, gloo, CPU, 5 steps, largest difference from the one-process weights:
whole 0.27 in D.weight (0.03 in G.weight), parts the same 0.27 and 0.03, average 7e-9; no
error in any. Wrapping the parts does not help: the generator's loss runs D on the fake batch,
so the first backward (loss_G's) reaches D's parameters and completes D's all-reduce; the
gradients of loss_D.backward() come after it and are not averaged.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch import nn


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.G = nn.Linear(3, 3)
        self.D = nn.Linear(3, 1)

    def forward(self, z, real):
        fake = self.G(z)
        loss_G = -self.D(fake).mean()
        loss_D = self.D(fake.detach()).mean() - self.D(real).mean()
        return loss_G, loss_D


def average(parameters):
    """The gradients of ``parameters`` averaged over the processes (no-op in one process)."""
    if dist.is_initialized():
        for p in parameters:
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= dist.get_world_size()


def train() -> None:
    torch.manual_seed(0)
    z_all, real_all = torch.randn(8, 3), torch.randn(8, 3)
    model = GAN()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    variant = os.environ.get("VARIANT", "whole") if world > 1 else "one"
    net = model
    if world > 1:
        dist.init_process_group("gloo")
        if variant == "whole":
            net = nn.parallel.DistributedDataParallel(model)
        elif variant == "parts":
            model.G = nn.parallel.DistributedDataParallel(model.G)
            model.D = nn.parallel.DistributedDataParallel(model.D)
    opt_G = torch.optim.SGD(model.G.parameters(), lr=0.1)
    opt_D = torch.optim.SGD(model.D.parameters(), lr=0.1)
    for _step in range(5):
        z, real = z_all[rank::world], real_all[rank::world]
        loss_G, loss_D = net(z, real)
        opt_G.zero_grad()
        loss_G.backward(retain_graph=True)
        if variant == "average":
            average(model.G.parameters())
        opt_G.step()
        opt_D.zero_grad()
        loss_D.backward()
        if variant == "average":
            average(model.D.parameters())
        opt_D.step()
    if rank == 0:
        state = {k.replace(".module", ""): v for k, v in model.state_dict().items()}
        torch.save(state, f"two_backward.{variant}.pt")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def compare() -> None:
    one = torch.load("two_backward.one.pt")
    for variant in ("whole", "parts", "average"):
        other = torch.load(f"two_backward.{variant}.pt")
        print(variant, {k: float((one[k] - other[k]).abs().max()) for k in one})


if __name__ == "__main__":
    compare() if sys.argv[1:] == ["compare"] else train()
