"""Removed and deprecated torch functions (TorchFix TOR001, TOR004, TOR101, TOR103)."""
import torch
from torch import qr, solve


def upper_factor(X):
    return torch.cholesky(X, upper=True)


def factorize(S, flag, A, B):
    Q, R = torch.qr(S, some=flag)
    Q2, R2 = qr(S)
    m = torch.chain_matmul(A, B, A)
    x, lu = torch.solve(B, A)
    y = solve(B, A)
    e = torch.symeig(A, eigenvectors=True)
    w = torch.eig(A)
    z = torch.lstsq(B, A)
    r = torch.matrix_rank(A)
    LU, piv = torch.lu(A)
    s = torch.lu_solve(B, LU, piv)
    o = torch.ger(A[0], B[0])
    n = torch.norm(A)
    U, S2, V = torch.svd(A)
    t = torch.triangular_solve(B, A)
    return Q, R, Q2, R2, m, x, lu, y, e, w, z, r, LU, piv, s, o, n, U, S2, V, t


def steps(n):
    return torch.range(0, n - 1), torch.range(1, 10, 2)


upsample = torch.nn.UpsamplingNearest2d(scale_factor=2)
bilinear = torch.nn.UpsamplingBilinear2d(size=(4, 4))
torch.testing.assert_allclose(torch.ones(1), torch.ones(1))
torch.utils._pytree._register_pytree_node(dict, list, dict)
with torch.backends.cuda.sdp_kernel(enable_math=False):
    pass
