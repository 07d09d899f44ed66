"""`log(sum(exp(y - max(y, dim))))` is as stable as `torch.logsumexp` (TFC108's quiet case).

Run with the torch the project tests against; each line prints a claim and whether it held.

    python docs/measurements/shifted_logsumexp.py > docs/measurements/shifted_logsumexp.txt
"""

from __future__ import annotations

import torch

torch.manual_seed(0)


def claim(text: str, held: bool) -> None:
    print(f"{'held' if held else 'FAILED'}: {text}")


print(f"torch {torch.__version__}")
for scale in (1.0, 100.0, 1000.0, -1000.0):
    y = torch.randn(5, 7) * abs(scale) + (scale if scale < 0 else 0.0)
    m, _ = torch.max(y, dim=1)
    shifted = y - m.view(-1, 1)
    written = m + torch.log(torch.sum(torch.exp(shifted), dim=1))
    rewritten = m + torch.logsumexp(shifted, dim=1)
    reference = torch.logsumexp(y, dim=1)
    claim(f"scale {scale:g}: the shifted written-out form is finite and equals the rewrite "
          f"(max abs diff {float((written - rewritten).abs().max()):.3g}) and torch.logsumexp(y) "
          f"(max abs diff {float((written - reference).abs().max()):.3g})",
          bool(torch.isfinite(written).all()) and torch.allclose(written, rewritten, atol=1e-5)
          and torch.allclose(written, reference, rtol=1e-5, atol=1e-4))
    sums = torch.sum(torch.exp(shifted), dim=1)
    claim(f"scale {scale:g}: every shifted sum lies in [1, n]",
          bool((sums >= 1).all()) and bool((sums <= y.shape[1]).all()))
unshifted = torch.randn(5, 7) * 1000.0
claim("without the shift the written-out form overflows at scale 1000",
      not bool(torch.isfinite(torch.log(torch.sum(torch.exp(unshifted), dim=1))).all()))
