"""pytorch-cifar's shape: `if device == 'cuda':` around the DataParallel wrap and `cudnn.benchmark = True`,
a `train(epoch)` function reading the module-level loader, the epoch loop calling it."""
import os

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
inputs = torch.randn(48, 3)
trainset = TensorDataset(inputs, (inputs[:, :1] > 0).long().squeeze(1))
trainloader = DataLoader(trainset, batch_size=12, shuffle=False)
testloader = DataLoader(trainset, batch_size=48, shuffle=False)

net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
net = net.to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)
    cudnn.benchmark = True


def train(epoch):
    net.train()
    for inputs, targets in trainloader:
        inputs, targets = inputs.to(device), targets.to(device)
        net.zero_grad()
        nn.functional.cross_entropy(net(inputs), targets).backward()
        with torch.no_grad():
            for parameter in net.parameters():
                parameter -= 0.1 * parameter.grad


def test(epoch):
    net.eval()
    with torch.no_grad():
        for inputs, targets in testloader:
            loss = nn.functional.cross_entropy(net(inputs.to(device)), targets.to(device))
    print("epoch", epoch, "test loss", round(loss.item(), 4))


for epoch in range(0, 3):
    train(epoch)
    test(epoch)
torch.save(net.state_dict(), os.environ["TFC301_WEIGHTS"])
