"""Dataset classes of the run whose worker code does CUDA work: ``dataset_cuda_work(qualified)``.

A ``DataLoader`` with worker processes runs its dataset's ``__getitem__`` (``__getitems__``,
``__iter__``, ``__next__``, and the methods of ``self`` they call) in the workers, and a
forked worker cannot use CUDA. TFC303 follows a dataset class of the loader's own file on
LibCST; this fact answers for a class another file of the run defines
(``from data import Images``).

What one file says (``summarize``): for each module-level class, the first CUDA work its
worker methods do, as ``[method, what]``; methods come from the class and from the classes of
the same file it derives from, a subclass's own overriding its base's, as Python looks them
up. The evidence is ``facts/devices.cuda_work``'s on ``ast``: ``x.cuda()``, ``x.to(<cuda>)``,
a torch function's ``device=<cuda>``, a ``torch.cuda`` call other than the queries; ``<cuda>``
is a string naming a CUDA device, an f-string starting with ``cuda``, ``torch.device`` of
one, or a module-level name bound once to such a string. Anything else is no evidence (a
``device`` parameter, ``self.device``), and neither is a base class of another file: the
answer is then None and the rule stays quiet. How files combine: the asking file's name for
the class is resolved through the index (re-exports followed). No line numbers are kept, so
moving lines in the dataset's file changes no message and no other file's cache key.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.core.ast_walk import iter_child_nodes
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.vocabulary.torch_api import CUDA_QUERIES, names_cuda_device
from torchfix_codemods.analysis.vocabulary.torch_classes import DATASET_WORKER_METHODS

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

NAME = "dataset-cuda"
_MAX_BASES = 8


@dataclass(frozen=True)
class DatasetCudaWork:
    """CUDA work in the worker code of a dataset class of another file of the run."""

    method: str
    """``Images.__getitem__``: the method that does it (maybe one the worker methods call)."""
    what: str
    """``.cuda()``, ``torch.cuda.synchronize()``...: the evidence, for the finding's reason."""
    where: str
    """The file that defines the class (no line: a message must not change when it moves)."""


class _File:
    """One file's imports and module-level device strings: what a dotted name means."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[str, str] = {}
        assigned: dict[str, list[ast.expr]] = {}
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.imports[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(node.value)
        self.constants = {name: values[0] for name, values in assigned.items()
                          if len(values) == 1 and name not in self.imports}

    def qualified(self, node: ast.expr) -> str | None:
        """``torch.cuda.synchronize`` for ``T.cuda.synchronize`` under ``import torch as T``."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.imports:
            return None
        return ".".join([self.imports[node.id], *reversed(parts)])

    def cuda_device(self, node: ast.expr | None, constant: bool = True) -> str | None:
        """Why ``node`` names a CUDA device, or None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return f"`{node.value!r}`" if names_cuda_device(node.value) else None
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and str(first.value).startswith("cuda"):
                return "an f-string naming a CUDA device"
            return None
        if isinstance(node, ast.Call) and self.qualified(node.func) == "torch.device":
            first = _argument(node, "type", 0)
            return "`torch.device(\"cuda\")`" if self.cuda_device(first, constant) else None
        if isinstance(node, ast.Name) and constant and node.id in self.constants:
            return self.cuda_device(self.constants[node.id], constant=False)
        return None

    def cuda_work(self, call: ast.Call) -> str | None:
        """Why ``call`` initialises or uses CUDA (``facts/devices.cuda_work``'s evidence)."""
        func = call.func
        qualified = self.qualified(func)
        if qualified is None and isinstance(func, ast.Attribute):
            if func.attr == "cuda":
                return "`.cuda()`"
            if func.attr == "to":
                why = self.cuda_device(_argument(call, "device", 0))
                return f"`.to()` a CUDA device ({why})" if why is not None else None
            return None
        if qualified is None:
            return None
        if qualified.startswith("torch.cuda.") and qualified not in CUDA_QUERIES and \
                qualified.split(".")[2][:1].islower():
            return f"`{qualified}()`"
        if qualified.startswith("torch."):
            device = next((k.value for k in call.keywords if k.arg == "device"), None)
            why = self.cuda_device(device)
            if why is not None:
                return f"`{qualified}(..., device=...)` on a CUDA device ({why})"
        return None


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    found = next((k.value for k in call.keywords if k.arg == keyword), None)
    if found is None and len(call.args) > position and \
            not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        found = call.args[position]
    return found


def _calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """The calls of one function's own scope (not of functions or classes it defines), in
    source order."""
    found: list[ast.Call] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        stack.extend(iter_child_nodes(node))
    return iter(sorted(found, key=lambda call: (call.lineno, call.col_offset)))


def _methods(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]
             ) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The class's methods with those of the classes of this file it derives from (the first
    such base at each step, as ``facts/dataloaders.worker_methods`` follows them)."""
    chain = [cls]
    for _ in range(_MAX_BASES):
        local = [classes[b.id] for b in chain[-1].bases
                 if isinstance(b, ast.Name) and b.id in classes and classes[b.id] not in chain]
        if not local:
            break
        chain.append(local[0])
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for owner in reversed(chain):
        methods.update({node.name: node for node in owner.body
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))})
    return methods


def _first_cuda_work(file: _File, methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
                     ) -> list[str] | None:
    todo = [methods[name] for name in DATASET_WORKER_METHODS if name in methods]
    seen: set[str] = set()
    while todo:
        method = todo.pop(0)
        if method.name in seen:
            continue
        seen.add(method.name)
        for call in _calls(method):
            why = file.cuda_work(call)
            if why is not None:
                return [method.name, why]
            func = call.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    func.value.id == "self" and func.attr in methods:
                todo.append(methods[func.attr])
    return None


def summarize(tree: ast.Module) -> dict[str, list[str]]:
    """``{class: [method, what]}`` for the classes of this file whose worker methods do CUDA
    work."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if not classes:
        return {}
    file = _File(tree)
    found: dict[str, list[str]] = {}
    for name, cls in classes.items():
        work = _first_cuda_work(file, _methods(cls, classes))
        if work is not None:
            found[name] = work
    return found


def dataset_cuda_work(index: ProjectIndex, file: IndexedFile,
                      qualified: str) -> DatasetCudaWork | None:
    """The CUDA work the worker code of the class ``qualified`` (as ``file`` names it) does,
    when a file of the run defines the class and shows it; None otherwise (unknown)."""
    found = index.definition(qualified, file)
    if found is None or found.kind != "class":
        return None
    said = found.file.summary.facts.get(NAME, {}).get(found.name)
    if said is None:
        return None
    method, what = said
    return DatasetCudaWork(f"{found.name}.{method}", what, found.file.display)


register(Fact(NAME, summarize, {"dataset_cuda_work": Question(dataset_cuda_work)}))
