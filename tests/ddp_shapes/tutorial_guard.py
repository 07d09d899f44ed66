"""The PyTorch tutorial's shape: a module-level script, `if torch.cuda.device_count() > 1:`
with a print beside the wrap, the model moved after the wrap."""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
inputs = torch.randn(32, 4)
dataset = TensorDataset(inputs, inputs.sum(dim=1, keepdim=True))
loader = DataLoader(dataset, batch_size=8, shuffle=False)

model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
if torch.cuda.device_count() > 1:
    print("Let's use", torch.cuda.device_count(), "GPUs!")
    model = nn.DataParallel(model)
model.to(device)

for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        model.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter -= 0.05 * parameter.grad
torch.save(model.state_dict(), os.environ["TFC301_WEIGHTS"])
