"""TorchFix's rule codes and ours, so that a ``# noqa: TOR102`` left by TorchFix keeps working.

The table is docs/torchfix-parity.md's, one TorchFix code to the codes of ours that
report what it reported (tests/test_noqa_codes.py checks the two agree). TOR901 (a
convention of PyTorch's own repository) has no counterpart, so silences nothing.
"""

from __future__ import annotations

TORCHFIX_CODES: dict[str, tuple[str, ...]] = {
    "TOR001": ("TFC406",),
    "TOR002": ("TFC407",),
    "TOR003": ("TFC404",),
    "TOR004": ("TFC406",),
    "TOR101": ("TFC406", "TFC405", "TFC411"),
    "TOR102": ("TFC001",),
    "TOR103": ("TFC406", "TFC405", "TFC411"),
    "TOR104": ("TFC409",),
    "TOR105": ("TFC409",),
    "TOR106": ("TFC409",),
    "TOR107": ("TFC409",),
    "TOR108": ("TFC108",),
    "TOR201": ("TFC408",),
    "TOR202": ("TFC409",),
    "TOR203": ("TFC409",),
    "TOR401": ("TFC410",),
    "TOR402": ("TFC504",),
}


def ours(code: str) -> tuple[str, ...]:
    """The codes a ``# noqa`` naming ``code`` silences: ours for a TorchFix code, else itself.

    A TorchFix prefix (``TOR1``) silences what every code under it maps to, as our
    prefixes do not (noqa takes full codes): only full codes are mapped.
    """
    return TORCHFIX_CODES.get(code, (code,))
