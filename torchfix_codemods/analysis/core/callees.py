"""Which code of this file a call runs: a module-level function, or a method of a class of
this file (``Trainer(...)`` runs ``__init__``; ``trainer.fit()`` runs ``fit`` when ``trainer``
is bound only to ``Trainer(...)``).

Rules that follow work across calls ask it (a training loop's reset hidden in a helper, a
script whose ``main()`` starts DataLoader workers). A call it cannot resolve to one definition
of this file answers None: imported functions, names bound more than once, methods of
objects of unknown class.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex
from torchfix_codemods.analysis.core.walk import walk_local

_MAX_DEPTH = 4
_INSTANCE: Slot[Evaluation[cst.ClassDef | None]] = Slot("callees.class_of_instance")


def _defined(names: NameIndex, expr: cst.BaseExpression, kind: str) -> cst.CSTNode | None:
    """The ``def``/``class`` statement the name ``expr`` is bound to alone."""
    if isinstance(expr, cst.Name):
        binding = names.binding_of(expr)
        if binding is not None and binding.kind == kind:
            return binding.node
    return None


def defined_function(names: NameIndex, expr: cst.BaseExpression) -> cst.FunctionDef | None:
    """The ``def`` of this file that the name ``expr`` is bound to alone."""
    found = _defined(names, expr, "def")
    return found if isinstance(found, cst.FunctionDef) else None


def local_function(names: NameIndex, call: cst.Call) -> cst.FunctionDef | None:
    """The ``def`` of this file that ``f(...)`` calls, when ``f`` is bound to it alone."""
    return defined_function(names, call.func)


def own_method(names: NameIndex, call: cst.Call) -> cst.FunctionDef | None:
    """The method ``self.m(...)`` runs, called from a method of a class of this file that
    defines ``m`` itself: wgan-gp's ``self._gradient_penalty(real, fake)``. None when a class
    of this file naming it as a base overrides ``m`` (which one runs depends on the
    instance), when ``m`` is inherited, or when the class also assigns ``self.m``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
            and func.value.value == "self"):
        return None
    caller = names.enclosing(func, cst.FunctionDef)
    owner = names.enclosing(func, cst.ClassDef)
    if caller is None or owner is None or not isinstance(owner.body, cst.IndentedBlock) \
            or not any(s is caller for s in owner.body.body):
        return None
    params = caller.params.params
    if not params or params[0].name.value != "self" or caller.decorators:
        return None
    method = methods_of(owner).get(func.attr.value)
    if method is None or method.decorators:
        return None
    for cls in _classes(names):
        if cls is not owner and func.attr.value in methods_of(cls) and any(
                isinstance(base.value, cst.Name) and base.value.value == owner.name.value
                for base in cls.bases):
            return None
    for statement in owner.body.body:
        if isinstance(statement, cst.FunctionDef):
            for node in walk_local(statement.body):
                if isinstance(node, cst.Attribute) and node.attr.value == func.attr.value \
                        and isinstance(node.value, cst.Name) and node.value.value == "self" \
                        and not isinstance(names.parent(node), cst.Call):
                    return None  # `self.m = ...`, or `self.m` handed on: not plainly a call
    return method


def _classes(names: NameIndex) -> list[cst.ClassDef]:
    """Every class statement at the module's top level."""
    scope = names.module_scope
    if scope is None:
        return []
    return [binding.node for bindings in scope.bindings.values() for binding in bindings
            if binding.kind == "class" and isinstance(binding.node, cst.ClassDef)]


def local_class(names: NameIndex, expr: cst.BaseExpression) -> cst.ClassDef | None:
    """The class of this file that the name ``expr`` is bound to alone."""
    found = _defined(names, expr, "class")
    return found if isinstance(found, cst.ClassDef) else None


def class_of_instance(names: NameIndex, expr: cst.BaseExpression,
                      depth: int = 0) -> cst.ClassDef | None:
    """The class of this file that ``expr`` is an instance of: ``MyData(...)``, or a name
    bound only once, to such a call (followed through the evaluator core)."""
    evaluation = module_evaluation(names.memo, _INSTANCE, _MAX_DEPTH, cycle=None, too_deep=None)
    return evaluation(expr, depth, lambda e, d: _class_of_instance(names, e, d - 1))


def _class_of_instance(names: NameIndex, expr: cst.BaseExpression,
                       depth: int) -> cst.ClassDef | None:
    """One step of :func:`class_of_instance`, at the asker's ``depth``."""
    if isinstance(expr, cst.Name) and depth < _MAX_DEPTH:
        bindings = names.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or \
                bindings[0].value is None:
            return None
        return class_of_instance(names, bindings[0].value, depth + 1)
    if isinstance(expr, cst.Call):
        return local_class(names, expr.func)
    return None


def methods_of(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The methods a class body defines, by name."""
    if not isinstance(cls.body, cst.IndentedBlock):
        return {}
    return {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}


def called_functions(names: NameIndex, call: cst.Call) -> list[cst.FunctionDef]:
    """The definitions of this file that ``call`` runs (empty when it runs none known)."""
    function = local_function(names, call)
    if function is not None:
        return [function]
    cls = local_class(names, call.func)
    if cls is not None:
        init = methods_of(cls).get("__init__")
        return [init] if init is not None else []
    func = call.func
    if isinstance(func, cst.Attribute):
        owner = class_of_instance(names, func.value)
        if owner is not None:
            method = methods_of(owner).get(func.attr.value)
            return [method] if method is not None else []
    return []


def returned_items(names: NameIndex, binding: Binding) -> list[cst.BaseExpression] | None:
    """What ``a, b = f(...)`` gives the binding's name, when ``f`` is a function of this file
    (bound to it alone) whose every ``return`` builds a tuple with an item at that position
    (no starred item, no ``yield``): the item of each ``return``, in order. pcyin/pytorch_nmt's
    ``vocab, model, optimizer, nll_loss, cross_entropy_loss = init_training(args)``. None for
    any other binding."""
    node = binding.node
    if binding.kind != "assign" or binding.value is not None or \
            not isinstance(node, cst.Assign) or len(node.targets) != 1 or \
            not isinstance(node.value, cst.Call):
        return None
    target = node.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or \
            any(isinstance(e, cst.StarredElement) for e in target.elements):
        return None
    position = next((i for i, e in enumerate(target.elements)
                     if isinstance(e.value, cst.Name) and e.value.value == binding.name), None)
    function = local_function(names, node.value)
    if position is None or function is None:
        return None
    items: list[cst.BaseExpression] = []
    for found in walk_local(function.body):
        if isinstance(found, (cst.Yield, cst.Await)):
            return None
        if not isinstance(found, cst.Return):
            continue
        value = found.value
        if not isinstance(value, cst.Tuple) or len(value.elements) != len(target.elements) or \
                any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        items.append(value.elements[position].value)
    return items or None


def reached_calls(names: NameIndex, root: cst.CSTNode,
                  depth: int = _MAX_DEPTH) -> Iterator[cst.Call]:
    """Every call that running ``root`` makes: the calls under it, and those in the functions
    and methods of this file they run, ``depth`` calls deep (each function visited once)."""
    seen: set[int] = set()
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    while stack:
        node, level = stack.pop()
        for child in walk_local(node):
            if not isinstance(child, cst.Call):
                continue
            yield child
            if level >= depth:
                continue
            for function in called_functions(names, child):
                if id(function) not in seen:
                    seen.add(id(function))
                    stack.append((function.body, level + 1))
