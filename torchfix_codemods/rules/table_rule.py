"""The base of the rules driven by ``rules/data/replacements.toml`` (TFC401, TFC402, TFC405,
TFC406, TFC409).

A :class:`TableRule` finds every use of an old name from its rows of the table:
calls (rewritten through :func:`map_call` or a named handler), bare references
(``act = F.tanh``: renamed when the new name is a drop-in, else reported) and
``from old.module import name`` statements (rewritten when every imported name
moves to the same new module under the same name). It names the new API in the
file's own alias (``T.linalg.qr`` under ``import torch as T``) and asks for an
import only where the file has no usable name, so a fix never writes ``torch.``
into a file without a ``torch`` name.

This module defines no ``RULES``: it is a base, not a rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.edits.call_mapping import Unmappable, map_call
from torchfix_codemods.edits.references import ImportRemoval, ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Fix, Rule
from torchfix_codemods.rules.tables import Replacement, replacements_for

Handler = Callable[["TableRule", cst.Call, Replacement, cst.BaseExpression], "cst.Call | Fix"]


def _is_target(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    """Whether ``node`` is written (assigned, augmented, deleted), not read."""
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return True
    return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node


class TableRule(Rule):
    """Base of the rules whose facts are rows of ``replacements.toml``."""

    handlers: ClassVar[dict[str, Handler]] = {}
    report_imports: ClassVar[bool] = True
    """Also report ``from old import name`` lines (TorchFix's TOR004/TOR103/TOR105)."""

    @classmethod
    def table(cls) -> dict[str, Replacement]:
        return replacements_for(cls.code)

    @classmethod
    def file_needs(cls) -> Needs:
        """An old name's last part is an attribute or an imported name in every use this rule
        reports (and in every import of it), whatever the aliases; or the rule's own
        ``needs``, for what its handlers report beyond the table."""
        derived = Needs.any_of(*{old.rsplit(".", 1)[-1] for old in cls.table()})
        return derived if cls.needs is None else derived | cls.needs

    # ------------------------------------------------------------ visiting
    def visit_Module(self, node: cst.Module) -> None:
        # Names bound by an import that leads to a table entry: only their reads
        # can be old names, so every other Name and Attribute is skipped cheaply.
        keys = list(self.table())
        self._roots: set[str] = set()
        for scope in self.names.all_scopes:
            for local, bindings in scope.bindings.items():
                for binding in bindings:
                    qualified = binding.qualified
                    if binding.kind == "import" and qualified and any(
                            key == qualified or key.startswith(qualified + ".") for key in keys):
                        self._roots.add(local)

    def _may_match(self, node: cst.BaseExpression) -> bool:
        while isinstance(node, cst.Attribute):
            node = node.value
        return isinstance(node, cst.Name) and node.value in self._roots

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Call) or not self._may_match(node.func):
            return
        qualified = self.qualified_name(node.func)
        spec = self.table().get(qualified or "")
        if spec is not None:
            self.check_call(node, spec)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._may_match(node):
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._roots and self.names.is_read(node):
            self._reference(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self.report_imports or isinstance(node.names, cst.ImportStar) or node.relative:
            return
        module = dotted_name(node.module) if node.module is not None else None
        if module is None:
            return
        table = self.table()
        found = [table[f"{module}.{dotted_name(alias.name)}"] for alias in node.names
                 if f"{module}.{dotted_name(alias.name)}" in table]
        if not found:
            return
        fix = self._import_fix(node, module)
        for spec in found:
            message = f"import of {spec.note[0].lower()}{spec.note[1:]}" if spec.note else self.message
            self.report(node, message, fix=fix)

    # ------------------------------------------------------------- helpers
    def _reference(self, node: cst.Name | cst.Attribute) -> None:
        """A use of an old name that is not the callee of a call."""
        parent = self.names.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if isinstance(parent, (cst.ImportAlias, cst.ImportFrom)):
            return
        if _is_target(node, parent):
            return  # `F.sigmoid = mine` patches the old name; renaming it would patch another
        qualified = self.qualified_name(node)
        spec = self.table().get(qualified or "")
        if spec is None:
            return
        if isinstance(node, cst.Name) and self._fixed_by_import(node):
            self.report(node, spec.note, reason="the import is rewritten")
            return
        if not spec.mapping.passthrough or spec.new is None:
            self.report(node, f"{spec.note}; it is not called here, so no fix",
                        reason="not a call")
            return
        try:
            reference = self.context.imports.reference(spec.new, node)
        except ImportUnavailable as error:
            self.report(node, f"{spec.note}; no fix: {error}")
            return
        self.report(node, spec.note, fix=self._fix(spec, node, reference.expression.with_changes(
            lpar=node.lpar, rpar=node.rpar), reference.needs, node))

    def check_call(self, call: cst.Call, spec: Replacement) -> None:
        """Report one call of an old name, with the rewrite when it can be made exactly."""
        if spec.new is None:
            self.report(call, spec.note)
            return
        if isinstance(call.func, cst.Name) and self._fixed_by_import(call.func):
            self.report(call, spec.note, reason="the import is rewritten")
            return
        try:
            reference = self.context.imports.reference(spec.new, call)
        except ImportUnavailable as error:
            self.report(call, f"{spec.note}; no fix: {error}")
            return
        try:
            handler = self.handlers.get(spec.handler or "")
            if handler is not None:
                result = handler(self, call, spec, reference.expression)
            else:
                result = map_call(call, spec.mapping, reference.expression)
        except Unmappable as why:
            self.report(call, f"{spec.note}; no fix: {why}")
            return
        if isinstance(result, Fix):
            if reference.needs is not None and reference.needs not in result.imports:
                result.imports = (*result.imports, reference.needs)
            self.report(call, spec.note, fix=result)
            return
        self.report(call, spec.note, fix=self._fix(spec, call, result, reference.needs, call.func))

    def _fix(self, spec: Replacement, old: cst.CSTNode, new: cst.CSTNode, needs: object,
             func: cst.BaseExpression, safety: Safety | None = None) -> Fix:
        imports = (needs,) if needs is not None else ()
        return Fix(
            safety or spec.safety,
            f"use `{spec.new}`",
            [(old, new)],
            imports=imports,  # type: ignore[arg-type]
            remove_imports=self.import_removals(func),
            min_torch=spec.min_torch,
        )

    def import_removals(self, func: cst.BaseExpression) -> tuple[ImportRemoval, ...]:
        """The import a rewritten name may leave unused (only unaliased ones)."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return ()
        binding = self.names.binding_of(root)
        if binding is None or binding.kind != "import" or binding.qualified is None:
            return ()
        statement = binding.node
        if isinstance(statement, cst.ImportFrom) and isinstance(statement.names, tuple | list):
            for alias in statement.names:
                if alias.asname is None and dotted_name(alias.name) == root.value:
                    module, _, name = binding.qualified.rpartition(".")
                    return (ImportRemoval(module, name),)
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                if alias.asname is None and dotted_name(alias.name) == binding.qualified:
                    return (ImportRemoval(binding.qualified),)
        return ()

    def _fixed_by_import(self, name: cst.Name) -> bool:
        binding = self.names.binding_of(name)
        if binding is None or binding.kind != "import" or not isinstance(binding.node, cst.ImportFrom):
            return False
        statement = binding.node
        module = dotted_name(statement.module) if statement.module is not None else None
        return (self.report_imports and module is not None
                and self._import_fix(statement, module) is not None)

    def _import_fix(self, node: cst.ImportFrom, module: str) -> Fix | None:
        """``from old.mod import a, b`` -> ``from new.mod import a, b`` when all move together."""
        if isinstance(node.names, cst.ImportStar):
            return None
        table = self.table()
        targets = set()
        specs = []
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            spec = table.get(f"{module}.{name}")
            if spec is None or not spec.mapping.passthrough or spec.new is None:
                return None
            new_module, _, new_name = spec.new.rpartition(".")
            if new_name != name:
                return None
            targets.add(new_module)
            specs.append(spec)
        if len(targets) != 1:
            return None
        new_module = targets.pop()
        safety = Safety.SAFE if all(s.safety is Safety.SAFE for s in specs) else Safety.UNSAFE
        versions = [s.min_torch for s in specs if s.min_torch is not None]
        return Fix(
            safety,
            f"import from `{new_module}`",
            [(node, node.with_changes(module=cst.parse_expression(new_module)))],
            min_torch=max(versions) if versions else None,
        )
