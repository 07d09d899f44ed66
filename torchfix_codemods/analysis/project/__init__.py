"""The seam for facts that span files: what a rule may ask about the rest of the project.

One file rarely says everything: ``from models import Net`` hides whether
``Net`` is an ``nn.Module``, a helper in another file may call ``.eval()``, a
checkpoint saved in ``train.py`` is loaded in ``predict.py``. Those answers
come from a project index built in a first pass over the run's files (the way
LibCST's ``FullRepoManager`` computes repository-wide metadata before any
visitor runs, and Fixit rules declare the metadata they depend on).

Rules never build or open anything themselves. A rule that reads project
facts names them in :attr:`Rule.project_facts` (so the runner knows to build
the index, and the cache knows a result depends on other files), and reads
them through ``self.context.project``, which satisfies :class:`ProjectFacts`:
the index of :mod:`.index` as seen from the file being analysed. A run
with no such rule, or a unit analysed on its own, gets :data:`NO_PROJECT`, which
knows nothing: "unknown" is always a valid answer, and every rule treats it
conservatively.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from torchfix_codemods.analysis.project.registry import unknown_answer

ProjectFact = Literal["module-classes", "checkpoints", "checkpoint-pairs", "callers",
                      "version-flags", "loader-shards", "imported-names"]
"""The kinds of cross-file facts a rule can declare it reads:

