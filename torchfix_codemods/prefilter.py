"""Which rules could report anything in a file, decided before LibCST parses it (from speed).

Parsing with LibCST and building the name index cost more than everything
else a rule does, so a file is parsed only when some active rule could match
it. Two tests, cheapest first:

1. ``Rule.triggers``: substrings, one of which must occur in the text (and
   ``torch`` for rules that match torch names);
2. ``Rule.needs``: words the code itself must contain, read with the standard
   library's :mod:`ast` (about a tenth of a LibCST parse, and it skips comments
   and strings). A rule whose ``needs`` are not met is not run; when no rule is
   left the file is not parsed at all.

``needs`` must be a *necessary* condition: a rule may be skipped only where it
could not have reported anything. tests/test_prefilter.py runs every rule's
examples and fixtures with and without this filter and requires the same
findings; bench/prefilter_check.py does the same over real repositories.

The words of a file (:class:`FileFacts`):

* ``name``: ``x.name`` anywhere, or ``name`` in an import statement (a module
  path part, an imported name or an alias). Every torch name a rule matches by
  qualified name ends in one of these;
* ``.name``: ``x.name`` anywhere (an attribute only: ``.data``, not the
  ``data`` of ``from torch.utils import data``);
* ``name=``: a keyword argument of a call;
* ``root:token``: a token of the name of a function that could be an
  inference root (``eval_epoch`` gives ``root:eval`` and ``root:epoch``; a
  ``test_*`` or ``train_*`` function gives none), split as the inference
  analysis splits names;
* ``import:a.b``: an ``import a.b`` statement (with or without ``as``);
* ``+=``: an augmented addition; ``op=``: any augmented assignment; ``[0]``: a
  subscript by the literal ``0``; ``[]=``: an assignment whose one target is a
  subscript (``x[i] = v``);
* ``._``: ``x.name_`` for a name ending in one underscore and not starting with two
  (the spelling of torch's in-place methods).

A fragment (``Needs.any_of(fragments=("Loss",))``) is met by any identifier of
the file containing it: names, attributes, classes, functions, parameters.
A name (``Needs.any_of(names=("transpose",))``) is met by an identifier equal to
it: the last part of a torch name a rule matches by qualified name appears so,
whether the file reaches it through an attribute, an import or a star import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from torchfix_codemods.analysis.vocabulary.naming import name_tokens, never_a_root


@dataclass(frozen=True)
class FileFacts:
    """What :mod:`ast` tells about one file's code: its words and its identifiers."""

    words: frozenset[str]
    identifiers: str
    """Every identifier, each followed and preceded by a NUL character, for fragment tests
    (``"\\0name\\0"`` is an exact identifier: :meth:`Needs.any_of`'s ``names``)."""

    def has_fragment(self, fragment: str) -> bool:
        return fragment in self.identifiers


def file_facts(text: str) -> FileFacts | None:
    """The words of ``text`` (see the module docstring); None when :mod:`ast` cannot parse it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree_facts(tree)


def tree_facts(tree: ast.AST) -> FileFacts:
    """The words of the code ``tree`` was parsed from (:func:`file_facts` of its text)."""
    words: set[str] = set()
    identifiers: set[str] = set()
    word = words.add
    identifier = identifiers.add
    stack: list[ast.AST] = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is ast.Name:
            identifier(node.id)  # type: ignore[attr-defined]
            continue  # a Name has no children worth visiting
        if kind is ast.Attribute:
            attr = node.attr  # type: ignore[attr-defined]
            word(attr)
            word("." + attr)
            if attr[-1] == "_" and not attr.startswith("__"):
                word("._")
        elif kind is ast.keyword:
            if node.arg is not None:  # type: ignore[attr-defined]
                word(node.arg + "=")  # type: ignore[attr-defined]
                identifier(node.arg)  # type: ignore[attr-defined]
        elif kind is ast.Subscript:
            index = node.slice  # type: ignore[attr-defined]
            if type(index) is ast.Constant and type(index.value) is int and index.value == 0:
                word("[0]")
        elif kind is ast.AugAssign:
            word("op=")
            if type(node.op) is ast.Add:  # type: ignore[attr-defined]
                word("+=")
        elif kind is ast.Assign:
            targets = node.targets  # type: ignore[attr-defined]
            if len(targets) == 1 and type(targets[0]) is ast.Subscript:
                word("[]=")
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            name = node.name  # type: ignore[attr-defined]
            identifier(name)
            if not never_a_root(name):
                words.update("root:" + token for token in name_tokens(name))
        elif kind is ast.ClassDef:
            identifier(node.name)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            identifier(node.arg)  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            module = getattr(node, "module", None)
            if module:
                words.update(module.split("."))
            for alias in node.names:  # type: ignore[attr-defined]
                words.update(alias.name.split("."))
                if kind is ast.Import:
                    word("import:" + alias.name)
                if alias.asname:
                    word(alias.asname)
            continue
        for field in _fields(kind):
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)
    identifiers.update(words)
    return FileFacts(frozenset(words), "\0" + "\0".join(identifiers) + "\0")


_FIELDS: dict[type, tuple[str, ...]] = {}
_LEAF_FIELDS = frozenset({"ctx", "op", "type_comment", "kind"})


def _fields(kind: type) -> tuple[str, ...]:
    """A node type's fields that can hold nodes worth visiting (ast.walk, without its cost)."""
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(
            name for name in kind._fields if name not in _LEAF_FIELDS)  # type: ignore[attr-defined]
    return fields


