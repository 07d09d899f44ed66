"""Is this expression an ``nn.Module``? Evidence-based, with a reason a reviewer can read.

Shared by every rule that must tell a model from a tensor or a state dict
(saving a whole module, loading into one, calling ``.forward``). The answer is
a reason string when there is evidence, and None when there is none: "unknown"
is never upgraded to "module" by a variable's name alone.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.names import NameIndex

_NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer"})
_CHAINABLE = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double",
                        "bfloat16", "requires_grad_", "to_empty"})
_MAX_DEPTH = 6
# Functions that return the module they are given, reparametrized.
_WRAPPERS = frozenset({
    "torch.nn.utils.weight_norm", "torch.nn.utils.spectral_norm",
    "torch.nn.utils.parametrizations.weight_norm", "torch.nn.utils.parametrizations.spectral_norm",
    "torch.nn.utils.parametrizations.orthogonal", "torch.nn.utils.parametrize.register_parametrization",
})


def module_classes(names: NameIndex) -> dict[str, cst.ClassDef]:
    """Classes defined at module level that subclass ``torch.nn.Module`` (transitively)."""
    cached = names.cache.get("module_classes")
    if cached is not None:
        return cached  # type: ignore[return-value]
    assert names.module_scope is not None
    classes = {
        name: bindings[0].node
        for name, bindings in names.module_scope.bindings.items()
        if len(bindings) == 1 and bindings[0].kind == "class"
    }
    found: dict[str, cst.ClassDef] = {}
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name in found or not isinstance(node, cst.ClassDef):
                continue
            for base in node.bases:
                qualified = names.qualified_name(base.value) or ""
                local = base.value.value if isinstance(base.value, cst.Name) else None
                if qualified.startswith("torch.nn.") and qualified.split(".")[-1] not in \
                        _NOT_MODULES and qualified.split(".")[-1][:1].isupper():
                    found[name] = node
                elif local in found:
                    found[name] = node
                else:
                    continue
                changed = True
                break
    names.cache["module_classes"] = found
    return found


def enclosing_class(names: NameIndex, node: cst.CSTNode) -> cst.ClassDef | None:
    return names.enclosing(node, cst.ClassDef)


def module_evidence(names: NameIndex, expr: cst.BaseExpression, depth: int = 0) -> str | None:
    """Why ``expr`` is an ``nn.Module`` instance, or None without evidence."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        return _call_evidence(names, expr, depth)
    if isinstance(expr, cst.Name):
        return _name_evidence(names, expr, depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
        inner = module_evidence(names, expr.value, depth + 1)
        return f"`.module` of a wrapped model ({inner})" if inner else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
            and expr.value.value == "self":
        return _submodule_evidence(names, expr, depth)
    return None


def _submodule_evidence(names: NameIndex, expr: cst.Attribute, depth: int) -> str | None:
    """``self.fc`` inside an nn.Module subclass whose ``__init__`` assigns it a module.

    Every ``self.fc = ...`` in the class must be a module (one in ``__init__``
    at least), so a later ``self.fc = None`` or a tensor makes it unknown.
    """
    owner = enclosing_class(names, expr)
    if owner is None or owner.name.value not in module_classes(names):
        return None
    attr = expr.attr.value
    values: list[tuple[str, cst.BaseExpression | None]] = []
    for statement in owner.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        for node in self_assignments(statement, attr):
            values.append((statement.name.value, node))
    if not values or not any(method == "__init__" for method, _ in values):
        return None
    reasons = []
    for _, value in values:
        reason = module_evidence(names, value, depth + 1) if value is not None else None
        if reason is None:
            return None
        reasons.append(reason)
    return f"`self.{attr}` of `{owner.name.value}`, assigned {reasons[0]}"


def self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression | None]:
    """Values assigned to ``self.<attr>`` in one method (None: not a plain assignment)."""
    found: list[cst.BaseExpression | None] = []

    class _Collect(cst.CSTVisitor):
        def _is_target(self, node: cst.BaseExpression) -> bool:
            return (isinstance(node, cst.Attribute) and node.attr.value == attr
                    and isinstance(node.value, cst.Name) and node.value.value == "self")

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if self._is_target(target.target):
                    found.append(node.value if len(node.targets) == 1 else None)
                elif isinstance(target.target, (cst.Tuple, cst.List)) and any(
                        self._is_target(e.value) for e in target.target.elements):
                    found.append(None)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if self._is_target(node.target):
                found.append(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if self._is_target(node.target):
                found.append(None)

    function.body.visit(_Collect())
    return found


def _call_evidence(names: NameIndex, call: cst.Call, depth: int) -> str | None:
    qualified = names.qualified_name(call.func)
    if qualified is not None:
        last = qualified.split(".")[-1]
        if qualified.startswith("torch.nn.") and last[:1].isupper() and last not in _NOT_MODULES:
            return f"instance of `{qualified}`"
        if qualified.startswith("torchvision.models.") and last[:1].islower():
            return f"model built by `{qualified}`"
        if qualified in _WRAPPERS and call.args and call.args[0].keyword is None:
            inner = module_evidence(names, call.args[0].value, depth + 1)
            return f"`{qualified}` of a module ({inner})" if inner else None
        return None
    if isinstance(call.func, cst.Name) and call.func.value in module_classes(names):
        binding = names.binding_of(call.func)
        if binding is not None and binding.kind == "class":
            return f"instance of `{call.func.value}`, an nn.Module subclass in this file"
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _CHAINABLE:
        inner = module_evidence(names, call.func.value, depth + 1)
        return inner
    return None


def _is_torch_load(names: NameIndex, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and names.qualified_name(value.func) == "torch.load"


def _name_evidence(names: NameIndex, name: cst.Name, depth: int) -> str | None:
    bindings = names.bindings_of(name)
    if not bindings:
        return None
    # `model = model.cuda()` rebinds a name in terms of itself: following it again from
    # inside itself adds nothing and, repeated, costs exponential time.
    resolving: set[int] = names.cache.setdefault("modules.resolving", set())  # type: ignore[assignment]
    if id(bindings) in resolving:
        return None
    resolving.add(id(bindings))
    try:
        return _bindings_evidence(names, name, bindings, depth)
    finally:
        resolving.discard(id(bindings))


def _bindings_evidence(names: NameIndex, name: cst.Name, bindings: list, depth: int) -> str | None:
    reasons = []
    for binding in bindings:
        if binding.kind == "param":
            if name.value == "self":
                owner = enclosing_class(names, binding.node)
                if owner is not None and owner.name.value in module_classes(names):
                    reasons.append(f"`self` of nn.Module subclass `{owner.name.value}`")
                    continue
            annotation = binding.annotation
            if annotation is not None:
                qualified = names.qualified_name(annotation) or ""
                if qualified in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                    reasons.append("parameter annotated `nn.Module`")
                    continue
            return None
        if binding.kind in ("assign", "annassign") and binding.value is not None:
            if _is_torch_load(names, binding.value):
                # `model = torch.load(path)` next to `model = Net()` reloads the same kind
                # of object: it neither proves nor refutes, the other bindings decide.
                continue
            reason = module_evidence(names, binding.value, depth + 1)
            if reason is None:
                return None
            reasons.append(reason)
            continue
        return None
    return reasons[0] if reasons else None


def init_assignment(cls: cst.ClassDef, attr: str) -> cst.BaseExpression | None:
    """The one value ``__init__`` assigns to ``self.<attr>`` (None: absent, several, or unclear)."""
    init = next((statement for statement in cls.body.body
                 if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"),
                None)
    if init is None:
        return None
    values = self_assignments(init, attr)
    return values[0] if len(values) == 1 else None
