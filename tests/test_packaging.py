"""What PyPI shows: the license file the metadata names, classifiers, and no invented URLs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info < (3, 11):  # pragma: no cover
    tomllib = pytest.importorskip("tomli")
else:
    import tomllib


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_license_file_is_the_mit_license_the_metadata_names() -> None:
    project = _project()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Permission is hereby granted" in text
    sdist = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"]["sdist"]["include"]
    assert "LICENSE" in sdist


def test_classifiers_match_requires_python_and_urls_are_not_invented() -> None:
    project = _project()
    floor = tuple(map(int, re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"]).groups()))
    versions = [tuple(map(int, c.rsplit(" ", 1)[1].split(".")))
                for c in project["classifiers"] if re.fullmatch(r".*:: Python :: 3\.\d+", c)]
    assert versions and min(versions) == floor
    # No repository or documentation address is published yet: none rather than a guess.
    assert "urls" not in project


def test_the_lowest_versions_job_pins_every_floor_ci_runs() -> None:
    """.ci/lowest installs each runtime dependency and each of the server extra's at the
    floor pyproject.toml declares (a false floor, typer>=0.12, once hid a CLI that did
    nothing), and .ci/run runs that job first."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lowest", ROOT / ".ci" / "lowest_requirements.py")
    assert spec is not None and spec.loader is not None
    lowest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lowest)
    project = _project()
    declared = project["dependencies"] + project["optional-dependencies"]["server"]
    pins = lowest.pinned(["server"])
    assert len(pins) == len(declared)
    for requirement, pin in zip(declared, pins, strict=True):
        name, floor = re.match(r"([\w.-]+)\s*>=\s*([\w.]+)", requirement).groups()
        assert pin.split(";")[0] == f"{name}=={floor}"
    script = (ROOT / ".ci" / "lowest").read_text()
    assert "python .ci/lowest_requirements.py server >" in script
    assert "tests/test_server.py" in script and "tests/test_cli.py" in script
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index(".ci/lowest") < run.index("python -m pytest")
