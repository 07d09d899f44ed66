"""The project index: every file's summary, combined, answering :class:`ProjectFacts`.

Built by the runner in a first pass over the run's files, before any rule runs:
each file is summarised on its own (:mod:`.summary`, cached per content),
then the summaries are combined here. Combining is cheap: it maps module names to
files and resolves names lazily, only when a rule asks, with every answer
memoised. Nothing here opens a file except to ask whether a directory holds an
``__init__.py`` (what makes it a package).

What a rule sees is a :class:`FileFacts`, the index as seen from the file being
analysed: relative names resolve against that file's package, and questions
about sites (``torch.load`` calls) are about that file's sites.

Module names follow Python's import rules closely enough to be conservative:
``pkg/models.py`` under a directory with ``__init__.py`` files is ``pkg.models``;
the first directory up without one is where it is imported from (``src/`` of a
``src`` layout, a script's own directory). Two files of the run with the same
module name (``models.py`` in two example folders) are told apart by that
import root: the importing file's own root wins, else the one root above it,
else the name resolves to nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from torchfix_codemods.analysis.core.memo import ModuleMemo, Slot
from torchfix_codemods.analysis.project.registry import QUESTIONS
from torchfix_codemods.analysis.project.summary import (
    STAR,
    CallSite,
    FileSummary,
    module_path_parts,
)
from torchfix_codemods.analysis.project.values import (
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
    Submodule,
    Tensor,
    Value,
    Version,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    is_module_class,
    is_module_factory,
)

_MAX_DEPTH = 12
T = TypeVar("T")


@dataclass
class IndexedFile:
    """One file of the run: its summary, module name and import root."""

    path: str
    summary: FileSummary
    module: str
    root: str
    notebook: bool

    @property
    def package(self) -> list[str]:
        """The package relative imports start from."""
        parts = self.module.split(".") if self.module else []
        is_init = os.path.basename(self.path).startswith("__init__.")
        return parts if is_init else parts[:-1]

    @property
    def display(self) -> str:
        return os.path.relpath(self.path) if not os.path.isabs(self.path) else self.path


@dataclass
class _Content:
    """What a saved value is, as far as ``weights_only`` and devices are concerned."""

    allow: bool | None
    cpu: bool | None
    what: str
    module: str | None = None
    """The qualified class when the value is an ``nn.Module`` instance."""


_UNKNOWN = _Content(None, None, "an object the index cannot follow")


@dataclass
class _Definition:
    file: IndexedFile
    kind: str  # "class", "function", "name"
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.file.module}.{self.name}" if self.file.module else self.name


@dataclass
class ProjectIndex:
    """The combined summaries of a run's files."""

    files: dict[str, IndexedFile]
    pairable: dict[str, bool] | None = None
    """Absolute paths of the files where whole-module pairs may have a side (the rule
    that rewrites them runs there), each with whether unsafe fixes are applied there;
    None for every file alike. A pair needs both sides in it with the same policy, so
    it is rewritten on both sides or on none. Plain data, not a function, so that the
    index can be sent to worker processes."""
    shardable: dict[str, bool] | None = None
    """The same for TFC301's loader shards (a training file and the file that builds its
    loader are edited together or not at all)."""

    def __post_init__(self) -> None:
        self.modules: dict[str, list[IndexedFile]] = {}
        for indexed in self.files.values():
            if not indexed.notebook and indexed.module:
                self.modules.setdefault(indexed.module, []).append(indexed)
        self.memo = ModuleMemo()
        """Every answer derived from the combined summaries, by typed slot (the fact modules'
        too): computed once per run, sent to worker processes with the index."""

    def table(self, name: str, build: Callable[[], T]) -> T:
        """A run-wide table a fact module derives from every file (``loader_shards``), built
        on first use and kept with the index (it goes to worker processes with it)."""
        slot: Slot[T] = Slot(f"table.{name}")
        return self.memo.built(slot, build)

    @classmethod
    def build(cls, summaries: Mapping[str, FileSummary],
              pairable: Mapping[str, bool] | None = None,
              shardable: Mapping[str, bool] | None = None) -> ProjectIndex:
        """Combine summaries keyed by path (the paths the rules will see); ``pairable``:
        the paths where whole-module pairs may be rewritten, with their unsafe-fixes
        policy (default: every file, one policy); ``shardable``: the same for loader shards."""
        files: dict[str, IndexedFile] = {}
        for path, summary in summaries.items():
            parts, root = module_path_parts(path)
            files[os.path.abspath(path)] = IndexedFile(
                path, summary, ".".join(parts), root, path.endswith(".ipynb"))
        return cls(files, _absolute_keys(pairable), _absolute_keys(shardable))

    def view(self, path: str) -> FileFacts:
        """The index as seen from ``path`` (a file of the run or not)."""
        indexed = self.files.get(os.path.abspath(path))
        if indexed is None:
            parts, root = module_path_parts(path)
            indexed = IndexedFile(path, FileSummary(), ".".join(parts), root,
                                  path.endswith(".ipynb"))
        return FileFacts(self, indexed)

    def star_importing(self, path: str) -> bool:
        """``path`` is a file of the run with a star import (whose names the index binds)."""
        indexed = self.files.get(os.path.abspath(path))
        return indexed is not None and bool(
            (indexed.summary.facts.get("stars") or {}).get("stars"))

    # ------------------------------------------------------------ fingerprints
    @cached_property
    def exports_digest(self) -> str:
        """A digest of everything any file may ask about another: module names, imports,
        classes, functions and module-level names (not sites, not line numbers)."""
        digest = hashlib.sha256()
        for key in sorted(self.files):
            indexed = self.files[key]
            summary = indexed.summary
            digest.update(json.dumps([
                key, indexed.module, indexed.root, summary.imports, summary.classes,
                {name: [f.params, f.returns, f.trains] for name, f in summary.functions.items()},
                {name: f.params for name, f in summary.methods.items()},
                summary.names, summary.facts,
            ], sort_keys=True, default=str).encode())
        return digest.hexdigest()

    def fingerprint(self, path: str) -> str:
        """What ``path``'s analysis can read from the index, as a digest for its cache key:
        the exports of every file, and the answers about this file's own sites."""
        view = self.view(path)
        summary = view.file.summary
        answers: list[object] = [self.exports_digest, view.file.module]
        for load in summary.loads:
            answers.append(["load", load.function, load.site,
                            view.saved_content(load.function, load.site),
                            view.module_pair(load.function, load.site)])
        for save in summary.saves:
            answers.append(["save", save.function, save.site,
                            view.module_pair(save.function, save.site)])
        for name in sorted(summary.functions):
            answers.append(["function", name, view.module_arguments(name),
                            view.caller_files(name)])
        answers.append(["training-loaders", view.training_loaders()])
        if summary.data_parallel is not None:
            for name in sorted(summary.classes):
                answers.append(["loaders-passed", name, view.loaders_passed_to(name),
                                view.passed_loader_shard(name)])
            for call in summary.data_parallel.loader_calls:
                answers.append(["loader-shard", call.callee, view.loader_shard(call.callee)])
        return hashlib.sha256(json.dumps(answers, default=repr).encode()).hexdigest()

    # ------------------------------------------------------------- resolution
    def absolute(self, dotted: str, file: IndexedFile) -> str | None:
        """``@.Net`` (this file's) and ``..model.BERT`` (relative) as absolute names."""
        if dotted.startswith("@."):
            rest = dotted[2:]
            return f"{file.module}.{rest}" if file.module else rest
        if not dotted.startswith("."):
            return dotted
        level = len(dotted) - len(dotted.lstrip("."))
        package = file.package
        if level - 1 > len(package) or not package:
            return None
        base = package[: len(package) - (level - 1)]
        rest = dotted[level:]
        return ".".join([*base, rest] if rest else base)

    def module_file(self, module: str, importer: IndexedFile,
                    sys_path: bool = True) -> IndexedFile | None:
        """The file ``import <module>`` means, as seen from ``importer`` (``sys_path``: also
        a dotted module one run file's path ends with, :meth:`_on_sys_path`)."""
        candidates = self.modules.get(module)
        if not candidates:
            found = self._file_on_path(module, importer)
            if found is None and sys_path:
                found = self._on_sys_path(module)
            return found
        if len(candidates) == 1:
            return candidates[0]
        own = [c for c in candidates if c.root == importer.root]
        if len(own) == 1:
            return own[0]
        above = [c for c in candidates if importer.root.startswith(c.root + os.sep)]
        return above[0] if len(above) == 1 else None

    def _file_on_path(self, module: str, importer: IndexedFile) -> IndexedFile | None:
        """The file ``import <module>`` finds where no file of the run has that module name,
        by where Python looks: the importing script's own directory (``sys.path[0]`` when it
        runs: fast-neural-style's ``neural_style/neural_style.py`` says ``from
        transformer_net import TransformerNet`` although its directory is a package), and
        its import root, where a directory without ``__init__.py`` is a namespace package
        (PEP 420: Cutout's ``from model.resnet import ResNet18`` with no
        ``model/__init__.py``). A notebook's directory is its kernel's working directory."""
        tail = os.path.join(*module.split("."))
        here = os.path.dirname(os.path.abspath(importer.path))
        for base in dict.fromkeys((here, importer.root)):
            for name in (tail + ".py", os.path.join(tail, "__init__.py")):
                found = self.files.get(os.path.join(base, name))
                if found is not None and not found.notebook:
                    return found
        return None

    def _on_sys_path(self, module: str) -> IndexedFile | None:
        """``core.function`` for ``lib/core/function.py`` when no file of the run has that
        module name: a folder the program puts on ``sys.path`` at run time
        (human-pose-estimation's ``import _init_paths`` adds ``lib/``). Only a dotted name
        (a single name is too common to pin to one file) that the path of exactly one file
        of the run ends with."""
        if "." not in module:
            return None
        table = self.table("sys_path_suffixes", self._path_suffixes)
        found = table.get(module)
        return self.files[found] if found is not None else None

    def sys_path_folders(self, file: IndexedFile) -> tuple[str, ...]:
        """The folders ``file`` imports modules of the run from through ``sys.path`` (the
        ``lib/`` of ``from utils.utils import save_checkpoint`` resolved to
        ``lib/utils/utils.py``): the rest of those folders is of its program too."""
        return self.table("sys_path_folders", self._sys_path_folders).get(file.path, ())

    def _sys_path_folders(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, tuple[str, ...]] = {}
        for indexed in self.files.values():
            folders: set[str] = set()
            # What it imports, and what it calls through an imported package
            # (`torchfcn.models.FCN32s(...)` after `import torchfcn`, whose package
            # `__init__.py` is not a file of the run).
            names = [*indexed.summary.imports.values(), *indexed.summary.callees]
            for dotted in names:
                parts = dotted.split(".") if dotted and not dotted.startswith((".", "@")) else []
                for cut in range(len(parts), 1, -1):
                    module = ".".join(parts[:cut])
                    if self.modules.get(module):
                        # A package of the run under another import root (a script in
                        # `examples/voc/` importing `torchfcn.models`): its folder is of
                        # the script's program, not the whole root above it.
                        owner = self.module_file(module, indexed, sys_path=False)
                        if owner is not None and owner.root != indexed.root:
                            folders.add(os.path.join(os.path.abspath(owner.root), parts[0]))
                        break
                    owner = self._on_sys_path(module)
                    if owner is not None:
                        folder = os.path.dirname(os.path.abspath(owner.path))
                        for _ in range(cut - 1):
                            folder = os.path.dirname(folder)
                        folders.add(folder)
                        break
            if folders:
                found[indexed.path] = tuple(sorted(folders))
        return found

    def _path_suffixes(self) -> dict[str, str | None]:
        """Every dotted tail of every run file's path (``core.function``, ``lib.core.function``
        for ``lib/core/function.py``; ``pkg`` for ``pkg/__init__.py``), with the one file that
        has it (None: several do)."""
        table: dict[str, str | None] = {}
        for key, indexed in self.files.items():
            if indexed.notebook:
                continue
            parts = os.path.splitext(key)[0].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for start in range(len(parts) - 2, -1, -1):
                tail = parts[start:]
                if not all(p.isidentifier() for p in tail):
                    break
                dotted = ".".join(tail)
                table[dotted] = None if dotted in table and table[dotted] != key else key
        return table

    def definition(self, qualified: str, importer: IndexedFile,
                   depth: int = 0) -> _Definition | None:
        """Where ``qualified`` is defined in the run, following re-exports."""
        if qualified.startswith("@.") and "." not in qualified[2:]:
            # The importer's own name: found in its summary, which also serves a notebook
            # (no module name any other file could import it by).
            own = _own_definition(importer, qualified[2:])
            if own is not None:
                return own
        if qualified.startswith(STAR + "."):
            starred = self._star_bound(qualified[len(STAR) + 1:], importer)
            if starred is None or depth > _MAX_DEPTH:
                return None
            return self.definition(starred, importer, depth + 1)
        absolute = self.absolute(qualified, importer)
        if absolute is None or depth > _MAX_DEPTH:
            return None
        here = os.path.dirname(os.path.abspath(importer.path))
        return self.memo.once(_DEFINITION.keyed(absolute, importer.root, here),
                              lambda: self._definition(absolute, importer, depth))

    def _star_bound(self, dotted: str, importer: IndexedFile) -> str | None:
        """What ``dotted`` means in ``importer`` when its first name is bound only by the
        file's star imports (``from utils import *``): the last star import that binds it
        wins, as in Python; None when none of them is known to."""
        from torchfix_codemods.analysis.project.stars import NAME, star_names

        name, _, rest = dotted.partition(".")
        said = importer.summary.facts.get(NAME) or {}
        for module in reversed(said.get("stars") or []):
            bound = star_names(self, importer, module)
            if bound is None:
                return None  # a star import the index cannot read may bind it too
            if name in bound:
                target = bound[name]
                return None if target is None else ".".join([target, rest]) if rest else target
        return None

    def _definition(self, absolute: str, importer: IndexedFile,
                    depth: int) -> _Definition | None:
        parts = absolute.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            owner = self.module_file(".".join(parts[:cut]), importer)
            if owner is None:
                continue
            rest = parts[cut:]
            name = rest[0]
            summary = owner.summary
            if len(rest) == 1:
                found = _own_definition(owner, name)
                if found is not None:
                    return found
            if len(rest) == 2 and name in summary.classes and \
                    f"{name}.{rest[1]}" in summary.methods:
                return _Definition(owner, "method", f"{name}.{rest[1]}")
            target = summary.imports.get(name)
            if target is not None:
                return self.definition(".".join([target, *rest[1:]]), owner, depth + 1)
            return None
        return None

    # ---------------------------------------------------------------- classes
    def class_kind(self, definition: _Definition, test: Callable[[str], bool],
                   depth: int = 0) -> bool | None:
        """Whether a class of the run subclasses a class ``test`` accepts, transitively (a
        cycle of bases answers "unknown")."""
        return self.memo.once(_CLASS_KIND.keyed(definition.qualified, definition.file.path, test),
                              lambda: self._class_kind(definition, test, depth))

    def _class_kind(self, definition: _Definition, test: Callable[[str], bool],
                    depth: int) -> bool | None:
        answer: bool | None = False
        for base in definition.file.summary.classes.get(definition.name, []):
            result = self._base_kind(base, definition.file, test, depth)
            if result:
                return True
            if result is None:
                answer = None
        return answer

    def _base_kind(self, base: str, file: IndexedFile, test: Callable[[str], bool],
                   depth: int) -> bool | None:
        if base == "?" or depth > _MAX_DEPTH:
            return None
        if base.startswith(STAR + "."):
            starred = self._star_bound(base[len(STAR) + 1:], file)
            if starred is None:
                return None
            base = starred
        if base.startswith("builtins."):
            return False
        absolute = self.absolute(base, file)
        if absolute is None:
            return None
        if test(absolute):
            return True
        found = self.definition(base, file)
        if found is None or found.kind != "class":
            return False if absolute.startswith(("torch.", "torchvision.")) else None
        return self.class_kind(found, test, depth + 1)

    # ----------------------------------------------------------------- values
    def content(self, value: Value, file: IndexedFile, depth: int = 0) -> _Content:
        """What a summary's symbolic value is, resolved across the run."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        match value:
            case Lit() | Str() | Flag() | Version() | Cmp() | Flagged():
                return _Content(True, True, "numbers and strings")
            case Tensor(cpu=cpu):
                return _Content(True, True if cpu else None, "a tensor")
            case StateDict(scaler=scaler):
                return _Content(True, True if scaler else None, "a state_dict")
            case Numpy():
                return _Content(False, True, "a numpy array")
            case Namespace():
                return _Content(False, True, "an `argparse.Namespace`")
            case Submodule():
                return _Content(False, None, "a submodule", "torch.nn.Module")
            case Dict(values=parts):
                return self._combine([self.content(v, file, depth + 1) for v in parts], "a dict")
            case Seq(items=parts) | AnyOf(options=parts):
                return self._combine([self.content(v, file, depth + 1) for v in parts],
                                     "a list or tuple")
            case Call(dotted=dotted):
                return self._call_content(dotted, file, depth)
            case Item(dotted=dotted, index=index, count=count):
                return self._item_content(dotted, index, count, file, depth)
            case Param(function=function, index=index, name=name):
                return self._param_content(file, function, index, name, depth)
            case Ref(dotted=dotted):
                found = self.definition(dotted, file)
                if found is not None and found.kind == "name":
                    return self.content(found.file.summary.names[found.name], found.file,
                                        depth + 1)
        return _UNKNOWN

    @staticmethod
    def _combine(parts: list[_Content], what: str) -> _Content:
        if not parts:
            return _Content(True, True, what)
        refusing = next((p for p in parts if p.allow is False), None)
        allow = False if refusing else (True if all(p.allow for p in parts) else None)
        cpu = True if all(p.cpu for p in parts) else (
            None if all(p.cpu is not False for p in parts) else False)
        described = refusing.what if refusing else (
            next((p.what for p in parts if p.allow is None), what))
        module = next((p.module for p in parts if p.module), None)
        return _Content(allow, cpu, described if refusing or allow is None else what, module)

    def _call_content(self, dotted: str, file: IndexedFile, depth: int) -> _Content:
        absolute = self.absolute(dotted, file)
        if absolute is None:
            return _UNKNOWN
        if is_module_class(absolute) or is_module_factory(absolute):
            return _Content(False, None, f"a whole `nn.Module` (`{absolute}`)", absolute)
        if absolute.startswith("torch.optim.") and absolute.rsplit(".", 1)[-1][:1].isupper():
            # An optimizer or LR scheduler object, not its state_dict() (measured on torch
            # 2.13: weights_only=True refuses both objects, loads both state dicts).
            return _Content(False, None, f"an optimizer or scheduler object (`{absolute}`)")
        found = self.definition(dotted, file)
        if found is None:
            return _UNKNOWN
        if found.kind == "class":
            is_module = self.class_kind(found, is_module_class)
            if is_module:
                return _Content(False, None, f"a whole `nn.Module` (`{found.qualified}`)",
                                found.qualified)
            if is_module is False:
                return _Content(False, None, f"an instance of `{found.qualified}`")
            return _UNKNOWN
        if found.kind == "function":
            function = found.file.summary.functions[found.name]
            return self.content(function.returns, found.file, depth + 1)
        return _UNKNOWN

    def _item_content(self, dotted: str, index: int, count: int, file: IndexedFile,
                      depth: int) -> _Content:
        """One of the values a function of the run returns together (``return voc, pairs``),
        unpacked by the caller into as many names."""
        found = self.definition(dotted, file)
        if found is None or found.kind != "function":
            return _UNKNOWN
        returns = found.file.summary.functions[found.name].returns
        if isinstance(returns, Seq) and (len(returns.items) == count or (
                count == -1 and returns.ordered and index < len(returns.items))):
            return self.content(returns.items[index], found.file, depth + 1)
        return _UNKNOWN

    def _param_content(self, file: IndexedFile, function: str, index: int, name: str,
                       depth: int) -> _Content:
        arguments = [self.content(value, caller, depth + 1)
                     for caller, value in self.arguments_of(file, function, index, name)]
        if not arguments:
            return _UNKNOWN
        return self._combine(arguments, "what its callers pass")

    def arguments_of(self, file: IndexedFile, function: str, index: int,
                     name: str) -> list[tuple[IndexedFile, Value]]:
        """What every recorded call of ``file``'s ``function`` passes for one parameter."""
        found: list[tuple[IndexedFile, Value]] = []
        if index == -1:
            # ``**kwargs``: every keyword argument of a call that names no other parameter.
            summary = file.summary.functions.get(function) or file.summary.methods.get(function)
            named = set(summary.params) if summary is not None else set()
            for caller, call in self.callers.get((file.path, function), []):
                found.extend((caller, value) for key, value in call.args.items()
                             if not key.isdigit() and key not in named)
            return found
        for caller, call in self.callers.get((file.path, function), []):
            value = call.args.get(str(index), call.args.get(name))
            if value is not None:
                found.append((caller, value))
        return found

    @cached_property
    def callers(self) -> dict[tuple[str, str], list[tuple[IndexedFile, CallSite]]]:
        """Recorded calls by the function they call: ``(path, function name)``."""
        table: dict[tuple[str, str], list[tuple[IndexedFile, CallSite]]] = {}
        for indexed in self.files.values():
            for call in indexed.summary.calls:
                found = self.definition(call.callee, indexed)
                if found is not None and found.kind in ("function", "method"):
                    table.setdefault((found.file.path, found.name), []).append((indexed, call))
        return table


