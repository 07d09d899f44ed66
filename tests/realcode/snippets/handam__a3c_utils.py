# source: https://github.com/Han-Adam/DRL-Pytorch-Tutorial/blob/c540562f4e6e2436fb46108076a32ed3db6755cd/2.4%20A3C/utils.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
from torch import nn
import torch
import numpy as np


def v_wrap(np_array, dtype=np.float32):
    return torch.from_numpy(np_array)


def push_and_pull(opt, lnet, gnet, done, s_, bs, ba, br, gamma):
    if done:
        v_s_ = 0.
    else:
        v_s_ = lnet.forward(v_wrap(s_[None, :]))[-1].data.numpy()[0, 0]  # expect: fix, leave
