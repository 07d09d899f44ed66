"""Print pyproject.toml's runtime dependencies pinned to their declared floors (``>=X`` ->
``==X``), one per line, for the lowest-versions CI job (.ci/lowest). Extras named on the
command line (``server``) are pinned too; an upper bound (``<3``) is dropped."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FLOOR = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,\s]*)\s*(?:,\s*<\s*[0-9][^,\s]*\s*)?")


def pinned(extras: list[str] | tuple[str, ...] = ()) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        match = FLOOR.fullmatch(spec)
        if match is None:
            raise SystemExit(f"no floor to pin in {requirement!r}")
        pin = f"{match.group(1)}=={match.group(2)}"
        pins.append(f"{pin}; {marker.strip()}" if marker else pin)
    return pins


if __name__ == "__main__":
    print("\n".join(pinned(sys.argv[1:])))
