"""Project code the index cannot resolve: a name a file imports from its own project that
no file of the run defines where the import says.

microsoft/human-pose-estimation.pytorch's ``pose_estimation/train.py`` imports ``train``,
``validate`` and ``save_checkpoint`` from ``core.function`` and ``utils.utils``: modules of
its ``lib/`` folder, which ``import _init_paths`` puts on ``sys.path`` when the script runs.
The index names ``lib/core/function.py`` by its own package layout, so the import does not
resolve, and what those functions write (checkpoints, a results json, debug images) is
invisible to the file that calls them. A rule that must see every side effect of the code
it rewrites (TFC301's migration puts every write on rank 0) asks
``unresolved_project_code(qualified)``: a reason when ``qualified`` is such a name, None
when the index resolves it or it is not the project's (``tqdm.tqdm``, ``numpy.save``).

A name is the project's when it is imported relatively, or when the top-level package it is
imported from is named like a folder or a module of the run (``core`` for
``lib/core/function.py``): a package of the same name from elsewhere shadowed by the run's
own folder is rare, and the cost of the mistake is a withheld fix, never a wrong one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.project.registry import Fact, Question, register

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

_NEVER_THE_PROJECT = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "builtins"})
"""Top-level names that are never the project's own code, whatever its folders are called."""


def _run_names(index: ProjectIndex) -> dict[str, str]:
    """Every folder and module name of the run's files (below their common folder), each with
    its path (``core`` -> ``lib/core/``), for the reason."""
    paths = sorted(os.path.abspath(f.path) for f in index.files.values() if not f.notebook)
    if not paths:
        return {}
    root = os.path.commonpath([os.path.dirname(p) for p in paths])
    names: dict[str, str] = {}
    for path in paths:
        parts = os.path.relpath(path, root).split(os.sep)
        for at, part in enumerate(parts[:-1]):
            if part.isidentifier():
                names.setdefault(part, "/".join(parts[:at + 1]) + "/")
        stem = parts[-1].rsplit(".", 1)[0]
        if stem != "__init__" and stem.isidentifier():
            names.setdefault(stem, "/".join(parts))
    return names


def _module_of_run(index: ProjectIndex, file: IndexedFile, absolute: str) -> bool:
    """``absolute`` is a name of a module file of the run (``utils.progress_bar`` with
    ``utils.py`` in the run): resolved to a file, whatever binds the name there (a star
    import the index does not follow)."""
    parts = absolute.split(".")
    return len(parts) > 1 and index.module_file(".".join(parts[:-1]), file) is not None


def unresolved_project_code(index: ProjectIndex, file: IndexedFile, qualified: str) -> str | None:
    """Why ``qualified`` (as ``file`` imports it) is the project's own code that the index
    cannot resolve (a short clause); None when it resolves, or is not the project's."""
    if qualified.startswith("@.") or index.definition(qualified, file) is not None:
        return None
    absolute = index.absolute(qualified, file)
    if absolute is not None and _module_of_run(index, file, absolute):
        return None
    if qualified.startswith("."):
        return "a relative import of a module that is not in the run"
    top = qualified.split(".")[0]
    if top in _NEVER_THE_PROJECT:
        return None
    names = index.table("unresolved.run_names", lambda: _run_names(index))
    where = names.get(top)
    if where is None:
        return None
    return f"`{top}` is the run's `{where}`, which the index does not import by that name"


def defined_in_run(index: ProjectIndex, file: IndexedFile, qualified: str) -> str | None:
    """The file of the run (as displayed) that defines ``qualified`` (a function or class
    another file imports), when the index resolves it; None otherwise."""
    if qualified.startswith("@."):
        return None
    found = index.definition(qualified, file)
    return None if found is None or found.file is file else found.file.display


register(Fact("unresolved", None, {
    "unresolved_project_code": Question(unresolved_project_code),
    "defined_in_run": Question(defined_in_run),
}))
