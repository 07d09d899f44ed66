"""Classes of other files: is it an nn.Module, a Dataset, a DataLoader; does eval() matter?

One file says what its classes subclass (``FileSummary.classes``, bases as written) and
what in a class's body depends on the mode (``class_modes``: a Dropout it builds, a read of
``.training``, the classes it builds submodules from); the index follows bases across files
(``ProjectIndex.class_kind``, shared with the value resolution); this module combines the
mode tokens across files and asks ``class_facts(qualified)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.project import ClassFacts
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    NN_MODULE,
    is_dataloader_class,
    is_dataset_class,
    is_module_class,
)

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex, _Definition

_MAX_DEPTH = 12
_MODE: Slot[bool | None] = Slot("classes.changes_with_mode")
"""Per class (a cycle answers "unknown")."""


def changes_with_mode(index: ProjectIndex, definition: _Definition,
                      depth: int = 0) -> bool | None:
    """Whether ``eval()`` changes the forward of a class of the run: its own body
    (``FileSummary.class_modes``), the classes it builds submodules from, its bases."""
    return index.memo.once(_MODE.keyed(definition.qualified, definition.file.path),
                           lambda: _changes_with_mode(index, definition, depth))


def _changes_with_mode(index: ProjectIndex, definition: _Definition, depth: int) -> bool | None:
    summary = definition.file.summary
    tokens = summary.class_modes.get(definition.name)
    answer: bool | None = None if tokens is None else False
    for token in tokens or ():
        verdict = True if token == "yes" else None if token == "?" else \
            _referenced_mode(index, token.removeprefix("class:"), definition.file, depth)
        if verdict:
            answer = True
            break
        if verdict is None:
            answer = None
    if answer is not True:
        for base in summary.classes.get(definition.name, []):
            absolute = index.absolute(base, definition.file) if base != "?" else None
            if absolute in NN_MODULE:
                continue
            verdict = None if absolute is None else _referenced_mode(
                index, base, definition.file, depth)
            if verdict:
                answer = True
                break
            if verdict is None:
                answer = None
    return answer


def _referenced_mode(index: ProjectIndex, dotted: str, file: IndexedFile,
                     depth: int) -> bool | None:
    if depth > _MAX_DEPTH:
        return None
    found = index.definition(dotted, file)
    if found is None or found.kind != "class":
        return None
    return changes_with_mode(index, found, depth + 1)


def class_facts(index: ProjectIndex, file: IndexedFile, qualified: str) -> ClassFacts | None:
    """Facts about the class ``qualified`` (as ``file`` names it) when a file of the run
    defines it: module, dataset, loader (through its bases), and whether eval() matters."""
    found = index.definition(qualified, file)
    if found is None or found.kind != "class":
        return None
    return ClassFacts(found.qualified, found.file.path,
                      index.class_kind(found, is_module_class),
                      changes_with_mode=changes_with_mode(index, found),
                      is_dataset=index.class_kind(found, is_dataset_class),
                      is_dataloader=index.class_kind(found, is_dataloader_class))


register(Fact("classes", None, {"class_facts": Question(class_facts)}))
