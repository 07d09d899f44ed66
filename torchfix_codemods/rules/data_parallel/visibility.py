"""TFC301: a migration is whole only when every side effect of the epoch loop is in sight.

Under ``torchrun`` every process runs the epoch loop. The migration puts this file's saves,
prints and writes on rank 0 and shards the training loader; what it cannot see, it cannot
put on rank 0. microsoft/human-pose-estimation.pytorch's ``pose_estimation/train.py`` (the
heldout4 review: 7 wrong hunks of one migration) calls ``train``, ``validate`` and
``save_checkpoint`` of its ``lib/`` folder, which the index cannot resolve: they write
checkpoints, a results json and debug images on every rank, and ``validate`` reads the
unsharded ``valid_loader`` on every rank. A half-done migration looks finished and is not:
such a file keeps its DataParallel and gets a report that says why.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import called_functions, reached_calls
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.project import ProjectFacts
from torchfix_codemods.rules.data_parallel.shapes import _Irregular


def check_side_effects_visible(names: NameIndex, project: ProjectFacts, module: cst.Module,
                               loop: cst.For, loaders: list[cst.Call],
                               training: cst.Call | None) -> None:
    """Raise :class:`_Irregular` when the epoch loop (or a function of this file it runs)
    calls the project's own code that the analysis cannot resolve, or hands a DataLoader of
    this file that the migration does not shard to code outside this file."""
    unseen: dict[str, str] = {}
    for call in reached_calls(names, loop):
        qualified = names.qualified_name(call.func)
        if qualified is None or qualified in unseen:
            continue
        why = project.unresolved_project_code(qualified)
        if why is not None:
            unseen[qualified] = why
    if unseen:
        called = ", ".join(f"`{q}`" for q in unseen)
        reasons = "; ".join(dict.fromkeys(unseen.values()))
        raise _Irregular(
            f"the epoch loop calls the project's own code that the analysis cannot resolve "
            f"({called}: {reasons}), so what it writes cannot be put on rank 0 and every "
            "process of a launch would write the same files")
    evaluation = [c for c in loaders if c is not training]
    for call in reached_calls(names, loop):
        qualified = names.qualified_name(call.func)
        if qualified is None or called_functions(names, call):
            continue  # this file's own code (its writes are in sight), or no import
        if project.defined_in_run(qualified) is None and \
                project.unresolved_project_code(qualified) is None:
            continue  # not the project's code (`enumerate`, a library's evaluation)
        for arg in call.args:
            loader = _loader_read(names, arg.value, evaluation)
            if loader is None:
                continue
            line = positions_of(module, [call])[id(call)].start.line
            raise _Irregular(
                f"`{code_of(arg.value)}` (a DataLoader this migration does not shard) is "
                f"evaluated by `{code_of(call.func)}` (line {line}), the project's code in "
                f"another file: "
                "every process of a launch would run the whole evaluation and whatever it "
                "writes; shard it with DistributedSampler(shuffle=False) and put its writes "
                "on rank 0, or evaluate on rank 0 only")


def _loader_read(names: NameIndex, value: cst.BaseExpression,
                 loaders: list[cst.Call]) -> cst.Call | None:
    """The loader of ``loaders`` that the name ``value`` is bound to (every binding)."""
    if not isinstance(value, cst.Name) or not loaders:
        return None
    bindings = names.bindings_of(value)
    for binding in bindings:
        for loader in loaders:
            if binding.value is loader or (binding.value is not None and any(
                    n is loader for n in walk_local(binding.value))):
                return loader
    return None
