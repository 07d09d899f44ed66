"""Several models wrapped in loops: an ensemble built as a list, wrapped by a comprehension,
and two heads wrapped by a `for` loop over their indices; the epochs run in `main()`."""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    inputs = torch.randn(24, 4)
    targets = inputs.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=6, shuffle=False)
    members = [nn.Linear(4, 3), nn.Linear(4, 3)]
    members = [nn.DataParallel(member) for member in members]
    heads = [nn.Linear(3, 1), nn.Linear(3, 1)]
    for i, head in enumerate(heads):
        heads[i] = nn.DataParallel(head)
    models = members + heads
    for epoch in range(2):
        for x, y in loader:
            for model in models:
                model.zero_grad()
            prediction = sum(head(torch.tanh(member(x))) for member, head in zip(members, heads))
            nn.functional.mse_loss(prediction, y).backward()
            with torch.no_grad():
                for model in models:
                    for parameter in model.parameters():
                        parameter -= 0.02 * parameter.grad
    weights = {}
    for index, model in enumerate(models):
        weights.update({f"{index}.{k}": v for k, v in model.module.state_dict().items()})
    torch.save(weights, os.environ["TFC301_WEIGHTS"])


if __name__ == "__main__":
    main()
