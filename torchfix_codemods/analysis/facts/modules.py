"""Is this expression an ``nn.Module``? Evidence-based, with a reason a reviewer can read.

Shared by every rule that must tell a model from a tensor or a state dict
(saving a whole module, loading into one, calling ``.forward``). The answer is
:class:`ModuleEvidence` when there is evidence and None when there is none:
"unknown" is never upgraded to "module" by a variable's name alone. Where a
rule accepts a name as weaker evidence, it asks
:func:`~torchfix_codemods.analysis.vocabulary.naming.named_like_model`, the one vocabulary of
model-like names.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function, returned_items
from torchfix_codemods.analysis.core.calls import argument
from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex, dotted_name, paired_value
from torchfix_codemods.analysis.core.walk import preorder, walk, walk_local
from torchfix_codemods.analysis.vocabulary.tensor_methods import DEVICE_METHODS
from torchfix_codemods.analysis.vocabulary.torch_api import (
    ITERABLE_MODULE_CONTAINERS,
    MODULE_WRAPPERS,
    TRACERS,
    TUPLE_OUTPUT_MODULES,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    CHAINABLE_METHODS,
    MODE_CONTAINERS,
    MODE_DEPENDENT_LAYERS,
    MODE_FUNCTIONS,
    NN_MODULE,
    RECURRENT_DROPOUT_POSITION,
    is_module_class,
    is_module_factory,
)

_CHAINABLE = CHAINABLE_METHODS
_MAX_DEPTH = 8




@dataclass(frozen=True)
class ModuleEvidence:
    """Why an expression is an ``nn.Module`` instance."""

    reason: str
    """What a reviewer reads in the finding."""
    built_from: str | None = None
    """What built the instance, followed through ``.to()``, wrappers, ``.module`` and
    ``self.x = ...``: a qualified name (``torch.nn.LSTM``, ``torchvision.models.resnet18``)
    or a class of this file (``FocalLoss``). None when the evidence is not a constructor
    call (a ``self``, an annotation, a loop over ``.modules()``, an ``isinstance`` guard)."""

    @property
    def is_loss(self) -> bool:
        """Built from a loss class (``CrossEntropyLoss``, a local ``FocalLoss``): every
        ``torch.nn`` loss class name ends in ``Loss``."""
        return self.built_from is not None and self.built_from.split(".")[-1].endswith("Loss")

    @property
    def returns_tuple(self) -> bool:
        """Built from a ``torch.nn`` class whose forward returns a tuple, not a tensor."""
        return self.built_from in TUPLE_OUTPUT_MODULES

    def wrapped(self, reason: str) -> ModuleEvidence:
        """The same instance reached another way (``.module``, a wrapper): new words, same class."""
        return ModuleEvidence(reason, self.built_from)


_MODULE_CLASSES: Slot[dict[str, cst.ClassDef]] = Slot("modules.module_classes")
_EVIDENCE: Slot[Evaluation[ModuleEvidence | None]] = Slot("modules.evidence")
_MODE: Slot[Evaluation[bool | None]] = Slot("modules.changes_with_mode")
_RESOLVING: Slot[set[int]] = Slot("modules.resolving")
"""Binding lists being followed: ``model = model.cuda()`` reaches the same bindings through
another expression (the evaluation's own cycle guard is per expression)."""
_CALLS_IN_FILE: Slot[dict[int, list[cst.Call] | None]] = Slot("modules.calls_in_file")


def module_classes(names: NameIndex) -> dict[str, cst.ClassDef]:
    """Classes defined at module level that subclass ``torch.nn.Module`` (transitively,
    through bases of this file and, with a project index, of other files)."""
    if _MODULE_CLASSES in names.memo:
        return names.memo[_MODULE_CLASSES]
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
                if qualified and (is_module_class(qualified) or _project_module(names, qualified)):
                    found[name] = node
                elif local in found:
                    found[name] = node
                else:
                    continue
                changed = True
                break
    names.memo[_MODULE_CLASSES] = found
    return found


def _project_module(names: NameIndex, qualified: str) -> str | None:
    """Where another file of the run defines ``qualified`` as an nn.Module subclass."""
    facts = names.project.class_facts(qualified)
    return facts.path if facts is not None and facts.is_module else None


def module_evidence(names: NameIndex, expr: cst.BaseExpression,
                    depth: int = 0) -> ModuleEvidence | None:
    """Why ``expr`` is an ``nn.Module`` instance, or None without evidence."""
    evaluation = module_evaluation(names.memo, _EVIDENCE, _MAX_DEPTH, cycle=None, too_deep=None)
    # The helpers below count depth from the asker's and add their own steps.
    return evaluation(expr, depth, lambda e, d: _evidence(names, e, d - 1))


def _evidence(names: NameIndex, expr: cst.BaseExpression, depth: int) -> ModuleEvidence | None:
    """One step of :func:`module_evidence`, at the asker's ``depth``."""
    if isinstance(expr, cst.Call):
        return _call_evidence(names, expr, depth)
    if isinstance(expr, cst.Name):
        return _name_evidence(names, expr, depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
        inner = module_evidence(names, expr.value, depth + 1)
        return inner.wrapped(f"`.module` of a wrapped model ({inner.reason})") if inner else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
            and expr.value.value == "self":
        return _submodule_evidence(names, expr, depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value not in ("weight", "bias"):
        return _instance_attribute_evidence(names, expr, depth)
    if isinstance(expr, cst.Subscript):
        return _item_evidence(names, expr, depth)
    return None


def _item_evidence(names: NameIndex, expr: cst.Subscript, depth: int) -> ModuleEvidence | None:
    """``layers[1]``, ``self.blocks[0]`` of an ``nn.ModuleList``/``nn.Sequential`` (or of a
    loop variable over one: PyTorch-YOLOv3 indexes each ``nn.Sequential`` of its module
    list): an item of a module container is a module; a slice of one is the same kind of
    container (measured on torch 2.13: ``nn.ModuleList(...)[:1]`` is a ``ModuleList``)."""
    if len(expr.slice) != 1:
        return None
    container = module_evidence(names, expr.value, depth + 1)
    if container is None:
        return None
    if isinstance(expr.slice[0].slice, cst.Slice):
        # `self.module_list[:cutoff]`: a slice of a ModuleList/Sequential is one too
        if container.built_from in ITERABLE_MODULE_CONTAINERS:
            return ModuleEvidence(f"a slice of a `{container.built_from}` ({container.reason})",
                                  container.built_from)
        return None
    if container.built_from in ITERABLE_MODULE_CONTAINERS or container.reason.startswith(
            ("loop variable", "an item of a module container")):
        return ModuleEvidence(f"an item of a module container ({container.reason})")
    return None


def _submodule_evidence(names: NameIndex, expr: cst.Attribute,
                        depth: int) -> ModuleEvidence | None:
    """``self.fc`` inside a class whose ``__init__`` assigns it a module (an nn.Module
    subclass's layer, a trainer's ``self.model``).

    Every ``self.fc = ...`` in the class must be a module (one in ``__init__``
    at least), so a later ``self.fc = None`` or a tensor makes it unknown.
    """
    owner = names.enclosing(expr, cst.ClassDef)
    if owner is None:
        return None
    return _class_attribute_evidence(names, owner, expr.attr.value, "self", depth)


def _instance_attribute_evidence(names: NameIndex, expr: cst.Attribute,
                                 depth: int) -> ModuleEvidence | None:
    """``rnd_model.predictor`` where ``rnd_model`` is an instance of an nn.Module subclass of
    this file whose ``__init__`` assigns ``self.predictor`` a module."""
    instance = module_evidence(names, expr.value, depth + 1)
    if instance is None or instance.built_from is None:
        return None
    owner = module_classes(names).get(instance.built_from)
    if owner is None:
        return None
    shown = dotted_name(expr.value) or "..."
    return _class_attribute_evidence(names, owner, expr.attr.value, shown, depth)


def _class_attribute_evidence(names: NameIndex, owner: cst.ClassDef, attr: str, shown: str,
                              depth: int) -> ModuleEvidence | None:
    values: list[tuple[str, cst.BaseExpression | None]] = []
    unpacked: list[tuple[cst.BaseExpression, int]] = []
    for statement in owner.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        plain = self_assignments(statement, attr)
        values.extend((statement.name.value, node) for node in plain)
        if None in plain:
            unpacked.extend(_unpacked_self_assignments(statement, attr))
    if not values or not any(method in _constructing_methods(owner) for method, _ in values):
        return None
    if sum(value is None for _, value in values) != len(unpacked):
        return None  # some `self.<attr>` write is neither plain nor a tuple unpacking
    reasons: list[ModuleEvidence] = []
    for _, value in values:
        if value is None:
            continue
        reason = module_evidence(names, value, depth + 1)
        if reason is None:
            return None
        reasons.append(reason)
    for value, position in unpacked:
        reason = _element_evidence(names, value, position, depth + 1)
        if reason is None:
            return None
        reasons.append(reason)
    return reasons[0].wrapped(f"`{shown}.{attr}` of `{owner.name.value}`, assigned "
                              f"{reasons[0].reason}")


def _constructing_methods(owner: cst.ClassDef) -> set[str]:
    """``__init__`` and the methods of ``owner`` it calls on ``self`` (BEGAN's trainer builds
    its networks in ``self.build_model()``, which ``__init__`` calls): what they assign is
    there once the object exists."""
    found = {"__init__"}
    for statement in owner.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            for node in walk_local(statement.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        isinstance(node.func.value, cst.Name) and node.func.value.value == "self":
                    found.add(node.func.attr.value)
    return found


def self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression | None]:
    """Values assigned to ``self.<attr>`` in one method (None: not a plain assignment)."""
    return list(_self_assignments_by_attr(function).get(attr, ()))


_REMEMBERED_METHODS = 256
_ASSIGNMENTS: dict[int, tuple[cst.FunctionDef, dict[str, list[cst.BaseExpression | None]]]] = {}
"""Per method (by id, the node kept alive beside it so the id cannot be reused): its
``self.<attr>`` assignments. Rules ask about one attribute per ``self.x(...)`` call; walking
the method once instead of once per question (a LibCST visitor each time) was a third of a
cold run's time (from speed)."""


def _self_assignments_by_attr(
        function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    known = _ASSIGNMENTS.get(id(function))
    if known is not None and known[0] is function:
        return known[1]
    table: dict[str, list[cst.BaseExpression | None]] = {}

    def enter(node: cst.CSTNode, _parent: cst.CSTNode | None) -> bool:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                attr = _self_attr(target.target)
                if attr is not None:
                    table.setdefault(attr, []).append(
                        node.value if len(node.targets) == 1 else None)
                elif isinstance(target.target, (cst.Tuple, cst.List)):
                    named = {_self_attr(element.value) for element in target.target.elements}
                    for inner in sorted(name for name in named if name is not None):
                        table.setdefault(inner, []).append(None)
        elif isinstance(node, cst.AnnAssign):
            attr = _self_attr(node.target)
            if attr is not None:
                table.setdefault(attr, []).append(node.value)
        elif isinstance(node, cst.AugAssign):
            attr = _self_attr(node.target)
            if attr is not None:
                table.setdefault(attr, []).append(None)
        return True

    walk(function.body, enter, lambda _node: None)
    if len(_ASSIGNMENTS) >= _REMEMBERED_METHODS:
        del _ASSIGNMENTS[next(iter(_ASSIGNMENTS))]
    _ASSIGNMENTS[id(function)] = (function, table)
    return table


def _unpacked_self_assignments(function: cst.FunctionDef,
                               attr: str) -> list[tuple[cst.BaseExpression, int]]:
    """``self.params, self.layers = build(...)``: (the value, the position of
    ``self.<attr>`` in the target) for each such single-target tuple assignment."""
    found: list[tuple[cst.BaseExpression, int]] = []

    def enter(node: cst.CSTNode, _parent: cst.CSTNode | None) -> bool:
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            elements = node.targets[0].target.elements
            for position, element in enumerate(elements):
                if not isinstance(element, cst.StarredElement) and \
                        _self_attr(element.value) == attr and \
                        not any(isinstance(e, cst.StarredElement) for e in elements):
                    found.append((node.value, position))
        return True

    walk(function.body, enter, lambda _node: None)
    return found


def _element_evidence(names: NameIndex, value: cst.BaseExpression, position: int,
                      depth: int) -> ModuleEvidence | None:
    """Element ``position`` of ``value`` unpacked: of a tuple written out, or of what a
    function of this file returns when every ``return`` writes a tuple out
    (PyTorch-YOLOv3's ``create_modules`` returns ``hyperparams, module_list``)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = value.elements
        if position < len(elements) and not isinstance(elements[position], cst.StarredElement):
            return module_evidence(names, elements[position].value, depth + 1)
        return None
    if not isinstance(value, cst.Call):
        return None
    function = defined_function(names, value.func)
    if function is None:
        return None
    returns = [node.value for node in walk_local(function.body) if isinstance(node, cst.Return)]
    if not returns or any(r is None for r in returns):
        return None
    reasons = [_element_evidence(names, r, position, depth + 1) for r in returns]  # type: ignore[arg-type]
    if any(r is None for r in reasons):
        return None
    return reasons[0].wrapped(f"returned by `{function.name.value}()` ({reasons[0].reason})")  # type: ignore[union-attr]


def _self_attr(node: cst.BaseExpression) -> str | None:
    """``x`` for ``self.x``, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and \
            node.value.value == "self":
        return node.attr.value
    return None


def _call_evidence(names: NameIndex, call: cst.Call, depth: int) -> ModuleEvidence | None:
    qualified = names.qualified_name(call.func)
    if qualified is not None:
        if is_module_class(qualified):
            return ModuleEvidence(f"instance of `{qualified}`", qualified)
        if is_module_factory(qualified):
            return ModuleEvidence(f"model built by `{qualified}`", qualified)
        if qualified in MODULE_WRAPPERS and call.args and call.args[0].keyword is None:
            inner = module_evidence(names, call.args[0].value, depth + 1)
            return inner.wrapped(f"`{qualified}` of a module ({inner.reason})") if inner else None
        return _project_call_evidence(names, qualified)
    if isinstance(call.func, cst.Name) and call.func.value in module_classes(names):
        binding = names.binding_of(call.func)
        if binding is not None and binding.kind == "class":
            return ModuleEvidence(
                f"instance of `{call.func.value}`, an nn.Module subclass in this file",
                call.func.value)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _CHAINABLE:
        inner = module_evidence(names, call.func.value, depth + 1)
        return inner
    return None


def _project_call_evidence(names: NameIndex, qualified: str) -> ModuleEvidence | None:
    """``Net()`` or ``build_model()`` imported from another file of the run."""
    where = _project_module(names, qualified)
    if where is not None:
        facts = names.project.class_facts(qualified)
        shown = facts.qualified if facts is not None else qualified
        return ModuleEvidence(f"instance of `{shown}`, an nn.Module subclass in {where}", shown)
    returned = names.project.returns(qualified)
    if returned is not None and returned.kind == "module":
        return ModuleEvidence(returned.reason, returned.built_from)
    return None


def _is_torch_load(names: NameIndex, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and names.qualified_name(value.func) == "torch.load"


def _loaded_under_module_globals(names: NameIndex,
                                 load: cst.BaseExpression) -> ModuleEvidence | None:
    """``with torch.serialization.safe_globals([Net, nn.Conv2d, ...]): model = torch.load(f)``:
    the load is allowed to rebuild nn.Module classes, which only a whole pickled model needs
    (pytorch/examples' super_resolve.py). A state_dict load needs no such globals."""
    for element in _allowed_globals(names, load):
        qualified = names.qualified_name(element) or ""
        local = element.value if isinstance(element, cst.Name) else None
        binding = names.binding_of(element) if isinstance(element, cst.Name) else None
        if (local in module_classes(names) and binding is not None and binding.kind == "class") \
                or (qualified and (_project_module(names, qualified) or (
                    is_module_class(qualified) and qualified.startswith("torch.nn.")))):
            shown = local or qualified
            return ModuleEvidence(f"a whole model loaded with `safe_globals` that allow "
                                  f"the nn.Module class `{shown}`", shown)
    return None


def _allowed_globals(names: NameIndex, load: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes a ``with torch.serialization.safe_globals([...]):`` around ``load`` (in the
    same function) allows: what the pickle may contain."""
    for ancestor in names.ancestors(load):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return []
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                call = item.item
                if isinstance(call, cst.Call) and call.args and names.qualified_name(
                        call.func) == "torch.serialization.safe_globals":
                    return _listed(names, call.args[0].value)
    return []


def _listed(names: NameIndex, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The elements of a list or tuple literal, or of the one such literal a name is bound to."""
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].value is None:
            return []
        expr = bindings[0].value
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [e.value for e in expr.elements if isinstance(e, cst.Element)]
    return []


def _name_evidence(names: NameIndex, name: cst.Name, depth: int) -> ModuleEvidence | None:
    bindings = names.bindings_of(name)
    if not bindings:
        return None
    # `model = model.cuda()` rebinds a name in terms of itself: following it again from
    # inside itself adds nothing and, repeated, costs exponential time.
    resolving = names.memo.setdefault(_RESOLVING, set())
    if id(bindings) in resolving:
        return None
    resolving.add(id(bindings))
    try:
        return _bindings_evidence(names, name, bindings, depth)
    finally:
        resolving.discard(id(bindings))


def _bindings_evidence(names: NameIndex, name: cst.Name, bindings: list,
                       depth: int) -> ModuleEvidence | None:
    reasons: list[ModuleEvidence] = []
    for binding in bindings:
        if binding.kind == "param":
            if name.value == "self":
                owner = names.enclosing(binding.node, cst.ClassDef)
                if owner is not None and owner.name.value in module_classes(names):
                    reasons.append(ModuleEvidence(
                        f"`self` of nn.Module subclass `{owner.name.value}`"))
                    continue
            annotation = binding.annotation
            found = _annotation_evidence(names, annotation) if annotation is not None else None
            if found is None:
                found = parameter_evidence(names, binding, depth)
            if found is None and len(bindings) == 1:
                found = _switched_and_called(names, binding, name.value)
            if found is None:
                return None
            reasons.append(found)
            continue
        if binding.kind == "for" and len(bindings) == 1:
            found = _loop_evidence(names, binding, name, depth)
            if found is not None:
                reasons.append(found)
                continue
        value = binding.value if binding.value is not None else paired_value(binding)
        items = returned_items(names, binding) if value is None else None
        if items is not None:
            # `..., criterion = init_training(args)`: every `return` puts a module there
            found = [module_evidence(names, item, depth + 1) for item in items]
            if any(f is None for f in found):
                return None
            first = found[0]
            assert first is not None
            reasons.append(ModuleEvidence(f"an item of the tuple a function of this file "
                                          f"returns ({first.reason})", first.built_from))
            continue
        if binding.kind in ("assign", "annassign") and value is not None:
            if _is_torch_load(names, _loaded_whole(value)):
                loaded = _loaded_under_module_globals(names, value)
                if loaded is not None:
                    reasons.append(loaded)
                elif len(bindings) == 1 or all(_is_torch_load(names, _loaded_whole(b.value))
                                               or _moves_itself(b, name.value)
                                               for b in bindings if b.value is not None):
                    used = _used_as_module(names, binding, name.value)
                    if used is not None:
                        reasons.append(used)
                # `model = torch.load(path)` next to `model = Net()` reloads the same kind
                # of object: it neither proves nor refutes, the other bindings decide.
                continue
            moved = _strip_chain(value)
            if moved is not value and isinstance(moved, cst.Name) and \
                    moved.value == name.value and len(bindings) > 1:
                continue  # `model = model.cuda()`: the same object, the other bindings decide
            reason = module_evidence(names, value, depth + 1)
            if reason is None:
                return None
            reasons.append(reason)
            continue
        return None
    return reasons[0] if reasons else None


# ------------------------------------------------------------ parameters and loops


def _loaded_whole(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``torch.load(f)["model"]`` -> the load (a checkpoint's entry is what was pickled)."""
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and \
            isinstance(value.slice[0].slice, cst.Index) and \
            isinstance(value.slice[0].slice.value, cst.SimpleString):
        return value.value
    return value


def pickled_model(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``model`` is only ever a whole model unpickled by ``torch.load`` (moved or not), not
    under ``safe_globals``: its class is not visible here, and it keeps the train/eval mode it
    was saved in (``training`` is pickled with it), which this file does not show either."""
    if not isinstance(expr, cst.Name):
        return False
    bindings = names.bindings_of(expr)
    loads = [b for b in bindings if b.value is not None
             and _is_torch_load(names, _loaded_whole(b.value))]
    return bool(loads) and all(b in loads or _moves_itself(b, expr.value) for b in bindings) \
        and all(_loaded_under_module_globals(names, b.value) is None for b in loads)


def _moves_itself(binding: Binding, name: str) -> bool:
    moved = _strip_chain(binding.value) if binding.value is not None else None
    return moved is not binding.value and isinstance(moved, cst.Name) and moved.value == name


_MODULE_ONLY_METHODS = frozenset({"eval", "train", "parameters", "named_parameters",
                                  "state_dict", "load_state_dict", "modules", "children"})


def _used_as_module(names: NameIndex, binding: Binding, name: str) -> ModuleEvidence | None:
    """``model = torch.load(opt.model)["model"]`` (twtygqyy/pytorch-SRResNet's demo and eval
    scripts) used, in the scope that binds it, both as a callable (``model(x)``) and as an
    object that moves between devices (``model.cuda()``, ``.cpu()``, ``.to(...)``) or has a
    module's own methods (``.eval()``, ``.parameters()``...): a tensor is not callable, a
    function has no ``.cuda()``, so what was pickled is a whole model (a module, or a
    TorchScript module: both are called on tensors and return them)."""
    scope = names.scope_of(binding.node)
    called = moved = False
    for read in names.loads_in(scope, name):
        parent = names.parent(read)
        if isinstance(parent, cst.Call) and parent.func is read and parent.args:
            called = True
        if isinstance(parent, cst.Attribute) and parent.value is read:
            call = names.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent and \
                    parent.attr.value in _MODULE_ONLY_METHODS | DEVICE_METHODS:
                moved = True
    if called and moved:
        return ModuleEvidence("a whole model loaded with `torch.load`, then called and moved "
                              "or switched like a module")
    return None


_MODE_SWITCHES = frozenset({"eval", "train"})
_MODULE_QUERIES = frozenset({"parameters", "named_parameters", "state_dict", "modules",
                             "children", "named_modules"})


def _switched_and_called(names: NameIndex, binding: Binding, name: str) -> ModuleEvidence | None:
    """A parameter the function both calls (``model(data)``) and switches or queries the way
    only an ``nn.Module`` is (``model.eval()``, ``model.train()``, ``model.parameters()``),
    with no other binding in the function: A-Jacobson/CNN_Sentence_Classification's
    ``def predict(model, data, batch_size): model.eval(); ... model(data).data``. A tensor is
    not callable and a plain function has no ``.eval()``; ``.train(...)`` counts only
    without arguments or with one boolean literal (a trainer's ``agent.train(batch)`` is
    something else)."""
    scope = names.scope_of(binding.node)
    called = switched = False
    for read in names.loads_in(scope, name):
        parent = names.parent(read)
        if isinstance(parent, cst.Call) and parent.func is read and parent.args:
            called = True
        if isinstance(parent, cst.Attribute) and parent.value is read:
            call = names.parent(parent)
            if not (isinstance(call, cst.Call) and call.func is parent):
                continue
            method = parent.attr.value
            if method in _MODULE_QUERIES and not call.args:
                switched = True
            elif method in _MODE_SWITCHES and (not call.args or (
                    method == "train" and len(call.args) == 1 and call.args[0].keyword is None
                    and isinstance(call.args[0].value, cst.Name)
                    and call.args[0].value.value in ("True", "False"))):
                switched = True
    if called and switched:
        return ModuleEvidence(f"parameter `{name}` is called and switched or queried like a "
                              "module (`.eval()`, `.train()`, `.parameters()`)")
    return None


def passed_to_apply(names: NameIndex, function: cst.FunctionDef) -> bool:
    """Whether ``something.apply(function)`` occurs where ``function``'s name is visible: in
    the module for a module-level function, in the enclosing function for one defined inside
    another (``def init_weights(net): def init_func(m): ...; net.apply(init_func)``).
    ``nn.Module.apply`` calls it with every submodule."""
    found = names.lookup(function.name.value, names.scope_of(function.name))
    if found is None or not any(binding.node is function for binding in found[1]):
        return False
    for load in names.loads_in(found[0], function.name.value):
        arg = names.parent(load)
        call = names.parent(arg) if isinstance(arg, cst.Arg) else None
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "apply"):
            return True
    return False


def parameter_evidence(names: NameIndex, binding: Binding,
                       depth: int = 0) -> ModuleEvidence | None:
    """Why the parameter ``binding`` of a function holds an ``nn.Module``: the function is
    handed to ``.apply()`` (its first parameter), every call from another file of the run
    passes one (the project index), or every call in this file does.

    Calls in this file are followed only when the function is used by calling it (a
    function also passed around as a value could be called with anything), and a method
    only through ``self.method(...)`` inside its class.
    """
    function = names.enclosing(binding.node, cst.FunctionDef)
    if function is None or depth > _MAX_DEPTH:
        return None
    positional = [p.name.value for p in (*function.params.posonly_params,
                                         *function.params.params)]
    owner = names.parent(names.parent(function) or function)
    method = isinstance(owner, cst.ClassDef)
    decorated = bool(function.decorators)
    if method and (decorated or not positional or positional[0] != "self"):
        return None  # static and class methods: the first parameter is not an instance
    own = positional[1:] if method else positional
    if binding.name not in own:
        return None
    index = own.index(binding.name)
    name = function.name.value
    module_level = isinstance(names.parent(function), cst.Module)
    if not method and index == 0 and passed_to_apply(names, function):
        return ModuleEvidence(f"parameter of `{name}`, passed to `.apply()`")
    passed = names.project.module_arguments(name) if module_level else None
    if passed is not None and binding.name in passed:
        return ModuleEvidence(passed[binding.name])
    if passed is not None or decorated:
        return None  # another file calls it with something else
    values = _passed_in_file(names, function, owner if method else None, binding.name, index)
    if not values:
        return None
    found: ModuleEvidence | None = None
    for value in values:
        found = module_evidence(names, value, depth + 1)
        if found is None:
            return None
    assert found is not None
    return ModuleEvidence(f"every call of `{name}` in this file passes a module "
                          f"({found.reason})", found.built_from)


def passed_in_file(names: NameIndex, binding: Binding) -> list[cst.BaseExpression] | None:
    """What every call in this file passes to the parameter ``binding`` (of a module-level
    function called only by name, or of a method called through ``self``), when no other
    file of the run calls it and it is not decorated; None otherwise."""
    function = names.enclosing(binding.node, cst.FunctionDef)
    if function is None or binding.kind != "param" or function.decorators:
        return None
    positional = [p.name.value for p in (*function.params.posonly_params,
                                         *function.params.params)]
    owner = names.parent(names.parent(function) or function)
    method = isinstance(owner, cst.ClassDef)
    if method and (not positional or positional[0] != "self"):
        return None
    own = positional[1:] if method else positional
    if binding.name not in own:
        return None
    if isinstance(names.parent(function), cst.Module) and \
            names.project.module_arguments(function.name.value) is not None:
        return None  # called from another file too
    return _passed_in_file(names, function, owner if method else None, binding.name,
                           own.index(binding.name))


def _passed_in_file(names: NameIndex, function: cst.FunctionDef, owner: cst.CSTNode | None,
                    param: str, index: int) -> list[cst.BaseExpression] | None:
    calls = _calls_in_file(names, function, owner)
    if not calls:
        return None
    values = []
    for call in calls:
        arg = argument(call, param, index)
        if arg is None or arg.star:
            return None
        values.append(arg.value)
    return values


def _calls_in_file(names: NameIndex, function: cst.FunctionDef,
                   owner: cst.CSTNode | None) -> list[cst.Call] | None:
    """The calls of ``function`` in this file, or None when it is also used otherwise
    (asked once per parameter read: the answer is kept per function)."""
    known = names.memo.setdefault(_CALLS_IN_FILE, {})
    if id(function) not in known:
        known[id(function)] = _find_calls(names, function, owner)
    return known[id(function)]


def _find_calls(names: NameIndex, function: cst.FunctionDef,
                owner: cst.CSTNode | None) -> list[cst.Call] | None:
    name = function.name.value
    calls: list[cst.Call] = []
    if isinstance(owner, cst.ClassDef):
        for node in _class_nodes(owner):
            if isinstance(node, cst.Attribute) and node.attr.value == name:
                call = names.parent(node)
                if not (isinstance(node.value, cst.Name) and node.value.value == "self"
                        and isinstance(call, cst.Call) and call.func is node):
                    return None
                calls.append(call)
        return calls
    assert names.module_scope is not None
    if len(names.module_scope.bindings.get(name, [])) != 1:
        return None
    for load in names.loads_in(names.module_scope, name):
        call = names.parent(load)
        if not (isinstance(call, cst.Call) and call.func is load):
            return None
        calls.append(call)
    return calls


def _loop_evidence(names: NameIndex, binding: Binding, name: cst.Name,
                   depth: int) -> ModuleEvidence | None:
    """``for layer in self.layers`` over an ``nn.ModuleList``/``nn.Sequential``, and
    ``for m in model.modules()`` (or ``.children()``) of a module."""
    loop = binding.node
    if not isinstance(loop, (cst.For, cst.CompFor)):
        return None
    iterator = _iterated_by(names, loop.target, loop.iter, name.value)
    if iterator is None:
        return None
    if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute) and \
            iterator.func.attr.value in ("modules", "children") and not iterator.args:
        owner = module_evidence(names, iterator.func.value, depth + 1)
        if owner is not None:
            return ModuleEvidence(f"loop variable over `.{iterator.func.attr.value}()` of a "
                                  f"module ({owner.reason})")
        return None
    container = module_evidence(names, iterator, depth + 1)
    if container is not None and container.built_from in ITERABLE_MODULE_CONTAINERS:
        return ModuleEvidence(f"loop variable over a `{container.built_from}` "
                              f"({container.reason})")
    return None


def _iterated_by(names: NameIndex, target: cst.BaseExpression, iterator: cst.BaseExpression,
                 name: str) -> cst.BaseExpression | None:
    """The iterable whose items ``name`` takes in ``for <target> in <iterator>``, seen
    through ``enumerate(...)`` and ``zip(...)`` (``for i, (cfg, layer) in
    enumerate(zip(cfgs, self.layers))`` iterates ``self.layers`` for ``layer``)."""
    if isinstance(target, cst.Name):
        return iterator if target.value == name else None
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterator, cst.Call) or \
            not isinstance(iterator.func, cst.Name) or names.bindings_of(iterator.func) or \
            any(a.keyword is not None or a.star for a in iterator.args):
        return None
    elements = [e.value for e in target.elements if isinstance(e, cst.Element)]
    if len(elements) != len(target.elements):
        return None
    if iterator.func.value == "enumerate" and len(elements) == 2 and len(iterator.args) == 1:
        return _iterated_by(names, elements[1], iterator.args[0].value, name)
    if iterator.func.value == "zip" and len(elements) == len(iterator.args):
        for element, source in zip(elements, iterator.args, strict=True):
            found = _iterated_by(names, element, source.value, name)
            if found is not None:
                return found
    return None


def _annotation_evidence(names: NameIndex,
                         annotation: cst.BaseExpression) -> ModuleEvidence | None:
    """A parameter annotated with a module class: ``nn.Module``, ``nn.Linear``, ``Net``."""
    qualified = names.qualified_name(annotation)
    if qualified in NN_MODULE:
        return ModuleEvidence("parameter annotated `nn.Module`")
    if qualified is not None and is_module_class(qualified):
        return ModuleEvidence(f"parameter annotated `{qualified}`", qualified)
    if qualified is not None:
        facts = names.project.class_facts(qualified)
        if facts is not None and facts.is_module:
            return ModuleEvidence(f"parameter annotated `{facts.qualified}`, an nn.Module "
                                  f"subclass in {facts.path}", facts.qualified)
        return None
    if isinstance(annotation, cst.Name) and annotation.value in module_classes(names):
        binding = names.binding_of(annotation)
        if binding is not None and binding.kind == "class":
            return ModuleEvidence(f"parameter annotated `{annotation.value}`, an nn.Module "
                                  "subclass in this file", annotation.value)
    return None


def init_assignment(cls: cst.ClassDef, attr: str) -> cst.BaseExpression | None:
    """The one value ``__init__`` assigns to ``self.<attr>`` (None: absent, several, or unclear)."""
    init = next((statement for statement in cls.body.body
                 if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"),
                None)
    if init is None:
        return None
    values = self_assignments(init, attr)
    return values[0] if len(values) == 1 else None


# --------------------------------------------------------------------- train/eval mode
_MODE_DEPENDENT = MODE_DEPENDENT_LAYERS
_CONTAINERS = MODE_CONTAINERS
_MODE_FUNCTIONS = MODE_FUNCTIONS


def _strip_chain(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``Net(...).to(device).eval()`` -> ``Net(...)``."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value in _CHAINABLE:
        expr = expr.func.value
    return expr


def _instance_value(names: NameIndex, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What built the instance ``expr`` names: a name's one assignment, or the one value
    ``__init__`` gives ``self.x``; ``expr`` itself when it is not a name."""
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].kind != "assign":
            return None
        return bindings[0].value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and \
            expr.value.value == "self":
        owner = names.enclosing(expr, cst.ClassDef)
        return init_assignment(owner, expr.attr.value) if owner is not None else None
    return expr


def mode_changes_output(names: NameIndex, expr: cst.BaseExpression) -> bool | None:
    """Does ``eval()`` change what the model ``expr`` computes? None: cannot tell.

    False for an instance of a class whose every submodule is known and none of them
    depends on ``training`` (pytorch/examples' super-resolution ``Net``: Conv2d, ReLU and
    PixelShuffle), for such ``torch.nn`` layers and containers of them, and for a
    ``torch.jit.trace``d module. A class in another file is answered by the project index,
    when there is one (``ClassFacts.changes_with_mode``).
    """
    value = _instance_value(names, expr)
    if value is None and isinstance(expr, cst.Name):
        return _loaded_changes_with_mode(names, expr)
    if value is None or not isinstance(_strip_chain(value), cst.Call):
        return None
    if _is_torch_load(names, value):
        return _loaded_changes_with_mode(names, expr)  # type: ignore[arg-type]
    return _value_changes_with_mode(names, value)


def _loaded_changes_with_mode(names: NameIndex, expr: cst.Name) -> bool | None:
    """A whole model loaded under ``safe_globals([...])`` (and moved, ``model =
    model.to(device)``) can only be built from the listed classes: eval() changes its output
    when one of them depends on the mode; unknown when one cannot be answered."""
    loads = []
    for binding in names.bindings_of(expr):
        value = binding.value if binding.kind == "assign" else None
        if value is None:
            return None
        moved = _strip_chain(value)
        if moved is not value and isinstance(moved, cst.Name) and moved.value == expr.value:
            continue
        if not _is_torch_load(names, value):
            return None
        loads.append(value)
    if len(loads) != 1 or _loaded_under_module_globals(names, loads[0]) is None:
        return None
    answers = [_class_changes_with_mode(names, element)
               for element in _allowed_globals(names, loads[0])]
    if True in answers:
        return True
    return None if None in answers or not answers else False


def _class_changes_with_mode(names: NameIndex, cls: cst.BaseExpression) -> bool | None:
    """The mode question for a class named in an allow list (not an instance of it)."""
    if isinstance(cls, cst.Name):
        binding = names.binding_of(cls)
        if binding is not None and binding.kind == "class" and isinstance(binding.node, cst.ClassDef):
            return changes_with_mode(names, binding.node)
    qualified = names.qualified_name(cls)
    if qualified is None:
        return None
    last = qualified.split(".")[-1]
    if qualified.startswith("torch.nn.") and last[:1].isupper():
        if last in _MODE_DEPENDENT:
            return True
        return None if last in _CONTAINERS else False
    facts = names.project.class_facts(qualified)
    return None if facts is None else facts.changes_with_mode


def _recurrent_dropout(call: cst.Call, position: int) -> bool:
    """A recurrent layer changes with mode only through its ``dropout`` between stacked
    layers: False when the call passes none (or a literal zero), True otherwise."""
    for index, arg in enumerate(call.args):
        if arg.star:
            return True  # `*args`/`**kwargs` may pass a dropout
        if (arg.keyword is not None and arg.keyword.value == "dropout") or \
                (arg.keyword is None and index == position):
            value = arg.value
            return not (isinstance(value, (cst.Integer, cst.Float))
                        and float(value.value) == 0.0)
    return False


def changes_with_mode(names: NameIndex, cls: cst.ClassDef) -> bool | None:
    """Does switching an instance of ``cls`` between train and eval change its forward?

    True: it builds a layer that depends on ``training`` (Dropout, BatchNorm...), calls a
    functional one, or reads ``.training``. False: every submodule it assigns is a known
    ``torch.nn`` layer (or a class of this file) that does not. None: something it builds
    or inherits cannot be told (an imported class, a module passed in, ``setattr``).
    """
    # No depth bound: a file has finitely many classes, and a class reached again while it
    # is being answered (two classes that build each other) is "unknown".
    evaluation = module_evaluation(names.memo, _MODE, 0, cycle=None, too_deep=None)
    return evaluation(cls, 0, lambda node, _depth: _class_mode(names, node))


def _class_mode(names: NameIndex, cls: cst.ClassDef) -> bool | None:
    """One step of :func:`changes_with_mode`."""
    unknown = False
    for base in cls.bases:
        qualified = names.qualified_name(base.value) or ""
        if qualified in NN_MODULE:
            continue
        local = base.value.value if isinstance(base.value, cst.Name) else None
        parent = module_classes(names).get(local or "")
        verdict = changes_with_mode(names, parent) if parent is not None else None
        if verdict:
            return True
        unknown |= verdict is None
    for node in _class_nodes(cls):
        if isinstance(node, cst.Attribute) and node.attr.value == "training":
            return True
        if isinstance(node, cst.Call):
            qualified = names.qualified_name(node.func) or ""
            if qualified.startswith("torch.") and \
                    qualified.split(".")[-1].startswith(_MODE_FUNCTIONS):
                return True
            if isinstance(node.func, cst.Name) and node.func.value in ("setattr",):
                unknown = True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                    "add_module", "register_module", "update"):
                unknown = True
    for value in _self_values(cls):
        verdict = _value_changes_with_mode(names, value)
        if verdict:
            return True
        unknown |= verdict is None
    return None if unknown else False


def _class_nodes(cls: cst.ClassDef) -> list[cst.CSTNode]:
    """The nodes of the class's body in source order; layout nodes (whitespace, commas)
    left out: every reader asks for attributes and calls (issue 23: LibCST's visitor cost
    a tenth of a cold run's rules' walk here)."""
    return preorder(cls.body)


def _self_values(cls: cst.ClassDef) -> list[cst.BaseExpression | None]:
    """Every value assigned to a ``self.<attr>`` in the class's methods (None: unclear)."""
    values: list[cst.BaseExpression | None] = []

    class _Collect(cst.CSTVisitor):
        @staticmethod
        def _is_self_attr(node: cst.BaseExpression) -> bool:
            return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and \
                node.value.value == "self"

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if self._is_self_attr(target.target):
                    values.append(node.value if len(node.targets) == 1 else None)
                elif isinstance(target.target, (cst.Tuple, cst.List)) and any(
                        self._is_self_attr(n) for n in preorder(target.target)
                        if isinstance(n, cst.BaseExpression)):
                    values.append(None)  # `self.a, b = ...`: which value is unclear

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if self._is_self_attr(node.target):
                values.append(node.value)

    cls.body.visit(_Collect())
    return values


def _value_changes_with_mode(names: NameIndex, value: cst.BaseExpression | None) -> bool | None:
    """For a value assigned to ``self.x``: a submodule that depends on the mode (True), one
    that does not or not a module at all (False), or unknown (None)."""
    if value is None:
        return None
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString, cst.BinaryOperation, cst.Comparison,
                          cst.BooleanOperation, cst.UnaryOperation)):
        return False
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return False
    value = _strip_chain(value)
    if not isinstance(value, cst.Call):
        return None
    qualified = names.qualified_name(value.func)
    if qualified is not None:
        last = qualified.split(".")[-1]
        if qualified in MODULE_WRAPPERS and value.args:
            return _value_changes_with_mode(names, value.args[0].value)
        if qualified in TRACERS:
            return False
        if not qualified.startswith("torch.nn.") or not last[:1].isupper():
            facts = names.project.class_facts(qualified)
            return None if facts is None else facts.changes_with_mode
        if last in RECURRENT_DROPOUT_POSITION:
            return _recurrent_dropout(value, RECURRENT_DROPOUT_POSITION[last])
        if last in _MODE_DEPENDENT:
            return True
        if last in _CONTAINERS:
            return _elements_change_with_mode(names, value)
        return False
    if isinstance(value.func, cst.Name):
        binding = names.binding_of(value.func)
        if binding is not None and binding.kind == "class" and \
                isinstance(binding.node, cst.ClassDef):
            return changes_with_mode(names, binding.node)
    return None


def _elements_change_with_mode(names: NameIndex, container: cst.Call) -> bool | None:
    """``nn.Sequential(a, b)`` / ``nn.ModuleList([a, b])``: what its listed members say."""
    members: list[cst.BaseExpression] = []
    for arg in container.args:
        if arg.star:
            return None
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            members.extend(e.value for e in arg.value.elements)
        elif isinstance(arg.value, cst.Dict):
            members.extend(e.value for e in arg.value.elements if isinstance(e, cst.DictElement))
        else:
            members.append(arg.value)
    unknown = False
    for member in members:
        verdict = _value_changes_with_mode(names, member)
        if verdict:
            return True
        unknown |= verdict is None
    return None if unknown else False
