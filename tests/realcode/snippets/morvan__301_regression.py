# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/301_regression.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn.functional as F
import matplotlib.pyplot as plt

x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
y = x.pow(2) + 0.2*torch.rand(x.size())


class Net(torch.nn.Module):
    def __init__(self, n_feature, n_hidden, n_output):
        super(Net, self).__init__()
        self.hidden = torch.nn.Linear(n_feature, n_hidden)


net = Net(n_feature=1, n_hidden=10, n_output=1)
loss_func = torch.nn.MSELoss()
for t in range(200):
    prediction = net(x)
    loss = loss_func(prediction, y)
    loss.backward()
    if t % 5 == 0:
        plt.scatter(x.data.numpy(), y.data.numpy())  # expect: fix, leave, fix, leave
        plt.plot(x.data.numpy(), prediction.data.numpy(), 'r-', lw=5)  # expect: fix, leave, fix, leave
        plt.text(0.5, 0, 'Loss=%.4f' % loss.data.numpy(), fontdict={'size': 20, 'color': 'red'})  # expect: fix, leave
