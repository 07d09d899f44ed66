"""Training-loop facts and statement-level edits shared by TFC2xx and TFC5xx.

Inserting statements (``model.eval()`` at the start of a function, a
``with torch.no_grad():`` block, ``optimizer.zero_grad()`` before a backward)
must keep the file's indentation, line endings and comments. New statements
are parsed with LibCST's defaults and carry no explicit indentation or newline
of their own, so they render with the module's detected ``default_indent`` and
``default_newline`` (tabs and CRLF files stay tabs and CRLF); existing
statements are moved, never re-rendered by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from torchfix_codemods.analysis.names import NameIndex, dotted_name
from torchfix_codemods.analysis.walk import children


def statement(code: str) -> cst.BaseStatement:
    """One statement from source text written with 4-space indents and ``\\n``."""
    return cst.parse_statement(code)


def is_docstring(node: cst.BaseStatement) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and
            isinstance(node.body[0], cst.Expr) and
            isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def split_docstring(body: Sequence[cst.BaseStatement]) -> tuple[list[cst.BaseStatement],
                                                                 list[cst.BaseStatement]]:
    """(docstring statements, the rest) of a function body."""
    if body and is_docstring(body[0]):
        return [body[0]], list(body[1:])
    return [], list(body)


def fresh_name(preferred: str, taken: Iterable[str]) -> str:
    """``preferred``, or ``preferred_2``, ... whichever no existing name uses."""
    used = set(taken)
    if preferred not in used:
        return preferred
    index = 2
    while f"{preferred}_{index}" in used:
        index += 1
    return f"{preferred}_{index}"


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier written anywhere inside ``node`` (reads, writes, attributes)."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    node.visit(_Names())
    return found


def with_leading_lines_moved(
    new: cst.BaseStatement, old: cst.BaseStatement,
) -> tuple[cst.BaseStatement, cst.BaseStatement]:
    """Give ``new`` (inserted before ``old``) the comments and blank lines above ``old``."""
    lines = getattr(old, "leading_lines", ())
    if not lines:
        return new, old
    return new.with_changes(leading_lines=lines), old.with_changes(leading_lines=())


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def optimizer_of_step(names: NameIndex, call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer an ``X.step(...)`` call steps, or None when it is not an optimizer step.

    ``optimizer.step()`` and ``self.opt.step()`` name it by receiver (named like an
    optimizer, or bound to a ``torch.optim`` class); ``scaler.step(optimizer)``
    (AMP's GradScaler) steps its argument. A scheduler's ``step`` is not one.
    """
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
        return None
    receiver = func.value
    dotted = dotted_name(receiver)
    if dotted is None:
        return None
    last = dotted.split(".")[-1].lower()
    if "scaler" in last:
        if call.args and call.args[0].keyword is None and dotted_name(call.args[0].value):
            return call.args[0].value
        return None
    if "sched" in last:
        return None
    if "opt" in last:
        return receiver
    if isinstance(receiver, cst.Name):
        binding = names.binding_of(receiver)
        if binding is not None and isinstance(binding.value, cst.Call):
            qualified = names.qualified_name(binding.value.func) or ""
            if qualified.startswith("torch.optim.") and "lr_scheduler" not in qualified:
                return receiver
    return None


def walk_local(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` that runs as part of it (nested defs and classes excluded)."""
    for child in children(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield child
        yield from walk_local(child)


@dataclass
class LoopFacts:
    """What one training loop does per iteration."""

    loop: cst.For | cst.While
    backwards: list[cst.Call] = field(default_factory=list)
    steps: list[tuple[cst.Call, cst.BaseExpression]] = field(default_factory=list)
    zeroes_grads: bool = False
    conditional_step: bool = False

    @property
    def optimizers(self) -> set[str]:
        return {_code(optimizer) for _, optimizer in self.steps}


_ZERO_MARKERS = ("zero_grad", "set_to_none", ".grad = None", ".grad=None", ".grad.zero_()",
                 "grad.zero_", "grad.detach_")


def loop_facts(names: NameIndex, loop: cst.For | cst.While) -> LoopFacts:
    """Backwards, optimizer steps and gradient resets inside ``loop`` (any depth)."""
    facts = LoopFacts(loop)
    for node in walk_local(loop.body):
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                facts.backwards.append(node)
            if isinstance(func, cst.Attribute) and func.attr.value in ("zero_grad", "zero_"):
                facts.zeroes_grads = True
            optimizer = optimizer_of_step(names, node)
            if optimizer is not None:
                facts.steps.append((node, optimizer))
                if any(isinstance(a, (cst.If, cst.IfExp)) and _inside(names, a, loop)
                       for a in names.ancestors(node)):
                    facts.conditional_step = True
            called = _local_function(names, node)
            if called is not None and any(m in _code(called) for m in _ZERO_MARKERS):
                facts.zeroes_grads = True
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            if any(marker in _code(node) for marker in _ZERO_MARKERS):
                facts.zeroes_grads = True
    return facts


def _inside(names: NameIndex, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in names.ancestors(node))


def _local_function(names: NameIndex, call: cst.Call) -> cst.FunctionDef | None:
    if isinstance(call.func, cst.Name):
        binding = names.binding_of(call.func)
        if binding is not None and binding.kind == "def" and \
                isinstance(binding.node, cst.FunctionDef):
            return binding.node
    return None


def innermost_loop(names: NameIndex, node: cst.CSTNode) -> cst.For | cst.While | None:
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(ancestor, (cst.For, cst.While)):
            return ancestor
    return None


def statement_in_block(names: NameIndex, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The line holding ``node`` when that line sits in an indented block (insertable before)."""
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.SimpleStatementLine):
            parent = names.parent(ancestor)
            return ancestor if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
        if isinstance(ancestor, cst.BaseCompoundStatement):
            return None
    return None
