"""What one file tells the rest of the project: a summary read off the standard ``ast``.

The project index (:mod:`.index`) is built in a first pass over every
file of a run, before any rule runs, so it must cost little: this module parses
with the standard library's ``ast`` (several times faster than LibCST, and
LibCST is never imported on this path) and keeps only what another file may ask:

* the file's imports (local name -> dotted target, relative ones as written);
* its classes with their bases, as the file spells them;
* its module-level functions: what each returns where that is evident, whether it
  compares torch's version, whether it trains (``.backward()``, ``optimizer.step()``);
* module-level names bound once (constants, torch-version values and flags);
* every ``torch.save`` and ``torch.load``: the path it writes or reads (as a key)
  and, for a save, what it saves;
* calls to functions of other modules, with what is passed (which arguments are
  models), for questions about callers in another file.

A summary is plain data (``to_json``/``from_json``), cached per file content, and
holds no line-independent position other than line numbers of the sites. Values
are symbolic and resolved only when the index combines the files: a summary never
depends on another file, so editing one file re-summarises only that file.

Values are the tagged types of :mod:`.values` (``Tensor(cpu, detached)``, ``Dict``,
``Param``...), written to the cache as the JSON lists :func:`.values.encode` makes.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from torchfix_codemods.analysis.core.ast_walk import iter_child_nodes, walk
from torchfix_codemods.analysis.project.registry import summarize_facts
from torchfix_codemods.analysis.project.values import (
    FLAG,
    LIT,
    NAMESPACE,
    NUMPY,
    SUBMODULE,
    UNKNOWN,
    VERSION,
    AnyOf,
    Call,
    Cmp,
    Dict,
    Flag,
    Flagged,
    Item,
    Lit,
    Namespace,
    Numpy,
    Param,
    Ref,
    Seq,
    StateDict,
    Str,
    Tensor,
    Value,
    decode,
    encode,
)
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    CAST_METHODS,
    COPIES,
    DEVICE_METHODS,
    LIKE_FACTORIES,
    TENSOR_FACTORIES,
    VIEW_METHODS,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    CHAINABLE_METHODS,
    DATA_PARALLEL_CLASSES,
    DDP_CLASSES,
    MODE_CONTAINERS,
    MODE_DEPENDENT_LAYERS,
    MODE_FUNCTIONS,
    PROCESS_GROUP_CALLS,
    RECURRENT_DROPOUT_POSITION,
    is_dataloader_class,
)
from torchfix_codemods.analysis.vocabulary.version_checks import (
    REQUIREMENT_CACHE,
    Operand,
    checks_version,
    comparison_operator,
    requirement_check,
    version_query,
    version_source,
)
from torchfix_codemods.noqa import is_silenced, noqa_lines

Key = list[Any]
_MAX_MODE_DEPTH = 4
_MAX_DEPTH = 6
_MAX_ORDERED = 16
"""Tuple and list literals up to this long keep each element in its place."""
_MAX_ATTRIBUTE_VALUES = 6
"""``self.x`` assigned more often than this in its class is not followed."""

_CPU_FACTORIES = (TENSOR_FACTORIES - LIKE_FACTORIES) | {"from_numpy"}
"""``torch.<name>(...)``: a fresh tensor on the CPU unless ``device=`` is given, without grad
unless ``requires_grad=`` is."""
_TENSOR_FUNCTIONS = LIKE_FACTORIES | {"as_tensor"} | {
    "cat", "stack", "where", "matmul", "mm", "bmm", "softmax", "log_softmax", "sigmoid", "tanh",
    "exp", "log", "sum", "mean", "argmax", "argmin", "clamp", "flatten", "abs", "sqrt",
    "einsum", "tensordot", "cumsum",
}
"""``torch.<name>(...)``: a tensor, on a device and with a grad its arguments decide (a
``*_like`` factory or ``as_tensor`` of a CUDA tensor is on the GPU; ``as_tensor`` of a tensor
that requires grad keeps it: measured on torch 2.13 with a ``meta`` tensor)."""
_SAME_KIND_METHODS = CAST_METHODS | DEVICE_METHODS | COPIES | VIEW_METHODS | CHAINABLE_METHODS | {
    "share_memory_", "copy", "astype"}
"""Methods whose result is the same kind of value as their receiver (a tensor's, a module's,
a numpy array's); ``.type()`` is not one (without arguments it returns a string)."""
_PRIMITIVE_METHODS = frozenset({"item", "tolist", "keys", "items", "values", "__len__", "size",
                                "numel", "dim"})
_PRIMITIVE_BUILTINS = frozenset({"int", "float", "str", "bool", "len", "round", "abs", "min",
                                 "max", "sum", "repr", "format"})
_TRAINING_METHODS = frozenset({"backward"})
_VERSION_CALLS = frozenset({
    "lightning_utilities.core.imports.compare_version",
    "lightning_utilities.compare_version", "pytorch_lightning.utilities.imports.compare_version",
})
_REQUIREMENT_CACHES = frozenset({
    "lightning_utilities.core.imports.RequirementCache", "lightning_utilities.RequirementCache",
})
_METADATA_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version",
                               "pkg_resources.get_distribution"})


@dataclass
class SaveSite:
    """A ``torch.save(obj, f)``: what it writes where."""

    line: int
    function: str
    """The innermost function it is in ("" at module level), for site lookups."""
    site: str
    """A digest of the path expression's syntax tree: the site's name within ``function``."""
    key: Key | None
    content: Value
    built: str | None = None
    """When ``obj`` is a name bound once to ``C(...)``: ``C`` as the file spells it."""
    built_args: str | None = None
    """...and the constructor's arguments as source text, when all are literals."""
    obj: str | None = None
    """``obj`` when it is a plain name."""
    noqa: bool = False
    keys: list[str] | None = None
    """The string keys of a saved dict (its literal's, and items stored into it afterwards);
    None when ``obj`` is not such a dict or one of its keys is not a literal string. A load
    whose result is read only by keys the dict has may read this file (:mod:`.checkpoints`)."""
    via: str | None = None
    """A call of a function of another module that may hand its arguments to ``torch.save``
    (``utils.save_on_master(state, path)``), as the file spells it; the index keeps the
    site only when that function is one (``FileSummary.save_helpers``)."""


@dataclass
class LoadSite:
    """A ``torch.load(f)``: where it reads from and where its result goes."""

    line: int
    function: str
    site: str
    key: Key | None
    target: str | None = None
    """``x`` in a statement ``x = torch.load(...)``."""
    noqa: bool = False
    alone: bool = False
    """The statement has its lines to itself (it can be replaced by several statements)."""
    bound: list[str] = field(default_factory=list)
    """Names the scope of an assigned load binds other than by import (a class name a
    rewrite would add must not be one of them)."""
    keys: list[str] | None = None
    """The literal string keys its result is read by (``checkpoint["model"]``, directly or
    through the name it is assigned to); None when it is not read by key."""
    open_keys: bool = False
    """...and it is also read by a key that is not a literal (``checkpoint[key]``)."""


@dataclass
class CallSite:
    """A call of a function imported from another module, with what it passes."""

    callee: str
    """Dotted as the file spells it after its imports (``utils.evaluate``, ``.utils.evaluate``)."""
    args: dict[str, Value]
    """``"0"``, ``"1"``... for positional arguments, the keyword otherwise."""
    trains: bool
    """The calling function (or module-level code) trains: ``.backward()``, ``.step()``."""
    line: int
    alternatives: dict[str, Value] = field(default_factory=dict)
    """For an argument that is a name bound several times (a notebook's ``model`` rebuilt in
    a later cell), every plain value it may hold (``AnyOf``), keyed like ``args``.
    Only the question "does every call pass a module" reads it; ``args`` keeps ``unknown``
    for such a name, so what a save writes is not decided by the first binding alone."""


@dataclass
class LoaderFunction:
    """A module-level function that returns the ``DataLoader`` it builds (TFC301's data side
    when that loader feeds a DataParallel training loop in another file)."""

    line: int
    """The line of the ``DataLoader(...)`` call."""
    problem: str | None = None
    """Why a ``DistributedSampler`` cannot be added to it (``**kwargs``, a sampler of its own,
    no ``batch_size``); None when it can."""


@dataclass
class LoaderCall:
    """``target = callee(...)`` in a file that wraps a model in ``DataParallel``, where
    ``target`` is read by an epoch loop (a ``for`` over it inside another ``for``)."""

    callee: str
    target: str
    function: str
    """The function the assignment is in ("" at module level)."""
    line: int


@dataclass
class PassedLoader:
    """``X = DataLoader(...)`` handed to a constructor, ``Y = C(..., keyword=X)``, in a file
    whose epoch loop calls a method of ``Y`` with the epoch (BERT-pytorch's ``__main__``:
    ``for epoch in ...: trainer.train(epoch)``)."""

    callee: str
    keyword: str
    target: str
    """``X``, the loader's name."""
    instance: str
    """``Y``, the name the constructed object is bound to."""
    function: str
    line: int
    """The line of the ``DataLoader(...)`` call."""
    problem: str | None = None


@dataclass
class DataParallelUse:
    """What a file that calls ``nn.DataParallel`` shows about its training (for TFC301)."""

    wraps: int
    """How many ``DataParallel(...)`` calls it makes."""
    distributed: bool
    """It already has a DistributedDataParallel or process-group path."""
    trains: bool
    """It calls ``.backward()`` or builds a ``torch.optim`` optimizer."""
    loader_calls: list[LoaderCall] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    """The module-level classes the wraps are in (a trainer class)."""
    problem: str | None = None
    """Why the rule would not migrate the file, where ``ast`` shows it (the wrap is not a
    plain assignment or sits in a loop, the file already binds ``_ddp_*`` names, it loads with
    ``torch.load`` after it saves); None when nothing shows."""


