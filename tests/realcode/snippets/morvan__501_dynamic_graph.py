# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/2523e0c1b1e825031faa00773598571e4d7f6fa6/tutorial-contents/501_why_torch_dynamic_graph.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np
from torch.autograd import Variable


class RNN(nn.Module):
    def __init__(self):
        super(RNN, self).__init__()
        self.out = nn.Linear(32, 1)


rnn = RNN()
loss_func = nn.MSELoss()
h_state = None
for i in range(60):
    x = Variable(torch.from_numpy(x_np[np.newaxis, :, np.newaxis]))
    prediction, h_state = rnn(x, h_state)
    h_state = Variable(h_state.data)  # expect: fix
    plt.plot(steps, prediction.data.numpy().flatten(), 'b-')  # expect: fix, leave
