"""Where does a value go? One step of data flow, enough for "is this only loaded into a model?".

Rules ask what happens to the result of a call: passed straight into
``model.load_state_dict(...)``, assigned to a name whose every read is such a
call, or used in some way the tool cannot follow. Anything not understood is
reported as ``other`` so callers stay conservative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import libcst as cst

from torchfix_codemods.analysis.core.names import NameIndex

UseKind = Literal["method", "attribute", "called", "subscript", "argument", "return", "other"]


@dataclass(frozen=True)
class Use:
    """How one occurrence of a value is used by its immediate surroundings."""

    kind: UseKind
    node: cst.CSTNode
    attr: str | None = None
    call: cst.Call | None = None
    arg: cst.Arg | None = None
    key: str | None = None


def describe_use(names: NameIndex, node: cst.CSTNode) -> Use:
    parent = names.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        grand = names.parent(parent)
        if isinstance(grand, cst.Call) and grand.func is parent:
            return Use("method", parent, attr=parent.attr.value, call=grand)
        return Use("attribute", parent, attr=parent.attr.value)
    if isinstance(parent, cst.Call) and parent.func is node:
        return Use("called", parent, call=parent)
    if isinstance(parent, cst.Subscript) and parent.value is node:
        key = None
        if len(parent.slice) == 1:
            element = parent.slice[0].slice
            if isinstance(element, cst.Index) and isinstance(element.value, cst.SimpleString):
                key = element.value.evaluated_value  # type: ignore[assignment]
        return Use("subscript", parent, key=key if isinstance(key, str) else None)
    if isinstance(parent, cst.Arg):
        grand = names.parent(parent)
        if isinstance(grand, cst.Call):
            return Use("argument", parent, call=grand, arg=parent)
    if isinstance(parent, cst.Return):
        return Use("return", parent)
    return Use("other", node)


def assigned_name(names: NameIndex, value: cst.CSTNode) -> cst.Name | None:
    """``x`` in ``x = value`` (single plain target), else None."""
    parent = names.parent(value)
    if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
        target = parent.targets[0].target
        return target if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.AnnAssign) and parent.value is value:
        return parent.target if isinstance(parent.target, cst.Name) else None
    return None


def reads_of_assigned(names: NameIndex, target: cst.Name) -> list[cst.Name] | None:
    """Reads of a name assigned once in its scope; None when it is bound more than once."""
    scope = names.scope_of(target)
    bindings = scope.bindings.get(target.value, [])
    if len(bindings) != 1 or target.value in scope.global_names:
        return None
    return names.loads_in(scope, target.value)


def reads_of_binding(names: NameIndex, target: cst.Name) -> list[cst.Name] | None:
    """Reads that may see the value bound at ``target`` (``x`` in ``x = value`` or in
    ``x, y = value``), also when the name is bound again (``decoder = decoder.to(device)``):
    the reads that this binding reaches (:func:`~.flow.reaching_bindings`). None when the
    name is global or the binding is not an assignment statement."""
    found = reads_of_assigned(names, target)
    if found is not None:
        return found
    from torchfix_codemods.analysis.core.flow import reaching_bindings

    scope = names.scope_of(target)
    if target.value in scope.global_names:
        return None
    statement: cst.CSTNode | None = names.parent(target)
    while statement is not None and not isinstance(statement, (cst.Assign, cst.AnnAssign)):
        statement = names.parent(statement)
    ours = [b for b in scope.bindings.get(target.value, []) if b.node is statement]
    if statement is None or len(ours) != 1:
        return None
    return [read for read in names.loads_in(scope, target.value)
            if any(b is ours[0] for b in reaching_bindings(names, read))]