@dataclass
class FunctionSummary:
    params: list[str]
    returns: Value
    trains: bool = False


@dataclass
class FileSummary:
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, list[str]] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    names: dict[str, Value] = field(default_factory=dict)
    saves: list[SaveSite] = field(default_factory=list)
    loads: list[LoadSite] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    class_modes: dict[str, list[str]] = field(default_factory=dict)
    """Per class: what its own body says about ``eval()`` changing its forward: ``yes`` (a
    Dropout/BatchNorm-like layer, a functional one, ``.training``), ``?`` (something this
    file cannot tell: a module passed in, ``setattr``), ``class:<dotted>`` (a submodule
    built from a class the index resolves); empty when nothing in it depends on the mode."""
    loader_functions: dict[str, LoaderFunction] = field(default_factory=dict)
    data_parallel: DataParallelUse | None = None
    """Only for a file that calls ``nn.DataParallel``."""
    passed_loaders: list[PassedLoader] = field(default_factory=list)
    callees: dict[str, int] = field(default_factory=dict)
    """How many times the file calls each function of another module (dotted as the file
    spells it, like ``CallSite.callee``) or of its own module level (``@.name``)."""
    save_helpers: list[str] = field(default_factory=list)
    """Module-level functions that hand all their arguments to ``torch.save``
    (``def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)``)."""
    methods: dict[str, FunctionSummary] = field(default_factory=dict)
    """Plain methods of module-level classes (``Class.method``): their parameters other than
    ``self`` and ``**kwargs``, for what calls on instances pass (a trainer's ``save``)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Each registered fact module's part (:mod:`.registry`), by the fact's name."""
    parsed: bool = True

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["names"] = {k: encode(v) for k, v in self.names.items()}
        for kind in ("functions", "methods"):
            for name, function in getattr(self, kind).items():
                data[kind][name]["returns"] = encode(function.returns)
        for saved, save in zip(data["saves"], self.saves, strict=True):
            saved["content"] = encode(save.content)
        for called, call in zip(data["calls"], self.calls, strict=True):
            called["args"] = {k: encode(v) for k, v in call.args.items()}
            called["alternatives"] = {k: encode(v) for k, v in call.alternatives.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileSummary:
        return cls(
            imports=dict(data["imports"]),
            classes={k: list(v) for k, v in data["classes"].items()},
            functions={k: _function(v) for k, v in data["functions"].items()},
            names={k: decode(v) for k, v in data["names"].items()},
            saves=[SaveSite(**{**s, "content": decode(s["content"])}) for s in data["saves"]],
            loads=[LoadSite(**s) for s in data["loads"]],
            calls=[CallSite(**{**c, "args": {k: decode(v) for k, v in c["args"].items()},
                                "alternatives": {k: decode(v) for k, v in
                                                 c.get("alternatives", {}).items()}})
                   for c in data["calls"]],
            class_modes={k: list(v) for k, v in data.get("class_modes", {}).items()},
            loader_functions={k: LoaderFunction(**v)
                              for k, v in data.get("loader_functions", {}).items()},
            data_parallel=_data_parallel_use(data.get("data_parallel")),
            passed_loaders=[PassedLoader(**p) for p in data.get("passed_loaders", [])],
            callees=dict(data.get("callees", {})),
            save_helpers=list(data.get("save_helpers", [])),
            methods={k: _function(v) for k, v in data.get("methods", {}).items()},
            facts=dict(data.get("facts", {})),
            parsed=bool(data["parsed"]),
        )


def _function(data: dict[str, Any]) -> FunctionSummary:
    return FunctionSummary(list(data["params"]), decode(data["returns"]), bool(data["trains"]))


def _data_parallel_use(data: dict[str, Any] | None) -> DataParallelUse | None:
    if data is None:
        return None
    calls = [LoaderCall(**c) for c in data.get("loader_calls", [])]
    return DataParallelUse(data["wraps"], data["distributed"], data["trains"], calls,
                           list(data.get("classes", [])), data.get("problem"))


def site_id(expr: ast.expr) -> str:
    """The name of a save/load site within its function: a digest of its path expression.

    Formatting-independent (``ast.dump`` has no positions), so the rules, which see
    LibCST nodes, find the same site by parsing the expression's text again
    (:func:`site_of_text`).
    """
    return hashlib.sha1(ast.dump(expr).encode()).hexdigest()[:16]


def site_of_text(text: str) -> str | None:
    """:func:`site_id` of an expression given as source text (None when it does not parse)."""
    try:
        tree = ast.parse(f"(\n{text}\n)", mode="eval")
    except (SyntaxError, ValueError):
        return None
    return site_id(tree.body)


def _distinct(values: Iterable[Value]) -> tuple[Value, ...]:
    """A container's element values, each once, in first-seen order: what the index reads of
    a container (``ProjectIndex.content`` combines them) does not depend on repeats, and a
    generated 180,000-number list summarised to 180,000 entries (seconds of JSON per run)."""
    return tuple(dict.fromkeys(values))


def summarize(text: str, tree: ast.Module | None = None) -> FileSummary:
    """The summary of one file's source text (a notebook's joined code cells too); ``tree``:
    ``ast.parse(text)`` when the caller parsed it already."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return FileSummary(parsed=False)
    summary = _Summarizer(tree, text).summary
    summary.facts = summarize_facts(tree)
    return summary


@dataclass
class _Scope:
    name: str
    """The function's name ("" for the module)."""
    node: ast.AST
    params: list[str]
    bindings: dict[str, list[ast.expr | None]]
    """Names bound in the scope (imports excluded) with their values (None: not plain)."""
    imported: set[str] = field(default_factory=set)
    """Names bound by an import in the scope (see ``FileSummary.imports`` for what)."""
    trains: bool = False
    module_level: bool = False
    top_function: bool = False
    """A module-level function (its parameters can be followed through its callers)."""
    methods: set[str] = field(default_factory=set)
    """Methods called directly in the scope (``backward``, ``step``...)."""
    returns: list[ast.Return] = field(default_factory=list)
    generator: bool = False
    method: str | None = None
    """``Class.method`` for a method of a module-level class (its parameters, ``self``
    aside, are followed through the calls of that method on instances of the class)."""
    kwarg: str | None = None
    """The name of the ``**kwargs`` parameter, whose value is every keyword argument that
    names no other parameter."""
    items: dict[str, list[ast.expr]] = field(default_factory=dict)
    """Values stored into a name's items (``state["args"] = args``): a checkpoint dict
    filled after it is built holds them too."""
    item_keys: dict[str, list[str | None]] = field(default_factory=dict)
    """The keys of those stores, in the same order (None: not a literal string)."""
    increments: dict[str, list[ast.expr]] = field(default_factory=dict)
    """What augmented assignments add to a name (``correct += pred.eq(y).sum().item()``)."""
    read_keys: dict[str, list[str | None]] = field(default_factory=dict)
    """The keys each name is subscripted with (None: not a literal string)."""

    def bind(self, name: str, value: ast.expr | None) -> None:
        self.bindings.setdefault(name, []).append(value)


class _Summarizer:
    def __init__(self, tree: ast.Module, text: str) -> None:
        self.summary = FileSummary()
        self.text = text
        self._silenced = noqa_lines(text)
        self.argparse_defaults: dict[str, str] = {}
        self.module = _Scope("", tree, [], {}, module_level=True)
        self._visiting: set[int] = set()
        self._defined: set[str] = set()
        self._stars = any(isinstance(node, ast.ImportFrom) and
                          any(alias.name == "*" for alias in node.names) for node in tree.body)
        """A module-level ``from m import *``: a name bound nowhere else may come from it."""
        self._crowded: set[int] = set()
        self._read_keys: dict[int, list[str | None]] = {}
        self._functions: dict[int, _Scope] = {}
        self._attributes: dict[tuple[str, str], list[tuple[ast.expr | None, _Scope]]] = {}
        """``self.x = value`` in the methods of a module-level class, by (class, ``x``), with
        the method's scope (None: not a plain assignment)."""
        self._calls: list[tuple[ast.Call, _Scope, str | None, ast.stmt | None]] = []
        self._methods = {id(item): f"{node.name}.{item.name}" for node in tree.body
                         if isinstance(node, ast.ClassDef) for item in node.body
                         if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and item.args.args and not item.decorator_list}
        """Plain methods (no decorator: not static or class methods) of module-level classes."""
        self._scan(tree)
        for scope in (self.module, *self._functions.values()):
            scope.trains = _trains(scope.methods)
        self._collect_module(tree)
        self._save_helpers = self._pass_through_saves(tree)
        self.summary.save_helpers = sorted(self._save_helpers)
        for call, scope, target, statement in self._calls:
            self._call(call, scope, target, statement)
        # TFC301's data side across files; the substring tests keep the cost out of the
        # files that cannot take part.
        if "DataLoader" in text:
            self._loader_functions(tree)
            self._passed_loaders()
        if "DataParallel" in text:
            self._data_parallel(tree)

    # --------------------------------------------------------------- one pass
    def _scan(self, tree: ast.Module) -> None:
        """One walk of the whole tree: imports, scopes with their bindings, returns and
        called methods, argparse defaults, lines shared by statements, and every call
        (what the summary reads afterwards: the tree is walked once)."""
        imports: dict[str, str | None] = {}
        lines: dict[int, int] = {}
        stack: list[tuple[ast.AST, _Scope, bool, bool]] = [
            (node, self.module, False, False) for node in reversed(tree.body)]
        while stack:
            node, scope, in_class, in_lambda = stack.pop()
            kind = type(node)
            if kind is ast.Name or kind is ast.Constant:
                continue  # the most frequent nodes, and leaves
            quiet = in_class or in_lambda  # bindings there are not the scope's
            if kind in _STATEMENTS:
                lines[node.lineno] = lines.get(node.lineno, 0) + 1  # type: ignore[attr-defined]
                end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
                if end != node.lineno and kind not in _COMPOUND:  # type: ignore[attr-defined]
                    lines[end] = lines.get(end, 0) + 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not quiet:
                    scope.bind(node.name, None)
                inner = self._function_scope(node, scope.module_level and not quiet)
                inner.method = self._methods.get(id(node))
                self._functions[id(node)] = inner
                outer = [*node.decorator_list, *node.args.defaults,
                         *[d for d in node.args.kw_defaults if d is not None]]
                stack.extend((child, scope, in_class, in_lambda) for child in reversed(outer))
                stack.extend((child, inner, False, False) for child in reversed(node.body))
                continue
            if isinstance(node, ast.ClassDef):
                if not quiet:
                    scope.bind(node.name, None)
                outer = [*node.bases, *node.decorator_list, *[k.value for k in node.keywords]]
                stack.extend((child, scope, in_class, in_lambda) for child in reversed(outer))
                stack.extend((child, scope, True, in_lambda) for child in reversed(node.body))
                continue
            if isinstance(node, ast.Lambda):
                stack.append((node.body, scope, in_class, True))
                continue
            if isinstance(node, ast.Call):
                self._scan_call(node, scope, in_lambda)
            elif isinstance(node, ast.Assign):
                single = len(node.targets) == 1
                if not quiet:
                    for target in node.targets:
                        if isinstance(target, ast.Subscript) and \
                                isinstance(target.value, ast.Name):
                            scope.items.setdefault(target.value.id, []).append(node.value)
                            scope.item_keys.setdefault(target.value.id, []).append(
                                _string_key(target.slice))
                        self._attribute_stores(target, node.value if single else None, scope)
                        plain = single and isinstance(target, ast.Name)
                        unpacked = _unpacked(target, node.value) if single else None
                        for index, name in enumerate(_target_names(target)):
                            scope.bind(name, node.value if plain else
                                       unpacked[index] if unpacked else None)
                if isinstance(node.value, ast.Call):
                    first = node.targets[0] if single else None
                    name = first.id if isinstance(first, ast.Name) else None
                    self._scan_call(node.value, scope, in_lambda, name, node)
                    stack.extend((child, scope, in_class, in_lambda)
                                 for child in _children(node.value))
                    stack.extend((child, scope, in_class, in_lambda)
                                 for child in reversed(node.targets))
                    continue
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._scan_import(node, scope, imports, bind=not quiet)
            elif isinstance(node, ast.Return):
                if not in_lambda:
                    scope.returns.append(node)
            elif isinstance(node, (ast.Yield, ast.YieldFrom)):
                scope.generator = True
            elif kind is ast.Subscript and isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                # Keys a loaded checkpoint is read by (``checkpoint["model"]``).
                key = _string_key(node.slice)  # type: ignore[attr-defined]
                value = node.value  # type: ignore[attr-defined]
                if isinstance(value, ast.Name):
                    scope.read_keys.setdefault(value.id, []).append(key)
                elif isinstance(value, ast.Call):
                    self._read_keys[id(value)] = [key]
            elif not quiet:
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    self._attribute_stores(node.target, node.value if isinstance(
                        node, ast.AnnAssign) else None, scope)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
                    for target in _targets_of(node):
                        self._attribute_stores(target, None, scope)
                _scan_binding(node, scope)
            stack.extend((child, scope, in_class, in_lambda) for child in _children(node))
        self.summary.imports = {k: v for k, v in imports.items() if v is not None}
        self._crowded = {line for line, count in lines.items() if count > 1}
        self._defined = {node.name for node in tree.body
                         if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}

    def _attribute_stores(self, target: ast.expr, value: ast.expr | None,
                          scope: _Scope) -> None:
        """Record ``self.x = value`` (and, as not plain, ``self.x`` in a tuple target or
        ``self.x += ...``) in a method of a module-level class."""
        if scope.method is None or not scope.params:
            return
        owner = scope.method.split(".", 1)[0]
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                target.value.id == scope.params[0]:
            self._attributes.setdefault((owner, target.attr), []).append((value, scope))
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for element in (target.elts if not isinstance(target, ast.Starred)
                            else [target.value]):
                self._attribute_stores(element, None, scope)

    def _scan_call(self, call: ast.Call, scope: _Scope, in_lambda: bool,
                   target: str | None = None, statement: ast.stmt | None = None) -> None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if not in_lambda:
                scope.methods.add(func.attr)
            if func.attr == "add_argument":
                self._argparse(call)
        self._calls.append((call, scope, target, statement))

    @staticmethod
    def _scan_import(node: ast.Import | ast.ImportFrom, scope: _Scope,
                     imports: dict[str, str | None], bind: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                _bind(imports, local, alias.name if alias.asname else local)
                if bind:
                    scope.imported.add(local)
            return
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue
            target = f"{base}.{alias.name}" if not base.endswith(".") else base + alias.name
            _bind(imports, alias.asname or alias.name, target)
            if bind:
                scope.imported.add(alias.asname or alias.name)

    def dotted(self, expr: ast.expr, scope: _Scope) -> str | None:
        """``nn.Linear`` -> ``torch.nn.Linear`` through the imports; a class or function of
        this file's module level -> ``@.Name``; None for anything else (a local variable)."""
        chain = _chain(expr)
        if chain is None:
            return None
        name, rest = chain
        if not scope.module_level:
            if name in scope.params or name in scope.bindings:
                return None
            if name in scope.imported:
                target = self.summary.imports.get(name)
                return ".".join([target, *rest]) if target is not None else None
        if name in self.module.bindings:
            return ".".join(["@", name, *rest]) if name in self._defined and \
                all(v is None for v in self.module.bindings[name]) else None
        target = self.summary.imports.get(name)
        if target is not None:
            return ".".join([target, *rest])
        if self._stars and not hasattr(builtins, name):
            # `from utils import *` then `evaluate_model(model, ...)`: the index resolves
            # `*.evaluate_model` through what the star imports bind (`ProjectIndex.definition`).
            return ".".join([STAR, name, *rest])
        return None

    # ------------------------------------------------------------ module facts
    def _collect_module(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.summary.classes[node.name] = [self._base(b) for b in node.bases]
                self.summary.class_modes[node.name] = self._class_mode(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scope = self._functions[id(node)]
                returns = [] if scope.generator else [
                    self.value(r.value, scope) if r.value is not None else LIT
                    for r in scope.returns]
                value: Value = UNKNOWN if not returns else (
                    returns[0] if all(r == returns[0] for r in returns) else
                    AnyOf(tuple(returns)))
                self.summary.functions[node.name] = FunctionSummary(
                    scope.params, value, scope.trains)
        for scope in self._functions.values():
            if scope.method is not None:
                self.summary.methods[scope.method] = FunctionSummary(
                    [p for p in scope.params[1:] if p != scope.kwarg], UNKNOWN, scope.trains)
        for name, values in self.module.bindings.items():
            if len(values) == 1 and values[0] is not None and name not in self.summary.imports:
                self.summary.names[name] = self.value(values[0], self.module)

    def _class_mode(self, cls: ast.ClassDef) -> list[str]:
        """What ``cls``'s body says about train/eval mode (see ``FileSummary.class_modes``);
        the ``ast`` twin of :func:`analysis.modules.changes_with_mode`, sharing its
        vocabulary (:mod:`analysis.torch_classes`)."""
        tokens: set[str] = set()
        for node in walk(cls):
            if isinstance(node, ast.Attribute) and node.attr == "training":
                return ["yes"]
            if isinstance(node, ast.Call):
                dotted = self.dotted(node.func, self.module) or ""
                if dotted.startswith("torch.") and \
                        dotted.rsplit(".", 1)[-1].startswith(MODE_FUNCTIONS):
                    return ["yes"]
                if (isinstance(node.func, ast.Name) and node.func.id == "setattr") or (
                        isinstance(node.func, ast.Attribute) and node.func.attr in (
                            "add_module", "register_module", "update")):
                    tokens.add("?")
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                        target.value.id == "self":
                    tokens |= self._submodule_mode(value, 0)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    tokens.add("?")
        return ["yes"] if "yes" in tokens else sorted(tokens)

    def _submodule_mode(self, value: ast.expr | None, depth: int) -> set[str]:
        if value is None or depth > _MAX_MODE_DEPTH:
            return {"?"}
        if isinstance(value, (ast.Constant, ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp,
                              ast.JoinedStr)):
            return set()
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in CHAINABLE_METHODS:
            value = value.func.value
        if not isinstance(value, ast.Call):
            return {"?"}
        dotted = self.dotted(value.func, self.module)
        if dotted is None:
            return {"?"}
        last = dotted.rsplit(".", 1)[-1]
        if dotted.startswith("torch.nn.") and last[:1].isupper():
            if last in RECURRENT_DROPOUT_POSITION:
                return {"yes"} if _recurrent_dropout(value, RECURRENT_DROPOUT_POSITION[last]) \
                    else set()
            if last in MODE_DEPENDENT_LAYERS:
                return {"yes"}
            if last in MODE_CONTAINERS:
                found: set[str] = set()
                for arg in value.args:
                    members = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
                    if isinstance(arg, ast.Starred):
                        return {"?"}
                    for member in members:
                        found |= self._submodule_mode(member, depth + 1)
                return found
            return set()
        if dotted.startswith("torch."):
            return {"?"}
        return {f"class:{dotted}"}

    def _base(self, base: ast.expr) -> str:
        """A base class as a dotted name (``builtins.object`` for a builtin, ``?`` unknown)."""
        dotted = self.dotted(base, self.module)
        if dotted is not None:
            return dotted
        if isinstance(base, ast.Name) and base.id not in self.module.bindings and \
                base.id not in self.summary.imports and hasattr(builtins, base.id):
            return f"builtins.{base.id}"
        # `class BiLSTM_CRF(nn.Module)` with `nn` bound by `from utils import *` is
        # `*.nn.Module` (``dotted``): the index resolves it through what that module binds.
        return "?"

    @staticmethod
    def _function_scope(node: ast.FunctionDef | ast.AsyncFunctionDef, top: bool) -> _Scope:
        args = node.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)]
        extra = [a.arg for a in args.kwonlyargs] + [a.arg for a in (args.vararg, args.kwarg) if a]
        return _Scope(node.name, node, params + extra, {}, top_function=top,
                      kwarg=args.kwarg.arg if args.kwarg else None)

    def _argparse(self, node: ast.Call) -> None:
        """``parser.add_argument('--save', default='model.pt')``: ``args.save`` is that file."""
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if not (isinstance(default, ast.Constant) and isinstance(default.value, str)):
            return
        dest = next((k.value.value for k in node.keywords if k.arg == "dest"
                     and isinstance(k.value, ast.Constant)), None)
        if dest is None:
            options = [a.value for a in node.args if isinstance(a, ast.Constant)
                       and isinstance(a.value, str)]
            long = [o for o in options if o.startswith("--")]
            chosen = long[0] if long else (options[0] if options else None)
            dest = chosen.lstrip("-").replace("-", "_") if chosen else None
        if isinstance(dest, str):
            self.argparse_defaults[dest] = default.value

    def _call(self, call: ast.Call, scope: _Scope, target: str | None = None,
              statement: ast.stmt | None = None) -> None:
        dotted = self.dotted(call.func, scope)
        if dotted is not None and not dotted.startswith(("torch.", "numpy.")) and \
                dotted.split(".")[0] not in _STDLIB_HINTS:
            self.summary.callees[dotted] = self.summary.callees.get(dotted, 0) + 1
        if isinstance(call.func, ast.Attribute) and call.func.attr == "apply" and \
                len(call.args) == 1 and not call.keywords:
            self._apply(call, scope)
        if dotted == "torch.save" or (dotted is not None and dotted.startswith("@.")
                                      and dotted[2:] in self._save_helpers):
            self._save(call, scope)
        elif dotted == "torch.load":
            self._load(call, scope, target, statement)
        else:
            if dotted is not None and not dotted.startswith(("@.", "torch.", "numpy.")) and \
                    dotted.split(".")[0] not in _STDLIB_HINTS and len(call.args) >= 2 and \
                    not any(isinstance(a, ast.Starred) for a in call.args[:2]):
                # Perhaps another module's save helper: kept by the index if it is one.
                self._save(call, scope, via=dotted)
            if dotted is None:
                dotted = self._instance_method(call, scope)
            if dotted is None or dotted.startswith(("torch.", "numpy.")) or \
                    dotted.split(".")[0] in _STDLIB_HINTS or not (call.args or call.keywords):
                return
            passed = {str(i): a for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)}
            passed.update({k.arg: k.value for k in call.keywords if k.arg})
            args = {key: self.value(a, scope) for key, a in passed.items()}
            alternatives = {key: found for key, a in passed.items()
                            if (found := self._alternatives(a, scope)) is not None}
            if any(isinstance(v, _PASSED_KINDS)
                   for v in [*args.values(), *alternatives.values()]) or (
                    # numbers too for this file's own functions: what a checkpoint
                    # helper's `epoch` parameter holds
                    dotted.startswith("@.") and any(v == LIT for v in args.values())):
                self.summary.calls.append(CallSite(dotted, args, scope.trains, call.lineno,
                                                   alternatives))

    # -------------------------------------------------- DataParallel's data side
    def _loader_functions(self, tree: ast.Module) -> None:
        """Module-level functions whose every ``return`` gives one ``DataLoader(...)`` they
        build (directly, or through a name bound once to it)."""
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            scope = self._functions[id(node)]
            if scope.generator or not scope.returns:
                continue
            loaders = [self._returned_loader(r.value, scope) for r in scope.returns]
            call = loaders[0]
            if call is None or any(loader is not call for loader in loaders):
                continue
            problem = _loader_problem(call)
            if problem is None and self._noqa(call, "TFC301"):
                problem = "it is silenced with `# noqa: TFC301`"
            self.summary.loader_functions[node.name] = LoaderFunction(call.lineno, problem)

    def _passed_loaders(self) -> None:
        """``X = DataLoader(...)`` passed by keyword to ``Y = C(...)`` (see :class:`PassedLoader`)."""
        loaders: dict[tuple[int, str], ast.Call] = {}
        for call, scope, target, statement in self._calls:
            if target is not None and isinstance(statement, ast.Assign) and \
                    statement.value is call and \
                    is_dataloader_class(self.dotted(call.func, scope) or ""):
                loaders[(id(scope.node), target)] = call
        if not loaders:
            return
        for call, scope, target, _ in self._calls:
            dotted = self.dotted(call.func, scope) if target is not None else None
            if dotted is None or dotted.startswith(("torch.", "@.")):
                continue
            for item in call.keywords:
                name = item.value.id if isinstance(item.value, ast.Name) else None
                loader = loaders.get((id(scope.node), name or ""))
                if loader is None or item.arg is None or name is None:
                    continue
                problem = _loader_problem(loader)
                if problem is None and len(scope.bindings.get(name, [])) != 1:
                    problem = f"`{name}` is bound more than once"
                if problem is None and _reads(scope.node, name) != 1:
                    problem = f"`{name}` is read elsewhere too (sharding it changes that use)"
                if problem is None and _epoch_calls(scope.node, target) != 1:
                    problem = f"no single epoch loop calls a method of `{target}` with the epoch"
                if problem is None and self._noqa(loader, "TFC301"):
                    problem = "it is silenced with `# noqa: TFC301`"
                self.summary.passed_loaders.append(PassedLoader(
                    dotted, item.arg, name, target, scope.name, loader.lineno, problem))

    def _returned_loader(self, value: ast.expr | None, scope: _Scope) -> ast.Call | None:
        if isinstance(value, ast.Name):
            bound = self._plain_binding(value.id, scope)
            value = bound[0] if bound is not None and bound[1] is scope else None
        if isinstance(value, ast.Call) and is_dataloader_class(self.dotted(value.func, scope) or ""):
            return value
        return None

    def _data_parallel(self, tree: ast.Module) -> None:
        """How many ``DataParallel`` wraps, whether there is a DDP path already, whether the
        file trains, and which loaders built by another module's function an epoch loop reads."""
        use = DataParallelUse(0, False, any(s.trains for s in (self.module,
                                                              *self._functions.values())))
        reads = _EpochReads(tree, self._functions)
        assigned = {id(call) for call, _, _, statement in self._calls if statement is not None}
        assigned |= {id(call.func.value) for call, _, _, statement in self._calls
                     if statement is not None and isinstance(call.func, ast.Attribute)
                     and call.func.attr in ("cuda", "to")}
        loops = [(node.lineno, node.end_lineno or node.lineno) for node in walk(tree)
                 if isinstance(node, (ast.For, ast.AsyncFor, ast.While))]
        if any(name.startswith("_ddp_") for scope in (self.module, *self._functions.values())
               for name in scope.bindings):
            use.problem = "the training file already binds `_ddp_*` names"
        if any(load.line > save.line for save in self.summary.saves if save.via is None
               for load in self.summary.loads):
            use.problem = "the training file loads with torch.load after it saves"
        classes = [(node.lineno, node.end_lineno or node.lineno, node.name) for node in tree.body
                   if isinstance(node, ast.ClassDef)]
        wrap_scopes: set[str] = set()
        for call, scope, target, _ in self._calls:
            dotted = self.dotted(call.func, scope)
            if dotted is None:
                continue
            if dotted in DATA_PARALLEL_CLASSES:
                use.wraps += 1
                wrap_scopes.add(scope.name)
                if len(wrap_scopes) > 1:
                    use.problem = "the models are wrapped in different functions"
                use.classes.extend(name for first, last, name in classes
                                   if first <= call.lineno <= last)
                if id(call) not in assigned or any(first < call.lineno <= last
                                                   for first, last in loops):
                    use.problem = "the DataParallel wrap is not a plain assignment outside loops"
            elif dotted in DDP_CLASSES or dotted.startswith(PROCESS_GROUP_CALLS):
                use.distributed = True
            elif dotted.startswith("torch.optim."):
                use.trains = True
            elif target is not None and not dotted.startswith(("@.", "torch.")) and \
                    reads.per_epoch(target, scope):
                use.loader_calls.append(LoaderCall(dotted, target, scope.name, call.lineno))
        self.summary.data_parallel = use

    def _apply(self, call: ast.Call, scope: _Scope) -> None:
        """``model.apply(init_weights)`` with ``init_weights`` imported from another module:
        ``nn.Module.apply`` calls it with every submodule, recorded as a call passing one."""
        dotted = self.dotted(call.args[0], scope)
        if dotted is not None and not dotted.startswith(("@.", "torch.", "numpy.")):
            self.summary.calls.append(CallSite(dotted, {"0": SUBMODULE}, scope.trains,
                                               call.lineno))

    def _alternatives(self, expr: ast.expr, scope: _Scope) -> Value | None:
        """A name bound several times, each time to a plain value: ``AnyOf(values)``
        (None for anything else)."""
        if not isinstance(expr, ast.Name):
            return None
        owner = scope if not scope.module_level and expr.id in scope.bindings else (
            self.module if expr.id not in scope.params and expr.id not in scope.imported
            else None)
        values = owner.bindings.get(expr.id, []) if owner is not None else []
        if owner is None or len(values) < 2 or any(v is None for v in values):
            return None
        return AnyOf(tuple(self.value(v, owner, 1) for v in values if v is not None))

    def _instance_method(self, call: ast.Call, scope: _Scope) -> str | None:
        """``Trainer.save`` (as the file spells the class) for ``trainer.save(...)`` where
        ``trainer`` is bound once to ``Trainer(...)``, or ``self.save(...)`` in a method of
        ``Trainer``."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        receiver = func.value.id
        if scope.method is not None and scope.params and receiver == scope.params[0]:
            return f"@.{scope.method.split('.')[0]}.{func.attr}"
        bound = self._plain_binding(receiver, scope)
        if bound is None or not isinstance(bound[0], ast.Call):
            return None
        built = self.dotted(bound[0].func, bound[1])
        return f"{built}.{func.attr}" if built is not None else None

    def _pass_through_saves(self, tree: ast.Module) -> set[str]:
        """Module-level functions that hand all their arguments to ``torch.save``:
        ``def save_on_master(*args, **kwargs): ... torch.save(*args, **kwargs)``
        (ConvNeXt's, DeiT's): a call of one is a save of what it is given."""
        found: set[str] = set()
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            if args.vararg is None or args.args or args.posonlyargs or args.kwonlyargs:
                continue
            scope = self._functions[id(node)]
            for call in walk(node):
                if isinstance(call, ast.Call) and self.dotted(call.func, scope) == "torch.save" \
                        and [type(a) for a in call.args] == [ast.Starred] \
                        and isinstance(call.args[0].value, ast.Name) \
                        and call.args[0].value.id == args.vararg.arg:
                    found.add(node.name)
        return found

    def _save(self, call: ast.Call, scope: _Scope, via: str | None = None) -> None:
        obj = _argument(call, "obj", 0)
        where = _argument(call, "f", 1)
        if obj is None or where is None:
            return
        key = self.key(where, scope)
        if via is not None and key is None and self._dict_keys(obj, scope) is None:
            # A helper call whose path names no file and whose object is no dict of known
            # keys: nothing to match a load by (a dict's keys match a load read by them).
            return
        built = built_args = None
        name = obj.id if isinstance(obj, ast.Name) else None
        constructor = self._constructor(obj, scope)
        if constructor is not None:
            built = self.dotted(constructor.func, scope)
            if all(_literal(a) for a in constructor.args) and \
                    all(k.arg and _literal(k.value) for k in constructor.keywords):
                built_args = ", ".join([ast.unparse(a) for a in constructor.args] +
                                       [f"{k.arg}={ast.unparse(k.value)}"
                                        for k in constructor.keywords])
        content = self.value(obj, scope)
        if content == UNKNOWN:
            # A name bound several times (``data = torch.load(f)`` or ``data = Pairs(...)``
            # then ``torch.save(data, f)``, a cache built on the first run): one of its values.
            content = self._alternatives(obj, scope) or content
        self.summary.saves.append(SaveSite(
            call.lineno, scope.name, site_id(where), key,
            content, built, built_args, name, self._noqa(call, "TFC003"),
            self._dict_keys(obj, scope), via))

    def _dict_keys(self, obj: ast.expr, scope: _Scope) -> list[str] | None:
        """The string keys of the dict ``obj`` is (a literal, ``dict(k=...)``, or a name bound
        once to one), with the keys stored into it afterwards; None when one is not known."""
        stored: list[str | None] = []
        if isinstance(obj, ast.Name):
            bound = self._plain_binding(obj.id, scope)
            if bound is None:
                return None
            stored = bound[1].item_keys.get(obj.id, [])
            obj = bound[0]
        if isinstance(obj, ast.Dict):
            keys = [_string_key(k) if k is not None else None for k in obj.keys]
        elif isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and \
                obj.func.id == "dict" and not obj.args:
            keys = [k.arg for k in obj.keywords]
        else:
            return None
        found = [*keys, *stored]
        return None if None in found else sorted(set(found))  # type: ignore[arg-type]

    def _load(self, call: ast.Call, scope: _Scope, target: str | None,
              statement: ast.stmt | None = None) -> None:
        where = _argument(call, "f", 0)
        if where is None:
            return
        alone = statement is not None and not any(
            line in self._crowded for line in range(statement.lineno,
                                                    (statement.end_lineno or 0) + 1))
        bound = sorted({*scope.params, *scope.bindings}) if target is not None else []
        read = self._read_keys.get(id(call), []) + (
            scope.read_keys.get(target, []) if target is not None else [])
        keys = sorted({k for k in read if k is not None}) if read else None
        self.summary.loads.append(LoadSite(
            call.lineno, scope.name, site_id(where), self.key(where, scope), target,
            self._noqa(call, "TFC003"), alone, bound, keys, None in read))

    def _noqa(self, node: ast.AST, code: str) -> bool:
        first = getattr(node, "lineno", 0)
        last = getattr(node, "end_lineno", first) or first
        return is_silenced(self._silenced, code, *range(first, last + 1))

    def _constructor(self, obj: ast.expr, scope: _Scope, depth: int = 0) -> ast.Call | None:
        """``C(...)`` behind ``obj`` (a name bound once, through ``.to()``/``.cuda()``)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(obj, ast.Name):
            bound = self._plain_binding(obj.id, scope)
            return None if bound is None else self._constructor(bound[0], bound[1], depth + 1)
        if isinstance(obj, ast.Call):
            func = obj.func
            if isinstance(func, ast.Attribute) and func.attr in CHAINABLE_METHODS:
                return self._constructor(func.value, scope, depth + 1)
            return obj if self.dotted(func, scope) is not None else None
        return None

    # ------------------------------------------------------------------- keys
    def key(self, expr: ast.expr, scope: _Scope, depth: int = 0) -> Key | None:
        """Which file a path expression names, as far as the code shows it.

        ``["file", basename]`` when the last path component is literal;
        ``["ref", dotted]`` for a constant of another module and ``["param", function,
        index, name]`` for a parameter of a module-level function (both resolved when
        files are combined: the constant's value, the callers' arguments);
        ``["expr", text]`` for anything else that is a plain name or attribute (matches
        the same text in the same file only); ``["buffer"]`` for an ``io.BytesIO``.
        """
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return _file_key(expr.value)
        if isinstance(expr, ast.JoinedStr):
            tail = expr.values[-1] if expr.values else None
            if isinstance(tail, ast.Constant) and isinstance(tail.value, str) and "/" in tail.value:
                return _file_key(tail.value)
            return None
        if isinstance(expr, ast.BinOp):
            right = expr.right
            if isinstance(expr.op, ast.Div):
                return self.key(right, scope, depth + 1)
            if isinstance(expr.op, ast.Add) and isinstance(right, ast.Constant) and \
                    isinstance(right.value, str) and "/" in right.value:
                return _file_key(right.value)
            if isinstance(expr.op, ast.Mod) and isinstance(expr.left, ast.Constant) and \
                    isinstance(expr.left.value, str):
                base = expr.left.value.rsplit("/", 1)[-1]
                return None if "%" in base else _file_key(base)
            return None
        if isinstance(expr, ast.Call):
            dotted = self.dotted(expr.func, scope) or ""
            method = expr.func.attr if isinstance(expr.func, ast.Attribute) else ""
            if dotted in ("io.BytesIO", "io.StringIO"):
                return ["buffer"]
            if (dotted in ("os.path.join", "posixpath.join") or method == "joinpath") and \
                    expr.args:
                return self.key(expr.args[-1], scope, depth + 1)
            if dotted in ("open", "@.open") or (isinstance(expr.func, ast.Name)
                                                and expr.func.id == "open"):
                return self.key(expr.args[0], scope, depth + 1) if expr.args else None
            if dotted in ("pathlib.Path", "os.fspath", "str") and len(expr.args) == 1:
                return self.key(expr.args[0], scope, depth + 1)
            formatted = _formatted_literal(expr)
            return _file_key(formatted) if formatted is not None else None
        if isinstance(expr, ast.Name):
            if expr.id in scope.params and not scope.module_level:
                param = self._param(expr.id, scope)
                if not isinstance(param, Param) or param.index == -1:
                    return ["expr", expr.id]
                key: Key = ["param", param.function, param.index, param.name]
                default = _string_default(scope.node, expr.id)
                return [*key, default] if default is not None else key
            bound = self._plain_binding(expr.id, scope)
            if bound is not None:
                found = self.key(bound[0], bound[1], depth + 1)
                if found is None and bound[1] is self.module:
                    # `model_name = models_path + name`, bound once at module level: every
                    # function of the file that reads the name reads the same path.
                    return ["expr", expr.id]
                return found
            values = scope.bindings.get(expr.id) if not scope.module_level else \
                self.module.bindings.get(expr.id)
            paths = [v for v in values or () if not (isinstance(v, ast.Call) and self.dotted(
                v.func, scope) == "torch.load")]
            if values and len(paths) == 1 and len(values) > 1 and paths[0] is not None:
                # `checkpoint = 'ckpt.pth'` then `checkpoint = torch.load(checkpoint)`: the
                # name's other binding is the loaded object, not a path.
                return self.key(paths[0], scope if not scope.module_level else self.module,
                                depth + 1)
            if values and all(v is not None and self.key(v, scope, depth + 1) == ["buffer"]
                              for v in values):
                return ["buffer"]  # `buffer = io.BytesIO()` ... `buffer = io.BytesIO(data)`
            dotted = self.dotted(expr, scope)
            return ["ref", dotted] if dotted is not None and not dotted.startswith("@") else None
        if isinstance(expr, ast.Attribute):
            if expr.attr in self.argparse_defaults and isinstance(expr.value, ast.Name):
                return _file_key(self.argparse_defaults[expr.attr])
            text = _attribute_text(expr)
            return ["expr", text] if text is not None else None
        return None

    # ----------------------------------------------------------------- values
    def value(self, expr: ast.expr, scope: _Scope, depth: int = 0) -> Value:
        """What ``expr`` evaluates to, symbolically (see the module docstring)."""
        if depth > _MAX_DEPTH or id(expr) in self._visiting:
            return UNKNOWN
        self._visiting.add(id(expr))
        try:
            return self._value(expr, scope, depth)
        finally:
            self._visiting.discard(id(expr))

    def _value(self, expr: ast.expr, scope: _Scope, depth: int) -> Value:
        if isinstance(expr, ast.Constant):
            return Str(expr.value) if isinstance(expr.value, str) else LIT
        if isinstance(expr, ast.JoinedStr):
            return LIT
        if isinstance(expr, ast.Dict):
            return Dict(_distinct(self.value(v, scope, depth + 1) for v in expr.values))
        if isinstance(expr, (ast.List, ast.Tuple)) and len(expr.elts) <= _MAX_ORDERED and \
                not any(isinstance(e, ast.Starred) for e in expr.elts):
            # Each element in its place: `return acc, acc_cls, mean_iu, fwavacc` read back as
            # `metrics[2]` is the third value, whatever the others are.
            return Seq(tuple(self.value(e, scope, depth + 1) for e in expr.elts), True)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return Seq(_distinct(self.value(e.value if isinstance(e, ast.Starred) else e,
                                            scope, depth + 1) for e in expr.elts))
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return Seq((self.value(expr.elt, _comprehension(scope, expr), depth + 1),))
        if isinstance(expr, ast.DictComp):
            return Dict((self.value(expr.value, _comprehension(scope, expr), depth + 1),))
        if isinstance(expr, ast.IfExp):
            return AnyOf((self.value(expr.body, scope, depth + 1),
                          self.value(expr.orelse, scope, depth + 1)))
        if isinstance(expr, ast.Compare):
            return self._comparison(expr, scope, depth)
        if isinstance(expr, ast.BoolOp):
            parts = [self.value(v, scope, depth + 1) for v in expr.values]
            if any(p == FLAG for p in parts):
                return FLAG
            symbolic = tuple(p for p in parts if isinstance(p, (Ref, Flagged)))
            return Flagged(symbolic) if symbolic else AnyOf(tuple(parts))
        if isinstance(expr, ast.UnaryOp):
            inner = self.value(expr.operand, scope, depth + 1)
            if isinstance(expr.op, ast.Not) and isinstance(inner, (Flag, Flagged, Ref)):
                return Flagged((inner,)) if isinstance(inner, Ref) else inner
            return LIT if isinstance(inner, (Lit, Str)) else UNKNOWN
        if isinstance(expr, ast.BinOp):
            left, right = (self.value(expr.left, scope, depth + 1),
                           self.value(expr.right, scope, depth + 1))
            if isinstance(left, (Lit, Str)) and isinstance(right, (Lit, Str)):
                return LIT
            return UNKNOWN
        if isinstance(expr, ast.Name):
            return self._name_value(expr, scope, depth)
        if self._is_version(expr, scope):
            return VERSION
        if isinstance(expr, ast.Attribute):
            own = self._own_attribute(expr, scope, depth)
            if own is not None:
                return own
            dotted = self.dotted(expr, scope)
            if dotted is not None and not dotted.startswith("@."):
                return Ref(dotted)
            return UNKNOWN
        if isinstance(expr, ast.Call):
            return self._call_value(expr, scope, depth)
        if isinstance(expr, _Unpacked):
            return self._unpacked_value(expr, scope, depth)
        if isinstance(expr, ast.Subscript):
            return self._element(expr, scope, depth)
        return UNKNOWN

    def _own_attribute(self, expr: ast.Attribute, scope: _Scope, depth: int) -> Value | None:
        """``self.best_mean_iu`` in a method: one of the values the class's methods assign to
        that attribute (``self.best_mean_iu = 0`` in ``__init__``, ``= mean_iu`` in
        ``validate``); unknown when one of them is not a plain assignment (``+=``, a tuple
        target) or there are many. None: not an attribute of ``self``."""
        if scope.method is None or not scope.params or \
                not isinstance(expr.value, ast.Name) or expr.value.id != scope.params[0]:
            return None
        assigned = self._attributes.get((scope.method.split(".", 1)[0], expr.attr))
        if not assigned or len(assigned) > _MAX_ATTRIBUTE_VALUES or \
                any(value is None for value, _ in assigned):
            return UNKNOWN
        return AnyOf(_distinct(self.value(value, owner, depth + 1)  # type: ignore[arg-type]
                               for value, owner in assigned))

    def _element(self, expr: ast.Subscript, scope: _Scope, depth: int) -> Value:
        """``metrics[2]``: that element of a tuple or list literal, or of what a function of
        the run returns (resolved by the index)."""
        index = expr.slice
        if not isinstance(index, ast.Constant) or type(index.value) is not int or \
                index.value < 0:
            return UNKNOWN
        inner = self.value(expr.value, scope, depth + 1)
        if isinstance(inner, Seq) and inner.ordered:
            return inner.items[index.value] if index.value < len(inner.items) else UNKNOWN
        if isinstance(inner, Call):
            return Item(inner.dotted, index.value, -1)
        return UNKNOWN

    def _unpacked_value(self, expr: _Unpacked, scope: _Scope, depth: int) -> Value:
        """One name of ``a, b = f(...)``: that element of what ``f`` returns (resolved by the
        index for a function of the run)."""
        index = expr.slice.value  # type: ignore[attr-defined]
        returned = self.value(expr.value, scope, depth + 1)
        if isinstance(returned, Seq):
            return returned.items[index] if len(returned.items) == expr.count else UNKNOWN
        if isinstance(returned, Call):
            return Item(returned.dotted, index, expr.count)
        return UNKNOWN

    def _name_value(self, expr: ast.Name, scope: _Scope, depth: int) -> Value:
        name = expr.id
        if name in scope.params and not scope.module_level:
            return self._param(name, scope)
        if not scope.module_level and name in scope.bindings:
            values = scope.bindings[name]
            if len(values) == 1 and values[0] is not None:
                return self._filled(name, self.value(values[0], scope, depth + 1), scope, depth)
            return self._counter(name, scope, depth)
        if name in self.module.bindings:
            values = self.module.bindings[name]
            if len(values) == 1 and values[0] is not None:
                return self._filled(name, self.value(values[0], self.module, depth + 1),
                                    self.module, depth)
            return self._counter(name, self.module, depth)
        if name in self.summary.imports:
            return Ref(self.summary.imports[name])
        if name in ("True", "False", "None"):
            return LIT
        return UNKNOWN

    def _counter(self, name: str, scope: _Scope, depth: int) -> Value:
        """A name bound several times, every time to a number (``correct = 0`` then
        ``correct += pred.eq(y).sum().item()``): a number; anything else is unknown."""
        values = scope.bindings[name]
        increments = scope.increments.get(name, [])
        plain = [v for v in values if v is not None]
        if len(values) - len(plain) != len(increments) or len(values) > 6:
            return UNKNOWN  # bound some other way (a loop, a `with`, a tuple)
        if all(self.value(v, scope, depth + 1) == LIT for v in [*plain, *increments]):
            return LIT
        return UNKNOWN

    def _param(self, name: str, scope: _Scope) -> Value:
        """A parameter of a module-level function or of a method, resolved later through the
        calls of it (``-1``: the ``**kwargs`` of it, every keyword no other parameter takes)."""
        function = scope.name if scope.top_function else scope.method
        if function is None:
            return UNKNOWN
        params = scope.params if scope.top_function else scope.params[1:]
        if name == scope.kwarg:
            return Param(function, -1, name)
        if name not in params:
            return UNKNOWN  # `self`
        return Param(function, params.index(name), name)

    def _filled(self, name: str, value: Value, scope: _Scope, depth: int) -> Value:
        """A dict bound once, with what the scope stores into its items afterwards."""
        stored = scope.items.get(name)
        if not isinstance(value, Dict) or not stored:
            return value
        return Dict(_distinct([*value.values,
                               *(self.value(v, scope, depth + 1) for v in stored)]))

    def _call_value(self, call: ast.Call, scope: _Scope, depth: int) -> Value:
        func = call.func
        dotted = self.dotted(func, scope)
        if dotted is None and isinstance(func, ast.Attribute):
            method = func.attr
            if method == "state_dict":
                receiver = _attribute_text(func.value) or ""
                return StateDict("scaler" in receiver.lower())
            if method == "parse_args":
                return NAMESPACE
            if method in _PRIMITIVE_METHODS:
                return LIT
            if method == "numpy":
                return NUMPY
            inner = self.value(func.value, scope, depth + 1)
            tensor = inner if isinstance(inner, Tensor) else None
            detached = tensor.detached if tensor is not None else False
            if method == "detach":  # only tensors have it
                return Tensor(tensor.cpu if tensor is not None else False, True)
            if method == "cpu":
                return Tensor(True, detached) if tensor is not None else inner
            if method in _SAME_KIND_METHODS:
                if tensor is not None and method in ("to", "cuda"):
                    return Tensor(False, detached)
                return inner
            if isinstance(inner, Numpy):
                return NUMPY
            return UNKNOWN
        if any(self._is_version(a, scope) for a in call.args):
            # A torch version handed to a helper (`compare_versions(torch_version, ">=", v)`)
            # is compared there: what else would a function take a version for?
            return FLAG
        if dotted is None and isinstance(func, ast.Name):
            name = func.id
            if name == "dict":
                values = [self.value(k.value, scope, depth + 1) for k in call.keywords]
                values += [self.value(a, scope, depth + 1) for a in call.args]
                return Dict(tuple(values))
            if name in ("list", "tuple", "sorted", "set"):
                return Seq(tuple(self.value(a, scope, depth + 1) for a in call.args))
            if name == "vars" and call.args and \
                    self.value(call.args[0], scope, depth + 1) == NAMESPACE:
                return Dict((LIT,))
            if name in _PRIMITIVE_BUILTINS:
                return LIT
            return UNKNOWN
        if dotted is None:
            return UNKNOWN
        operands = [self._operand(a, scope) for a in call.args]
        if checks_version(dotted, operands) and comparison_operator(operands) is not None:
            return FLAG
        strings = [o.string for o in operands if o.string is not None]
        if dotted.rsplit(".", 1)[-1] == REQUIREMENT_CACHE and \
                any(requirement_check(text) is not None for text in strings):
            return FLAG
        if version_query(dotted, strings):
            return VERSION
        if dotted in _VERSION_CALLS or dotted in _REQUIREMENT_CACHES or \
                dotted in _METADATA_VERSION:
            return LIT  # a bool, or the version of a package other than torch's
        if dotted.startswith("numpy."):
            return NUMPY
        if dotted.startswith("torch.") and dotted.endswith("state_dict"):
            # torch's own state-dict builders (`FSDP.full_optim_state_dict(model, optim)`,
            # `torch.distributed.checkpoint.state_dict.get_model_state_dict(model)`)
            return StateDict(False)
        if dotted.startswith("torch.") and dotted.count(".") == 1:
            last = dotted.rsplit(".", 1)[-1]
            if last in _CPU_FACTORIES:
                placed = any(k.arg == "device" for k in call.keywords)
                grad = any(k.arg == "requires_grad" for k in call.keywords)
                return Tensor(not placed, not grad)
            if last in _TENSOR_FUNCTIONS:
                return Tensor(False, False)
        if dotted in ("copy.deepcopy", "copy.copy") and call.args:
            return self.value(call.args[0], scope, depth + 1)
        if dotted == "collections.OrderedDict":
            return Dict(tuple(self.value(a, scope, depth + 1) for a in call.args))
        return Call(dotted)

    def _comparison(self, expr: ast.Compare, scope: _Scope, depth: int) -> Value:
        """``torch.__version__ >= "2.0"`` and its spellings: a torch-version flag.

        A side that is an imported name is left symbolic (``Cmp(refs)``): the
        index decides, once files are combined, whether it names a torch version.
        """
        refs: list[Ref] = []
        for side in (expr.left, *expr.comparators):
            if self._is_version(side, scope):
                return FLAG
            for node in walk(side):
                if isinstance(node, ast.Name) and node.id in self.summary.imports and \
                        self.dotted(node, scope) is not None:
                    refs.append(Ref(self.summary.imports[node.id]))
        return Cmp(tuple(refs)) if refs else LIT

    def _operand(self, expr: ast.expr, scope: _Scope) -> Operand:
        """An argument as the version vocabulary reads it (a string, a dotted name)."""
        text = expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) \
            else None
        return Operand(text, self.dotted(expr, scope))

    def _is_version(self, expr: ast.expr, scope: _Scope, depth: int = 0) -> bool:
        """Does ``expr`` compute torch's version: ``torch.__version__``,
        ``importlib.metadata.version("torch")``, ``version.parse(...)``, ``.split(".")``,
        ``[:2]`` or ``tuple(map(int, ...))`` of one, or a name bound to one?"""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, (ast.Attribute, ast.Name)):
            dotted = self.dotted(expr, scope)
            if dotted is not None and version_source(dotted) is not None:
                return True
        if isinstance(expr, ast.Attribute):
            return False
        if isinstance(expr, ast.Subscript):
            return self._is_version(expr.value, scope, depth + 1)
        if isinstance(expr, ast.Name):
            bound = self._plain_binding(expr.id, scope)
            return bound is not None and self._is_version(bound[0], bound[1], depth + 1)
        if isinstance(expr, (ast.GeneratorExp, ast.ListComp)):
            return any(self._is_version(g.iter, scope, depth + 1) for g in expr.generators)
        if not isinstance(expr, ast.Call):
            return False
        dotted = self.dotted(expr.func, scope) or ""
        operands = [self._operand(a, scope) for a in expr.args]
        if version_query(dotted, [o.string for o in operands if o.string is not None]):
            return True
        if dotted in _METADATA_VERSION:
            return False  # the version of another package
        if isinstance(expr.func, ast.Attribute) and \
                self._is_version(expr.func.value, scope, depth + 1):
            return True  # torch.__version__.split("."): a method of a version
        builtin = expr.func.id if isinstance(expr.func, ast.Name) and not dotted else None
        if dotted.startswith("packaging.version.") or dotted in _VERSION_WRAPPERS or \
                builtin in _VERSION_BUILTINS:
            return any(self._is_version(a, scope, depth + 1) for a in expr.args)
        return False

    def _plain_binding(self, name: str, scope: _Scope) -> tuple[ast.expr, _Scope] | None:
        """The one plain value ``name`` is bound to, seen from ``scope``, and its scope."""
        if not scope.module_level:
            if name in scope.params:
                return None
            if name in scope.bindings:
                values = scope.bindings[name]
                return (values[0], scope) if len(values) == 1 and values[0] is not None else None
        values = self.module.bindings.get(name)
        if values and len(values) == 1 and values[0] is not None:
            return values[0], self.module
        return None


