"""torch.nn.init's deprecated aliases still write their first argument in place (TFC103).

`nn.init.xavier_normal(m.weight.data)` is the 0.3 spelling; TFC103 treats it as a write
through `.data` like `nn.init.xavier_normal_(m.weight.data)`. This prints, for each alias,
whether it exists on this torch and fills a zero tensor in place.

    python docs/measurements/deprecated_inits.py > docs/measurements/deprecated_inits.txt
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

ALIASES = ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse")
print("torch", torch.__version__)
for name in ALIASES:
    tensor = torch.zeros(2, 2, 3) if name == "dirac" else torch.zeros(4, 4)
    extra = (0.5,) if name in ("constant", "sparse") else ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(nn.init, name)(tensor, *extra)
    print(f"nn.init.{name}: fills its argument in place: {bool(tensor.abs().sum() > 0)}; "
          f"warns: {[str(w.message) for w in caught]}")
