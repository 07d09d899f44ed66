"""DataLoaders: which calls build one, whether it starts worker processes, and how they start.

With ``num_workers > 0`` a ``DataLoader`` runs the dataset's ``__getitem__``/``__iter__``, the
``collate_fn`` and the ``worker_init_fn`` in worker processes. How those start matters:

* ``fork`` (Linux's default up to Python 3.13) copies the parent. CUDA cannot be used in a
  forked child once the parent initialised it: ``torch.cuda._lazy_init`` raises "Cannot
  re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the
  'spawn' start method" (read in torch 2.13's ``torch/cuda/__init__.py``).
* ``spawn`` (Windows, macOS) and ``forkserver`` start a fresh interpreter that re-imports the
  main script: script code not under ``if __name__ == "__main__":`` runs again in every worker,
  and a loader iterated there tries to start workers of its own while the process is still
  bootstrapping (measured: ``RuntimeError: An attempt has been made to start a new process
  before the current process has finished its bootstrapping phase``, then "DataLoader worker
  exited unexpectedly" in the parent).

## References
- https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading
- https://docs.pytorch.org/docs/stable/notes/multiprocessing.html
- https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods
"""

from __future__ import annotations

from typing import Literal

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function, methods_of
from torchfix_codemods.analysis.core.calls import argument, has_star_kwargs, keyword_arg
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    DATALOADER_CLASSES,
    DATASET_WORKER_METHODS,
)

DATALOADERS = DATALOADER_CLASSES
"""The name ``rules/data_parallel.py`` imports (it is being split on another branch):
removed when that branch is merged."""
WORKER_CODE_METHODS = DATASET_WORKER_METHODS
"""Methods of a dataset that a loader runs in its worker processes."""

Workers = Literal["none", "some", "unknown"]


def is_dataloader(names: NameIndex, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DATALOADER_CLASSES


def workers(call: cst.Call) -> Workers:
    """Whether a ``DataLoader(...)`` call starts worker processes: ``none`` without
    ``num_workers`` or with a literal 0, ``some`` for a positive literal, else ``unknown``."""
    found = argument(call, "num_workers", 5)
    if found is None:
        return "unknown" if has_star_kwargs(call) else "none"
    value = found.value
    if isinstance(value, cst.Integer):
        return "some" if int(value.value, 0) > 0 else "none"
    return "unknown"


def start_method(names: NameIndex, call: cst.Call) -> str | None:
    """The ``multiprocessing_context`` a loader names (``"spawn"``, ``"fork"``...), or None
    when it names none (the platform's default) or one the tool cannot read."""
    found = keyword_arg(call, "multiprocessing_context")
    if found is None:
        return None
    value = found.value
    if isinstance(value, cst.Call) and value.args:  # multiprocessing.get_context("spawn")
        value = value.args[0].value
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text if isinstance(text, str) else None
    return None


def dataset_argument(call: cst.Call) -> cst.BaseExpression | None:
    found = argument(call, "dataset", 0)
    return found.value if found is not None else None


def worker_methods(names: NameIndex, cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The dataset methods a loader's workers run (``__getitem__``...), found in ``cls`` or the
    classes of this file it derives from, plus the methods of ``self`` those call."""
    chain = [cls]
    assert names.module_scope is not None
    for _ in range(8):
        bases = [b.value.value for b in chain[-1].bases if isinstance(b.value, cst.Name)]
        parents = [names.module_scope.bindings.get(base, []) for base in bases]
        local = [found[0].node for found in parents
                 if len(found) == 1 and isinstance(found[0].node, cst.ClassDef)]
        if not local:
            break
        chain.append(local[0])
    methods: dict[str, cst.FunctionDef] = {}
    for owner in reversed(chain):
        methods.update(methods_of(owner))
    todo = [methods[name] for name in WORKER_CODE_METHODS if name in methods]
    found: dict[str, cst.FunctionDef] = {}
    while todo:
        method = todo.pop()
        if method.name.value in found:
            continue
        found[method.name.value] = method
        for node in walk_local(method.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                    isinstance(node.func.value, cst.Name) and node.func.value.value == "self" \
                    and node.func.attr.value in methods:
                todo.append(methods[node.func.attr.value])
    return list(found.values())


def worker_functions(names: NameIndex, call: cst.Call) -> list[tuple[str, cst.FunctionDef]]:
    """The functions of this file a loader runs in its workers besides the dataset's methods:
    its ``collate_fn`` and ``worker_init_fn`` (by name), with the argument's name."""
    found = []
    for keyword in ("collate_fn", "worker_init_fn"):
        arg = keyword_arg(call, keyword)
        if arg is None:
            continue
        function = defined_function(names, arg.value)
        if function is not None:
            found.append((keyword, function))
    return found
