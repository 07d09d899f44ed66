"""Checkpoints: where a ``torch.load`` result goes, and what the run saved where it reads.

TFC001 (``weights_only``), TFC002 (``map_location``) and TFC003 (whole-module
saves) ask the same questions of a ``torch.load`` call, answered here once:
how its result is used (one step of :mod:`.usage`), and what the project index
knows about the file it reads (:meth:`ProjectFacts.saved_content`). A load
or save *site* is named the way the index names it: the innermost function
around it and a digest of its path expression's syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, keyword_arg
from torchfix_codemods.analysis.core.definite import runs_before
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.syntax import code_of, literal_bool
from torchfix_codemods.analysis.core.usage import (
    Use,
    assigned_name,
    describe_use,
    reads_of_binding,
)
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.project import ModulePair, SavedContent
from torchfix_codemods.analysis.project.summary import site_of_text
from torchfix_codemods.analysis.vocabulary.torch_classes import CHAINABLE_METHODS

TORCH_LOAD = "torch.load"
TORCH_SAVE = "torch.save"

MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children",
    "named_children", "forward", "state_dict", "load_state_dict", "buffers", "named_buffers",
    "zero_grad", "register_forward_hook", "register_forward_pre_hook", "apply",
})
"""Methods only an ``nn.Module`` has: a loaded object used like this is a whole pickled model."""

_SCALER_WORDS = ("scaler",)

OBJECT_ONLY_METHODS = MODULE_ONLY_METHODS | {"step", "add_param_group"}
"""Methods neither a tensor nor a dict has: an optimizer's, a scheduler's, a module's."""
_FOLLOWED_METHODS = CHAINABLE_METHODS
"""Methods that return the object itself (a module) or one like it: its use is followed."""
_TENSOR_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "data", "grad", "T", "mT", "H", "mH", "ndim", "requires_grad",
    "is_cuda", "is_leaf", "real", "imag", "layout", "names", "grad_fn", "itemsize", "nbytes",
    "is_sparse", "is_quantized", "is_meta",
})
_MAX_FOLLOW = 4


@dataclass(frozen=True)
class LoadUse:
    """Where the result of one ``torch.load`` goes."""

    target: cst.Name | None
    """``x`` in ``x = torch.load(...)``."""
    uses: list[Use] | None
    """Every use of the result (None: assigned more than once, not followable)."""
    sinks: list[Use | None]
    """For each use, the ``load_state_dict(...)`` argument it is (itself, or ``x["key"]``
    passed on), or None."""
    unpacked: tuple[cst.Name, ...] = ()
    """``a, b`` in ``a, b = torch.load(...)``: the names the loaded sequence is unpacked to."""

    @property
    def into_state_dict(self) -> bool:
        """Only into ``load_state_dict`` (a module's, an optimizer's), directly or by key."""
        return bool(self.uses) and all(sink is not None for sink in self.sinks)

    @property
    def whole_into_state_dict(self) -> bool:
        """The whole loaded object, and nothing else, goes into ``load_state_dict``: the file
        holds a state dict (not a dict that also holds other things under other keys)."""
        return bool(self.uses) and all(sink is not None and sink is use
                                       for sink, use in zip(self.sinks, self.uses or (), strict=True))

    @property
    def into_scaler_only(self) -> bool:
        """Only into a grad scaler's ``load_state_dict``, whose state holds Python numbers."""
        return self.into_state_dict and all(_receiver_is_scaler(sink) for sink in self.sinks)

    @property
    def as_module(self) -> bool:
        """Called, or given a method only an ``nn.Module`` has: a whole pickled model."""
        return any(use.kind == "called" or (use.kind == "method" and
                                            use.attr in MODULE_ONLY_METHODS)
                   for use in self.uses or ())

    @property
    def returned(self) -> bool:
        return any(use.kind == "return" for use in self.uses or ())


def load_use(names: NameIndex, call: cst.Call) -> LoadUse:
    target = assigned_name(names, call)
    if target is None:
        uses = [describe_use(names, call)]
    else:
        reads = reads_of_binding(names, target)
        if reads is None:
            return LoadUse(target, None, [])
        uses = [describe_use(names, read) for read in reads]
    return LoadUse(target, uses, [_state_dict_sink(names, use) for use in uses],
                   _unpacked(names, call))


def _unpacked(names: NameIndex, call: cst.Call) -> tuple[cst.Name, ...]:
    """``a, b`` in ``a, b = call`` (the plain names among the targets)."""
    parent = names.parent(call)
    if not (isinstance(parent, cst.Assign) and parent.value is call and
            len(parent.targets) == 1 and
            isinstance(parent.targets[0].target, (cst.Tuple, cst.List))):
        return ()
    return tuple(element.value for element in parent.targets[0].target.elements
                 if isinstance(element.value, cst.Name))