def _string_key(node: ast.expr) -> str | None:
    """A literal string subscript or dict key."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _string_default(function: ast.AST, name: str) -> str | None:
    """The literal string default of a function's parameter (``save_path='model.pth'``)."""
    args = getattr(function, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                     strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
              if d is not None]
    for arg, default in pairs:
        if arg.arg == name and isinstance(default, ast.Constant) and \
                isinstance(default.value, str):
            return default.value
    return None


def _loader_problem(call: ast.Call) -> str | None:
    """Why TFC301 cannot give this ``DataLoader(...)`` a ``DistributedSampler`` (the ``ast``
    twin of the rule's own check of a loader in the file it migrates)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None
                                                                 for k in call.keywords):
        return "its arguments come from *args/**kwargs"
    if len(call.args) > 3:
        return "its arguments cannot all be read"
    if _argument(call, "sampler", 3) is not None or _argument(call, "batch_sampler", 4):
        return "it already has a sampler"
    if _argument(call, "dataset", 0) is None:
        return "it has no dataset argument"
    batch = _argument(call, "batch_size", 1)
    if batch is None or (isinstance(batch, ast.Constant) and batch.value in (None, False)):
        return "it has no batch_size to divide by the world size"
    return None


def _own_nodes(owner: ast.AST) -> list[ast.AST]:
    """Every node of a scope's own code (not inside nested functions, classes, lambdas)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(getattr(owner, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(iter_child_nodes(node))
    return found


