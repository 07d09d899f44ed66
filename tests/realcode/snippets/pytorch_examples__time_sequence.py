# source: https://github.com/pytorch/examples/blob/04b1f3cec923d40972d998a7ed3c00c1b37e765e/time_sequence_prediction/train.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.linear = nn.Linear(51, 1)


seq = Sequence()
with torch.no_grad():
    pred = seq(test_input, future=1000)
    y = pred.cpu().detach().numpy()  # expect: leave
