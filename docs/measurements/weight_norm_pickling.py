"""Which ways of saving a module survive each weight norm (TFC405's report-only case).

TFC405's fix swaps the hook-based `torch.nn.utils.weight_norm` for
`torch.nn.utils.parametrizations.weight_norm`. A program that pickles the whole module
(`torch.save(model, f)`) loses that save with the parametrization; its state_dict still
saves. Run with the torch the project tests against; each line prints how one save went.

    python docs/measurements/weight_norm_pickling.py > docs/measurements/weight_norm_pickling.txt
"""

from __future__ import annotations

import copy
import io
import pickle
import warnings

import torch
from torch import nn
from torch.nn.utils import weight_norm as hook_weight_norm
from torch.nn.utils.parametrizations import weight_norm as parametrized_weight_norm

warnings.simplefilter("ignore")
print(f"torch {torch.__version__}")
for label, wrap in (("hook-based", hook_weight_norm), ("parametrized", parametrized_weight_norm)):
    module = nn.Sequential(wrap(nn.Conv1d(2, 3, 3)))
    saves = {
        "torch.save(module)": lambda m=module: torch.save(m, io.BytesIO()),
        "pickle.dumps(module)": lambda m=module: pickle.dumps(m),
        "copy.deepcopy(module)": lambda m=module: copy.deepcopy(m),
        "torch.save(module.state_dict())": lambda m=module: torch.save(m.state_dict(),
                                                                       io.BytesIO()),
    }
    for what, save in saves.items():
        try:
            save()
            outcome = "ok"
        except Exception as error:  # noqa: BLE001 - the outcome is the measurement
            outcome = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        print(f"{label:12} {what:32} {outcome}")
