"""Checkpoints across files: what the run saves to the file a ``torch.load`` reads, and the
whole-module save/load pairs rewritten together.

What one file says is in its summary (:mod:`.summary`): each ``torch.save`` (or a call of a
helper that hands all its arguments to it) with the path it writes as a key and what it
saves as a value (:mod:`.values`), each ``torch.load`` with the path it reads. This module
combines them: a key names a file (a literal, a module constant, an argparse default, the
argument every call of a helper passes, a parameter's default) or a same-file expression;
saves and loads of the run are matched by it; the saved values are resolved through the
index (``ProjectIndex.content``: classes across files, helpers' callers, ``**kwargs``).

The questions (registered, so ``NoProject`` and test fakes answer "unknown"):
``saved_content(function, site)``, ``module_pair(function, site)`` and ``module_saves()``
(the files of the program that pickle whole modules), where ``site`` is
:func:`~.summary.site_of_text` of the call's path argument and ``function`` the innermost
function around it ("" at module level).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.project import ModulePair, SavedContent
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.project.summary import Key, LoadSite, SaveSite
from torchfix_codemods.analysis.project.values import AnyOf, Dict, Param, Seq, Str, Value
from torchfix_codemods.analysis.vocabulary.naming import named_like_model

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex, _Definition

Table = dict[tuple[str, ...], list[tuple["IndexedFile", "SaveSite | LoadSite"]]]
_TABLES: Slot[Table] = Slot("checkpoints.table")
"""Every save or every load of the run by the file it names (keyed by the kind)."""
_MODULE_SAVES: Slot[tuple[str, ...]] = Slot("checkpoints.module_saves")
"""``module_saves`` of one asking file: a rule asks it for every finding in that file."""


def saved_content(index: ProjectIndex, file: IndexedFile, function: str,
                  site: str) -> SavedContent | None:
    """What the run saves to the file that ``file``'s load at (``function``, ``site``) reads."""
    for load in file.summary.loads:
        if load.function == function and load.site == site:
            return _saved_content(index, load, file)
    return None


def module_pair(index: ProjectIndex, file: IndexedFile, function: str,
                site: str) -> ModulePair | None:
    """The whole-module pair ``file``'s save or load at (``function``, ``site``) belongs to."""
    for save in file.summary.saves:
        if save.function == function and save.site == site:
            pair = _pair(index, file, save)
            return None if pair is None else pair[0]
    for load in file.summary.loads:
        if load.function == function and load.site == site:
            key = normal_key(index, load.key, file)
            saves = _table(index, "saves").get(key, []) if key and key[0] == "file" else []
            if len(saves) == 1:
                pair = _pair(index, *saves[0])  # type: ignore[arg-type]
                if pair is not None and pair[1] is load:
                    return pair[2]
    return None


def normal_key(index: ProjectIndex, key: Key | None, file: IndexedFile) -> tuple[str, ...] | None:
    """A key two sites can be compared by: a file name, or a same-file expression."""
    if key is None:
        return None
    if key[0] == "file":
        return ("file", key[1])
    if key[0] == "buffer":
        return ("buffer", file.path)
    if key[0] == "expr":
        return ("expr", file.path, key[1])
    if key[0] == "ref":
        found = index.definition(key[1], file)
        if found is not None and found.kind == "name":
            return _file_of(found.file.summary.names[found.name])
    if key[0] == "param":
        # A helper's path parameter: the file every caller names, if they agree;
        # else the parameter's name, which matches the same name in the same file.
        calls = index.callers.get((file.path, key[1]), [])
        arguments = index.arguments_of(file, key[1], int(key[2]), key[3])
        passed = {_file_of(value) for _, value in arguments}
        if len(key) > 4 and (not calls or len(arguments) < len(calls)):
            passed.add(_file_of(Str(key[4])))  # a call that leaves the default
        if len(passed) == 1 and None not in passed:
            return passed.pop()
        return ("expr", file.path, key[3])
    return None


def related(first: IndexedFile, second: IndexedFile, index: ProjectIndex | None = None) -> bool:
    """Could these two files be one program's (so a file name means the same file)?
    Same import root, or one root above the other; not two sibling example folders. With
    the index: also a file under a folder the other puts on ``sys.path`` (human-pose-
    estimation's ``pose_estimation/train.py`` imports ``utils.utils`` from ``lib/``, so
    ``lib/models/pose_resnet.py`` is of its program)."""
    a, b = first.root, second.root
    if a == b or a.startswith(b + os.sep) or b.startswith(a + os.sep):
        return True
    if index is None:
        return False
    return any(_under(second.path, folder) for folder in index.sys_path_folders(first)) or \
        any(_under(first.path, folder) for folder in index.sys_path_folders(second))


