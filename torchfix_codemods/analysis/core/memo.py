"""The per-module memo: facts derived from one module's name index, each computed once.

Analyses keep what they derive from a :class:`~.names.NameIndex` (a file's statement
spans, its ``nn.Module`` classes, a value analysis' answers) on the index, so that every
rule asking about the same file shares one computation. Each fact has a :class:`Slot`: a
name, the type of its value, and optionally a key (the inference decorators it was
computed for). The memo is typed by the slot, so a reader gets back the type that was
stored, with no string keys to mistype and no casts at the call sites.

The project index (``analysis/project``) keeps its derived answers in one too: plain
Python, no LibCST, so the ``ast`` side imports this module and nothing else of ``core``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True)
class Slot(Generic[T]):
    """Where one fact of type ``T`` lives in a module's memo."""

    name: str
    key: Hashable = ()

    def keyed(self, *key: Hashable) -> Slot[T]:
        """The same fact computed for other inputs (``values.memo`` per decorator set)."""
        return Slot(self.name, key)


class ModuleMemo:
    """One module's derived facts by slot; ``memo[slot]`` has the slot's type."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[Slot[Any], object] = {}

    def __contains__(self, slot: Slot[Any]) -> bool:
        return slot in self._values

    def __getitem__(self, slot: Slot[T]) -> T:
        # Only __setitem__ and setdefault store, each with a value of the slot's type.
        return cast(T, self._values[slot])

    def __setitem__(self, slot: Slot[T], value: T) -> None:
        self._values[slot] = value

    def get(self, slot: Slot[T]) -> T | None:
        return cast("T | None", self._values.get(slot))

    def pop(self, slot: Slot[T]) -> T | None:
        """Forget one fact (a mode an analysis sets around one question)."""
        return cast("T | None", self._values.pop(slot, None))

    def setdefault(self, slot: Slot[T], default: T) -> T:
        return cast(T, self._values.setdefault(slot, default))

    def once(self, slot: Slot[T | None], compute: Callable[[], T | None]) -> T | None:
        """``compute()``'s answer, computed once per slot; asked again while it is being
        computed (a cycle: a class among its own bases, modules star-importing each other),
        the answer is None, "unknown". The project index's questions are asked this way."""
        if slot in self._values:
            return self[slot]
        self._values[slot] = None
        found = compute()
        self._values[slot] = found
        return found

    def built(self, slot: Slot[T], build: Callable[[], T]) -> T:
        """A table derived once per memo (every save of the run by the file it names)."""
        if slot not in self._values:
            self._values[slot] = build()
        return self[slot]
