# source: https://github.com/yunjey/pytorch-tutorial/blob/004ebe762626c69c27a56a60c59764e20c96777b/tutorials/01-basics/pytorch_basics/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision
import numpy as np

x = np.array([[1, 2], [3, 4]])
y = torch.from_numpy(x)
z = y.numpy()  # expect: fix
train_dataset = torchvision.datasets.CIFAR10(root='../../data/', train=True, download=True)
train_loader = torch.utils.data.DataLoader(dataset=train_dataset, batch_size=64, shuffle=True)  # expect: leave


class CustomDataset(torch.utils.data.Dataset):  # expect: leave
    pass


custom_dataset = CustomDataset()
train_loader = torch.utils.data.DataLoader(dataset=custom_dataset, batch_size=64, shuffle=True)  # expect: leave
