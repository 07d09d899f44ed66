"""Reduced from an ImageNet-style script: a `save_checkpoint` helper that saves and then copies
the best checkpoint (`shutil.copyfile`), a CSV log appended every epoch with
`with open(..., "a")` and `csv.writer`, and a JSON summary at the end."""
import csv
import json
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


def main():
    torch.manual_seed(2)
    x = torch.randn(40, 5)
    loader = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=10, shuffle=False)
    model = nn.DataParallel(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2)))
    best = 0.0
    for epoch in range(3):
        for inputs, target in loader:
            model.zero_grad()
            nn.functional.cross_entropy(model(inputs), target).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.2 * p.grad
        with open("log.csv", "a") as f:
            writer = csv.writer(f)
            writer.writerow([epoch, "done"])
        acc = float(epoch)
        is_best = acc > best
        best = max(acc, best)
        save_checkpoint({"epoch": epoch + 1, "state_dict": model.state_dict()}, is_best)
    with open("summary.json", "w") as f:
        json.dump({"epochs": 3}, f)
    torch.save(model.module.state_dict(), os.environ["TFC301_WEIGHTS"])


if __name__ == "__main__":
    main()
