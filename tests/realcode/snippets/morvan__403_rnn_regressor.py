# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/256559c12ae58fefb73810af94f357f609ded5db/tutorial-contents/403_RNN_regressor.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np


class RNN(nn.Module):
    def __init__(self):
        super(RNN, self).__init__()
        self.rnn = nn.RNN(input_size=1, hidden_size=32, num_layers=1, batch_first=True)
        self.out = nn.Linear(32, 1)


rnn = RNN()
loss_func = nn.MSELoss()
h_state = None
for step in range(100):
    x = torch.from_numpy(x_np[np.newaxis, :, np.newaxis])
    prediction, h_state = rnn(x, h_state)
    h_state = h_state.data  # expect: fix
    loss = loss_func(prediction, y)
    loss.backward()
    plt.plot(steps, prediction.data.numpy().flatten(), 'b-')  # expect: fix, leave
