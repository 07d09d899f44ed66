"""What the analysis assumes about a whole model unpickled by `torch.load` (issue 21).

TFC102/TFC202 treat `model = torch.load(path)["model"]`, called and moved with `.cuda()`/
`.cpu()`, as a module whose output carries history; TFC201 stays quiet on it because the
pickled `training` flag comes back with it. Run with the torch the project tests against;
each line prints a claim and whether it held.

    python docs/measurements/unpickled_models.py > docs/measurements/unpickled_models.txt
"""

from __future__ import annotations

import io

import torch
from torch import nn


def roundtrip(obj: object) -> object:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


print(f"torch {torch.__version__}")
for mode in (True, False):
    net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train(mode)
    loaded = roundtrip({"epoch": 1, "model": net})["model"]  # type: ignore[index]
    print(f"saved with training={mode}: loaded training={loaded.training}, "
          f"every submodule the same: {all(m.training is mode for m in loaded.modules())}")

loaded = roundtrip({"model": nn.Linear(3, 2)})["model"]  # type: ignore[index]
out = loaded.cpu()(torch.rand(1, 3))
print(f"the loaded module's output requires grad: {out.requires_grad}; "
      f"has a grad_fn: {out.grad_fn is not None}")
out_ng = None
with torch.no_grad():
    out_ng = loaded(torch.rand(1, 3))
print(f"under no_grad: requires grad {out_ng.requires_grad}")

t = torch.rand(2)
try:
    t(torch.rand(2))  # type: ignore[operator]
    print("a tensor is callable: True")
except TypeError as error:
    print(f"a tensor is callable: False ({error})")
print(f"a plain function has .cuda/.cpu: {hasattr(len, 'cuda') or hasattr(len, 'cpu')}")
try:
    _ = None.data  # type: ignore[attr-defined]
    print("None has .data: True")
except AttributeError as error:
    print(f"None has .data: False ({error})")
