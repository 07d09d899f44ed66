"""Who calls a function from another file, and with what: is this parameter always a module?

One file records its calls (``FileSummary.calls``: callee, arguments in the value language,
the alternatives of a name bound several times); the index groups them by the function
they reach (``ProjectIndex.callers``, shared with the values that flow through parameters,
``arguments_of``); this module asks ``module_arguments(function)``: which parameters of a
module-level function every call from another file passes an ``nn.Module`` (the inference
rules then know ``def evaluate(model, loader)`` runs a model), and ``caller_files(function)``:
which files call it (a ``reproducibility_test`` helper run only by pytest files is test code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.project.values import SUBMODULE, AnyOf, Value

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex


def module_arguments(index: ProjectIndex, file: IndexedFile,
                     function: str) -> dict[str, str] | None:
    """Parameters of ``file``'s module-level ``function`` that every call from another file
    passes an ``nn.Module`` to, with the reason; None without such calls."""
    summary = file.summary.functions.get(function)
    calls = [(caller, call) for caller, call in index.callers.get((file.path, function), [])
             if caller is not file]
    if summary is None or not calls:
        return None
    found: dict[str, str] = {}
    for position, param in enumerate(summary.params):
        reasons = []
        for caller, call in calls:
            value = call.alternatives.get(str(position), call.alternatives.get(param)) or \
                call.args.get(str(position), call.args.get(param))
            module = _module_passed(index, value, caller) if value is not None else None
            if module is None:
                break
            reasons.append(f"{module} from {caller.display}")
        else:
            found[param] = "every call from another file passes an nn.Module (" + \
                ", ".join(sorted(set(reasons))) + ")"
    return found or None


def _module_passed(index: ProjectIndex, value: Value, caller: IndexedFile) -> str | None:
    """The module class an argument certainly passes (every alternative of a name bound
    several times is one); None when one alternative may be something else."""
    if value == SUBMODULE:
        return "each submodule, through `.apply()`"
    options = value.options if isinstance(value, AnyOf) else (value,)
    modules = [index.content(option, caller).module for option in options]
    return f"`{modules[0]}`" if modules and None not in modules else None


def caller_files(index: ProjectIndex, file: IndexedFile, function: str) -> tuple[str, ...]:
    """The other files of the run that call ``file``'s module-level ``function``, sorted
    (empty without such calls): whether a helper is only ever run by test files."""
    return tuple(sorted({caller.display for caller, _ in
                         index.callers.get((file.path, function), []) if caller is not file}))


register(Fact("callers", None, {"module_arguments": Question(module_arguments),
                                "caller_files": Question(caller_files, ())}))
