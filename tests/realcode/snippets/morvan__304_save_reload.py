# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/304_save_reload.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import matplotlib.pyplot as plt

x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
y = x.pow(2) + 0.2*torch.rand(x.size())


def save():
    net1 = torch.nn.Sequential(torch.nn.Linear(1, 10), torch.nn.ReLU(), torch.nn.Linear(10, 1))
    loss_func = torch.nn.MSELoss()
    for t in range(100):
        prediction = net1(x)
        loss = loss_func(prediction, y)
        loss.backward()
    plt.scatter(x.data.numpy(), y.data.numpy())  # expect: fix, leave, fix, leave
    plt.plot(x.data.numpy(), prediction.data.numpy(), 'r-', lw=5)  # expect: fix, leave, fix, leave


def restore_net():
    net2 = torch.load('net.pkl')
    prediction = net2(x)
    plt.scatter(x.data.numpy(), y.data.numpy())  # expect: fix, leave, fix, leave
    plt.plot(x.data.numpy(), prediction.data.numpy(), 'r-', lw=5)  # expect: fix, leave, fix, leave


def restore_params():
    net3 = torch.nn.Sequential(torch.nn.Linear(1, 10), torch.nn.ReLU(), torch.nn.Linear(10, 1))
    prediction = net3(x)
    plt.scatter(x.data.numpy(), y.data.numpy())  # expect: fix, leave, fix, leave
    plt.plot(x.data.numpy(), prediction.data.numpy(), 'r-', lw=5)  # expect: fix, leave, fix, leave
