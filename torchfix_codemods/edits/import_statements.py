"""Adding ``import x`` and removing imports a fix left unused, without LibCST's codemods.

LibCST's ``AddImportsVisitor`` and ``RemoveImportsVisitor`` did this before. They are
general (relative imports, aliases, any scope) and slow for what a fix asks: importing
``libcst.codemod`` costs most of a second per process, ``AddImportsVisitor`` walks the
whole module twice to read its top-level imports, and ``RemoveImportsVisitor`` computes
scope and qualified-name metadata for the whole module. On a 450-line file the two took
about ten times the file's parse, on every fix round.

What fixes ask is narrow, so this module does it directly and keeps LibCST's results:

* :func:`add_module_imports`: ``import torch`` for a module the file does not import at
  its top, placed where ``AddImportsVisitor`` places it (after the docstring and the
  leading run of one-import lines, sorted, a blank line before the code that follows).
* :func:`remove_unused_imports`: ``from m import name`` / ``import m`` (unaliased, one
  identifier) when ``name`` is read nowhere else in the new code, judged with ``ast``:
  any name, ``global`` or expression-like string naming it (``__all__``, string
  annotations) keeps the import, in any scope, so where the two analyses could differ
  the import stays. Any other removal (a dotted ``import a.b``) still goes to LibCST.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.edits.references import ImportRemoval


def add_module_imports(module: cst.Module, modules: Iterable[str]) -> cst.Module:
    """``module`` with ``import m`` for each of ``modules`` its leading imports lack."""
    body = list(module.body)
    start = 1 if body and _is_header(body[0]) else 0
    end = start
    present: set[str] = set()
    for statement in body[start:]:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Import | cst.ImportFrom)):
            break
        end += 1
        small = statement.body[0]
        if isinstance(small, cst.Import):
            present.update(dotted_name(alias.name) for alias in small.names
                           if alias.asname is None)
    missing = sorted(set(modules) - present)
    if not missing:
        return module
    added = [cst.SimpleStatementLine([cst.Import([cst.ImportAlias(_dotted(name))])])
             for name in missing]
    after = body[end:]
    if after:
        first = after[0]
        if not first.leading_lines:
            after[0] = first.with_changes(leading_lines=(cst.EmptyLine(),))
        elif first.leading_lines[0].comment is not None:
            after[0] = first.with_changes(leading_lines=(cst.EmptyLine(), *first.leading_lines))
    return module.with_changes(body=[*body[:end], *added, *after])


def _is_header(statement: cst.CSTNode) -> bool:
    """A module docstring or a ``__strict__ = ...`` flag: new imports go after it."""
    if not isinstance(statement, cst.SimpleStatementLine) or not statement.body:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Expr):
        return isinstance(small.value, cst.SimpleString)
    return (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == "__strict__")


def _dotted(name: str) -> cst.Name | cst.Attribute:
    parts = name.split(".")
    node: cst.Name | cst.Attribute = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(node, cst.Name(part))
    return node


def handles(removal: ImportRemoval) -> bool:
    """Whether :func:`remove_unused_imports` decides this removal itself."""
    if removal.name is None:
        return removal.module.isidentifier()
    return removal.name.isidentifier()


def remove_unused_imports(module: cst.Module, removals: Sequence[ImportRemoval]) -> cst.Module:
    """``module`` without the unaliased imports of ``removals`` that nothing reads.

    Every removal must be one :func:`handles` answers yes for.
    """
    code = module.code
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return module  # the engine's validation reports the rewritten file
    bound = {removal.name or removal.module for removal in removals}
    unused = bound - _read_names(tree, bound)
    wanted = {(removal.module, removal.name) for removal in removals
              if (removal.name or removal.module) in unused}
    if not wanted:
        return module
    return module.visit(_ImportRemover(wanted))


def _read_names(tree: ast.AST, names: set[str]) -> set[str]:
    """Which of ``names`` the code may read: as a name (a read, a write or a ``del`` that
    another binding may serve), in a ``global``/``nonlocal``, or inside a string that is
    itself an expression naming it (``__all__`` entries, string annotations such as
    ``"Optional[Variable]"``); prose in docstrings and messages does not count."""
    found: set[str] = set()
    words = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            candidates: Iterable[str] = (node.id,)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            candidates = node.names
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and words.search(node.value):
            candidates = _names_in_expression(node.value)
        else:
            continue
        found.update(name for name in candidates if name in names)
    return found


def _names_in_expression(text: str) -> list[str]:
    """The names a string reads when it is a Python expression, else none."""
    try:
        expression = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return []
    return [node.id for node in ast.walk(expression) if isinstance(node, ast.Name)]


class _ImportRemover(cst.CSTTransformer):
    """Drops the unaliased aliases of ``wanted`` ((module, name); name None for ``import
    module``) from import statements, as ``RemoveImportsVisitor`` drops them: the whole
    statement when no alias is left, else the trailing comma of the new last alias."""

    def __init__(self, wanted: set[tuple[str, str | None]]) -> None:
        super().__init__()
        self._wanted = wanted

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import
                     ) -> cst.Import | cst.RemovalSentinel:
        keep = [alias for alias in updated_node.names if alias.asname is not None
                or (dotted_name(alias.name), None) not in self._wanted]
        return self._kept(updated_node, keep)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
                         ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar) or updated_node.relative \
                or updated_node.module is None:
            return updated_node
        module = dotted_name(updated_node.module)
        keep: list[cst.ImportAlias] = []
        lpar = updated_node.lpar
        for alias in updated_node.names:
            if alias.asname is not None or (module, dotted_name(alias.name)) not in self._wanted:
                keep.append(alias)
                continue
            # The comments after a removed alias's comma move to the alias before it (or
            # to the opening parenthesis), as RemoveImportsVisitor moves them.
            comma = alias.comma
            if not isinstance(comma, cst.Comma):
                continue
            if keep:
                previous = keep[-1]
                if isinstance(previous.comma, cst.Comma):
                    keep[-1] = previous.with_changes(comma=previous.comma.with_changes(
                        whitespace_after=_merged(previous.comma.whitespace_after,
                                                 comma.whitespace_after)))
                else:
                    keep[-1] = previous.with_changes(comma=comma)
            elif isinstance(lpar, cst.LeftParen):
                lpar = lpar.with_changes(
                    whitespace_after=_merged(lpar.whitespace_after, comma.whitespace_after))
        kept = self._kept(updated_node, keep)
        if isinstance(kept, cst.ImportFrom) and lpar is not updated_node.lpar:
            kept = kept.with_changes(lpar=lpar)
        return kept

    @staticmethod
    def _kept(node: cst.Import | cst.ImportFrom, keep: list[cst.ImportAlias]
              ) -> cst.Import | cst.ImportFrom | cst.RemovalSentinel:
        names = list(node.names)  # type: ignore[arg-type]
        if keep == names:
            return node
        if not keep:
            return cst.RemoveFromParent()
        if keep[-1] is not names[-1]:
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return node.with_changes(names=keep)


def _merged(left: cst.BaseParenthesizableWhitespace, right: cst.BaseParenthesizableWhitespace
            ) -> cst.BaseParenthesizableWhitespace:
    """The whitespace after a kept comma when the alias after it goes: its own, with the
    comment lines of the removed one's (LibCST's ``_merge_whitespace_after``)."""
    if not isinstance(right, cst.ParenthesizedWhitespace):
        return left
    if not isinstance(left, cst.ParenthesizedWhitespace):
        return right
    return left.with_changes(empty_lines=tuple(line for line in right.empty_lines
                                               if line.comment is not None))
