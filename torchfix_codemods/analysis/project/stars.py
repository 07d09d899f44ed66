"""Star imports: what ``from utils import *`` binds, when ``utils`` is a file of the run.

A file whose ``torch``, ``nn`` or model class arrives through ``from utils import *``
was invisible to every rule: nothing in it resolved to ``torch``. Python's rule is
simple enough to follow across files: a star import binds the module's ``__all__``
when it defines one, else every module-level name that does not start with an
underscore, names the module itself imported included (``import torch`` in
``utils.py`` makes ``torch`` visible to ``from utils import *``).

The fact, in one module (see :mod:`.registry`):

* what one file says (:func:`summarize`): its module-level star imports, its ``__all__``
  (when it is a literal list or tuple of strings; ``"?"`` when it is computed), and each
  module-level name with what binds it: the dotted target of an import (relative ones as
  written), ``"="`` for a definition of its own, ``"?"`` for a name bound in two
  different ways;
* how files combine (:func:`star_names`): the exported names of a file of the run, each
  with the qualified name it means, following that file's own star imports;
* the question ``imported_names()``: the names of the asking file that other files
  import from it, by name or by a star import (a fix must not remove such an import);
* the question (``star_names(module)``): what ``from <module> import *`` binds in the
  asking file, as ``{local: qualified}``; a name mapped to None is bound to something the
  index cannot name (ambiguous there). None when the module is not a file of the run
  (``from numpy import *``: unknown, nothing is bound) or its ``__all__`` is computed.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.project.registry import Fact, Question, register

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

NAME = "stars"
_MAX_DEPTH = 8
_AMBIGUOUS = "?"
_STARS: Slot[dict[str, str | None] | None] = Slot("stars.star_names")
_OWN = "="


def summarize(tree: ast.Module) -> dict[str, Any]:
    """What ``from <this file> import *`` can bind, and the file's own star imports."""
    bound: dict[str, str] = {}
    stars: list[str] = []
    exported: list[str] | str | None = None

    def bind(name: str, target: str) -> None:
        if bound.get(name, target) != target:
            target = _AMBIGUOUS
        bound[name] = target

    def visit(body: list[ast.stmt]) -> None:
        nonlocal exported
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bind(alias.asname, alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        bind(top, top)
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        stars.append(base)
                        continue
                    target = base + alias.name if base.endswith(".") or not base else \
                        f"{base}.{alias.name}"
                    bind(alias.asname or alias.name, target)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(node.name, _OWN)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in _names(target):
                        if name == "__all__":
                            exported = _literal_names(node) if exported is None and \
                                isinstance(node, ast.Assign) else _AMBIGUOUS
                        else:
                            bind(name, _OWN)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    for name in _names(node.target):
                        bind(name, _OWN)
                else:
                    for item in node.items:
                        if item.optional_vars is not None:
                            for name in _names(item.optional_vars):
                                bind(name, _OWN)
                visit(node.body)
                visit(getattr(node, "orelse", []))
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                visit(node.body)  # type: ignore[attr-defined]
                for handler in node.handlers:  # type: ignore[attr-defined]
                    visit(handler.body)
                visit(node.orelse)  # type: ignore[attr-defined]
                visit(node.finalbody)  # type: ignore[attr-defined]

    visit(tree.body)
    return {"bound": bound, "stars": stars, "all": exported}


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _literal_names(node: ast.Assign) -> list[str] | str:
    value = node.value
    if isinstance(value, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return [e.value for e in value.elts]  # type: ignore[attr-defined]
    return _AMBIGUOUS


def star_names(index: ProjectIndex, importer: IndexedFile, module: str,
               depth: int = 0) -> dict[str, str | None] | None:
    """What ``from <module> import *`` in ``importer`` binds: ``{local: qualified}``."""
    absolute = index.absolute(module, importer)
    if absolute is None or depth > _MAX_DEPTH:
        return None
    # Not through a sys.path folder: the summaries do not see what such a star import binds
    # (`torch.load` of a star-bound `torch`), so every rule would decide on half the facts
    # (heldout2's deeplab-xception train.py: `from modeling.deeplab import *`).
    owner = index.module_file(absolute, importer, sys_path=False)
    if owner is None:
        return None
    said = owner.summary.facts.get(NAME)
    # A cycle of star imports answers "unknown".
    return index.memo.once(_STARS.keyed(owner.path, depth), lambda: None if said is None else
                           _exports(index, owner, said, depth))


def _exports(index: ProjectIndex, owner: IndexedFile, said: dict[str, Any],
             depth: int) -> dict[str, str | None] | None:
    exported = said["all"]
    if exported == _AMBIGUOUS:
        return None
    found: dict[str, str | None] = {}
    for module in said["stars"]:
        inner = star_names(index, owner, module, depth + 1)
        if inner is None:
            continue  # a star import of a module outside the run: its names stay unknown
        found.update(inner)
    prefix = f"{owner.module}." if owner.module else ""
    for name, target in said["bound"].items():
        if target == _OWN:
            found[name] = prefix + name
        elif target == _AMBIGUOUS:
            found[name] = None
        else:
            found[name] = index.absolute(target, owner)
    if exported is None:
        return {name: target for name, target in found.items() if not name.startswith("_")}
    # ``__all__`` may name a submodule of a package that nothing binds at module level.
    return {name: found.get(name, prefix + name) for name in exported}


_IMPORTED: Slot[dict[str, frozenset[str]]] = Slot("stars.imported_from")
EVERY_NAME = "*"
"""In :func:`imported_names`: another file star-imports this one and its ``__all__`` is
computed, so any of its names may be read there."""


def imported_names(index: ProjectIndex, file: IndexedFile) -> frozenset[str]:
    """The module-level names of ``file`` that other files of the run import from it:
    by name (``from utils import Variable``) or by a star import (every name it exports).

    An import a fix leaves unused here may still be read there: ``train.py`` calls
    ``Variable`` that ``from utils import *`` binds because ``utils.py`` imports it.
    """
    table = index.memo.built(_IMPORTED, lambda: _importers_table(index))
    return table.get(file.path, frozenset())


def _importers_table(index: ProjectIndex) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for other in index.files.values():
        said = other.summary.facts.get(NAME)
        if said is None:
            continue
        for module in said["stars"]:
            absolute = index.absolute(module, other)
            owner = None if absolute is None else index.module_file(absolute, other)
            if owner is None or owner is other:
                continue
            names = star_names(index, other, module)
            found.setdefault(owner.path, set()).update(
                {EVERY_NAME} if names is None else set(names))
        for target in said["bound"].values():
            if target in (_OWN, _AMBIGUOUS):
                continue
            absolute = index.absolute(target, other)
            module, _, name = (absolute or "").rpartition(".")
            owner = index.module_file(module, other) if module else None
            if owner is not None and owner is not other:
                found.setdefault(owner.path, set()).add(name)
    return {path: frozenset(names) for path, names in found.items()}


register(Fact(NAME, summarize, {
    "star_names": Question(lambda index, file, module: star_names(index, file, module)),
    "imported_names": Question(imported_names, frozenset()),
}))