def _reads(owner: ast.AST, name: str) -> int:
    return sum(1 for node in _own_nodes(owner) if isinstance(node, ast.Name)
               and node.id == name and isinstance(node.ctx, ast.Load))


def _epoch_calls(owner: ast.AST, instance: str) -> int:
    """How many ``for`` loops of the scope call ``instance.<method>(..., <loop variable>)``."""
    count = 0
    for node in _own_nodes(owner):
        if not isinstance(node, (ast.For, ast.AsyncFor)) or not isinstance(node.target, ast.Name):
            continue
        epoch = node.target.id
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
               and isinstance(c.func.value, ast.Name) and c.func.value.id == instance
               and any(isinstance(a, ast.Name) and a.id == epoch for a in c.args)
               for statement in node.body for c in walk(statement)):
            count += 1
    return count


_LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip"})


def _iterated_name(expr: ast.expr) -> str | None:
    """``loader`` in ``for b in loader``, ``enumerate(loader)``, ``tqdm.tqdm(loader)``."""
    while isinstance(expr, ast.Call) and expr.args:
        func = expr.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else None
        if name not in _LOOP_WRAPPERS:
            return None
        expr = expr.args[0]
    return expr.id if isinstance(expr, ast.Name) else None


class _EpochReads:
    """Which names an epoch loop reads, per scope: a ``for`` over the name inside another
    ``for`` of the same scope, or (a module-level name) a ``for`` over it in a function of the
    file that is called inside a loop (pytorch-cifar's ``for epoch ...: train(epoch)``)."""

    def __init__(self, tree: ast.Module, functions: dict[int, _Scope]) -> None:
        self._functions = functions
        self._nested: dict[int, set[str]] = {}
        self._looped: dict[str, set[str]] = {}
        self._called_in_loops: set[str] = set()
        for node in [tree, *(f.node for f in functions.values())]:
            nested, looped, called = self._scan(node)
            self._nested[id(node)] = nested
            self._called_in_loops |= called
            scope = functions.get(id(node))
            if scope is not None and scope.top_function:
                self._looped[scope.name] = {n for n in looped if n not in scope.bindings
                                            and n not in scope.params}

    @staticmethod
    def _scan(owner: ast.AST) -> tuple[set[str], set[str], set[str]]:
        nested: set[str] = set()
        looped: set[str] = set()
        twice: set[str] = set()
        called: set[str] = set()
        stack: list[tuple[ast.AST, int]] = [(c, 0) for c in getattr(owner, "body", [])]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, (ast.For, ast.AsyncFor)):
                name = _iterated_name(node.iter)
                if name is not None:
                    if name in looped:
                        twice.add(name)  # several loops over it: not one epoch loop
                    looped.add(name)
                    if depth:
                        nested.add(name)
                stack.extend((c, depth + 1) for c in [*node.body, *node.orelse])
                continue
            if depth and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.add(node.func.id)
            stack.extend((c, depth) for c in iter_child_nodes(node))
        return nested - twice, looped - twice, called

    def per_epoch(self, name: str, scope: _Scope) -> bool:
        if name in self._nested.get(id(scope.node), ()):
            return True
        return scope.module_level and any(
            name in looped and function in self._called_in_loops
            for function, looped in self._looped.items())


