"""Refer to an imported object in the file's own words, adding imports only when needed.

A fix that needs ``torch.no_grad`` must write ``T.no_grad`` where the file says
``import torch as T``, ``no_grad`` where it says ``from torch import no_grad``,
and add ``import torch`` only where no usable name exists. Writing ``torch.``
into a file with no ``torch`` name is the bug peers ship (NameError at import).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.names import NameIndex


@dataclass(frozen=True)
class ImportRequest:
    """An ``import module`` statement a fix needs added (``import torch``)."""

    module: str


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

        Prefers the longest prefix the file already imports, so the rewrite
        reads like the rest of the file. Otherwise asks for ``import <module>``
        (default: the top-level package) and spells the full dotted path.
        """
        parts = qualified.split(".")
        module_scope = self._names.module_scope
        assert module_scope is not None
        best: str | None = None
        best_len = 0
        for local, bindings in module_scope.bindings.items():
            if not bindings or any(b.kind != "import" for b in bindings):
                continue
            target = bindings[0].qualified or ""
            if any(b.qualified != target for b in bindings):
                continue
            target_parts = target.split(".")
            if parts[: len(target_parts)] != target_parts or len(target_parts) <= best_len:
                continue
            if not self._names.resolves_to(local, target, at):
                continue
            best = ".".join([local, *parts[len(target_parts):]])
            best_len = len(target_parts)
        if best is not None:
            return Reference(cst.parse_expression(best), best, None)
        module = module or parts[0]
        top = module.split(".")[0]
        if self._names.lookup(top, self._names.scope_of(at)) is not None:
            raise ImportUnavailable(
                f"'{top}' is bound to something else here, cannot add 'import {module}'"
            )
        return Reference(cst.parse_expression(qualified), qualified, ImportRequest(module))
