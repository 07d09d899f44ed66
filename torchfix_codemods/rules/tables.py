"""The rules' facts kept as data: ``rules/data/*.toml``, read once per process.

Why data and not code: the facts (which name replaces which, how each argument
maps, from which torch release, whether the rewrite keeps behaviour, which
weights ``pretrained=True`` loaded) are what a reviewer checks against the
torch docs, and what a user may want to read. ``replacements.toml`` documents
each field in its header.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from torchfix_codemods.edits.call_mapping import CallMapping
from torchfix_codemods.findings import Safety

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

DATA = Path(__file__).resolve().parent / "data"
TorchVersion = tuple[int, int]


@cache
def load_data(name: str) -> Mapping[str, Any]:
    """A TOML file shipped in ``torchfix_codemods/rules/data``."""
    return tomllib.loads((DATA / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Replacement:
    """One row of ``replacements.toml``: an old name, what replaces it, and how calls map."""

    old: str
    rule: str
    new: str | None = None
    mapping: CallMapping = CallMapping()
    handler: str | None = None
    """A mapping written in code, for a signature that cannot be said as data."""
    min_torch: TorchVersion | None = None
    safety: Safety = Safety.NONE
    removed: bool = False
    note: str = ""


def _version(text: str | None) -> TorchVersion | None:
    if not text:
        return None
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@cache
def replacements() -> dict[str, Replacement]:
    """Every entry of ``replacements.toml``, by old qualified name."""
    table: dict[str, Replacement] = {}
    for old, row in load_data("replacements.toml")["function"].items():
        table[old] = Replacement(
            old=old,
            rule=row["rule"],
            new=row.get("new"),
            mapping=CallMapping(
                params=tuple(row.get("params", ())),
                args=tuple(row.get("args", ())),
                keywords=dict(row.get("keywords", {})),
                constants=dict(row.get("constants", {})),
                convert=dict(row.get("convert", {})),
                leading=tuple(row.get("leading", ())),
                together=tuple(row.get("together", ())),
                passthrough=bool(row.get("passthrough", False)),
            ),
            handler=row.get("handler"),
            min_torch=_version(row.get("min_torch")),
            safety=Safety(row.get("safety", "none")),
            removed=bool(row.get("removed", False)),
            note=row.get("note", ""),
        )
    return table


def replacements_for(rule: str) -> dict[str, Replacement]:
    return {old: spec for old, spec in replacements().items() if spec.rule == rule}
