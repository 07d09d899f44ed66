"""Where each cross-file fact registers itself: what one file says, and the questions it answers.

A cross-file fact used to cut through three layers (the summary, the index, the
``ProjectFacts`` protocol with ``NoProject`` and every test fake). A fact module of
this package now holds all of it and registers one :class:`Fact`:

* ``summarize``: what one file says, read off the standard ``ast`` (plain JSON data,
  cached with the rest of the file's summary; it must not look at other files);
* ``answers``: each question a rule may ask, by name, with the function that answers
  it from the combined index (:class:`~.index.FileFacts` dispatches to it) and the
  "unknown" answer that :class:`~torchfix_codemods.analysis.project.NoProject` (and
  every test fake built on it) gives without being edited.

Registration is an import side effect of the package (``project/__init__.py`` imports
its fact modules), like LibCST's metadata providers named by the visitors that use them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Answer = Callable[..., Any]
"""``answer(index, file, *question_args)``: the question answered from ``file``'s side."""


@dataclass(frozen=True)
class Question:
    answer: Answer
    unknown: Any = None
    """What a run without an index answers (None, or an empty tuple for collections)."""


@dataclass(frozen=True)
class Fact:
    name: str
    summarize: Callable[[ast.Module], Any] | None = None
    """What one file says, as JSON data (None: the fact reads only the shared summary)."""
    questions: dict[str, Question] = field(default_factory=dict)


FACTS: dict[str, Fact] = {}
QUESTIONS: dict[str, Question] = {}


def register(fact: Fact) -> Fact:
    """Make ``fact``'s questions answerable everywhere (twice the same name is a bug)."""
    for name in fact.questions:
        if name in QUESTIONS:
            raise ValueError(f"project question {name!r} registered twice")
    FACTS[fact.name] = fact
    QUESTIONS.update(fact.questions)
    return fact


def unknown_answer(name: str) -> Callable[..., Any]:
    """The "unknown" answer of a registered question, as a method-like callable."""
    question = QUESTIONS.get(name)
    if question is None:
        raise AttributeError(name)
    unknown = question.unknown
    return lambda *args, **kwargs: unknown


def summarize_facts(tree: ast.Module) -> dict[str, Any]:
    """Every registered fact's part of one file's summary."""
    return {name: fact.summarize(tree) for name, fact in FACTS.items()
            if fact.summarize is not None}
