"""What makes a value 0-dim, and what `[0]` / `.data[0]` / `.item()` do on it (TFC105).

Each line prints a claim the 0-dim analysis (`analysis/facts/tensors.py`) relies on and what
torch (and numpy, for the look-alikes) did. Run with the torch the project tests against:

    python docs/measurements/zero_dim_values.py > docs/measurements/zero_dim_values.txt
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def outcome(thunk):
    try:
        value = thunk()
    except Exception as error:  # noqa: BLE001 - the error is the measurement
        return f"raises {type(error).__name__}: {str(error).splitlines()[0]}"
    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"


torch.manual_seed(0)
out = torch.randn(8, 5)
y = torch.randint(0, 5, (8,))
pred = out.max(1)[1]
counts = (pred == y).sum()
print("torch", torch.__version__, "numpy", np.__version__)
print("(pred == y).sum():", outcome(lambda: counts))
print("(pred == y).sum()[0]:", outcome(lambda: counts[0]))
print("(pred == y).sum().data[0]:", outcome(lambda: counts.data[0]))
print("(pred == y).sum().item():", outcome(lambda: counts.item()))
print("pred.eq(y).cpu().sum()[0]:", outcome(lambda: pred.eq(y).cpu().sum()[0]))
print("out.sum(1)[0] (dim given):", outcome(lambda: out.sum(1)[0]))
print("out.sum(dim=1)[0]:", outcome(lambda: out.sum(dim=1)[0]))
print("out.sum(1, keepdim=True)[0]:", outcome(lambda: out.sum(1, keepdim=True)[0]))
print("torch.max(out, 1)[1]:", outcome(lambda: torch.max(out, 1)[1]))
print("torch.max(out, 1)[1].data[0]:", outcome(lambda: torch.max(out, 1)[1].data[0]))
print("torch.max(out, 1)[1].data[0][0]:", outcome(lambda: torch.max(out, 1)[1].data[0][0]))
for name, criterion in (("nn.MSELoss()", nn.MSELoss()),
                        ("nn.MSELoss(reduction='sum')", nn.MSELoss(reduction="sum")),
                        ("nn.MSELoss(reduction='none')", nn.MSELoss(reduction="none"))):
    loss = criterion(out, torch.zeros(8, 5))
    print(f"{name}(out, t):", outcome(lambda loss=loss: loss),
          "| .data[0]:", outcome(lambda loss=loss: loss.data[0]),
          "| .item():", outcome(lambda loss=loss: loss.item()))
loss = nn.L1Loss()(out, torch.zeros(8, 5))
print("loss / out.size(0):", outcome(lambda: loss / out.size(0)))
print("(loss / out.size(0)).data[0]:", outcome(lambda: (loss / out.size(0)).data[0]))
print("0.5 * loss + 1:", outcome(lambda: 0.5 * loss + 1))
total = 0
for _ in range(3):
    total += loss
print("total = 0; total += loss (3x):", outcome(lambda: total),
      "| .data[0]:", outcome(lambda: total.data[0]))
mask = torch.arange(5).unsqueeze(0).expand(8, 5) < torch.full((8, 1), 3)
losses = torch.rand(8, 5) * mask.float()
ratio = losses.sum() / mask.float().sum()
print("losses.sum() / mask.float().sum():", outcome(lambda: ratio),
      "| .data[0]:", outcome(lambda: ratio.data[0]))
vector = torch.randn(3)
print("1-dim tensor [0] (trap):", outcome(lambda: vector[0]))
print("1-dim tensor .data[0] (trap):", outcome(lambda: vector.data[0]))
array = np.arange(6.0).reshape(2, 3)
print("numpy array .sum()[0]:", outcome(lambda: array.sum()[0]))
print("numpy array .sum().item():", outcome(lambda: array.sum().item()))
print("numpy array .sum(0)[0] (trap):", outcome(lambda: array.sum(0)[0]))
for method in ("float", "long", "double", "half"):
    print(f"numpy array .{method}():", outcome(lambda method=method: getattr(array, method)()))
print("list [0] (trap):", outcome(lambda: [1.0, 2.0][0]))
kld = torch.sum(torch.randn(4, 3)).mul_(-0.5)
print("torch.sum(x).mul_(-0.5):", outcome(lambda: kld), "| .data[0]:", outcome(lambda: kld.data[0]))
print("loss.exp():", outcome(lambda: loss.exp()), "| .exp().data[0]:",
      outcome(lambda: loss.exp().data[0]))
print("loss.mul(2.0):", outcome(lambda: loss.mul(2.0)))
print("loss.mul(3-vector) (not kept):", outcome(lambda: loss.mul(torch.ones(3))))
print("loss.clone().add_(3-vector) (in place):",
      outcome(lambda: loss.detach().clone().add_(torch.ones(3))))

# Mixed helpers (mask-rcnn's loss helpers: a reduced loss, or a one-element literal when
# there is no ROI), untyped whole means read through `.data` (wgan-gp's critic losses).
one = torch.autograd.Variable(torch.FloatTensor([0]), requires_grad=False)
reduced = nn.functional.cross_entropy(out, y)
print("Variable(torch.FloatTensor([0])):", outcome(lambda: one),
      "| .data.cpu()[0]:", outcome(lambda: one.data.cpu()[0]),
      "| .item():", outcome(lambda: one.item()))
print("reduced + Variable(torch.FloatTensor([0])):", outcome(lambda: reduced + one),
      "| .data.cpu()[0]:", outcome(lambda: (reduced + one).data.cpu()[0]),
      "| .item():", outcome(lambda: (reduced + one).item()))
critic = nn.Linear(5, 1)
d_loss = critic(out).mean() - critic(out.flip(0)).mean() + 10 * ((out.norm(2, dim=1) - 1) ** 2).mean()
print("critic(x).mean() - critic(z).mean() + 10 * gp.mean():", outcome(lambda: d_loss),
      "| .data[0]:", outcome(lambda: d_loss.data[0]), "| .item():", outcome(lambda: d_loss.item()))
print("numpy array .mean().data[0] (a numpy scalar's buffer):",
      outcome(lambda: np.ones(3).mean().data[0]),
      "| .item():", outcome(lambda: np.ones(3).mean().item()))
