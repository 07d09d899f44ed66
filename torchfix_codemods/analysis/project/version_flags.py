"""Torch-version flags across files: is a module-level name a comparison of torch's version?

Compatibility guards (``if LEGACY:`` with ``LEGACY = torch.__version__ < "2.0"`` in another
file) are engine policy: no finding and no fix inside the old-torch branch. What one file
says is part of the summary's values (:mod:`.values`: ``Version``, ``Flag``, and ``Cmp`` /
``Flagged`` for what depends on imported names, evaluated by :mod:`.summary`); this module
combines them across files and answers the question ``version_flag(qualified)``:

True for a name bound to a comparison of torch's version (``torch.__version__``,
``packaging.version``, ``lightning_utilities``' ``compare_version("torch", ...)``,
``RequirementCache("torch>=2.1")``), to a boolean combination of flags, or to a call of a
function that returns one; also for such a function itself (``is_torch_version``). False
for any other name a file of the run defines; None (unknown) when no file of the run
defines it, and without an index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.project.values import (
    VERSION,
    AnyOf,
    Call,
    Cmp,
    Flag,
    Flagged,
    Ref,
    Value,
)

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex, _Definition

_MAX_DEPTH = 12


def version_flag(index: ProjectIndex, file: IndexedFile, qualified: str) -> bool | None:
    found = index.definition(qualified, file)
    if found is None:
        return None
    return definition_is_flag(index, found)


def is_flag(index: ProjectIndex, value: Value, file: IndexedFile, depth: int = 0) -> bool:
    if depth > _MAX_DEPTH:
        return False
    match value:
        case Flag():
            return True
        case Cmp(refs=refs):
            return any(_is_version_ref(index, part, file) for part in refs)
        case Flagged(values=parts):
            return any(is_flag(index, part, file, depth + 1) for part in parts)
        case Ref(dotted=dotted) | Call(dotted=dotted):
            found = index.definition(dotted, file)
            return found is not None and definition_is_flag(index, found, depth + 1)
    return False


def definition_is_flag(index: ProjectIndex, found: _Definition, depth: int = 0) -> bool:
    summary = found.file.summary
    if found.kind == "name":
        return is_flag(index, summary.names[found.name], found.file, depth + 1)
    if found.kind == "function":
        returns = summary.functions[found.name].returns
        options = returns.options if isinstance(returns, AnyOf) else (returns,)
        return bool(options) and all(is_flag(index, v, found.file, depth + 1) for v in options)
    return False


def _is_version_ref(index: ProjectIndex, part: Ref, file: IndexedFile) -> bool:
    found = index.definition(part.dotted, file)
    return found is not None and found.kind == "name" and \
        found.file.summary.names[found.name] == VERSION


register(Fact("version-flags", None, {"version_flag": Question(version_flag)}))
