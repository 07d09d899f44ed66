# source: https://github.com/guy-amir/core/blob/c363b19ef7121c9bcf3aa87c04837f940727710c/stam_analysis.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
from torch import nn

model = nn.Sequential(nn.Linear(10, 25), nn.ReLU(), nn.Linear(25, 2))
weights = model[0].weight.data.numpy()  # expect: fix, leave
