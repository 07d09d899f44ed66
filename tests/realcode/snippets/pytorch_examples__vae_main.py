# source: https://github.com/pytorch/examples/blob/0a8329cff339f4195f4c893780c18caaa51ee732/vae/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.utils.data  # expect: leave
from torchvision import datasets, transforms

train_loader = torch.utils.data.DataLoader(  # expect: leave
    datasets.MNIST('../data', train=True, download=True, transform=transforms.ToTensor()),
    batch_size=128, shuffle=True)
test_loader = torch.utils.data.DataLoader(  # expect: leave
    datasets.MNIST('../data', train=False, transform=transforms.ToTensor()),
    batch_size=128, shuffle=True)
