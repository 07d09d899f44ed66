"""Facts behind two provenance rules of issue 21 (TFC102, TFC103), measured on this torch.

1. A name set to a number before the loop that binds it to a tensor: reading an attribute no
   Python number has (`.data`, `.detach`) raises on the number, so a read that succeeds sees
   the tensor; and a number plus a tensor (`total = 0`, `total += loss`) is a tensor.
   `.real`/`.imag` exist on numbers too, so they prove nothing.
2. `nn.Module.apply(fn)` calls `fn` with every submodule and the module itself, wherever
   `fn` is defined (a function nested in another is the same function object to `apply`).

    python docs/measurements/numbers_and_applied_functions.py > \
        docs/measurements/numbers_and_applied_functions.txt
"""

from __future__ import annotations

import torch
from torch import nn

print("torch", torch.__version__)
for number in (0, 0.0, True):
    for attr in ("data", "detach", "real", "imag"):
        try:
            getattr(number, attr)
            outcome = "exists"
        except AttributeError as error:
            outcome = f"AttributeError: {error}"
        print(f"{type(number).__name__}.{attr}: {outcome}")
loss = (torch.ones(2, requires_grad=True) * 2).sum()
total = 0
total += loss
print("0 += loss:", type(total).__name__, "requires_grad", total.requires_grad,
      "grad_fn", type(total.grad_fn).__name__)
print("0.0 + loss:", type(0.0 + loss).__name__)


def init_weights(net: nn.Module) -> list[str]:
    seen: list[str] = []

    def init_func(m: nn.Module) -> None:
        seen.append(type(m).__name__)
        if isinstance(getattr(m, "weight", None), torch.Tensor):
            seen[-1] += f" (weight is {type(m.weight).__name__})"

    net.apply(init_func)
    return seen


print("nested function handed to apply() is called with:",
      init_weights(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())))
