"""nn.utils.weight_norm (TorchFix TOR101, TOR103)."""
import torch
from torch.nn.utils import weight_norm

conv = weight_norm(torch.nn.Conv1d(2, 2, 3))
lin = torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))
