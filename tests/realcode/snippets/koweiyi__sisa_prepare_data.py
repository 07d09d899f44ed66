# source: https://github.com/Koweiyi/SISA/blob/5f94cc800d6b39ca4b30b236c6378a4bb7490206/prepare_data.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision
from torch.utils.data import DataLoader  # expect: leave

train_set = torchvision.datasets.CIFAR10(root="./data", train=True, download=True)
print(train_set.data.shape)  # expect: leave
