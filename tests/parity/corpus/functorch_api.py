"""functorch -> torch.func (TorchFix TOR101, TOR103)."""
import functorch
import torch
from functorch import grad, vmap


def batched(f, xs):
    return vmap(grad(f))(xs)


jac = functorch.jacrev(torch.sin)
hess = functorch.hessian(torch.sin)
