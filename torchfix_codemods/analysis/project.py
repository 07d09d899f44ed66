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
them through ``self.context.project``, which satisfies :class:`ProjectFacts`.
Until the index exists every run gets :data:`NO_PROJECT`, which knows nothing:
"unknown" is always a valid answer, and every rule already treats it
conservatively.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

ProjectFact = Literal["module-classes"]
"""The kinds of cross-file facts a rule can declare it reads."""


@dataclass(frozen=True)
class ClassFacts:
    """What the project knows about one class, by its qualified name."""

    qualified: str
    path: str
    is_module: bool | None
    """Subclasses ``torch.nn.Module`` (transitively, across files); None when a base is unknown."""


@dataclass(frozen=True)
class ReturnFacts:
    """What a function returns, where every ``return`` of it agrees."""

    kind: Literal["module", "dataloader", "detached-cpu-tensor", "cpu-tensor"]
    reason: str
    """For a reviewer: "returns an instance of `models.Net` (models.py)"."""
    built_from: str | None = None
    """The class of the instance it returns (qualified), when it builds one."""


class ProjectFacts(Protocol):
    """Questions about the rest of the run's files; every answer may be None (unknown)."""

    def module_name(self, path: str) -> str | None:
        """The dotted module name a file of the run is imported as (``pkg.models``)."""

    def class_facts(self, qualified: str) -> ClassFacts | None:
        """Facts about the class ``qualified`` (``pkg.models.Net``) when a file of the run defines it."""

    def returns(self, qualified: str) -> ReturnFacts | None:
        """What the function ``qualified`` returns, when a file of the run defines it and shows it."""

    def version_flag(self, qualified: str) -> bool | None:
        """Whether the module-level name ``qualified`` (``pkg.imports._TORCH_GREATER_EQUAL_2_4``)
        is a torch-version flag: True when a file of the run binds it from a comparison of the
        torch release (``torch.__version__``, ``packaging.version``, lightning_utilities'
        ``compare_version``/``RequirementCache``), or defines it as a function returning one
        (accelerate's ``is_torch_version``), False when it binds it to something else, None
        when unknown. :mod:`torchfix_codemods.analysis.compat` treats both branches of
        ``if flag:`` / ``a if flag else b`` on a True flag as possibly running on an older
        torch (the answer carries no direction), unless one branch uses a newer API."""


class NoProject:
    """The project of a run without an index: every question is answered "unknown"."""

    def module_name(self, path: str) -> str | None:
        return None

    def class_facts(self, qualified: str) -> ClassFacts | None:
        return None

    def returns(self, qualified: str) -> ReturnFacts | None:
        return None

    def version_flag(self, qualified: str) -> bool | None:
        return None


NO_PROJECT: ProjectFacts = NoProject()
