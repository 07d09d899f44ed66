"""TFC301's data side across files: the loader another file builds for a DataParallel loop.

One file says how it trains (``FileSummary.data_parallel``: wraps, trains, its loader
calls), which of its functions build a loader (``loader_functions``) and which loaders it
hands to another file's class (``passed_loaders``); this module combines them, per run,
into loader shards (the training file and the loader file migrated together, or why not)
and answers the four questions TFC301 asks: ``training_loaders()``, ``loader_shard(f)``,
``loaders_passed_to(cls)``, ``passed_loader_shard(cls)``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project import LoaderShard
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.project.values import Call
from torchfix_codemods.analysis.vocabulary.naming import named_for_evaluation
from torchfix_codemods.analysis.vocabulary.torch_classes import is_dataloader_class

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex, _Definition
    from torchfix_codemods.analysis.project.summary import (
        DataParallelUse,
        LoaderCall,
        PassedLoader,
    )


def _build_loader_shards(index: ProjectIndex) -> dict[tuple[str, str], LoaderShard]:
    """Every DataParallel training file's loader calls that reach a loader function of
    another file: by (training file path, callee as that file spells it)."""
    table: dict[tuple[str, str], LoaderShard] = {}
    for training in index.files.values():
        use = training.summary.data_parallel
        if use is None or training.notebook:
            continue
        for call in use.loader_calls:
            shard = _loader_shard(index, training, use, call)
            if shard is not None:
                table[(training.path, call.callee)] = shard
    return table


def loader_shards(index: ProjectIndex) -> dict[tuple[str, str], LoaderShard]:
    return index.table("loader_shards.loader_shards", lambda: _build_loader_shards(index))


def _build_shards_by_loader_file(index: ProjectIndex) -> dict[str, tuple[LoaderShard, ...]]:
    table: dict[str, list[LoaderShard]] = {}
    for shard in [*loader_shards(index).values(), *passed_shards(index).values()]:
        if shard.problem is None:
            table.setdefault(os.path.abspath(shard.loader_path), []).append(shard)
    return {path: tuple(shards) for path, shards in table.items()}


def _shards_by_loader_file(index: ProjectIndex) -> dict[str, tuple[LoaderShard, ...]]:
    return index.table("loader_shards._shards_by_loader_file", lambda: _build_shards_by_loader_file(index))


def training_loaders(index: ProjectIndex, file: IndexedFile) -> tuple[LoaderShard, ...]:
    return _shards_by_loader_file(index).get(os.path.abspath(file.path), ())


def _loader_shard(index: ProjectIndex, training: IndexedFile, use: DataParallelUse,
                  call: LoaderCall) -> LoaderShard | None:
    found = index.definition(call.callee, training)
    if found is None or found.kind != "function" or found.file is training:
        return None
    loader = found.file.summary.loader_functions.get(found.name)
    if loader is None:
        return None

    def shard(problem: str | None = None) -> LoaderShard:
        return LoaderShard(found.file.display, found.name, loader.line, training.display,
                           call.target, problem)

    if loader.problem is not None:
        return shard(loader.problem)
    if found.file.notebook:
        return shard("it is in a notebook")
    problem = _pairing_problem(index, training, use, found.file)
    if problem is not None:
        return shard(problem)
    calls = call_count(index, found)
    if calls != 1:
        return shard(f"`{found.name}()` is called {calls} times in the run: a sampler there "
                     "would shard every caller's data")
    return shard()


def _pairing_problem(index: ProjectIndex, training: IndexedFile, use: DataParallelUse,
                     building: IndexedFile) -> str | None:
    """Why a training file and the file that builds its loader cannot be migrated
    together (the rule would not migrate the training file, or not both files)."""
    other = building.summary.data_parallel
    if other is not None and other.wraps:
        return "that file wraps a model in DataParallel too"
    if not use.wraps or use.distributed or not use.trains:
        return ("the training file is not a DataParallel training loop without a "
                "distributed path of its own")
    if use.problem is not None:
        return use.problem
    from torchfix_codemods.analysis.project.index import _same_policy

    if not _same_policy(index.shardable, training, building):
        return "TFC301 does not run with the same fix policy on both files in this run"
    return None


def _build_passed_shards(index: ProjectIndex) -> dict[tuple[str, str], LoaderShard]:
    """Loaders handed to a DataParallel trainer class's constructor by another file: by
    (path of the class's file, class name). Only a keyword not named for evaluation."""
    table: dict[tuple[str, str], LoaderShard] = {}
    for building in index.files.values():
        for passed in building.summary.passed_loaders:
            if named_for_evaluation(passed.keyword):
                continue
            found = index.definition(passed.callee, building)
            if found is None or found.kind != "class" or found.file is building:
                continue
            use = found.file.summary.data_parallel
            if use is None or found.name not in use.classes or found.file.notebook:
                continue
            table[(found.file.path, found.name)] = _passed_shard(index,
                building, passed, found, use)
    return table


def passed_shards(index: ProjectIndex) -> dict[tuple[str, str], LoaderShard]:
    return index.table("loader_shards.passed_shards", lambda: _build_passed_shards(index))


def _passed_shard(index: ProjectIndex, building: IndexedFile, passed: PassedLoader,
                  found: _Definition,
                  use: DataParallelUse) -> LoaderShard:
    problem = passed.problem or ("it is in a notebook" if building.notebook else None) or \
        _pairing_problem(index, found.file, use, building)
    if problem is None:
        calls = call_count(index, found)
        if calls != 1:
            problem = (f"`{found.name}` is built {calls} times in the run: which loader "
                       "trains is not one place")
    return LoaderShard(building.display, passed.function, passed.line, found.file.display,
                       passed.target, problem, passed_as=passed.keyword)


def _build_loaders_passed(index: ProjectIndex) -> dict[tuple[str, str], tuple[str, ...]]:
    """DataLoaders passed to a class's constructor from another file: by (path of the
    class's file, class name), where each is passed (BERT-pytorch's trainer)."""
    table: dict[tuple[str, str], list[str]] = {}
    for caller in index.files.values():
        for call in caller.summary.calls:
            passed = [key for key, value in call.args.items()
                      if isinstance(value, Call) and not named_for_evaluation(key)
                      and _is_loader_class(index, value.dotted, caller)]
            if not passed:
                continue
            found = index.definition(call.callee, caller)
            if found is None or found.kind != "class" or found.file is caller:
                continue
            for key in passed:
                argument = f"argument {int(key) + 1}" if key.isdigit() else f"`{key}=`"
                table.setdefault((found.file.path, found.name), []).append(
                    f"{argument} of `{found.name}(...)` in {caller.display} line {call.line}")
    return {key: tuple(value) for key, value in table.items()}


def _loaders_passed(index: ProjectIndex) -> dict[tuple[str, str], tuple[str, ...]]:
    return index.table("loader_shards._loaders_passed", lambda: _build_loaders_passed(index))


def _is_loader_class(index: ProjectIndex, dotted: str, file: IndexedFile) -> bool:
    absolute = index.absolute(dotted, file) or ""
    if is_dataloader_class(absolute):
        return True
    found = index.definition(dotted, file)
    return found is not None and found.kind == "class" and bool(
        index.class_kind(found, is_dataloader_class))


def loaders_passed_to(index: ProjectIndex, file: IndexedFile,
                      class_name: str) -> tuple[str, ...]:
    return _loaders_passed(index).get((file.path, class_name), ())


def passed_loader_shard(index: ProjectIndex, file: IndexedFile,
                        class_name: str) -> LoaderShard | None:
    return passed_shards(index).get((file.path, class_name))


def call_count(index: ProjectIndex, found: _Definition) -> int:
    """How many calls of the function ``found`` the run's files make (calls only: a
    function passed around as a value is not counted)."""
    count = 0
    for indexed in index.files.values():
        for dotted, times in indexed.summary.callees.items():
            if dotted.rsplit(".", 1)[-1] != found.name:
                continue
            target = index.definition(dotted, indexed)
            if target is not None and target.file is found.file and target.name == found.name:
                count += times
    return count


def loader_shard(index: ProjectIndex, file: IndexedFile, qualified: str) -> LoaderShard | None:
    """The loader the function ``qualified`` of another file builds for ``file``'s
    DataParallel training loop; None when it is not one."""
    return loader_shards(index).get((file.path, qualified))


register(Fact("loader-shards", None, {
    "training_loaders": Question(training_loaders, ()),
    "loader_shard": Question(loader_shard),
    "loaders_passed_to": Question(loaders_passed_to, ()),
    "passed_loader_shard": Question(passed_loader_shard),
}))