def object_part(names: NameIndex, use: LoadUse) -> str | None:
    """A part of the loaded object used as something ``weights_only=True`` cannot load:
    ``checkpoint["decoder"]`` assigned, then called or ``.eval()``-ed (a whole module),
    ``checkpoint["optimizer"].step()`` (an optimizer object), ``args = checkpoint["args"]``
    read as ``args.lr`` (an ``argparse.Namespace``), or the whole loaded object read as
    ``vocab.tgt`` (a pickled instance of the program's own class: no tensor, dict, list or
    number ``weights_only=True`` loads has such an attribute), or the whole loaded object
    moved (``.to(device)``, ``.cuda()``) and then called. None when nothing is used that
    way."""
    for item in use.uses or ():
        if item.kind == "method" and item.attr in _FOLLOWED_METHODS and item.call is not None:
            # `net_g = torch.load(path).to(device)`, then `net_g(x)` (mrzhu-cool/pix2pix-pytorch
            # test.py): the moved object is what the program uses, and it is called.
            verdict = _object_use(names, item.call, 1)
            if verdict is not None:
                return f"the loaded object, moved with `.{item.attr}()`, is {verdict}"
            continue
        if item.kind == "attribute" and item.attr is not None and \
                item.attr not in _TENSOR_ATTRIBUTES and not item.attr.startswith("_"):
            return (f"the loaded object is read as an object with attributes (`.{item.attr}`: "
                    "an instance of a class)")
        if item.kind != "subscript":
            continue
        shown = f'`[{item.key!r}]`' if item.key is not None else "a part of it"
        verdict = _object_use(names, item.node, 0)
        if verdict is not None:
            return f"{shown} of the loaded object is {verdict}"
    for name in use.unpacked:
        verdict = _name_use(names, name, 0)
        if verdict is not None:
            return f"`{name.value}`, unpacked from the loaded object, is {verdict}"
    return None


def _name_use(names: NameIndex, target: cst.Name, depth: int) -> str | None:
    """How the value bound at ``target`` is used as an object (one of its reads suffices)."""
    for read in reads_of_binding(names, target) or ():
        verdict = _object_use(names, read, depth + 1)
        if verdict is not None:
            return verdict
    return None


def _object_use(names: NameIndex, node: cst.CSTNode, depth: int) -> str | None:
    """How the value at ``node`` is used as an object (one of its uses suffices)."""
    if depth > _MAX_FOLLOW:
        return None
    use = describe_use(names, node)
    if use.kind == "called":
        return "called (a whole `nn.Module`)"
    if use.kind == "method" and use.attr is not None and use.call is not None:
        if use.attr in OBJECT_ONLY_METHODS:
            return f"given `.{use.attr}()` (a whole module or optimizer object)"
        if use.attr in _FOLLOWED_METHODS:
            return _object_use(names, use.call, depth + 1)
        return None
    if use.kind == "attribute" and use.attr is not None:
        if use.attr == "param_groups":
            return "an optimizer object (`.param_groups`)"
        if use.attr not in _TENSOR_ATTRIBUTES and not use.attr.startswith("_") and \
                not isinstance(names.parent(use.node), cst.Call):
            return f"read as an object with attributes (`.{use.attr}`: an `argparse.Namespace`?)"
        return None
    target = assigned_name(names, node) if use.kind == "other" else None
    if target is None:
        return None
    return _name_use(names, target, depth)


def module_load_of_the_same_file(names: NameIndex, call: cst.Call,
                                 loads: list[cst.Call]) -> cst.Call | None:
    """Another of ``loads`` in ``call``'s function that reads the same path expression and
    uses what it loads as a whole module: both read one file, so the file holds a module
    (``model = torch.load(path)`` in one branch, ``net.load_state_dict(torch.load(path))``
    in the other, which cannot work with any ``weights_only``)."""
    path = argument(call, "f", 0)
    if path is None:
        return None
    text = code_of(path.value)
    scope = names.enclosing(call, cst.FunctionDef)
    for other in loads:
        if other is call or names.enclosing(other, cst.FunctionDef) is not scope:
            continue
        other_path = argument(other, "f", 0)
        if other_path is None or code_of(other_path.value) != text:
            continue
        if explicitly_whole(other) or load_use(names, other).as_module:
            return other
    return None


def saved_back(names: NameIndex, use: LoadUse) -> bool:
    """The loaded object is saved again with ``torch.save`` (a tool that rewrites checkpoints,
    which must load whatever a file holds)."""
    for item in use.uses or ():
        if item.kind == "argument" and item.call is not None and item.arg is not None and \
                names.qualified_name(item.call.func) == TORCH_SAVE and \
                argument(item.call, "obj", 0) is item.arg:
            return True
    return False


