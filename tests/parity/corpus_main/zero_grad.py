"""TOR402's shapes (TorchFix main), written for this corpus."""
import torch
from torch import nn

net = nn.Linear(8, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)

for batch in torch.randn(6, 8).split(2):
    opt.zero_grad(set_to_none=False)
    net.zero_grad(set_to_none=False)
    net(batch).sum().backward()
    opt.step()

opt.zero_grad()
net.zero_grad(set_to_none=True)
