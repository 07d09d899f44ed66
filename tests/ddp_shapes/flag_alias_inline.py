"""A flag guard (`len(gpu_ids) > 1`), an aliased import with device_ids and `.cuda()` on the
wrapper, and a DataLoader whose dataset is built inline."""
import os

import torch
from torch import nn
from torch.nn import DataParallel as DP
from torch.utils.data import DataLoader, TensorDataset


def main(gpu_ids):
    torch.manual_seed(0)
    x = torch.randn(40, 5)
    y = x @ torch.arange(5.0).unsqueeze(1)
    loader = DataLoader(TensorDataset(x, y), batch_size=10)
    net = nn.Linear(5, 1)
    if len(gpu_ids) > 1:
        net = DP(net, device_ids=gpu_ids).cuda()
    for epoch in range(3):
        for inputs, targets in loader:
            net.zero_grad()
            nn.functional.mse_loss(net(inputs), targets).backward()
            with torch.no_grad():
                for parameter in net.parameters():
                    parameter -= 0.01 * parameter.grad
        print(f"epoch {epoch} done")
    state = net.module.state_dict() if isinstance(net, DP) else net.state_dict()
    torch.save(state, os.environ["TFC301_WEIGHTS"])


if __name__ == "__main__":
    main([])
