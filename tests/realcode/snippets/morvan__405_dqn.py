# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/3b23f6bced16eab141c2f2eed7b8849ef1c31719/tutorial-contents/405_DQN_Reinforcement_learning.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np
from torch.autograd import Variable


class DQN(object):
    def choose_action(self, x):
        x = Variable(torch.unsqueeze(torch.FloatTensor(x), 0))
        if np.random.uniform() < EPSILON:
            actions_value = self.eval_net.forward(x)
            action = torch.max(actions_value, 1)[1].data.numpy()[0]  # expect: fix, leave
        return action
