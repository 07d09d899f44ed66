"""Reduced from a training script that stops from inside its epoch loop: once the target
epoch is reached it saves and calls `sys.exit()`, so the end of the script never runs."""
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

stop_epoch = 2


def train():
    torch.manual_seed(1)
    x = torch.randn(24, 4)
    loader = DataLoader(TensorDataset(x, x @ torch.ones(4, 1)), batch_size=6, shuffle=False)
    model = nn.DataParallel(nn.Linear(4, 1))
    for epoch in range(10):
        for xb, yb in loader:
            model.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.05 * p.grad
        if epoch == stop_epoch:
            print("reached epoch", epoch, "- stopping")
            torch.save(model.module.state_dict(), os.environ["TFC301_WEIGHTS"])
            sys.exit(0)
    print("never reached")


if __name__ == "__main__":
    train()
