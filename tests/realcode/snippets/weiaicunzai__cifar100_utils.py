# source: https://github.com/weiaicunzai/pytorch-cifar100/blob/02b14efcbed3eda0c6c90e59bbb12712e55802cf/utils.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision
from torch.utils.data import DataLoader  # expect: leave
