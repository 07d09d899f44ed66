"""Which values `Variable(x)` can drop to `x` itself (TFC106) and which need `.detach()`.

Run with the torch the project tests against; each line prints a claim and whether it held.

    python docs/measurements/values_without_history.py > docs/measurements/values_without_history.txt
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from torch import nn
from torch.autograd import Variable

warnings.simplefilter("ignore")


def claim(text: str, held: bool) -> None:
    print(f"{'held' if held else 'FAILED'}: {text}")


print(f"torch {torch.__version__}")

# torch.from_numpy: a new tensor object each call, no history.
a = np.random.normal(size=(3, 1))
old = Variable(torch.from_numpy(a), requires_grad=True)
new = torch.from_numpy(a).requires_grad_()
claim("Variable(from_numpy(a), requires_grad=True) and from_numpy(a).requires_grad_() are equal "
      "leaves that require grad",
      torch.equal(old, new) and old.is_leaf and new.is_leaf and old.requires_grad and new.requires_grad)
claim("both share the array's memory",
      old.data_ptr() == new.data_ptr() == a.__array_interface__["data"][0])
first, second = torch.from_numpy(a), torch.from_numpy(a)
second.requires_grad_()
claim("requires_grad_() on one from_numpy result leaves another call's tensor alone",
      first is not second and not first.requires_grad)
claim("torch.as_tensor(t) of a tensor is that same object (not a new one)",
      torch.as_tensor(first) is first)


# A buffer registered from a table without history.
class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int = 4, max_len: int = 10) -> None:
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(torch.as_tensor(position.numpy() * div_term.unsqueeze(0).numpy()))
        self.register_buffer("pe", pe.unsqueeze(0))
        self.register_buffer("ema", torch.zeros(d_model))
        self.proj = nn.Linear(d_model, d_model)


module = PositionalEncoding()
piece = module.pe[:, :3]
claim("a buffer registered from factories and numpy has no history (requires_grad False, "
      "no grad_fn), nor has a slice of it",
      not module.pe.requires_grad and module.pe.grad_fn is None and piece.grad_fn is None)
claim("Variable(buffer slice, requires_grad=False) equals the slice itself and neither "
      "requires grad", torch.equal(Variable(piece, requires_grad=False), piece)
      and not Variable(piece).requires_grad)
x = torch.rand(2, 3, 4)
module.ema.mul_(0.9).add_(module.proj(x).mean(dim=(0, 1)))
claim("a buffer written in place from a module output carries history (grad_fn set): "
      "Variable(buffer) there is buffer.detach(), not the buffer",
      module.ema.grad_fn is not None and Variable(module.ema).grad_fn is None)

# `.type(T)` with a type picked at run time (DeNA/PyTorch_YOLOv3's `imgs.type(dtype)` on a
# DataLoader batch): a cast follows its source's grad, so a batch stays without history.
batch = torch.randint(0, 255, (2, 3))
cast = batch.type(torch.FloatTensor)
claim("x.type(torch.FloatTensor) of a tensor without grad has no history (requires_grad False, "
      "no grad_fn), and Variable(cast) equals cast",
      not cast.requires_grad and cast.grad_fn is None and torch.equal(Variable(cast), cast))
leaf = torch.ones(2, requires_grad=True)
claim("x.type(torch.DoubleTensor) of a tensor that requires grad keeps the graph (grad_fn set)",
      leaf.type(torch.DoubleTensor).grad_fn is not None)
