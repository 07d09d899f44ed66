"""Reduced from a classification script that pickles the wrapper in its checkpoint
(`torch.save({"net": net, ...})`) and scales the batch by the GPU count
(`if n_gpu > 1: batch_size *= n_gpu`, the global batch DataParallel splits across GPUs)."""
import os
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

n_gpu = torch.cuda.device_count()
batch_size = 8
if n_gpu > 1:
    batch_size *= n_gpu


def main():
    torch.manual_seed(0)
    x = torch.randn(32, 3)
    data = TensorDataset(x, x.sum(1, keepdim=True))
    loader = DataLoader(data, batch_size=batch_size, shuffle=False)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    net = nn.DataParallel(net)
    for epoch in range(3):
        for xb, yb in loader:
            net.zero_grad()
            nn.functional.mse_loss(net(xb), yb).backward()
            with torch.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
        print("epoch", epoch, "steps", len(loader))
    torch.save({"net": net, "epoch": epoch}, os.environ["TFC301_WEIGHTS"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
