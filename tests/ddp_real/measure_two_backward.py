"""One DDP forward returning two losses, two backward passes (issue 24 item 3), vs one process.

A measurement, not a test (TFC301 refuses this shape): run `python measure_two_backward.py` and
`torchrun --standalone --nproc_per_node=2 measure_two_backward.py` in one folder, then compare
two_backward.1.pt with two_backward.2.pt. Torch 2.13, gloo, CPU: the largest difference is
0.27 in D.weight and 0.03 in G.weight, no error: the second backward trains each process apart.
"""
import os

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


torch.manual_seed(0)
z_all, real_all = torch.randn(8, 3), torch.randn(8, 3)
model = GAN()
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
if world > 1:
    dist.init_process_group("gloo")
    net = nn.parallel.DistributedDataParallel(model)
else:
    net = model
opt_G = torch.optim.SGD(model.G.parameters(), lr=0.1)
opt_D = torch.optim.SGD(model.D.parameters(), lr=0.1)
for _step in range(5):
    z, real = z_all[rank::world], real_all[rank::world]
    loss_G, loss_D = net(z, real)
    opt_G.zero_grad()
    loss_G.backward(retain_graph=True)
    opt_G.step()
    opt_D.zero_grad()
    loss_D.backward()
    opt_D.step()
if rank == 0:
    torch.save(model.state_dict(), f"two_backward.{world}.pt")
if world > 1:
    dist.destroy_process_group()