def _under(path: str, folder: str) -> bool:
    return os.path.abspath(path).startswith(folder + os.sep)


def _table(index: ProjectIndex, kind: str) -> Table:
    """Every save (``kind="saves"``) or load (``"loads"``) of the run by the file it names,
    computed once per index."""
    return index.memo.built(_TABLES.keyed(kind), lambda: _build_table(index, kind))


def _build_table(index: ProjectIndex, kind: str) -> Table:
    table: Table = {}
    for indexed in index.files.values():
        for site in getattr(indexed.summary, kind):
            if kind == "saves" and not writes(index, indexed, site):
                continue
            key = normal_key(index, site.key, indexed)
            if key is not None:
                table.setdefault(key, []).append((indexed, site))
    return table


def writes(index: ProjectIndex, file: IndexedFile, save: SaveSite) -> bool:
    """A save site that writes a file: ``torch.save`` (or a same-file helper), or a call of
    another module's function that hands all its arguments to ``torch.save``."""
    if save.via is None:
        return True
    found = index.definition(save.via, file)
    if found is None or found.kind != "function":
        return False
    # A helper that hands all its arguments to `torch.save`, or one that saves its first
    # parameter (`save_checkpoint(states, is_best, output_dir)`: `torch.save(states, ...)`).
    return found.name in found.file.summary.save_helpers or any(
        s.via is None and s.function == found.name and isinstance(s.content, Param)
        and s.content.function == found.name and s.content.index == 0
        for s in found.file.summary.saves)


def load_keys(index: ProjectIndex, key: Key | None, file: IndexedFile) -> list[tuple[str, ...]]:
    """Every file a load's path may name: one key, or for a helper's path parameter whose
    callers pass different files, each of them."""
    if key is not None and key[0] == "param":
        passed = {_file_of(value) for _, value in index.arguments_of(
            file, key[1], int(key[2]), key[3])}
        if len(passed) > 1 and None not in passed:
            return sorted(passed)  # type: ignore[arg-type]
    found = normal_key(index, key, file)
    return [] if found is None else [found]


def saves_for(index: ProjectIndex, load: LoadSite,
              file: IndexedFile) -> list[tuple[IndexedFile, SaveSite]]:
    table = _table(index, "saves")
    return [(other, save) for key in load_keys(index, load.key, file)
            for other, save in table.get(key, [])  # type: ignore[misc]
            if related(file, other, index)]


def keyed_saves(index: ProjectIndex, load: LoadSite,
                file: IndexedFile) -> list[tuple[IndexedFile, SaveSite]]:
    """Saves of dicts that have every key the load's result is read by (``checkpoint["epoch"]``,
    ``checkpoint["decoder"]`` against ``torch.save({"epoch": ..., "decoder": ...}, ...)``),
    in files of the same program: a load whose path does not say which file it reads
    may read one of them. A load read by a key that is not a literal
    (``checkpoint[checkpoint_key]``) may read any saved dict."""
    if load.keys is None or not (load.keys or load.open_keys):
        return []
    wanted = set(load.keys)
    return [(other, save) for other in index.files.values() if related(file, other, index)
            for save in other.summary.saves
            if save.keys is not None and wanted <= set(save.keys) and
            writes(index, other, save)]


def _saved_content(index: ProjectIndex, load: LoadSite, file: IndexedFile) -> SavedContent | None:
    matched = saves_for(index, load, file)
    matched_by: Literal["path", "file", "keys"] = "path"
    if not matched and (normal_key(index, load.key, file) or ("expr",))[0] == "expr":
        # The path is not known: the saves of the same file are what it most likely
        # reads (a script resuming from its own checkpoints), as weak evidence.
        matched = [(file, save) for save in file.summary.saves if writes(index, file, save)]
        matched_by = "file"
    if not matched:
        # Still unknown: a dict the program saves with the keys this load reads.
        matched = keyed_saves(index, load, file)
        matched_by = "keys"
    if not matched:
        return None
    contents = [(other, index.content(save.content, other)) for other, save in matched]
    combined = index._combine([c for _, c in contents], "state dicts, tensors and primitives")
    decisive = next((o for o, c in contents if c.allow is False),
                    next((o for o, c in contents if c.allow is None), contents[0][0]))
    transport = load.key is not None and load.key[0] == "buffer"
    named = matched_by == "path" and all(key[0] == "file"
                                         for key in load_keys(index, load.key, file))
    bundle = any(c.allow is not True and _bundle(index, save.content, other, 0)
                 for (other, c), (_, save) in zip(contents, matched, strict=True))
    return SavedContent(combined.allow, combined.cpu, combined.what,
                        _seen_from(decisive.path, file.path), matched_by,
                        combined.module is not None, transport, named, bundle)


