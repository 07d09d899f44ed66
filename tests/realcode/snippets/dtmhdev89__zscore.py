# source: https://github.com/dtmhdev89/aio-100-days-pythons/blob/5d8a9abac5997c0379b3f3149b82c8eb7de4b819/subjects/m6_how_to_train_cnns/4_solution_zscore.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision

dataset = torchvision.datasets.CIFAR10(root='./data', train=True, download=True)
loader = torch.utils.data.DataLoader(dataset, batch_size=1024, shuffle=False)  # expect: leave