def explicitly_whole(call: cst.Call) -> bool:
    """``weights_only=False`` written out: the load returns whatever object was pickled."""
    value = keyword_arg(call, "weights_only")
    return value is not None and literal_bool(value.value) is False


def site(names: NameIndex, call: cst.Call, keyword: str, position: int) -> tuple[str, str] | None:
    """The index's name for a save/load site: (innermost function, digest of the path)."""
    path = argument(call, keyword, position)
    if path is None:
        return None
    digest = site_of_text(code_of(path.value))
    if digest is None:
        return None
    function = names.enclosing(call, cst.FunctionDef)
    return (function.name.value if function is not None else ""), digest


def saved_content(names: NameIndex, call: cst.Call) -> SavedContent | None:
    """What the run saves to the file this ``torch.load`` reads (None: not known)."""
    found = site(names, call, "f", 0)
    return None if found is None else names.project.saved_content(*found)


def saved_before(names: NameIndex, load: cst.Call) -> cst.Call | None:
    """A ``torch.save`` of this file that writes the file ``load`` reads, on a line that runs
    before it on every path (``torch.save(resnet, 'model.ckpt')`` right above ``model =
    torch.load('model.ckpt')``): the path is the same literal, or the same name bound the
    same way at both calls. What comes back was saved by this process moments ago, from
    devices that exist here."""
    path = argument(load, "f", 0)
    line = statement_line(names, load)
    if path is None or line is None or not isinstance(path.value, (cst.SimpleString, cst.Name)):
        return None
    written = code_of(path.value)
    scope = names.scope_of(load)
    for statement in _statements_before(names, line):
        for node in walk_local(statement):
            if not (isinstance(node, cst.Call) and names.qualified_name(node.func) == TORCH_SAVE):
                continue
            target = argument(node, "f", 1)
            if target is None or code_of(target.value) != written or \
                    names.scope_of(node) is not scope:
                continue
            if isinstance(path.value, cst.Name) and (
                    not isinstance(target.value, cst.Name) or
                    {id(b) for b in reaching_bindings(names, target.value)} !=
                    {id(b) for b in reaching_bindings(names, path.value)}):
                continue
            if runs_before(names, statement, load):
                return node
    return None


def state_dict_saved_before(names: NameIndex, load: cst.Call) -> bool:
    """The :func:`saved_before` save of ``load``'s file saves a ``.state_dict()``: what comes
    back is a state dict, whatever the project index read in the file before this run's
    earlier fix rounds (TFC003 turns ``torch.save(net, path)`` into a state-dict save)."""
    save = saved_before(names, load)
    saved = argument(save, "obj", 0) if save is not None else None
    return saved is not None and isinstance(saved.value, cst.Call) and \
        isinstance(saved.value.func, cst.Attribute) and saved.value.func.attr.value == "state_dict"


def _statements_before(names: NameIndex, line: cst.SimpleStatementLine
                       ) -> list[cst.SimpleStatementLine]:
    """The simple statement lines before ``line`` in its own block (nearest first)."""
    block = names.parent(line)
    body = list(getattr(block, "body", ()))
    index = next((i for i, s in enumerate(body) if s is line), 0)
    return [s for s in reversed(body[:index]) if isinstance(s, cst.SimpleStatementLine)]


def module_pair(names: NameIndex, call: cst.Call, role: str) -> ModulePair | None:
    """The whole-module save/load pair a ``torch.save`` (``role="save"``) or a
    ``torch.load`` (``role="load"``) belongs to, across files."""
    found = site(names, call, "f", 1 if role == "save" else 0)
    if found is None:
        return None
    pair = names.project.module_pair(*found)
    return pair if pair is not None and pair.role == role else None


def _is_state_dict_sink(use: Use) -> bool:
    """``x.load_state_dict(value)`` without ``assign=True`` (which keeps the loaded tensors)."""
    if use.kind != "argument" or use.call is None or use.arg is None:
        return False
    func = use.call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict"):
        return False
    if use.arg.keyword is not None and use.arg.keyword.value != "state_dict":
        return False
    assign = keyword_arg(use.call, "assign")
    return assign is None or literal_bool(assign.value) is False


def _state_dict_sink(names: NameIndex, use: Use) -> Use | None:
    if _is_state_dict_sink(use):
        return use
    if use.kind == "subscript" and use.key is not None:
        inner = describe_use(names, use.node)
        return inner if _is_state_dict_sink(inner) else None
    return None


def _receiver_is_scaler(sink: Use | None) -> bool:
    if sink is None or sink.call is None or not isinstance(sink.call.func, cst.Attribute):
        return False
    receiver = code_of(sink.call.func.value).lower()
    return any(word in receiver for word in _SCALER_WORDS)
