"""Does switching a recurrent layer between train and eval change its forward?

Claim (TFC201, modules.changes_with_mode): `nn.RNN`/`nn.LSTM`/`nn.GRU` read `training`
only for the dropout between stacked layers; built without `dropout` (or with
`dropout=0`) their forward is the same in both modes, so `eval()` changes nothing.
With `dropout>0` and several layers it differs. Run: python docs/measurements/recurrent_modes.py
"""

import torch
from torch import nn

print("torch", torch.__version__)
torch.manual_seed(0)
x = torch.randn(4, 7, 5)
cases = {
    "LSTM(5, 8, 1, batch_first=True)": nn.LSTM(5, 8, 1, batch_first=True),
    "LSTM(5, 8, num_layers=3)": nn.LSTM(5, 8, num_layers=3, batch_first=True),
    "GRU(5, 8, 2, bidirectional=True)": nn.GRU(5, 8, 2, batch_first=True, bidirectional=True),
    "RNN(5, 8, 2, dropout=0.0)": nn.RNN(5, 8, 2, batch_first=True, dropout=0.0),
    "LSTM(5, 8, 3, dropout=0.5)": nn.LSTM(5, 8, 3, batch_first=True, dropout=0.5),
}
for label, layer in cases.items():
    layer.train()
    torch.manual_seed(1)
    trained = layer(x)[0]
    layer.eval()
    evaluated = layer(x)[0]
    print(f"{label}: train == eval: {torch.equal(trained, evaluated)}")
