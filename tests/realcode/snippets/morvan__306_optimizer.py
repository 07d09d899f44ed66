# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/306_optimizer.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.utils.data as Data  # expect: leave
import torch.nn.functional as F
import matplotlib.pyplot as plt

x = torch.unsqueeze(torch.linspace(-1, 1, 1000), dim=1)
y = x.pow(2) + 0.1*torch.normal(torch.zeros(*x.size()))
plt.scatter(x.numpy(), y.numpy())  # expect: fix, fix


class Net(torch.nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.hidden = torch.nn.Linear(1, 20)


net_SGD = Net()
loss_func = torch.nn.MSELoss()
for epoch in range(12):
    for step, (b_x, b_y) in enumerate(loader):
        output = net_SGD(b_x)
        loss = loss_func(output, b_y)
        loss.backward()
        l_his.append(loss.data.numpy())  # expect: fix, leave
