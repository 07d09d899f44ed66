"""``# noqa`` and ``# noqa: TFC001, TFC002`` comments, read once per file.

TorchFix's codes are honoured too (``# noqa: TOR102`` silences TFC001): a codebase
moving from TorchFix keeps its suppressions (:mod:`torchfix_codemods.torchfix_codes`).
"""

from __future__ import annotations

import re

from torchfix_codemods.torchfix_codes import ours

NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.IGNORECASE
)
ALL = frozenset({"*"})


def noqa_lines(text: str) -> dict[int, frozenset[str]]:
    """Map 1-based line numbers to the codes silenced there (``ALL`` for a bare noqa)."""
    result: dict[int, frozenset[str]] = {}
    if "noqa" not in text.lower():
        return result
    for number, line in enumerate(text.splitlines(), start=1):
        if "#" not in line:
            continue
        match = NOQA.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        if codes:
            result[number] = frozenset(
                mine for c in re.split(r"[\s,]+", codes) if c for mine in ours(c.upper()))
        else:
            result[number] = ALL
    return result


def is_silenced(silenced: dict[int, frozenset[str]], code: str, *lines: int) -> bool:
    """Whether a ``# noqa`` on one of ``lines`` (a finding's first and last) silences ``code``."""
    for line in lines:
        codes = silenced.get(line)
        if codes is not None and (codes is ALL or code in codes):
            return True
    return False
