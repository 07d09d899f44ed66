# source: https://github.com/kuangliu/pytorch-cifar/blob/02117b336042f6536f864ea0ade2e3361e6c8ec6/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision

trainset = torchvision.datasets.CIFAR10(root='./data', train=True, download=True)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=256, shuffle=True)  # expect: leave
testset = torchvision.datasets.CIFAR10(root='./data', train=False, download=True)
testloader = torch.utils.data.DataLoader(testset, batch_size=256, shuffle=False)  # expect: leave