def _absolute_keys(policies: Mapping[str, bool] | None) -> dict[str, bool] | None:
    return None if policies is None else {
        os.path.abspath(path): unsafe for path, unsafe in policies.items()}


def _same_policy(policies: dict[str, bool] | None, first: IndexedFile,
                 second: IndexedFile) -> bool:
    """Both files take part (the rule runs there) with the same unsafe-fixes policy."""
    if policies is None:
        return True
    found = [policies.get(os.path.abspath(f.path)) for f in (first, second)]
    return None not in found and found[0] == found[1]


def _own_definition(file: IndexedFile, name: str) -> _Definition | None:
    summary = file.summary
    if name in summary.classes:
        return _Definition(file, "class", name)
    if name in summary.functions:
        return _Definition(file, "function", name)
    if name in summary.names:
        return _Definition(file, "name", name)
    return None


_DEFINITION: Slot[_Definition | None] = Slot("index.definition")
"""Where an absolute name is defined, keyed by the name and the importer's root."""
_CLASS_KIND: Slot[bool | None] = Slot("index.class_kind")


class FileFacts:
    """The index as one file sees it: satisfies :class:`ProjectFacts`."""

    def __init__(self, index: ProjectIndex, file: IndexedFile) -> None:
        self.index = index
        self.file = file

    def __getattr__(self, name: str) -> Any:
        """A question a fact module registered (:mod:`.registry`), asked from this file."""
        question = QUESTIONS.get(name) if not name.startswith("__") else None
        if question is None:
            raise AttributeError(name)
        answer = question.answer
        return lambda *args: answer(self.index, self.file, *args)

    def module_name(self, path: str) -> str | None:
        indexed = self.index.files.get(os.path.abspath(path))
        return indexed.module if indexed is not None and indexed.module else None
