"""Only `from torch import ...` names: a fix that writes `torch.` here reads an undefined name."""
from torch import cholesky, qr


def factor(M, flag):
    return cholesky(M), qr(M, some=flag)
