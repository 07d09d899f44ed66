"""What a function of another file returns: a DataLoader, a module instance, a CPU tensor.

One file says what each of its functions returns (``FunctionSummary.returns`` in the
summary's value language, :mod:`.values`); the index resolves the names in it across files
(``ProjectIndex.content``, ``class_kind``); this module asks the question rules and
analyses ask, ``returns(qualified)``: TFC301 reads a loader factory of another file, the
value analyses a helper that returns ``model.cpu()`` or a detached tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project import ReturnFacts
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.project.values import Call, Tensor
from torchfix_codemods.analysis.vocabulary.torch_classes import is_dataloader_class

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex


def returns(index: ProjectIndex, file: IndexedFile, qualified: str) -> ReturnFacts | None:
    """What the function ``qualified`` (as ``file`` names it) returns, when a file of the run
    defines it and shows it: a DataLoader, an instance of a module class, a CPU tensor."""
    found = index.definition(qualified, file)
    if found is None or found.kind != "function":
        return None
    returns = found.file.summary.functions[found.name].returns
    where = found.file.display
    if isinstance(returns, Call):
        absolute = index.absolute(returns.dotted, found.file) or ""
        target = index.definition(returns.dotted, found.file)
        if is_dataloader_class(absolute) or (
                target is not None and target.kind == "class"
                and index.class_kind(target, is_dataloader_class)):
            return ReturnFacts("dataloader", f"returns a DataLoader ({where})", absolute)
    content = index.content(returns, found.file)
    if content.module is not None:
        return ReturnFacts("module", f"`{found.qualified}` returns an instance of "
                           f"`{content.module}` ({where})", content.module)
    if isinstance(returns, Tensor) and returns.cpu:
        detached = returns.detached
        return ReturnFacts("detached-cpu-tensor" if detached else "cpu-tensor",
                           f"`{found.qualified}` returns a "
                           f"{'detached ' if detached else ''}CPU tensor ({where})")
    return None


register(Fact("returns", None, {"returns": Question(returns)}))
