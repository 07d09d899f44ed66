# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/503_dropout.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import matplotlib.pyplot as plt

x = torch.unsqueeze(torch.linspace(-1, 1, 20), 1)
y = x + 0.3*torch.normal(torch.zeros(20, 1), torch.ones(20, 1))
test_x = torch.unsqueeze(torch.linspace(-1, 1, 20), 1)
test_y = test_x + 0.3*torch.normal(torch.zeros(20, 1), torch.ones(20, 1))
plt.scatter(x.data.numpy(), y.data.numpy(), c='magenta', s=50, alpha=0.5, label='train')  # expect: fix, leave, fix, leave
plt.scatter(test_x.data.numpy(), test_y.data.numpy(), c='cyan', s=50, alpha=0.5, label='test')  # expect: fix, leave, fix, leave
net_overfitting = torch.nn.Sequential(torch.nn.Linear(1, 300), torch.nn.ReLU(), torch.nn.Linear(300, 1))
net_dropped = torch.nn.Sequential(torch.nn.Linear(1, 300), torch.nn.Dropout(0.5), torch.nn.Linear(300, 1))
loss_func = torch.nn.MSELoss()
for t in range(500):
    if t % 10 == 0:
        test_pred_ofit = net_overfitting(test_x)
        test_pred_drop = net_dropped(test_x)
        plt.plot(test_x.data.numpy(), test_pred_ofit.data.numpy(), 'r-', lw=3, label='overfitting')  # expect: fix, leave, fix, leave
        plt.plot(test_x.data.numpy(), test_pred_drop.data.numpy(), 'b--', lw=3, label='dropout(50%)')  # expect: fix, leave, fix, leave
        plt.text(0, -1.2, 'overfitting loss=%.4f' % loss_func(test_pred_ofit, test_y).data.numpy())  # expect: fix, leave
        plt.text(0, -1.5, 'dropout loss=%.4f' % loss_func(test_pred_drop, test_y).data.numpy())  # expect: fix, leave
