# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/203_activation.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn.functional as F
from torch.autograd import Variable

x = torch.linspace(-5, 5, 200)
x = Variable(x)
x_np = x.data.numpy()  # expect: fix, leave
y_relu = torch.relu(x).data.numpy()  # expect: fix, leave
y_sigmoid = torch.sigmoid(x).data.numpy()  # expect: fix, leave
y_tanh = torch.tanh(x).data.numpy()  # expect: fix, leave
y_softplus = F.softplus(x).data.numpy()  # expect: fix, leave