def _bundle(index: ProjectIndex, value: Value, file: IndexedFile, depth: int) -> bool:
    """A saved dict, list or tuple (a training-state checkpoint: state dicts beside epochs,
    metrics, arguments, objects), here or in what a save helper's callers pass."""
    if depth > 4:
        return False
    if isinstance(value, (Dict, Seq)):
        return True
    if isinstance(value, AnyOf):
        return any(_bundle(index, option, file, depth + 1) for option in value.options)
    if isinstance(value, Param):
        return any(_bundle(index, passed, caller, depth + 1) for caller, passed in
                   index.arguments_of(file, value.function, value.index, value.name))
    return False


def _seen_from(path: str, reader: str) -> str:
    """``path`` as the file at ``reader`` would name it (``model.py`` beside it,
    ``../train.py`` one level up): a message must not carry where the run happened to be."""
    try:
        return os.path.relpath(path, os.path.dirname(reader) or os.curdir)
    except ValueError:  # another drive (Windows)
        return path


def _pair(index: ProjectIndex, file: IndexedFile,
          save: SaveSite) -> tuple[ModulePair, LoadSite, ModulePair] | None:
    """(the save side, the load site, the load side) of a rewritable whole-module pair."""
    from torchfix_codemods.analysis.project.index import _same_policy

    key = normal_key(index, save.key, file)
    if key is None or key[0] != "file" or save.noqa or save.via is not None or \
            save.built is None or \
            save.built_args is None or save.obj is None:
        return None
    saves = _table(index, "saves").get(key, [])
    loads = [(other, load) for other, load in _table(index, "loads").get(key, [])
             if related(file, other)]
    if len(saves) != 1 or len(loads) != 1:
        return None
    other, load = loads[0]
    if other is file or load.target is None or load.noqa or not load.alone or \
            other.notebook or not _same_policy(index.pairable, file, other):
        return None
    content = index.content(save.content, file)
    built = index.definition(save.built, file)
    absolute = index.absolute(save.built, file)
    if content.module is None or absolute is None or built is None or \
            built.kind != "class" or built.file is file:
        return None  # a class of the saving script itself cannot be imported elsewhere
    module, _, class_name = absolute.rpartition(".")
    if not module or class_name in load.bound or not _free_or_same(
            index, other, class_name, built):
        return None
    saving = ModulePair("save", other.path, module, class_name, save.built_args, load.target)
    loading = ModulePair("load", file.path, module, class_name, save.built_args, load.target)
    return saving, load, loading  # type: ignore[return-value]


def _free_or_same(index: ProjectIndex, file: IndexedFile, name: str,
                  wanted: _Definition) -> bool:
    """``name`` means nothing in ``file`` at module level, or imports ``wanted``."""
    summary = file.summary
    if name in summary.names or name in summary.functions or name in summary.classes:
        return False
    imported = summary.imports.get(name)
    if imported is None:
        return True
    found = index.definition(imported, file)
    return found is not None and found.file is wanted.file and found.name == wanted.name


def _file_of(value: Value) -> tuple[str, ...] | None:
    """The key of a path given as a string value (its last component)."""
    if not isinstance(value, Str):
        return None
    base = value.text.replace("\\", "/").rsplit("/", 1)[-1]
    return ("file", base) if base and base not in (".", "..") else None


def module_saves(index: ProjectIndex, file: IndexedFile) -> tuple[str, ...]:
    """The files of ``file``'s program that pickle a whole ``nn.Module`` with ``torch.save``
    (``torch.save(model, path)``), as ``file`` would name them: a change that makes modules
    unpicklable (the parametrized ``weight_norm``) breaks those saves. A saved name like a
    model's (``model``, ``net``) counts too: the answer only ever withholds a fix."""
    return index.memo.built(_MODULE_SAVES.keyed(file.path),
                            lambda: _module_saves(index, file))


def _module_saves(index: ProjectIndex, file: IndexedFile) -> tuple[str, ...]:
    found = {_seen_from(other.path, file.path)
             for other in index.files.values() if related(file, other, index)
             for save in other.summary.saves
             if writes(index, other, save) and (
                 (save.obj is not None and named_like_model(save.obj)) or
                 index.content(save.content, other).module)}
    return tuple(sorted(found))


register(Fact("checkpoints", None, {
    "saved_content": Question(saved_content),
    "module_pair": Question(module_pair),
    "module_saves": Question(module_saves, ()),
}))