_PASSED_KINDS = (Call, Dict, Seq, StateDict, Tensor, Numpy, Namespace, Str, AnyOf)
"""Arguments worth recording at a call: models, checkpoint contents, file names (not numbers)."""
_VERSION_WRAPPERS = frozenset({"distutils.version.LooseVersion", "pkg_resources.parse_version"})
_VERSION_BUILTINS = frozenset({"tuple", "list", "map", "str", "int", "sorted"})
_STDLIB_HINTS = frozenset({"os", "sys", "io", "re", "json", "math", "random", "time", "logging",
                           "argparse", "pickle", "shutil", "pathlib", "collections", "itertools",
                           "functools", "copy", "typing", "warnings", "numpy", "np"})


def _bind(table: dict[str, str | None], name: str, target: str) -> None:
    if name in table and table[name] != target:
        table[name] = None  # bound to two different things: ambiguous, resolves to nothing
    else:
        table[name] = target


_COMPOUND = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For,
                       ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match,
                       *([ast.TryStar] if hasattr(ast, "TryStar") else [])})


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _trains(methods: set[str]) -> bool:
    """Calls ``.backward()`` (or an optimizer's ``.step()`` after ``.zero_grad()``) directly."""
    return bool(methods & _TRAINING_METHODS) or {"step", "zero_grad"} <= methods


