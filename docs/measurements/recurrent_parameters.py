"""The parameter names of torch's recurrent layers (TFC102-TFC104: `self.lstm.bias_ih.data`).

`analysis/vocabulary/torch_classes.is_module_parameter` takes `weight_ih`, `bias_hh_l1`,
`weight_hh_l0_reverse`, `weight_hr_l0`... of an `nn.RNN`/`LSTM`/`GRU` or their cells for
parameters; this prints what each layer's `named_parameters()` holds and checks the pattern
accepts every name (and rejects look-alikes).

    python docs/measurements/recurrent_parameters.py > docs/measurements/recurrent_parameters.txt
"""

from __future__ import annotations

import torch
from torch import nn

from torchfix_codemods.analysis.vocabulary.torch_classes import is_module_parameter

LAYERS = {
    "torch.nn.LSTMCell": nn.LSTMCell(3, 4),
    "torch.nn.GRUCell": nn.GRUCell(3, 4),
    "torch.nn.RNNCell": nn.RNNCell(3, 4),
    "torch.nn.LSTM": nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2),
    "torch.nn.GRU": nn.GRU(3, 4, num_layers=2, bidirectional=True),
    "torch.nn.RNN": nn.RNN(3, 4),
}
print("torch", torch.__version__)
for qualified, layer in LAYERS.items():
    names = [name for name, _ in layer.named_parameters()]
    accepted = all(is_module_parameter(name, qualified) for name in names)
    print(f"{qualified}: {names}; every name accepted: {accepted}")
for attr, built in (("bias_ih", "torch.nn.Linear"), ("bias_ih", None), ("weight_ih_l0x", "torch.nn.LSTM"),
                    ("hidden_size", "torch.nn.LSTM")):
    print(f"{attr} of {built}: accepted {is_module_parameter(attr, built)} (expected False)")