@dataclass(frozen=True)
class Needs:
    """A necessary condition for a rule to report in a file: every group must be met.

    A group is met when the file has one of its words, or an identifier
    containing one of its fragments.
    """

    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...]

    @classmethod
    def any_of(cls, *words: str, fragments: Sequence[str] = (),
               names: Iterable[str] = ()) -> Needs:
        """One group: a word, an identifier containing a fragment, or an identifier equal to
        one of ``names`` (any identifier of the code: a name read or bound, an attribute, a
        keyword, a function, class or parameter name, or a word of an import)."""
        exact = tuple(f"\0{name}\0" for name in sorted(names))
        if not words and not fragments and not exact:
            raise ValueError("a group needs at least one word, fragment or name")
        return cls(((frozenset(words), tuple(fragments) + exact),))

    def __and__(self, other: Needs) -> Needs:
        """Both conditions."""
        return Needs(self.groups + other.groups)

    def __or__(self, other: Needs) -> Needs:
        """Either condition; only for single groups (``any_of(...) | any_of(...)``)."""
        if len(self.groups) != 1 or len(other.groups) != 1:
            raise ValueError("only single groups can be joined with |")
        (words, fragments), (more_words, more_fragments) = self.groups[0], other.groups[0]
        return Needs(((words | more_words, fragments + more_fragments),))

    def met_by(self, facts: FileFacts) -> bool:
        """Whether every group is met (:data:`ANY_CODE`, with none, is met by every file)."""
        for words, fragments in self.groups:
            if words.isdisjoint(facts.words) and not any(
                    facts.has_fragment(fragment) for fragment in fragments):
                return False
        return True


ANY_CODE = Needs(())
"""For a rule whose reports the words of the code cannot predict (a string literal decides):
it runs wherever its triggers occur. Chosen on purpose, never by default."""


class Prefiltered(Protocol):
    """What the prefilter reads of a rule class."""

    code: str
    triggers: tuple[str, ...]
    uses_torch_names: bool

    @classmethod
    def file_needs(cls) -> Needs: ...


@dataclass(frozen=True)
class Selection:
    """The rules worth running on a text, and whether :mod:`ast` parsed it (None: not tried)."""

    rules: list[type[Prefiltered]]
    parses: bool | None = None


KNOWN_FACTS: dict[str, tuple[int, int, FileFacts]] = {}
""":func:`file_facts` of files whose text was already parsed with :mod:`ast` in this run (by
the project index's summary pass): path -> (length of the text, ``hash`` of the text, facts).
The runner fills it before it forks the analysis workers, which inherit it, so a file's
text is parsed with ``ast`` once per run instead of twice (0.27 CPU s over the 187 files
of the benchmark, the whole ``ast.parse`` floor)."""


def known_facts(path: str, text: str) -> FileFacts | None:
    """The facts recorded for ``path`` when they were read from this very text, else None."""
    known = KNOWN_FACTS.get(path)
    if known is None or known[0] != len(text) or known[1] != hash(text):
        return None
    return known[2]


def could_match(rules: Iterable[type[Prefiltered]], text: str,
                use_ast: bool = True, known: FileFacts | None = None) -> Selection:
    """The rules worth running on ``text``, in their given order; ``known``: ``file_facts(text)``
    when the caller has them already."""
    mentions_torch = "torch" in text
    candidates = [
        rule for rule in rules
        if (mentions_torch or not rule.uses_torch_names)
        and any(trigger in text for trigger in rule.triggers)
    ]
    if not candidates or not use_ast or all(_needs_of(rule) is ANY_CODE for rule in candidates):
        return Selection(candidates)
    facts = known if known is not None else file_facts(text)
    if facts is None:
        return Selection(candidates, parses=False)  # let LibCST (and TFC000) decide
    kept = []
    for rule in candidates:
        needs = _needs_of(rule)
        if needs.met_by(facts):
            kept.append(rule)
    return Selection(kept, parses=True)


_NEEDS: dict[type, Needs] = {}


def _needs_of(rule: type[Prefiltered]) -> Needs:
    """``rule.file_needs()``, computed once per rule (some derive it from data tables)."""
    if rule not in _NEEDS:
        _NEEDS[rule] = rule.file_needs()
    return _NEEDS[rule]
