"""Print pyproject.toml's runtime dependencies pinned to their declared floors (``>=X`` ->
``==X``), one per line, for the lowest-versions CI job (.ci/lowest)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def pinned() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = []
    for requirement in project["dependencies"]:
        spec, _, marker = requirement.partition(";")
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,\s]*)\s*", spec)
        if match is None:
            raise SystemExit(f"no floor to pin in {requirement!r}")
        pin = f"{match.group(1)}=={match.group(2)}"
        pins.append(f"{pin}; {marker.strip()}" if marker else pin)
    return pins


if __name__ == "__main__":
    print("\n".join(pinned()))