_STATEMENTS = frozenset(cls for cls in vars(ast).values()
                        if isinstance(cls, type) and issubclass(cls, ast.stmt))
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_comment", "kind"})
"""Fields that hold no node worth visiting (contexts and operators are nodes too)."""
_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: ast.AST) -> list[ast.AST]:
    """The child nodes of ``node``, last first (for a stack that visits them in order)."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
    found: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    found.reverse()
    return found


def _comprehension(scope: _Scope, node: ast.AST) -> _Scope:
    """The scope of a comprehension: its loop variables shadow everything else."""
    shadowed = {name for generator in node.generators  # type: ignore[attr-defined]
                for name in _target_names(generator.target)}
    bindings = dict(scope.bindings)
    for name in shadowed:
        bindings[name] = [None]
    return _Scope(scope.name, scope.node, [p for p in scope.params if p not in shadowed],
                  bindings, scope.imported - shadowed, scope.trains, False, scope.top_function,
                  method=scope.method, kwarg=scope.kwarg if scope.kwarg not in shadowed else None)


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(positional) != len(call.args):
        return None
    return positional[position] if position < len(positional) else None


def _literal(expr: ast.expr) -> bool:
    try:
        ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class _Unpacked(ast.Subscript):
    """``voc`` in ``voc, pairs = readVocs(...)``: element ``index`` of ``count`` values a
    call returns (a binding of the summary's own, read by ``_value`` only)."""

    count: int


def _unpacked(target: ast.expr, value: ast.expr) -> list[ast.expr] | None:
    """``a, b = f(...)``: each name's value as an element of what ``f`` returns (``a, b = x,
    y``: ``x`` and ``y``); None for any other assignment (a starred or nested target, a
    value that is neither a call nor a tuple of as many elements)."""
    if not isinstance(target, (ast.Tuple, ast.List)) or \
            not all(isinstance(e, ast.Name) for e in target.elts):
        return None
    if isinstance(value, (ast.Tuple, ast.List)):
        # `name_values, perf = {...}, np.nanmean(scores)`: each name its own element.
        plain = not any(isinstance(e, ast.Starred) for e in value.elts)
        return list(value.elts) if plain and len(value.elts) == len(target.elts) else None
    if not isinstance(value, ast.Call):
        return None
    elements: list[ast.expr] = []
    for index in range(len(target.elts)):
        element = _Unpacked(value=value, slice=ast.Constant(index), ctx=ast.Load())
        element.count = len(target.elts)
        elements.append(ast.copy_location(element, value))
    return elements


def _formatted_literal(call: ast.Call) -> str | None:
    """``'{!s}.tar'.format('voc')``: a string template filled with literals only, as the
    text it evaluates to (pytorch-chatbot names its ``voc.tar`` so); None for anything else."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "format"
            and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)):
        return None
    values = [*call.args, *(k.value for k in call.keywords)]
    if any(k.arg is None for k in call.keywords) or not all(
            isinstance(v, ast.Constant) and isinstance(v.value, (str, int)) for v in values):
        return None
    try:
        return func.value.value.format(*(a.value for a in call.args),  # type: ignore[attr-defined]
                                       **{k.arg: k.value.value for k in call.keywords})  # type: ignore[attr-defined,misc]
    except (IndexError, KeyError, ValueError, AttributeError):
        return None


def _file_key(path: str) -> Key | None:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return ["file", base] if base and base not in (".", "..") else None


def _chain(expr: ast.expr) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); None when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return expr.id, parts[::-1]


def _attribute_text(expr: ast.expr) -> str | None:
    chain = _chain(expr)
    return None if chain is None else ".".join([chain[0], *chain[1]])


STAR = "*"
"""The first part of a dotted name that only a module-level star import can bind."""


def module_path_parts(path: str) -> tuple[list[str], str]:
    """The dotted module name of a file (as parts) and the directory it is imported from.

    Packages are directories with an ``__init__.py``; the first directory up
    without one is the import root (a ``src/`` layout's ``src``, a script's own
    directory). ``pkg/__init__.py`` is the module ``pkg``.
    """
    absolute = os.path.abspath(path)
    directory, filename = os.path.split(absolute)
    stem = filename.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
        if not package:
            break
    return parts, directory


def _is_range(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "range"


def _targets_of(node: ast.For | ast.AsyncFor | ast.With | ast.AsyncWith) -> list[ast.expr]:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    return [item.optional_vars for item in node.items if item.optional_vars is not None]


def _scan_binding(node: ast.AST, scope: _Scope) -> None:
    """The names a statement other than an assignment or import (or a comprehension's
    ``for``) binds in ``scope``."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        scope.bind(node.target.id, node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        scope.bind(node.target.id, None)
        scope.increments.setdefault(node.target.id, []).append(node.value)
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        if isinstance(node.target, ast.Name) and _is_range(node.iter):
            # `for epoch in range(...)`: an int each time round (what a checkpoint's
            # `'epoch': epoch` holds).
            scope.bind(node.target.id, ast.Constant(0))
            return
        for name in _target_names(node.target):
            scope.bind(name, None)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        for name in _target_names(node.optional_vars):
            scope.bind(name, None)
    elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        scope.bind(node.target.id, node.value)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        scope.bind(node.name, None)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        for name in node.names:
            scope.bind(name, None)


def _recurrent_dropout(call: ast.Call, position: int) -> bool:
    """A recurrent layer changes with mode only through its ``dropout`` between stacked
    layers: False when the call passes none (or a literal zero), True otherwise."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return True  # `*args`/`**kwargs` may pass a dropout
    passed = [k.value for k in call.keywords if k.arg == "dropout"]
    if len(call.args) > position:
        passed.append(call.args[position])
    return any(not (isinstance(v, ast.Constant) and isinstance(v.value, (int, float))
                    and not isinstance(v.value, bool) and v.value == 0) for v in passed)
