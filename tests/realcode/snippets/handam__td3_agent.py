# source: https://github.com/Han-Adam/DRL-Pytorch-Tutorial/blob/3d934fcee8b4cd54bf97b1225447efebc4339ec1/3.2%20TD3/Agent.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import copy
import torch
import numpy as np
from Network import Actor, Critic


class TD3:
    def get_action(self, s):
        with torch.no_grad():
            a = self.actor(torch.FloatTensor(s))
        a = a.numpy()  # expect: fix
        a = np.clip(np.random.normal(a, self.var), -1., 1.)
        return a

    def soft_update(self, target, source):
        for target_param, param in zip(target.parameters(), source.parameters()):
            target_param.data.copy_(  # expect: fix
                target_param.data * (1.0 - self.tau) + param.data * self.tau  # expect: fix, fix
            )
