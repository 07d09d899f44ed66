"""Small training utilities: seeding, running averages, weight EMA."""

import copy
import random

import numpy as np
import torch


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class AverageMeter:
    """Running average of a logged value (loss, accuracy, batch time)."""

    def __init__(self):
        self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


class ModelEMA:
    """Exponential moving average of the weights; we report EMA accuracy."""

    def __init__(self, model, decay=0.999):
        self.ema = copy.deepcopy(model).eval()
        self.decay = decay
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        for ema_p, p in zip(self.ema.parameters(), model.parameters()):
            ema_p.data.mul_(self.decay).add_(p.data, alpha=1 - self.decay)
        for ema_b, b in zip(self.ema.buffers(), model.buffers()):
            ema_b.data.copy_(b.data)

    def state_dict(self):
        return self.ema.state_dict()


def grad_norm(model):
    """Global L2 norm of the gradients, for the logs."""
    total = 0.0
    for p in model.parameters():
        if p.grad is not None:
            total += p.grad.data.norm(2).item() ** 2
    return total ** 0.5


def log_counts(counts):
    """Log-scaled class counts for the long-tail histogram."""
    return torch.log(1 + counts.float())