``module-classes``: which classes (and which functions' results) are ``nn.Module``,
``Dataset``, ``DataLoader``; ``checkpoints``: what the run saves where a
``torch.load`` reads; ``checkpoint-pairs``: whole-module saves rewritten together with
their load in another file (the index offers a pair only between files where such a rule
runs with unsafe fixes); ``callers``: what other files pass to a file's functions;
``version-flags``: module-level torch-version flags; ``loader-shards``: a DataParallel
training loop's DataLoader built by a function of another file, sharded there in the same
change (the index offers a shard only between files where such a rule runs with unsafe fixes);
``imported-names``: the names other files import from a file, by name or by a star import
(the engine keeps such an import when a fix leaves it unused there).
"""


@dataclass(frozen=True)
class ClassFacts:
    """What the project knows about one class, by its qualified name."""

    qualified: str
    path: str
    is_module: bool | None
    """Subclasses ``torch.nn.Module`` (transitively, across files); None when a base is unknown."""
    changes_with_mode: bool | None = None
    """Whether ``eval()`` changes its forward (``analysis.modules.changes_with_mode`` on the
    class in its own file); None when unknown."""
    is_dataset: bool | None = None
    is_dataloader: bool | None = None


@dataclass(frozen=True)
class ReturnFacts:
    """What a function returns, where every ``return`` of it agrees."""

    kind: Literal["module", "dataloader", "detached-cpu-tensor", "cpu-tensor"]
    reason: str
    """For a reviewer: "returns an instance of `models.Net` (models.py)"."""
    built_from: str | None = None
    """The class of the instance it returns (qualified), when it builds one."""


@dataclass(frozen=True)
class SavedContent:
    """What the ``torch.save`` calls of the run that write the file a load reads put in it."""

    allow_listed: bool | None
    """Every saved object is something ``weights_only=True`` loads (tensors, state dicts,
    primitives, and dicts/lists/tuples of them); False when one is not; None unknown."""
    cpu_only: bool | None
    """Nothing saved can live on an accelerator (numpy arrays, numbers, ``.cpu()`` tensors,
    a grad scaler's state); None unknown."""
    what: str
    """The saved object that decides ``allow_listed`` (``a numpy array``), for messages."""
    where: str
    """The file that saves it (no line: a message must not change when that file's lines do)."""
    matched_by: Literal["path", "file", "keys"]
    """``path``: a save whose path expression names the same file; ``file``: only the same
    source file's saves, the load's path being unknown (weaker: never a reason for a safe fix);
    ``keys``: saves of dicts holding every key the load's result is read by, in files of the
    same program (as weak: the program writes checkpoints of that shape)."""
    whole_module: bool = False
    transport: bool = False
    """An in-memory buffer written and read in the same file (objects sent between processes)."""
    named: bool = False
    """Matched by a file name both sides spell (a literal, a module constant, an argparse
    default), not only by the same expression text: the run itself writes that file."""
    bundle: bool = False
    """A save whose content is not known to load writes a dict, list or tuple (a
    training-state checkpoint, which habitually holds metrics, arguments and objects
    beside its state dicts), rather than one value."""


@dataclass(frozen=True)
class ModulePair:
    """A whole ``nn.Module`` saved in one file and loaded (assigned to a name) in another.

    Rewritten together: the save writes ``state_dict()``, the load builds the class and
    loads the state dict into it. The index offers a pair only when each side is the only
    save and the only load of that file in the run, the class is importable from the
    loading file the way the saving file imports it, its constructor's arguments are
    literals, and neither side is silenced or excluded from unsafe fixes.
    """

    role: Literal["save", "load"]
    """The side the asking file holds."""
    other_path: str
    module: str
    """What the loading side imports the class from (``models``, ``pkg.models``)."""
    class_name: str
    arguments: str
    """The constructor's arguments as source text (``4, 2``; empty for none)."""
    target: str
    """The name the loading side assigns the loaded model to."""

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.class_name}"


@dataclass(frozen=True)
class LoaderShard:
    """The training ``DataLoader`` of a file that wraps its model in ``nn.DataParallel``,
    built by a module-level function of another file of the run.

    TFC301 migrates the two files together: the building file gives the loader a
    ``DistributedSampler`` and a per-process batch size, the training file calls
    ``set_epoch`` at the top of its epoch loop. ``problem`` is None only when the index can
    prove that the function builds one loader that can take a sampler, that the training
    file's call is its only call in the run, and that both files run the rule with unsafe
    fixes; otherwise it says why not, and the data side is reported.
    """

    loader_path: str
    """The file that builds the loader (as the user gave it)."""
    function: str
    loader_line: int
    """The line of its ``DataLoader(...)`` call."""
    training_path: str
    target: str
    """The name the training file assigns the loader to (for a loader handed to a trainer's
    constructor: the name the building file binds it to)."""
    problem: str | None = None
    passed_as: str | None = None
    """For a loader built in one file and handed to the constructor of a class of the training
    file (BERT-pytorch: ``BERTTrainer(..., train_dataloader=loader)``): the keyword. The
    building file then gets the sampler *and* ``set_epoch`` (its epoch loop calls the
    trainer), the training file only the model side; ``function`` is the function around the
    loader ("" at module level)."""


class ProjectFacts(Protocol):
    """Questions about the rest of the run's files, asked from one file of it.

    Qualified names may be relative (``.models.Net``, as ``from .models import Net`` binds
    them): they are resolved against the asking file. Every answer may be None (unknown).

    A fact module of this package answers its questions through :mod:`.registry`
    (``class_facts`` in :mod:`.classes`, ``returns`` in :mod:`.returns`,
    ``module_arguments`` and ``caller_files`` in :mod:`.callers`, the loader questions in
    :mod:`.loader_shards`, ``version_flag`` in :mod:`.version_flags`,
    ``star_names(module)`` in :mod:`.stars`, ``saved_content`` and ``module_pair`` in
    :mod:`.checkpoints`); only ``module_name`` is the index's own:
    ``NoProject``, the index's ``FileFacts`` and the test fakes answer them without a
    method of their own. Those listed here are for readers and type checkers.
    """

    def module_name(self, path: str) -> str | None:
        """The dotted module name a file of the run is imported as (``pkg.models``)."""

    def class_facts(self, qualified: str) -> ClassFacts | None:
        """Facts about the class ``qualified`` (``pkg.models.Net``) when a file of the run defines it."""

    def returns(self, qualified: str) -> ReturnFacts | None:
        """What the function ``qualified`` returns, when a file of the run defines it and shows it."""

    def version_flag(self, qualified: str) -> bool | None:
        """Is this module-level name a torch-version flag? (:mod:`.version_flags`)

        True for a name bound to a comparison of torch's version (``torch.__version__``,
        ``packaging.version``, ``lightning_utilities``' ``compare_version("torch", ...)``,
        ``RequirementCache("torch>=2.1")``), to a boolean combination of flags, or to a
        call of a function that returns one; also for such a function itself
        (``is_torch_version``). False for any other name a file of the run defines; None
        when no file of the run defines it.
        """

    def saved_content(self, function: str, site: str) -> SavedContent | None:
        """What the run saves to the file that this file's ``torch.load`` at ``site`` reads.

        ``function`` is the name of the innermost function around the load ("" at module
        level), ``site`` the :func:`~torchfix_codemods.analysis.project.summary.site_of_text`
        of its path argument. None when no save of the run is known to write that file.
        """

    def module_saves(self) -> tuple[str, ...]:
        """The files of this file's program that pickle a whole ``nn.Module`` with
        ``torch.save``, named as this file would (:mod:`.checkpoints`)."""

    def module_pair(self, function: str, site: str) -> ModulePair | None:
        """The whole-module save/load pair this file's ``torch.save``/``torch.load`` at
        ``site`` belongs to, when the index can rewrite both sides together."""

    def module_arguments(self, function: str) -> dict[str, str] | None:
        """Parameters of this file's module-level ``function`` that every call from another
        file of the run passes an ``nn.Module`` to, with the reason; None without such calls."""

    def caller_files(self, function: str) -> tuple[str, ...]:
        """The other files of the run that call this file's module-level ``function``."""

    def only_prints(self, qualified: str) -> bool | None:
        """Does the function ``qualified`` of another file of the run only print? (:mod:`.prints`)"""

    def only_outputs(self, qualified: str) -> bool | None:
        """Does the function ``qualified`` of another file of the run only print or write files,
        changing nothing its caller sees? (:mod:`.outputs`)"""

    def writer_class(self, qualified: str) -> bool | None:
        """Is ``qualified`` a class of the run whose objects only write files? (:mod:`.outputs`)"""

    def own_outputs(self) -> dict[str, tuple[str, ...]]:
        """This file's output functions (``functions``; ``silent``: those returning no value)
        and writer classes (``classes``), by name (:mod:`.outputs`)."""

    def training_loaders(self) -> tuple[LoaderShard, ...]:
        """The loaders this file's functions build that another file's DataParallel training
        loop reads and that are sharded here (every one's ``problem`` is None)."""

    def loader_shard(self, qualified: str) -> LoaderShard | None:
        """What the index knows of the loader the function ``qualified`` (another file's)
        builds for this file's DataParallel training loop; None when it is not one."""

    def loaders_passed_to(self, class_name: str) -> tuple[str, ...]:
        """Where other files of the run pass a ``DataLoader`` they build to the constructor
        of this file's class ``class_name``: "``train_dataloader=`` at main.py line 57"."""

    def passed_loader_shard(self, class_name: str) -> LoaderShard | None:
        """The training loader another file builds, hands to this file's class
        ``class_name`` and shards itself (sampler and ``set_epoch``), or why it does not."""

    def star_names(self, module: str) -> dict[str, str | None] | None:
        """What ``from <module> import *`` binds in this file (:mod:`.stars`)."""

    def imported_names(self) -> frozenset[str]:
        """This file's module-level names that other files of the run import from it, by
        name or by a star import (``"*"``: any of them) (:mod:`.stars`)."""

    def __getattr__(self, question: str) -> Any:
        """Any other question a fact module registers (``dataset_cuda_work`` in
        :mod:`.dataset_workers`): a new fact adds no line here."""


class NoProject:
    """The project of a run without an index: every question is answered "unknown".

    Every question a fact module of this package registers (:mod:`.registry`) is
    answered with its registered "unknown" through ``__getattr__``, so neither this class
    nor a test fake built on it changes when a fact is added; ``module_name`` is the one
    question of the index itself.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return unknown_answer(name)

    def module_name(self, path: str) -> str | None:
        return None


NO_PROJECT: ProjectFacts = NoProject()


_NOT_FACTS = frozenset({"index", "registry", "summary", "values"})
"""The modules of this package that hold no fact: the index, the registry, the shared summary
and its value language. Every other module is a fact module."""


def _register_fact_modules() -> None:
    """Import every fact module of this package, which registers its fact: a new fact is a new
    module here, and nothing else in the package names it."""
    import importlib
    import pkgutil

    for found in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if found.name not in _NOT_FACTS and not found.name.startswith("_"):
            importlib.import_module(f"{__name__}.{found.name}")


_register_fact_modules()
