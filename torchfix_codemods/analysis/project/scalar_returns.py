"""Functions of the run's files whose every ``return`` is 0-dim: ``scalar_return(qualified)``.

``loss_nll = nll_gaussian(output, target, args.var)`` in ``train.py``, then
``loss_nll.data[0]``: whether that raises depends on ``utils.py``, where
``nll_gaussian`` ends in ``return neg_log_p.sum() / (target.size(0) * target.size(1))``.
A whole reduction (``.sum()``, ``.mean()``... with no argument, ``torch.sum(x)``, an
``F.*_loss`` without ``reduction='none'``) is 0-dim for a tensor and a numpy scalar for an
array, and stays so through ``+``/``-`` of two such values and ``*``/``/`` by a number (a
literal, ``x.size(0)``, ``x.shape[0]``, ``len(...)``); measured in
docs/measurements/zero_dim_values.txt. What one file says, read off the standard ``ast``:
per module-level function, the reason, whether the numbers are all of those kinds (or
include a parameter the file does not type: ``kl_div.sum() / (num_atoms * preds.size(0))``,
a number in practice and a vector in principle), and whether the reduced value is known to
be a tensor (built from ``torch.*`` calls or tensor-only methods) rather than possibly a
DataFrame, whose ``.sum()`` is a Series.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.core.ast_walk import iter_child_nodes, statements, walk
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    TENSOR_ONLY_METHODS,
    WHOLE_REDUCTIONS,
)

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

NAME = "scalar-returns"
_MAX_DEPTH = 8
_FOREIGN = frozenset({"pandas", "tensorflow", "keras", "jax", "paddle", "mxnet", "polars"})
_LOSS_FUNCTIONS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "poisson_nll_loss",
})
_SAME_SHAPE = TENSOR_ONLY_METHODS | {"clone", "contiguous", "to"}
_NUMBER_BUILTINS = frozenset({"len", "int", "float"})
_NOT_TENSOR_METHODS = frozenset({"numpy", "tolist", "item"})


@dataclass(frozen=True)
class ScalarReturn:
    """Why every ``return`` of a function of another file is 0-dim."""

    reason: str
    proven: bool
    """Scaled only by numbers the defining file types (False: by a parameter, an option)."""
    tensor: bool
    """The reduced value is known to be a torch tensor (False: a tensor or an array, as far
    as its file shows; only a ``.data[0]`` at the call site then says it is a tensor)."""


class _Function:
    """One module-level function: its parameters and its names bound by plain assignment."""

    def __init__(self, node: ast.FunctionDef, torch_names: set[str],
                 functional: set[str], nn_names: set[str]) -> None:
        self.node = node
        self.torch_names = torch_names
        self.functional = functional
        self.nn_names = nn_names
        self.own_attributes: dict[str, tuple[str, bool, bool]] = {}
        """``self.<name>`` values known 0-dim in the class this is a method of."""
        args = node.args
        self.params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        self.bindings: dict[str, list[ast.expr | None]] = {}
        for child in _own_nodes(node):
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    for name in _names(target):
                        single = isinstance(target, ast.Name) and len(child.targets) == 1
                        self.bindings.setdefault(name, []).append(child.value if single else None)
            elif isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name):
                # An in-place `+= number` keeps a value's shape; anything else: unknown.
                self.bindings.setdefault(child.target.id, []).append(None)
            elif isinstance(child, (ast.For, ast.With, ast.AnnAssign, ast.NamedExpr)):
                for target in _targets(child):
                    for name in _names(target):
                        self.bindings.setdefault(name, []).append(None)

    def single(self, name: str) -> ast.expr | None:
        values = self.bindings.get(name, [])
        return values[0] if len(values) == 1 and name not in self.params else None

    # ------------------------------------------------------------- 0-dim values
    def scalar(self, expr: ast.expr, depth: int = 0) -> tuple[str, bool, bool] | None:
        """(reason, proven, tensor) when ``expr`` is 0-dim, else None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Name):
            value = self.single(expr.id)
            return self.scalar(value, depth + 1) if value is not None else None
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            return self.scalar(expr.operand, depth + 1)
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            return self.scalar(expr.value, depth + 1)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
                expr.value.id == "self":
            return self.own_attributes.get(expr.attr)
        if isinstance(expr, ast.BinOp):
            return self._arithmetic(expr, depth)
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        if isinstance(func, ast.Call) and self._loss_class(func.func) and _reducing(func):
            # `nn.KLDivLoss()(log_p, q)`: a loss module built and called on the spot
            # (knowledge-distillation's `loss_fn_kd`)
            return "a reducing loss module's output", True, True
        if isinstance(func, ast.Attribute) and func.attr in _SAME_SHAPE:
            inner = self.scalar(func.value, depth + 1)
            return (inner[0], inner[1], True) if inner and func.attr != "to" else inner
        if any(k.arg in ("dim", "axis", "keepdim", "keepdims") for k in expr.keywords):
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if owner in self.torch_names and func.attr in WHOLE_REDUCTIONS and \
                    len(expr.args) == 1 and not expr.keywords:
                return f"`torch.{func.attr}` of a whole tensor", True, True
            if owner in self.functional and func.attr in _LOSS_FUNCTIONS and \
                    _reducing(expr):
                return f"`F.{func.attr}` (a reduced loss)", True, True
        if isinstance(func, ast.Attribute) and func.attr in WHOLE_REDUCTIONS and \
                not expr.args and not expr.keywords:
            tensor = self.tensor(func.value, depth + 1)
            if tensor is None:
                return None
            return f"`.{func.attr}()` over a whole value", True, tensor
        return None

    def _loss_class(self, func: ast.expr) -> bool:
        """``nn.MSELoss`` / ``torch.nn.MSELoss``: a loss class of torch (not
        ``AdaptiveLogSoftmaxWithLoss``, whose output is a pair)."""
        if not isinstance(func, ast.Attribute) or not func.attr.endswith("Loss") or \
                "Adaptive" in func.attr:
            return False
        owner = func.value
        if isinstance(owner, ast.Name):
            return owner.id in self.nn_names
        return isinstance(owner, ast.Attribute) and owner.attr == "nn" and isinstance(
            owner.value, ast.Name) and owner.value.id in self.torch_names

    def _arithmetic(self, expr: ast.BinOp, depth: int) -> tuple[str, bool, bool] | None:
        left = self.scalar(expr.left, depth + 1)
        right = self.scalar(expr.right, depth + 1)
        if left and right and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            return left[0], left[1] and right[1], left[2] or right[2]
        if left and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            number = self.number(expr.right, depth + 1, isinstance(expr.op, ast.Div))
            return (left[0], left[1] and number, left[2]) if number is not None else None
        if right and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult)):
            number = self.number(expr.left, depth + 1)
            return (right[0], right[1] and number, right[2]) if number is not None else None
        return None

    def number(self, expr: ast.expr, depth: int, divisor: bool = False) -> bool | None:
        """True for a number this file types, False for one it does not (an option
        ``args.x``; a bare parameter only in a divisor, ``/ (num_atoms * n)``: a count, where
        a factor ``* weights`` is as likely a vector), None for what may be anything else."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and \
                not isinstance(expr.value, bool):
            return True
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            return self.number(expr.operand, depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(
                expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)):
            left = self.number(expr.left, depth + 1, divisor)
            right = self.number(expr.right, depth + 1, divisor)
            return None if left is None or right is None else left and right
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id in _NUMBER_BUILTINS:
                return True
            if isinstance(func, ast.Name) and func.id == "sum" and len(expr.args) == 1 and \
                    isinstance(expr.args[0], (ast.GeneratorExp, ast.ListComp)):
                # `sum(len(boxes) for boxes in gt_boxes)`: a sum of numbers is one
                return self.number(expr.args[0].elt, depth + 1, divisor)
            if isinstance(func, ast.Attribute) and func.attr == "size" and len(expr.args) == 1:
                return True
            return None
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and \
                expr.value.attr == "shape":
            return True
        if isinstance(expr, ast.Name):
            if expr.id in self.params:
                return False if divisor else None
            value = self.single(expr.id)
            return self.number(value, depth + 1, divisor) if value is not None else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
                expr.value.id not in ("self", "cls") and expr.value.id in self.params:
            return False  # `args.lambda_kl`: an option
        return None

    def tensor(self, expr: ast.expr, depth: int) -> bool | None:
        """True when ``expr`` is known to be a torch tensor (computed from a ``torch.*``
        call or a tensor-only method), False when it may be an array as well, None when it
        is known not to be either (``.numpy()``, ``.tolist()``, ``.item()`` on the way)."""
        if depth > _MAX_DEPTH:
            return False
        found = False
        for node in walk(expr):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in _NOT_TENSOR_METHODS:
                    return None
                if node.func.attr in TENSOR_ONLY_METHODS or (
                        isinstance(node.func.value, ast.Name)
                        and node.func.value.id in self.torch_names | self.functional):
                    found = True
            elif isinstance(node, ast.Attribute) and node.attr == "data":
                found = True
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                    node is not expr and node.id not in self.params:
                for value in self.bindings.get(node.id, []):
                    if value is not None and self.tensor(value, depth + 1):
                        found = True
        if isinstance(expr, ast.Name):
            values = self.bindings.get(expr.id, [])
            found = found or any(v is not None and self.tensor(v, depth + 1) for v in values)
        return found


def _reducing(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg == "reduction":
            return isinstance(keyword.value, ast.Constant) and keyword.value.value in ("mean",
                                                                                     "sum")
        if keyword.arg == "reduce":
            return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
    return True


def _own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s body, not those of functions, classes or lambdas in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(iter_child_nodes(node))
    return found


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.For):
        return [node.target]
    if isinstance(node, ast.With):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
        return [node.target]
    return []


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names(element)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _imports(tree: ast.Module) -> tuple[set[str], set[str], set[str], bool]:
    """The names ``torch``, ``torch.nn.functional`` and ``torch.nn`` are bound to at module
    level, and whether the file imports a package whose values look like arrays (pandas,
    TensorFlow)."""
    torch_names: set[str] = set()
    functional: set[str] = set()
    nn_names: set[str] = set()
    foreign = False
    for node in statements(tree):  # an import is a statement: no need to enter expressions
        if isinstance(node, ast.Import):
            for alias in node.names:
                foreign = foreign or alias.name.split(".")[0] in _FOREIGN
                if alias.name == "torch":
                    torch_names.add(alias.asname or "torch")
                elif alias.name == "torch.nn.functional" and alias.asname:
                    functional.add(alias.asname)
                elif alias.name == "torch.nn" and alias.asname:
                    nn_names.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            foreign = foreign or node.module.split(".")[0] in _FOREIGN
            for alias in node.names:
                if node.module == "torch.nn" and alias.name == "functional":
                    functional.add(alias.asname or "functional")
                elif node.module == "torch" and alias.name == "nn":
                    nn_names.add(alias.asname or "nn")
    return torch_names, functional, nn_names, foreign


def summarize(tree: ast.Module) -> dict[str, list[object]]:
    """Per module-level function whose every ``return`` is 0-dim: ``[reason, proven,
    tensor]`` (JSON data). Nothing for a file that does not import torch, or imports pandas
    or a foreign tensor framework."""
    torch_names, functional, nn_names, foreign = _imports(tree)
    if not torch_names or foreign:
        return {}
    found: dict[str, list[object]] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.decorator_list:
            continue
        function = _Function(node, torch_names, functional, nn_names)
        answers = []
        for child in _own_nodes(node):
            if isinstance(child, (ast.Yield, ast.YieldFrom, ast.Await)):
                answers = [None]
                break
            if isinstance(child, ast.Return):
                answers.append(function.scalar(child.value) if child.value is not None else None)
        if answers and all(answers):
            reason = answers[0][0]  # type: ignore[index]
            found[node.name] = [reason, all(a[1] for a in answers),  # type: ignore[index]
                                all(a[2] for a in answers)]  # type: ignore[index]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for attribute, answer in _class_attributes(node, torch_names, functional,
                                                       nn_names).items():
                found[f"{node.name}.{attribute}"] = list(answer)
    return found


def _class_attributes(node: ast.ClassDef, torch_names: set[str], functional: set[str],
                      nn_names: set[str]) -> dict[str, tuple[str, bool, bool]]:
    """Attributes of the class ``node`` that hold a 0-dim value once set: every
    ``self.<name> = value`` of its methods is 0-dim or ``None`` (the placeholder of
    ``__init__``), at least one is 0-dim (yolo2's ``self.bbox_loss = nn.MSELoss(...)(...) /
    num_boxes`` in ``forward``); and its properties whose every ``return`` is 0-dim from
    those (``def loss(self): return self.bbox_loss + self.iou_loss + self.cls_loss``)."""
    methods = [child for child in node.body if isinstance(child, ast.FunctionDef)]
    values: dict[str, list[tuple[str, bool, bool] | None]] = {}
    for method in methods:
        function = _Function(method, torch_names, functional, nn_names)
        for child in _own_nodes(method):
            targets = child.targets if isinstance(child, ast.Assign) else \
                [child.target] if isinstance(child, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                for element in (target.elts if isinstance(target, (ast.Tuple, ast.List))
                                else [target]):
                    if not (isinstance(element, ast.Attribute) and
                            isinstance(element.value, ast.Name) and element.value.id == "self"):
                        continue
                    value = child.value if isinstance(child, ast.Assign) and \
                        element is target and len(child.targets) == 1 else None
                    if isinstance(value, ast.Constant) and value.value is None:
                        continue
                    answer = function.scalar(value) if value is not None and \
                        isinstance(child, ast.Assign) else None
                    values.setdefault(element.attr, []).append(answer)
    found = {name: answers[0] for name, answers in values.items()
             if answers and all(answers)}  # type: ignore[misc]
    for method in methods:
        if method.name in found or method.name in values or not any(
                isinstance(d, ast.Name) and d.id == "property" for d in method.decorator_list):
            continue
        function = _Function(method, torch_names, functional, nn_names)
        function.own_attributes = {k: v for k, v in found.items() if v is not None}
        returns = [child for child in _own_nodes(method) if isinstance(child, ast.Return)]
        answers = [function.scalar(r.value) if r.value is not None else None for r in returns]
        if answers and all(answers):
            found[method.name] = answers[0]
    return {name: answer for name, answer in found.items() if answer is not None}


def scalar_attribute(index: ProjectIndex, file: IndexedFile, qualified: str,
                     attribute: str) -> ScalarReturn | None:
    """Why ``attribute`` of an object of the class ``qualified`` (another file's, as ``file``
    names it) holds a 0-dim value once set; None when it is not known to."""
    found = index.definition(qualified, file)
    if found is None or found.kind != "class":
        return None
    data = found.file.summary.facts.get(NAME, {}).get(f"{found.name}.{attribute}")
    if data is None:
        return None
    reason, proven, tensor = data
    return ScalarReturn(f"`.{attribute}` of a `{found.qualified}` holds {reason} "
                        f"({found.file.display})", bool(proven), bool(tensor))


def scalar_return(index: ProjectIndex, file: IndexedFile, qualified: str) -> ScalarReturn | None:
    """Why every ``return`` of the function ``qualified`` (another file's, as ``file`` names
    it) is 0-dim; None when it is not known to be, or no file of the run defines it."""
    found = index.definition(qualified, file)
    if found is None or found.kind != "function":
        return None
    data = found.file.summary.facts.get(NAME, {}).get(found.name)
    if data is None:
        return None
    reason, proven, tensor = data
    return ScalarReturn(f"`{found.qualified}` returns {reason} ({found.file.display})",
                        bool(proven), bool(tensor))


register(Fact(NAME, summarize, {"scalar_return": Question(scalar_return),
                                "scalar_attribute": Question(scalar_attribute)}))
