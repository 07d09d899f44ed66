"""Reduced from pix2pixHD's train.py: the wrap's condition mixes a device part (`len(opt.gpu_ids)`)
with options that are not about devices, and the model is used through `.module` afterwards."""
import os
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

opt = SimpleNamespace(isTrain=True, gpu_ids=[0], fp16=False, niter=2, lr=0.1)


class Pix2PixModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1))

    def forward(self, x, y):
        return nn.functional.mse_loss(self.netG(x), y)

    def update_learning_rate(self, factor):
        self.lr = opt.lr * factor


def create_model(opt):
    model = Pix2PixModel()
    if opt.isTrain and len(opt.gpu_ids) and not opt.fp16:
        model = nn.DataParallel(model, device_ids=opt.gpu_ids)
    return model


torch.manual_seed(0)
x = torch.randn(40, 3)
dataset = TensorDataset(x, x[:, :1] * 2 - x[:, 1:2])
data_loader = DataLoader(dataset, batch_size=10, shuffle=False)
model = create_model(opt)
for epoch in range(opt.niter):
    for inputs, targets in data_loader:
        model.zero_grad()
        model(inputs, targets).mean().backward()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter -= opt.lr * parameter.grad
    model.module.update_learning_rate(0.5)
    print("end of epoch", epoch, "lr", model.module.lr)
torch.save(model.module.netG.state_dict(), os.environ["TFC301_WEIGHTS"])
