"""Refer to an imported object in the file's own words, adding imports only when needed.

A fix that needs ``torch.no_grad`` must write ``T.no_grad`` where the file says
``import torch as T``, ``no_grad`` where it says ``from torch import no_grad``,
and add ``import torch`` only where no usable name exists. Writing ``torch.``
into a file with no ``torch`` name is the bug peers ship (NameError at import).
A name that only ``from utils import *`` binds is reused where the file already reads
it (the file depends on the star import for it anyway); a fix that would be the first
to read it adds its own import instead of depending on what ``utils`` imports today.
The same holds one level down: a name imported inside a function is reused
there, and a package the module imports only lazily (``import torchvision``
inside the branch that needs it) never becomes a module-level import, which
would make the whole file fail to import wherever that package is missing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import libcst as cst

from torchfix_codemods.analysis.core.definite import definitely_bound, execution_scope
from torchfix_codemods.analysis.core.names import Binding, NameIndex, Scope


@dataclass(frozen=True)
class ImportRequest:
    """An ``import module`` statement a fix needs added (``import torch``).

    ``after`` is None for a module-level import; otherwise the line of a
    function's own lazy import of the same package, after which the new import
    goes, so the function stays the only place that needs the package.
    """

    module: str
    after: cst.SimpleStatementLine | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ImportRemoval:
    """An imported name a fix may leave unused: ``from module import name``."""

    module: str
    name: str | None = None


@dataclass(frozen=True)
class Reference:
    """An expression naming an object, plus the import that makes it valid."""

    expression: cst.BaseExpression
    code: str
    needs: ImportRequest | None


class ImportUnavailable(Exception):
    """The object cannot be named here without shadowing something of the user's."""


class Imports:
    """Answers "how do I name ``qualified`` at this node?" for one module."""

    def __init__(self, names: NameIndex) -> None:
        self._names = names

    def reference(
        self, qualified: str, at: cst.CSTNode, module: str | None = None
    ) -> Reference:
        """Name ``qualified`` (``torch.amp.autocast``) as seen from node ``at``.

        Prefers the longest prefix already bound where ``at`` runs, so the rewrite
        reads like the code around it: a module-level alias, or a function's own
        lazy ``import torchvision.models as models`` (below that import only).
        Otherwise asks for ``import <module>`` (default: the top-level package),
        and spells the full dotted path: at module level when the module imports
        that package at module level (or it is in the standard library), else
        right after the function's own lazy import of the package. A module that
        imports the package only lazily never gets an eager import: importing the
        file must not start to need it.
        """
        parts = qualified.split(".")
        existing = self._existing_name(parts, at)
        if existing is not None:
            return Reference(cst.parse_expression(existing), existing, None)
        module = module or parts[0]
        top = module.split(".")[0]
        found = self._names.lookup(top, self._names.scope_of(at))
        if found is not None and all(b.star for b in found[1]):
            found = None  # only a star import binds it: an explicit import names it for sure
        if found is not None and found[0] is self._names.module_scope and \
                all(b.kind == "import" and b.qualified == top for b in found[1]) and \
                self._imported_at_module_level(top):
            # `import torch` only where `at` may not see it (the `__main__` block), while
            # the module always imports the package (`import torch.nn as nn`): one more
            # `import torch` at the top binds the same module everywhere.
            found = None
        if found is not None:
            if all(b.kind == "import" for b in found[1]):
                raise ImportUnavailable(
                    f"'{top}' is imported here only on some paths or after this point, "
                    f"cannot add 'import {module}'")
            raise ImportUnavailable(
                f"'{top}' is bound to something else here, cannot add 'import {module}'"
            )
        expression = cst.parse_expression(qualified)
        if top in sys.stdlib_module_names or self._imported_at_module_level(top):
            return Reference(expression, qualified, ImportRequest(module))
        anchor = self._lazy_import(top, at)
        if anchor is None:
            raise ImportUnavailable(
                f"this module imports '{top}' only lazily or conditionally; a module-level "
                f"'import {module}' would make importing it require '{top}'")
        return Reference(expression, qualified, ImportRequest(module, after=anchor))

    def _existing_name(self, parts: list[str], at: cst.CSTNode) -> str | None:
        """The longest-prefix spelling through an import bound wherever ``at`` runs."""
        best: str | None = None
        best_len = 0
        seen: set[str] = set()
        scope: Scope | None = self._names.scope_of(at)
        first = True
        while scope is not None:
            if scope.kind != "class" or first:
                for local, bindings in scope.bindings.items():
                    if local in seen:
                        continue  # shadowed by an inner scope's binding
                    seen.add(local)
                    target = _single_import(bindings)
                    if target is None or (bindings[0].star and
                                          not self._names.module_reads(local)):
                        # A name only a star import binds is reused where the file already
                        # relies on it; elsewhere the fix imports what it needs itself.
                        continue
                    target_parts = target.split(".")
                    if parts[: len(target_parts)] != target_parts or \
                            len(target_parts) <= best_len:
                        continue
                    if not self._names.resolves_to(local, target, at) or \
                            not definitely_bound(self._names, at, local):
                        continue
                    best = ".".join([local, *parts[len(target_parts):]])
                    best_len = len(target_parts)
            first = False
            scope = scope.parent
        return best

    def _imported_at_module_level(self, top: str) -> bool:
        """An import of ``top`` (or of a submodule) that always runs when the module is imported."""
        module_scope = self._names.module_scope
        assert module_scope is not None
        for bindings in module_scope.bindings.values():
            for binding in bindings:
                if binding.kind != "import" or (binding.qualified or "").split(".")[0] != top:
                    continue
                line = self._names.parent(binding.node)
                if isinstance(line, cst.SimpleStatementLine) and \
                        self._names.parent(line) is module_scope.node:
                    return True
        return False

    def _lazy_import(self, top: str, at: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The line of the function's own import of ``top`` that runs before ``at``."""
        scope = execution_scope(self._names, at)
        if scope.kind != "function":
            return None
        for local, bindings in scope.bindings.items():
            target = _single_import(bindings)
            if target is None or target.split(".")[0] != top:
                continue
            if not self._names.resolves_to(local, target, at) or \
                    not definitely_bound(self._names, at, local):
                continue
            line = self._names.parent(bindings[0].node)
            if isinstance(line, cst.SimpleStatementLine):
                return line
        return None


def _single_import(bindings: list[Binding]) -> str | None:
    """The qualified name a local is bound to when every binding is the same import."""
    if not bindings or any(b.kind != "import" for b in bindings):
        return None
    target = bindings[0].qualified
    if not target or any(b.qualified != target for b in bindings):
        return None
    return target
