# source: https://github.com/Han-Adam/DRL-Pytorch-Tutorial/blob/3d934fcee8b4cd54bf97b1225447efebc4339ec1/3.1%20DDPG/Agent.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import numpy as np
import torch.nn.functional as F
from Network import Actor, Critic


class DDPG:
    def get_action(self, s):
        with torch.no_grad():
            s = torch.FloatTensor(s).to(self.device)
            a = self.actor(s).numpy()  # expect: fix
        a = np.clip(np.random.normal(a, self.var), -1., 1.)
        return a

    def soft_update(self, target, source):
        for target_param, param in zip(target.parameters(), source.parameters()):
            target_param.data.copy_(  # expect: fix
                target_param.data * (1.0 - self.tau) + param.data * self.tau  # expect: fix, fix
            )
