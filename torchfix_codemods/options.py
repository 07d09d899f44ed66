"""What the engine's answer for one file depends on, apart from the file itself.

:class:`FileOptions` is built from the settings in force for a file
(``Settings.options_for``) and is the engine's only input besides the source;
:class:`RuleOptions`, inside it, is the narrow part rules may read. Everything
here is plain data (no LibCST, no rule modules), and the result cache keys on
:meth:`FileOptions.fingerprint`: a field added here changes the key by itself,
so no list of "settings that matter" has to be kept by hand.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from torchfix_codemods.budget import DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_NESTING_DEPTH

TorchVersion = tuple[int, int]


@dataclass(frozen=True)
class RuleOptions:
    """The settings that change what a rule reports."""

    inference_decorators: tuple[str, ...] = ()
    """Decorators of the user's own that run a function without gradients (TFC202)."""


@dataclass(frozen=True)
class FileOptions:
    """Everything that decides the findings and fixes for one file, apart from its bytes."""

    codes: tuple[str, ...]
    """The rules that run on this file, sorted (the selection minus its per-file ignores)."""
    unsafe_fixes: bool = False
    """Apply unsafe fixes too (the engine's policy: rules offer fixes, the engine picks)."""
    target_torch: TorchVersion | None = None
    """Oldest torch release the code must run on: fixes needing a newer one are withheld."""
    rules: RuleOptions = field(default_factory=RuleOptions)
    max_nesting_depth: int = DEFAULT_MAX_NESTING_DEPTH
    """Levels of the syntax tree above which the engine skips the file (``max-nesting-depth``,
    :func:`torchfix_codemods.budget.depth_problem`)."""
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    """Bytes above which a text is skipped before anything parses it (``max-file-size``): the
    runner applies it to the files it reads, :mod:`~torchfix_codemods.single` to a text from
    stdin, the language server or flake8."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", tuple(sorted(set(self.codes))))

    def fingerprint(self) -> str:
        """A stable text of every field, for cache keys; computed once per instance (a
        run asks it for every file, and ``asdict`` copies deeply)."""
        known = self.__dict__.get("_fingerprint")
        if known is None:
            known = json.dumps(dataclasses.asdict(self), sort_keys=True)
            object.__setattr__(self, "_fingerprint", known)
        return known
