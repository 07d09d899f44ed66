"""What reading a tensor only for its metadata does with autograd (TFC102's quiet cases).

`x.view_as(w.data)`, `w.data.numel()`, `w.data.new(...)`, `torch.zeros_like(w.data)`: the
result takes the other tensor's shape, dtype or device and nothing else, so `.data` there
hides nothing from autograd and `.detach()` would change nothing. Run with the torch the
project tests against; each line prints a claim and whether it held.

    python docs/measurements/metadata_reads.py > docs/measurements/metadata_reads.txt
"""

from __future__ import annotations

import torch

w = torch.randn(2, 3, requires_grad=True)
y = torch.randn(6, requires_grad=True)
small = torch.randn(1, 3, requires_grad=True)

TEMPLATES = {
    "y.view_as(w)": lambda t: y.view_as(t),
    "y.reshape_as(w)": lambda t: y.reshape_as(t),
    "small.expand_as(w)": lambda t: small.expand_as(t),
    "y.type_as(w)": lambda t: y.type_as(t),
    "torch.zeros(1).resize_as_(w)": lambda t: torch.zeros(1).resize_as_(t),
    "torch.zeros_like(w)": torch.zeros_like,
    "torch.ones_like(w)": torch.ones_like,
    "torch.empty_like(w)": torch.empty_like,
    "torch.rand_like(w)": torch.rand_like,
    "torch.randn_like(w)": torch.randn_like,
    "torch.full_like(w, 2.0)": lambda t: torch.full_like(t, 2.0),
    "w.new(2, 3)": lambda t: t.new(2, 3),
    "w.new_zeros(2, 3)": lambda t: t.new_zeros(2, 3),
    "w.new_ones(2, 3)": lambda t: t.new_ones(2, 3),
    "w.new_empty(2, 3)": lambda t: t.new_empty(2, 3),
    "w.new_full((2, 3), 1.0)": lambda t: t.new_full((2, 3), 1.0),
    "w.new_tensor([1.0])": lambda t: t.new_tensor([1.0]),
}

print(f"torch {torch.__version__}")
for text, make in TEMPLATES.items():
    through_w, through_detached = make(w), make(w.detach())
    w.grad = None
    if through_w.requires_grad:
        through_w.float().sum().backward()
    same = (through_w.shape == through_detached.shape and
            through_w.dtype == through_detached.dtype and
            through_w.device == through_detached.device and
            through_w.requires_grad == through_detached.requires_grad)
    print(f"{text}: no gradient reaches w: {w.grad is None}; "
          f"same shape, dtype, device and requires_grad as through w.detach(): {same}")

METADATA = {
    "size()": lambda t: t.size(), "shape": lambda t: t.shape, "numel()": lambda t: t.numel(),
    "nelement()": lambda t: t.nelement(), "dim()": lambda t: t.dim(),
    "ndimension()": lambda t: t.ndimension(), "dtype": lambda t: t.dtype,
    "device": lambda t: t.device, "is_cuda": lambda t: t.is_cuda,
    "type()": lambda t: t.type(), "element_size()": lambda t: t.element_size(),
}
for text, read in METADATA.items():
    print(f"w.{text} == w.detach().{text}: {read(w) == read(w.detach())}; "
          f"a Python value, not a tensor: {not isinstance(read(w), torch.Tensor)}")
