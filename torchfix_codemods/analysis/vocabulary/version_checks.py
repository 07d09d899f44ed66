"""What a torch version check looks like, on names and strings: read by both parsers.

Two analyses ask "does this code depend on the torch release?": the compatibility guards
(``facts/compat.py``, on LibCST: which branch of ``if torch.__version__ < "2.0":`` may run
on an older release) and the project summary (``project/summary.py``, on ``ast``: is the
module-level name ``LEGACY`` a torch-version flag another file can test). Each walks its
own tree, but what they recognise there is decided here, once, on the dotted names and
string constants they read off their nodes:

* :func:`version_source`: a name that holds the torch release (``torch.__version__``,
  ``torchvision.__version__``, an imported ``TORCH_VERSION``);
* :func:`version_query`: a call that asks a package manager for it
  (``importlib.metadata.version("torch")``);
* :func:`requirement` / :func:`requirement_check`: a requirement string on a torch package
  (``RequirementCache("torch>=2.1")``, ``compare_version("torch", ...)``), parsed one way;
* :data:`OPERATOR_STRINGS` / :data:`OPERATOR_FUNCTIONS`: which outcome of a comparison
  means the newer release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TORCH_PACKAGES = ("torch", "torchvision", "torchaudio", "torchtext", "functorch")
"""Packages released with torch: an older one of them means an older torch."""

OPERATOR_STRINGS: dict[str, bool | None] = {
    ">=": True, ">": True, "<=": False, "<": False, "==": None, "!=": None}
"""A comparison spelled as a string (``compare_version("torch", ">=", "2.0")``, a
requirement's specifier): True when the check holding means the newer release, False when
it means the older one, None when either outcome may be older (``==``)."""
OPERATOR_FUNCTIONS: dict[str, bool | None] = {
    "ge": True, "gt": True, "le": False, "lt": False, "eq": None, "ne": None}
"""The same, spelled as a function of :mod:`operator` (``operator.ge``)."""

_VERSION_QUERIES = ("version", "get_distribution")
"""Last names of the functions that return an installed package's version
(``importlib.metadata.version``, ``pkg_resources.get_distribution``)."""
REQUIREMENT_CACHE = "RequirementCache"
"""``lightning_utilities``' class: true when the installed package meets the requirement."""

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)")


@dataclass(frozen=True)
class Requirement:
    """A requirement string on a torch package: ``torch>=2.1`` is ``("torch", ">=2.1")``."""

    package: str
    specifier: str
    """With the spaces taken out (``>= 2.1`` reads ``>=2.1``)."""

    @property
    def operator(self) -> str | None:
        """The comparison the specifier starts with (a key of :data:`OPERATOR_STRINGS`), or
        None (``torch``, ``torch~=2.0``)."""
        return next((op for op in OPERATOR_STRINGS if self.specifier.startswith(op)), None)


def requirement(text: str) -> Requirement | None:
    """``text`` read as a requirement on a torch package, or None for any other string."""
    match = _REQUIREMENT.fullmatch(text)
    if match is None or match.group(1) not in TORCH_PACKAGES:
        return None
    return Requirement(match.group(1), match.group(2).replace(" ", ""))


def requirement_check(text: str) -> Requirement | None:
    """``text`` as a requirement that compares a torch package's version (``torch>=2.1``),
    or None (another package, or no comparison: ``RequirementCache("torch")`` asks whether
    it is installed)."""
    found = requirement(text)
    return found if found is not None and found.operator is not None else None


def version_source(dotted: str) -> str | None:
    """How the name ``dotted`` holds the torch release, as a reviewer reads it, or None:
    ``__version__`` of a torch package, or a name that says it (``TORCH_VERSION``)."""
    if dotted.startswith(TORCH_PACKAGES) and dotted.endswith("__version__"):
        return f"`{dotted}`"
    if dotted.rsplit(".", 1)[-1].lower() == "torch_version":
        return f"`{dotted}` (named for the torch version)"
    return None


def version_query(callee: str, strings: list[str]) -> bool:
    """Does calling ``callee`` with these string arguments return a torch package's version
    (``importlib.metadata.version("torch")``)?"""
    return callee.rsplit(".", 1)[-1] in _VERSION_QUERIES and \
        any(requirement(text) is not None for text in strings)


@dataclass(frozen=True)
class Operand:
    """One argument of a call as this vocabulary reads it, whatever the parser: its value
    when it is a string constant, its dotted name when it names something."""

    string: str | None = None
    dotted: str | None = None


def comparison_operator(args: list[Operand]) -> tuple[int, bool | None] | None:
    """The first argument that is a comparison operator (``">="``, ``operator.ge``): its
    position and which outcome means the newer release; None when no argument is one."""
    for position, arg in enumerate(args):
        if arg.string is not None and arg.string in OPERATOR_STRINGS:
            return position, OPERATOR_STRINGS[arg.string]
        dotted = arg.dotted or ""
        if dotted.startswith("operator.") and dotted[9:] in OPERATOR_FUNCTIONS:
            return position, OPERATOR_FUNCTIONS[dotted[9:]]
    return None


def checks_version(callee: str, args: list[Operand]) -> bool:
    """Is ``callee(*args)`` named for comparing a torch package's version: a function whose
    name says ``version`` given a torch package (``compare_version("torch", ...)``) or whose
    name says both (``is_torch_version(...)``)? With :func:`comparison_operator` it is a
    version check."""
    last = callee.rsplit(".", 1)[-1].lower()
    return "version" in last and ("torch" in last or any(
        arg.string is not None and requirement(arg.string) is not None for arg in args))
