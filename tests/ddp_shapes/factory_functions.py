"""The model from `build_model()`, wrapped in `build(model)` that returns it moved, and the
DataLoader returned by `make_loader()`; the epochs run in `fit()`."""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_model():
    return nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 1))


def build(model):
    model = nn.DataParallel(model)
    return model.to("cpu")


def make_loader(inputs, targets, batch_size):
    dataset = TensorDataset(inputs, targets)
    return DataLoader(dataset, batch_size=batch_size, shuffle=False)


def fit():
    torch.manual_seed(0)
    inputs = torch.randn(24, 6)
    loader = make_loader(inputs, inputs.mean(dim=1, keepdim=True), 6)
    model = build(build_model())
    for epoch in range(2):
        for x, y in loader:
            model.zero_grad()
            nn.functional.l1_loss(model(x), y).backward()
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter -= 0.05 * parameter.grad
    torch.save(model.module.state_dict(), os.environ["TFC301_WEIGHTS"])


if __name__ == "__main__":
    fit()
