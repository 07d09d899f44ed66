"""A GAN's shape: a generator and a discriminator, both wrapped under one GPU-count guard
(with a print and `cudnn.benchmark` in the same branch), trained in one loop: a
discriminator step on real and detached fake samples, then a generator step that
backpropagates through the discriminator. The noise comes with the data, so every run
draws the same noise for the same samples."""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
real_data = torch.randn(32, 2) * 0.5 + 1.0
noise_data = torch.randn(32, 3)
loader = DataLoader(TensorDataset(real_data, noise_data), batch_size=8, shuffle=False)

ngpu = torch.cuda.device_count()
netG = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
netD = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
if ngpu > 1:
    print("Let's use", ngpu, "GPUs!")
    netG = nn.DataParallel(netG)
    netD = nn.DataParallel(netD)
    torch.backends.cudnn.benchmark = True


def step(model, lr):
    with torch.no_grad():
        for parameter in model.parameters():
            parameter -= lr * parameter.grad


for epoch in range(2):
    for real, noise in loader:
        netD.zero_grad()
        fake = netG(noise)
        loss_d = netD(fake.detach()).mean() - netD(real).mean()
        loss_d.backward()
        step(netD, 0.05)
        netG.zero_grad()
        loss_g = -netD(fake).mean()
        loss_g.backward()
        step(netG, 0.05)


def plain(model):
    return getattr(model, "module", model)


weights = {f"G.{k}": v for k, v in plain(netG).state_dict().items()}
weights.update({f"D.{k}": v for k, v in plain(netD).state_dict().items()})
torch.save(weights, os.environ["TFC301_WEIGHTS"])
