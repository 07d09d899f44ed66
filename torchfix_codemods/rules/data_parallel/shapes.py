"""TFC301's vocabulary and the shapes of code both its detection and its migration read:
the torch names, the calls that write files, the exceptions a step raises when the file
does not have the shape it needs, and small syntax predicates."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from torchfix_codemods.analysis.core.calls import (
    argument,
)
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.syntax import (
    is_main_guard,
    is_none,
    literal_bool,
)
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import children, walk_local
from torchfix_codemods.analysis.vocabulary.naming import named_for_evaluation
from torchfix_codemods.analysis.vocabulary.torch_api import (
    DISABLES_GRAD,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    DATA_PARALLEL_CLASSES,
    DDP_CLASSES,
)

DATA_PARALLEL = DATA_PARALLEL_CLASSES
DDP = "torch.nn.parallel.DistributedDataParallel"
DDP_NAMES = DDP_CLASSES
SAMPLER = "torch.utils.data.DistributedSampler"
WRITE_MODES = frozenset("wax")
FIRST_GPU = ('"cuda:0"', "'cuda:0'")
EVALUATION = DISABLES_GRAD


def runs_as_script(module: cst.Module) -> bool:
    """The file is run, not only imported: an ``if __name__ == "__main__":`` block, or
    module-level code that runs something (a call statement, a loop, a ``with``)."""
    for statement in module.body:
        if isinstance(statement, cst.If) and is_main_guard(statement.test):
            return True
        if isinstance(statement, cst.For | cst.While | cst.With):
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
                isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                for small in statement.body):
            return True
    return False


class _Irregular(Exception):
    """The file does not have the shape the rewrite needs; the message says which part."""


class _DataSide(_Irregular):
    """The data side (sampler, per-process batch, set_epoch) cannot be placed; the model side
    can still be migrated, and the data side is reported with the edit it needs."""


def _is_literal_false(node: cst.BaseExpression) -> bool:
    return literal_bool(node) is False or is_none(node)


def _pure(node: cst.BaseExpression) -> bool:
    """A name or attribute chain: safe to evaluate twice (dataset for the sampler)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _comprehension_of(value: cst.BaseExpression, element: cst.BaseExpression) -> bool:
    """``[element for m in models]`` (a list, set, dict value or generator): every model of
    the loop is wrapped."""
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return value.elt is element
    return isinstance(value, cst.DictComp) and value.value is element


DEVICE_WORDS = ("gpu", "cuda", "device", "parallel", "distributed")
"""A condition that names one of these is about devices (``n_gpu > 1``, ``len(opt.gpu_ids)``,
``device == "cuda"``, ``args.data_parallel``): false under ``torchrun`` on CPU, or on one GPU
per process, where every process must still wrap."""


def _conjuncts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``a``, ``b``, ``c`` of ``a and b and c`` (unparenthesised ``and`` only)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) \
            and not test.lpar:
        yield from _conjuncts(test.left)
        yield from _conjuncts(test.right)
    else:
        yield test


def _about_devices(node: cst.BaseExpression) -> bool:
    words = [n.value for n in (node, *walk_local(node)) if isinstance(n, cst.Name)]
    words += [n.evaluated_value for n in (node, *walk_local(node))
              if isinstance(n, cst.SimpleString) and isinstance(n.evaluated_value, str)]
    return any(word in w.lower() for w in words for word in DEVICE_WORDS)


def _blocks_of(statement: cst.BaseStatement) -> list[Sequence[cst.BaseStatement]]:
    """The statement lists directly inside a compound statement (its body, ``else``,
    ``except`` and ``finally`` blocks); none for a function or class (walked on their own)."""
    if isinstance(statement, cst.FunctionDef | cst.ClassDef):
        return []
    blocks = []
    stack: list[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        for child in children(node):
            if isinstance(child, cst.IndentedBlock):
                blocks.append(child.body)
            elif isinstance(child, cst.SimpleStatementSuite):
                blocks.append([cst.SimpleStatementLine(body=child.body)])
            elif isinstance(child, cst.Else | cst.ExceptHandler | cst.Finally | cst.If):
                stack.append(child)
    return blocks


def _wrap_target(unit: cst.BaseStatement) -> cst.BaseExpression | None:
    """``net`` of ``net = DataParallel(net)`` (a name or an attribute chain); None for a loop
    or a comprehension over models."""
    if not isinstance(unit, cst.SimpleStatementLine):
        return None
    statement = unit.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign):
        target = statement.target
    else:
        return None
    return target if _root_name(target) is not None else None


def _root_name(node: cst.BaseExpression) -> cst.Name | None:
    """``a`` of ``a``, ``a.b.c``; None for anything else (a subscript, a call)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def _saved_objects(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The objects ``torch.save`` pickles by reference: the argument itself, or the values of
    a dict, list or tuple literal (nested ones too)."""
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                yield from _saved_objects(element.value)
    elif isinstance(node, cst.List | cst.Tuple):
        for item in node.elements:
            if isinstance(item, cst.Element):
                yield from _saved_objects(item.value)
    else:
        yield node


def _named_for_evaluation(names: NameIndex, loader: cst.Call) -> bool:
    target = assigned_name(names, loader)
    return target is not None and named_for_evaluation(target.value)


def _names_a_device(node: cst.BaseExpression) -> bool:
    """``"cuda"``, ``device``, ``args.device``, ``torch.device(...)``: not a dtype."""
    if isinstance(node, cst.SimpleString):
        return True
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Attribute) and node.func.attr.value == "device"
    last = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")
    return isinstance(last, str) and "device" in last.lower()


def _shuffle_of(loader: cst.Call) -> cst.BaseExpression | None:
    arg = argument(loader, "shuffle", 2)
    return arg.value if arg is not None else None


def _returns_in(node: cst.CSTNode) -> Iterator[cst.Return]:
    """Every ``return`` under ``node``, nested ones too."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Return):
            yield current
        stack.extend(children(current))
