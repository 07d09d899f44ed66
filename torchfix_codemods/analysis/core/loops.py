"""Loops: the one a statement runs in, and the epoch loop of a data loader.

A statement runs in the innermost ``for``/``while`` around it *within its own
scope*: a loop outside the function, class or lambda that holds the statement
does not repeat it (a function defined in a loop is only redefined).

Migrating a loader to a ``DistributedSampler`` needs ``sampler.set_epoch(epoch)``
at the top of every epoch, or every epoch sees the same shuffled order. The
epoch loop is found from the loader's side: the innermost ``for`` whose *body*
iterates the loader (``for x in loader``, ``enumerate(loader)``,
``tqdm(loader)``) or hands it to a call (``train_one_epoch(model, loader)``).
A read of the loader that does neither (``len(loader)``) says nothing about
epochs and is ignored. When the answer is not unique, there is no answer:
callers report instead of guessing.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import local_function
from torchfix_codemods.analysis.core.names import NameIndex, Scope

_SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def innermost_loop(names: NameIndex, node: cst.CSTNode) -> cst.For | cst.While | None:
    """The closest ``for``/``while`` around ``node`` in its own scope that repeats it, or None.

    A loop's ``else:`` runs once, after the loop: a node there runs in the loop around it
    (``for epoch ...: for batch ...: train  else: validate`` validates once per epoch).
    """
    child: cst.CSTNode = node
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, _SCOPE_NODES):
            return None
        if isinstance(ancestor, (cst.For, cst.While)) and child is not ancestor.orelse:
            return ancestor
        child = ancestor
    return None

# Calls that look at a loader without running an epoch over it.
_INSPECTING = frozenset({"len", "print", "str", "repr", "isinstance", "type", "id", "hasattr",
                         "getattr", "setattr", "vars", "dir"})


def _inspects(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value in _INSPECTING


def iterates_or_passes(names: NameIndex, read: cst.Name) -> bool:
    """Whether ``read`` is (inside) a ``for`` loop's iterable or a call argument."""
    child: cst.CSTNode = read
    for ancestor in names.ancestors(read):
        if isinstance(ancestor, cst.For):
            return ancestor.iter is child
        if isinstance(ancestor, cst.Arg):
            grand = names.parent(ancestor)
            return isinstance(grand, cst.Call) and not _inspects(grand)
        if isinstance(ancestor, cst.BaseStatement | cst.BaseSmallStatement):
            return False
        child = ancestor
    return False


def _innermost_for_with_in_body(names: NameIndex, read: cst.Name) -> cst.For | None:
    """The closest enclosing ``for`` that has ``read`` in its body (not its iterable)."""
    child: cst.CSTNode = read
    for ancestor in names.ancestors(read):
        if isinstance(ancestor, cst.For) and ancestor.body is child:
            return ancestor
        if isinstance(ancestor, _SCOPE_NODES):
            return None
        child = ancestor
    return None


def epoch_loop(names: NameIndex, scope: Scope, loader: str) -> cst.For | None:
    """The one ``for`` loop in ``scope`` that runs an epoch over ``loader``, or None."""
    found: dict[int, cst.For] = {}
    for read in names.loads_in(scope, loader):
        if names.scope_of(read) is not scope or not iterates_or_passes(names, read):
            continue
        loop = _innermost_for_with_in_body(names, read)
        if loop is not None and names.scope_of(loop) is scope:
            found[id(loop)] = loop
    if len(found) != 1:
        return None
    return next(iter(found.values()))


def loops_over(names: NameIndex, target: cst.Name, follow_calls: bool = True) -> list[cst.For]:
    """The ``for`` loops that iterate the value bound to ``target`` (``for x in loader``,
    ``enumerate(loader)``, ``tqdm(loader)``), in its scope and, with ``follow_calls``, in the
    functions of this file it is handed to (``train(model, loader)``: the loops over the
    matching parameter)."""
    scope = names.scope_of(target)
    found: list[cst.For] = []
    for read in names.loads_in(scope, target.value):
        loop = _loop_iterating(names, read)
        if loop is not None:
            found.append(loop)
        elif follow_calls:
            parameter = _parameter_receiving(names, read)
            if parameter is not None:
                found += loops_over(names, parameter, follow_calls=False)
    return found


def _loop_iterating(names: NameIndex, read: cst.Name) -> cst.For | None:
    """The ``for`` whose iterable holds ``read`` directly or wrapped in calls."""
    child: cst.CSTNode = read
    for ancestor in names.ancestors(read):
        if isinstance(ancestor, cst.For):
            return ancestor if ancestor.iter is child else None
        if not isinstance(ancestor, (cst.Arg, cst.Call)):
            return None
        child = ancestor
    return None


def _parameter_receiving(names: NameIndex, read: cst.Name) -> cst.Name | None:
    """For ``f(a, read)`` with ``f`` a function of this file: the parameter ``read`` binds."""
    arg = names.parent(read)
    call = names.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call) or arg.star:
        return None
    function = local_function(names, call)
    if function is None:
        return None
    params = [*function.params.posonly_params, *function.params.params]
    if arg.keyword is not None:
        matching = [p for p in (*params, *function.params.kwonly_params)
                    if p.name.value == arg.keyword.value]
        return matching[0].name if matching else None
    positional = [a for a in call.args if a.keyword is None]
    index = next(i for i, a in enumerate(positional) if a is arg)
    if any(a.star for a in positional[:index]) or index >= len(params):
        return None
    return params[index].name


def epoch_loop_of(names: NameIndex, target: cst.Name) -> cst.For | None:
    """The one ``for`` loop that runs an epoch over the loader bound to ``target``, or None.

    Wider than :func:`epoch_loop`: the loader may be read in a nested scope (a script's
    ``train()`` iterating the module-level ``trainloader``), and when the function that
    iterates it has no loop around its batch loop, the epoch loop is the one around the
    calls of that function (``for epoch in ...: train(epoch)``, pytorch-cifar's shape).
    Calls outside any loop (a warm-up ``train(0)``) say nothing about epochs.
    """
    found: dict[int, cst.For] = {}
    for read in names.loads_in(names.scope_of(target), target.value):
        if not iterates_or_passes(names, read):
            continue
        loop = _innermost_for_with_in_body(names, read)
        if loop is not None:
            found[id(loop)] = loop
            continue
        function = names.enclosing(read, cst.FunctionDef)
        if function is None or names.enclosing(function, (cst.FunctionDef, cst.ClassDef)):
            continue
        module = names.module_scope
        if module is None:
            continue
        for caller in names.loads_in(module, function.name.value):
            call = names.parent(caller)
            if isinstance(call, cst.Call) and call.func is caller:
                around = innermost_loop(names, call)
                if isinstance(around, cst.For):
                    found[id(around)] = around
    if len(found) != 1:
        return None
    return next(iter(found.values()))
