"""TFC402-TFC407: deprecated and removed torch APIs (TorchFix's rules, done right).

Which old name maps to which new one, argument by argument, is data
(``rules/data/replacements.toml``, ``rules/data/legacy_reduction.toml``); this
module holds the rules and the few mappings that cannot be said as data
(``torch.range``'s inclusive end, ``torch.norm``'s string orders, ...).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.calls import add_keyword, has_star_kwargs, keyword_arg
from torchfix_codemods.analysis.imports import ImportUnavailable
from torchfix_codemods.analysis.replacements import (
    Replacement,
    Unmappable,
    as_keyword,
    as_positional,
    bind,
    is_none,
    keyword,
    literal_bool,
    load_data,
    with_layout,
)
from torchfix_codemods.model import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.replacing import Handler, TableRule

# ----------------------------------------------------------------- TFC402


class FunctionalAliases(TableRule):
    """## What it does
    Rewrites the deprecated `torch.nn.functional` aliases: `F.sigmoid` and
    `F.tanh` to `torch.sigmoid` and `torch.tanh`; `F.upsample`,
    `F.upsample_nearest` and `F.upsample_bilinear` to `F.interpolate` with the
    mode they stood for.

    ## Why is this bad?
    Each call warns (`nn.functional.sigmoid is deprecated. Use torch.sigmoid
    instead.`), and the aliases are slated for removal.

    ## Example
    ```python
    y = F.sigmoid(x)
    z = F.upsample_bilinear(img, scale_factor=2)
    ```

    ## Use instead
    ```python
    y = torch.sigmoid(x)
    z = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=True)
    ```

    ## Fix safety
    Safe: the aliases call exactly these functions (measured bitwise equal on
    torch 2.13). `torch` is named in the file's own alias and imported when the
    file has no `torch` name (`import torch.nn.functional as F` alone).
    """

    code = "TFC402"
    name = "functional-aliases"
    message = "deprecated `torch.nn.functional` alias"
    safety = Safety.SAFE
    triggers = ("sigmoid", "tanh", "upsample")
    report_imports = False
    valid = (
        "import torch\ny = torch.sigmoid(x)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "import numpy as np\ny = np.tanh(x)\n",
        "import torch.nn.functional as F\nF.tanh = my_tanh\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\ny = F.sigmoid(x) + F.tanh(x)\n",
            "import torch\nimport torch.nn.functional as F\ny = torch.sigmoid(x) + torch.tanh(x)\n",
        ),
        Example(
            "import torch\nfrom torch.nn import functional as F\ny = F.upsample(x, None, 2)\n",
            "import torch\nfrom torch.nn import functional as F\ny = F.interpolate(x, None, 2)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\ny = F.upsample_bilinear(x, scale_factor=2)\n",
            "import torch\nimport torch.nn.functional as F\n"
            "y = F.interpolate(x, scale_factor=2, mode=\"bilinear\", align_corners=True)\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\nact = F.tanh\n",
            "import torch\nimport torch.nn.functional as F\nact = torch.tanh\n",
        ),
    )


# ----------------------------------------------------------------- TFC403

LEGACY = ("size_average", "reduce")


def _losses() -> dict[str, list[str]]:
    return load_data("legacy_reduction.toml")["losses"]


def legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch.nn._reduction.legacy_get_string, without the warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    if reduce:
        return "sum"
    return "none"


class LegacyReduction(Rule):
    """## What it does
    Replaces the legacy `size_average=` / `reduce=` arguments of losses
    (`nn.MSELoss(size_average=False)`, `F.nll_loss(x, y, reduce=False)`, ...)
    with the `reduction=` string torch computes from them.

    ## Why is this bad?
    Both arguments are deprecated since torch 0.4 and warn on every call
    (`size_average and reduce args will be deprecated, please use
    reduction='sum' instead`). They also read backwards: `reduce=False` wins
    over `size_average`.

    ## Example
    ```python
    loss_fn = nn.MSELoss(size_average=False)
    per_item = F.cross_entropy(logits, y, reduce=False)
    ```

    ## Use instead
    ```python
    loss_fn = nn.MSELoss(reduction="sum")
    per_item = F.cross_entropy(logits, y, reduction="none")
    ```

    ## Fix safety
    Safe: the string is torch's own mapping (`torch.nn._reduction.
    legacy_get_string`): both unset or True gives `"mean"`, `size_average=False`
    gives `"sum"`, `reduce=False` gives `"none"`; when given, they override an
    explicit `reduction=`, and so does the fix. Positional arguments after the
    removed ones are passed by keyword so none shifts. Report only when a
    legacy value is not a literal `True`/`False`/`None`, or arguments come
    from `*args`/`**kwargs`.
    """

    code = "TFC403"
    name = "legacy-reduction"
    message = "legacy `size_average`/`reduce` argument: use `reduction=`"
    safety = Safety.SAFE
    triggers = ("size_average", "reduce", "loss", "Loss", "entropy", "kl_div")
    valid = (
        "import torch\nloss = torch.nn.MSELoss(reduction='sum')\n",
        "import functools\nfunctools.reduce(f, xs)\n",
        "from mylib import Loss\nloss = Loss(size_average=False)\n",
    )
    invalid = (
        Example(
            "import torch\nloss_fn = torch.nn.MSELoss(size_average=False)\n",
            "import torch\nloss_fn = torch.nn.MSELoss(reduction=\"sum\")\n",
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\n"
            "l = F.cross_entropy(x, y, None, True, -1, False)\n",
            "import torch\nimport torch.nn.functional as F\n"
            "l = F.cross_entropy(x, y, None, ignore_index=-1, reduction=\"none\")\n",
        ),
        Example(
            "import torch\nfrom torch import nn\nc = nn.NLLLoss(reduce=True, reduction='sum')\n",
            "import torch\nfrom torch import nn\nc = nn.NLLLoss(reduction=\"mean\")\n",
        ),
        Example("import torch\nloss_fn = torch.nn.L1Loss(size_average=args.avg)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified is None:
            return
        if qualified.startswith("torch.nn.modules.loss."):
            qualified = "torch.nn." + qualified.rsplit(".", 1)[1]
        params = _losses().get(qualified)
        if params is None:
            return
        try:
            bound = bind(node, tuple(params), set())
        except Unmappable as why:
            if any(keyword_arg(node, name) for name in LEGACY):
                self.report(node, f"{self.message}; no fix: {why}")
            return
        legacy = {name: bound[name] for name in LEGACY if name in bound}
        if not legacy:
            return
        values: dict[str, bool | None] = {}
        for name, arg in legacy.items():
            flag = literal_bool(arg.value)
            if flag is None and not is_none(arg.value):
                self.report(node, f"{self.message}; no fix: `{name}` is not a literal, pass "
                            "`reduction=\"mean\"`, `\"sum\"` or `\"none\"` explicitly")
                return
            values[name] = flag
        self.report(node, fix=self._fix(node, params, legacy, values))

    def _fix(self, node: cst.Call, params: list[str], legacy: dict[str, cst.Arg],
             values: dict[str, bool | None]) -> Fix:
        decides = any(value is not None for value in values.values())
        reduction = legacy_reduction(values.get("size_average"), values.get("reduce"))
        string = cst.SimpleString(f'"{reduction}"')
        legacy_ids = {id(arg) for arg in legacy.values()}
        positional = [arg for arg in node.args if arg.keyword is None]
        first_removed = min((positional.index(a) for a in legacy.values() if a in positional),
                            default=len(positional))
        new_args: list[cst.Arg] = []
        has_reduction = False
        for arg in node.args:
            if id(arg) in legacy_ids:
                continue
            name = arg.keyword.value if arg.keyword is not None else None
            if arg.keyword is None:
                index = positional.index(arg)
                name = params[index]
                if index > first_removed or name == "reduction":
                    arg = as_keyword(arg, name)
            if name == "reduction":
                has_reduction = True
                if decides:
                    arg = as_keyword(arg, "reduction", string)
            new_args.append(arg)
        if decides and not has_reduction:
            new_args.append(keyword("reduction", string))
        new = node.with_changes(args=with_layout(node, new_args) if new_args else [])
        shown = f'`reduction="{reduction}"`' if decides else "nothing (both are None)"
        return Fix(Safety.SAFE, f"replace the legacy arguments with {shown}", [(node, new)])


# ----------------------------------------------------------------- TFC404

CHECKPOINTS = frozenset({"torch.utils.checkpoint.checkpoint",
                         "torch.utils.checkpoint.checkpoint_sequential"})


class CheckpointUseReentrant(Rule):
    """## What it does
    Finds `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)`
    calls without `use_reentrant=` and adds `use_reentrant=True`, today's
    default; with `--unsafe-fixes` it adds `use_reentrant=False` instead.

    ## Why is this bad?
    Omitting it warns on every call ("the use_reentrant parameter should be
    passed explicitly ... calling checkpoint without use_reentrant will raise
    an exception"), and the default is announced to change. The two variants
    differ: the reentrant one gives no gradients to inputs that do not require
    grad and does not support `torch.autograd.grad` or keyword arguments.

    ## Example
    ```python
    y = checkpoint(block, x)
    ```

    ## Use instead
    ```python
    y = checkpoint(block, x, use_reentrant=True)   # today's behaviour, or
    y = checkpoint(block, x, use_reentrant=False)  # the recommended variant
    ```

    ## Fix safety
    Safe with `True`: it is exactly what torch does when the argument is
    missing (measured: identical gradients), minus the warning. With
    `--unsafe-fixes`, `False` is written instead, as TorchFix did: it is the
    recommended variant but changes which inputs and parameters receive
    gradients. Report only when `**kwargs` may already carry the argument.
    """

    code = "TFC404"
    name = "checkpoint-use-reentrant"
    message = "`checkpoint` without `use_reentrant=`: pass it explicitly (`True` keeps today's behaviour)"
    safety = Safety.SAFE
    min_torch = (1, 11)
    triggers = ("checkpoint",)
    valid = (
        "import torch.utils.checkpoint\ny = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)\n",
        "from deepspeed import checkpointing\ny = checkpointing.checkpoint(f, x)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
            "import torch\nfrom torch.utils.checkpoint import checkpoint\n"
            "y = checkpoint(f, x, use_reentrant=True)\n",
        ),
        Example(
            "import torch\nimport torch.utils.checkpoint as cp\ny = cp.checkpoint_sequential(fs, 2, x)\n",
            "import torch\nimport torch.utils.checkpoint as cp\n"
            "y = cp.checkpoint_sequential(fs, 2, x, use_reentrant=True)\n",
        ),
        Example("import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x, **kw)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) not in CHECKPOINTS:
            return
        if keyword_arg(node, "use_reentrant") is not None:
            return
        if has_star_kwargs(node):
            self.report(node, self.message + "; no fix: `**kwargs` may already carry it")
            return
        recommended = self.context.settings.unsafe_fixes
        value = "False" if recommended else "True"
        fix = Fix(
            Safety.UNSAFE if recommended else Safety.SAFE,
            f"add `use_reentrant={value}`",
            [(node, add_keyword(node, "use_reentrant", cst.Name(value)))],
            min_torch=(1, 11),
        )
        self.report(node, fix=fix)


# ----------------------------------------------------------------- TFC405


class WeightNorm(TableRule):
    """## What it does
    Rewrites `torch.nn.utils.weight_norm(module)` to
    `torch.nn.utils.parametrizations.weight_norm(module)`.

    ## Why is this bad?
    The hook-based `weight_norm` is deprecated (FutureWarning) in favour of the
    parametrization, which works with `deepcopy`, `torch.compile` and
    `state_dict` round trips.

    ## Example
    ```python
    conv = torch.nn.utils.weight_norm(nn.Conv1d(4, 4, 3))
    ```

    ## Use instead
    ```python
    conv = torch.nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3))
    ```

    ## Fix safety
    Unsafe: the forward values are the same, but the parameters are renamed
    (`weight_g`/`weight_v` become `parametrizations.weight.original0`/
    `original1`), so checkpoints saved before no longer load with
    `load_state_dict(strict=True)`, and optimizers built from names change.
    Report only when the file calls `remove_weight_norm` or reads
    `weight_g`/`weight_v`, which the parametrization does not have (use
    `torch.nn.utils.parametrize.remove_parametrizations`).
    """

    code = "TFC405"
    name = "weight-norm"
    message = "deprecated `torch.nn.utils.weight_norm`: use `parametrizations.weight_norm`"
    safety = Safety.UNSAFE
    min_torch = (2, 1)
    triggers = ("weight_norm",)
    valid = (
        "import torch\nm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(2, 2))\n",
        "from mylib import weight_norm\nm = weight_norm(layer)\n",
    )
    invalid = (
        Example(
            "import torch\nm = torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))\n",
            "import torch\nm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(2, 2))\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch.nn.utils import weight_norm\nm = weight_norm(torch.nn.Linear(2, 2))\n",
            "import torch\nfrom torch.nn.utils.parametrizations import weight_norm\n"
            "m = weight_norm(torch.nn.Linear(2, 2))\n",
            unsafe=True,
        ),
        Example(
            "import torch\nm = torch.nn.utils.weight_norm(layer)\ntorch.nn.utils.remove_weight_norm(m)\n"),
    )

    def _old_names_used(self) -> bool:
        source = self.context.source
        return any(word in source for word in ("remove_weight_norm", "weight_g", "weight_v"))

    def check_call(self, call: cst.Call, spec: Replacement) -> None:
        if self._old_names_used():
            self.report(call, f"{spec.note}; no fix: this file uses `remove_weight_norm` or "
                        "`weight_g`/`weight_v`, which the parametrization renames")
            return
        super().check_call(call, spec)

    def _import_fix(self, node: cst.ImportFrom, module: str) -> Fix | None:
        return None if self._old_names_used() else super()._import_fix(node, module)


# ----------------------------------------------------------------- TFC406


def _reference(rule: TableRule, qualified: str, at: cst.CSTNode) -> cst.BaseExpression:
    try:
        reference = rule.context.imports.reference(qualified, at)
    except ImportUnavailable as error:
        raise Unmappable(str(error)) from None
    if reference.needs is not None:
        raise Unmappable(f"`{qualified}` cannot be named here without a new import")
    return reference.expression


def _symeig(rule: TableRule, call: cst.Call, spec: Replacement,
            func: cst.BaseExpression) -> cst.Call | Fix:
    bound = bind(call, spec.params, set())
    if "input" not in bound:
        raise Unmappable("the matrix argument is missing")
    uplo: cst.BaseExpression = cst.SimpleString('"U"')
    if "upper" in bound:
        flag = literal_bool(bound["upper"].value)
        if flag is False:
            uplo = cst.SimpleString('"L"')
        elif flag is None:
            uplo = cst.IfExp(test=bound["upper"].value, body=cst.SimpleString('"U"'),
                             orelse=cst.SimpleString('"L"'))
    args = [as_positional(bound["input"]), keyword("UPLO", uplo)]
    vectors = literal_bool(bound["eigenvectors"].value) if "eigenvectors" in bound else False
    if vectors is True:
        return call.with_changes(func=func, args=with_layout(call, args))
    if vectors is None:
        raise Unmappable("`eigenvectors=` is not a literal")
    # Eigenvalues only: the old call returned (eigenvalues, empty tensor); only an
    # immediate `[0]` / `.eigenvalues` can become `eigvalsh`.
    parent = _first_field(rule, call, "eigenvalues")
    if parent is None:
        raise Unmappable("without `eigenvectors=True` the result's second element is an empty "
                         "tensor; use `torch.linalg.eigvalsh(A, UPLO=\"U\")` for the eigenvalues")
    eigvalsh = _reference(rule, "torch.linalg.eigvalsh", call)
    new = call.with_changes(func=eigvalsh, args=with_layout(call, args),
                            lpar=parent.lpar, rpar=parent.rpar)
    return Fix(spec.safety, "use `torch.linalg.eigvalsh`", [(parent, new)], min_torch=spec.min_torch,
               remove_imports=rule._removals(call.func))


def _first_field(rule: TableRule, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The ``call(...)[0]`` or ``call(...).<name>`` around ``call``, if that is how it is read."""
    parent = rule.names.parent(call)
    if isinstance(parent, cst.Attribute) and parent.value is call:
        return parent if parent.attr.value == name else None
    if isinstance(parent, cst.Subscript) and parent.value is call and len(parent.slice) == 1:
        index = parent.slice[0].slice
        if (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
                and index.value.value == "0"):
            return parent
    return None


def _solve(rule: TableRule, call: cst.Call, spec: Replacement,
           func: cst.BaseExpression) -> Fix:
    bound = bind(call, spec.params, set())
    if "input" not in bound or "A" not in bound:
        raise Unmappable("both `B` and `A` are needed")
    parent = _first_field(rule, call, "solution")
    if parent is None:
        raise Unmappable("the result is `(solution, LU)` and `torch.linalg.solve` returns only "
                         "the solution; rewrite the unpacking by hand")
    args = [as_positional(bound["A"]), as_positional(bound["input"])]
    new = call.with_changes(func=func, args=with_layout(call, args),
                            lpar=parent.lpar, rpar=parent.rpar)
    return Fix(spec.safety, "use `torch.linalg.solve(A, B)`", [(parent, new)],
               min_torch=spec.min_torch, remove_imports=rule._removals(call.func))


def _chain_matmul(rule: TableRule, call: cst.Call, spec: Replacement,
                  func: cst.BaseExpression) -> cst.Call:
    matrices = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if any(arg.star for arg in call.args):
        raise Unmappable("the matrices come from `*args`; `multi_dot` needs at least two")
    others = [arg for arg in call.args if arg.keyword is not None]
    if any(arg.keyword is not None and arg.keyword.value != "out" for arg in others):
        raise Unmappable("an argument has no counterpart in `multi_dot`")
    if len(matrices) < 2:
        raise Unmappable("`multi_dot` needs at least two matrices")
    elements = [cst.Element(arg.value, comma=arg.comma if i < len(matrices) - 1 else
                            cst.MaybeSentinel.DEFAULT) for i, arg in enumerate(matrices)]
    comma = matrices[-1].comma if others else cst.MaybeSentinel.DEFAULT
    return call.with_changes(func=func, args=[cst.Arg(cst.List(elements), comma=comma), *others])


def _lu(rule: TableRule, call: cst.Call, spec: Replacement,
        func: cst.BaseExpression) -> cst.Call:
    bound = bind(call, spec.params, set())
    if "A" not in bound:
        raise Unmappable("the matrix argument is missing")
    infos = literal_bool(bound["get_infos"].value) if "get_infos" in bound else False
    if infos is None:
        raise Unmappable("`get_infos=` is not a literal")
    if infos:
        func = _reference(rule, "torch.linalg.lu_factor_ex", call)
    args = [as_positional(bound["A"])]
    if "pivot" in bound:
        args.append(as_keyword(bound["pivot"], "pivot"))
    return call.with_changes(func=func, args=with_layout(call, args))


def _int_literal(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
            and isinstance(node.expression, cst.Integer)):
        return -int(node.expression.value, 0)
    return None


def _int_node(value: int) -> cst.BaseExpression:
    if value < 0:
        return cst.UnaryOperation(cst.Minus(), cst.Integer(str(-value)))
    return cst.Integer(str(value))


def _range(rule: TableRule, call: cst.Call, spec: Replacement,
           func: cst.BaseExpression) -> Fix:
    extra = {"out", "dtype", "layout", "device", "requires_grad"}
    bound = bind(call, spec.params, extra)
    if "end" not in bound:
        raise Unmappable("`torch.range` needs an end")
    step = _int_literal(bound["step"].value) if "step" in bound else 1
    if step is None or step == 0:
        raise Unmappable("the step is not an integer literal, so the element count of "
                         "`arange` cannot be matched")
    start = _int_literal(bound["start"].value) if "start" in bound else 0
    end_arg = bound["end"]
    end = _int_literal(end_arg.value)
    safety = Safety.SAFE
    if end is not None and start is not None:
        new_end = _int_node(end + step)
    else:
        # Exact only when (end - start) is a whole multiple of step.
        safety = Safety.UNSAFE
        value = end_arg.value
        if (step == 1 and isinstance(value, cst.BinaryOperation)
                and isinstance(value.operator, cst.Subtract) and _int_literal(value.right) == 1
                and not value.lpar):
            new_end = value.left
        else:
            right = _int_node(abs(step))
            operator = cst.Add() if step > 0 else cst.Subtract()
            left = value
            if isinstance(value, (cst.IfExp, cst.Lambda, cst.BooleanOperation, cst.Comparison,
                                  cst.UnaryOperation, cst.NamedExpr)) and not value.lpar:
                left = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            new_end = cst.BinaryOperation(left, operator, right)
    new_args: list[cst.Arg] = []
    for arg in call.args:
        new_args.append(arg.with_changes(value=new_end) if arg is end_arg else arg)
    imports = ()
    if "dtype" not in bound:
        try:
            reference = rule.context.imports.reference("torch.get_default_dtype", call)
        except ImportUnavailable as error:
            raise Unmappable(str(error)) from None
        imports = (reference.needs,) if reference.needs else ()
        new_args.append(keyword("dtype", cst.Call(reference.expression)))
    new = call.with_changes(func=func, args=with_layout(call, new_args))
    return Fix(safety, "use `torch.arange` with the end moved by one step and the default dtype",
               [(call, new)], imports=imports, remove_imports=rule._removals(call.func),  # type: ignore[arg-type]
               min_torch=spec.min_torch)


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _norm(rule: TableRule, call: cst.Call, spec: Replacement,
          func: cst.BaseExpression) -> cst.Call:
    bound = bind(call, spec.params, set())
    if "input" not in bound:
        raise Unmappable("the tensor argument is missing")
    args = [as_positional(bound["input"])]
    order = bound.get("p")
    if order is not None and not is_none(order.value):
        text = _string(order.value)
        if text == "nuc":
            func = _reference(rule, "torch.linalg.matrix_norm", call)
            args.append(as_keyword(order, "ord"))
        elif text == "fro":
            dim = bound["dim"].value if "dim" in bound else None
            if not (dim is None or isinstance(dim, cst.Integer)
                    or (isinstance(dim, (cst.Tuple, cst.List)) and len(dim.elements) <= 2)):
                raise Unmappable("`p=\"fro\"` over more than two dims (or an unknown `dim`) "
                                 "is computed as a matrix norm; use `torch.linalg.matrix_norm`")
        elif _number(order.value):
            args.append(as_keyword(order, "ord"))
        else:
            raise Unmappable("`p` is not a literal number, \"fro\" or \"nuc\"")
    for name in ("dim", "keepdim", "dtype", "out"):
        if name in bound:
            args.append(as_keyword(bound[name], name))
    return call.with_changes(func=func, args=with_layout(call, args))


_BACKENDS = (("enable_flash", "FLASH_ATTENTION"), ("enable_mem_efficient", "EFFICIENT_ATTENTION"),
             ("enable_math", "MATH"), ("enable_cudnn", "CUDNN_ATTENTION"))


def _sdp_kernel(rule: TableRule, call: cst.Call, spec: Replacement,
                func: cst.BaseExpression) -> cst.Call:
    bound = bind(call, spec.params, set())
    backend = _reference(rule, "torch.nn.attention.SDPBackend", call)
    elements = []
    for name, member in _BACKENDS:
        flag = literal_bool(bound[name].value) if name in bound else True
        if flag is None:
            raise Unmappable(f"`{name}` is not a literal")
        if flag:
            elements.append(cst.Element(cst.Attribute(backend, cst.Name(member))))
    elements = [e.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                if i < len(elements) - 1 else e for i, e in enumerate(elements)]
    return call.with_changes(func=func, args=[cst.Arg(cst.List(elements))])


_DTYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}


def _default_tensor_type(rule: TableRule, call: cst.Call, spec: Replacement,
                         func: cst.BaseExpression) -> cst.Call:
    bound = bind(call, spec.params, set())
    if "t" not in bound:
        raise Unmappable("the type argument is missing")
    value = bound["t"].value
    name = _string(value) or rule.qualified_name(value)
    if name not in _DTYPES:
        raise Unmappable("only `torch.FloatTensor`/`torch.DoubleTensor` map to a dtype; for CUDA "
                         "types also call `torch.set_default_device(\"cuda\")`")
    dtype = _reference(rule, _DTYPES[name], call)
    return call.with_changes(func=func, args=[as_positional(bound["t"]).with_changes(value=dtype)])


class RemovedOrDeprecatedFunction(TableRule):
    """## What it does
    Finds calls (and imports) of torch functions that are removed or
    deprecated, from TorchFix's table and beyond: `torch.solve`, `torch.symeig`,
    `torch.eig`, `torch.lstsq`, `torch.matrix_rank` (removed: they raise
    `RuntimeError` today), `torch.chain_matmul`, `torch.cholesky`, `torch.qr`,
    `torch.lu`, `torch.lu_solve`, `torch.ger`, `torch.range`, `torch.norm`,
    `torch.svd`, `torch.triangular_solve`, `nn.UpsamplingNearest2d`/
    `UpsamplingBilinear2d`, `torch.testing.assert_allclose`,
    `torch.backends.cuda.sdp_kernel`, `torch.set_default_tensor_type`,
    `torch.utils._pytree._register_pytree_node` and `functorch.*` (now
    `torch.func`). The full mapping is `rules/data/replacements.toml`.

    ## Why is this bad?
    Removed functions crash (`RuntimeError: This function was deprecated since
    version 1.9 and is now removed`); deprecated ones warn and will follow.

    ## Example
    ```python
    L = torch.cholesky(A, upper=True)
    Q, R = torch.qr(A, some=flag)
    r = torch.matrix_rank(A)
    ```

    ## Use instead
    ```python
    L = torch.linalg.cholesky(A, upper=True)
    Q, R = torch.linalg.qr(A, mode="reduced" if flag else "complete")
    r = torch.linalg.matrix_rank(A)
    ```

    ## Fix safety
    Every argument is mapped by name (`tol` -> `atol`, `some` -> `mode`,
    `lu_solve`'s operands reordered, ...); when one cannot be, the call is
    reported with the reason, never rewritten with a guess. Safe where the new
    function computes the same values, or where the old one raised (`symeig`,
    `matrix_rank`, and `solve` when only its solution is read: `[0]` or
    `.solution`). `torch.range` -> `torch.arange` is safe with integer
    literals (end moved by one step, `dtype=torch.get_default_dtype()` kept)
    and unsafe with a computed end (exact only when end - start is a multiple
    of the step). `assert_allclose` -> `assert_close` and
    `set_default_tensor_type` -> `set_default_dtype` are unsafe (tighter
    tolerances; the default device is no longer reset). Report only: `lstsq`,
    `eig`, `svd`, `triangular_solve` and an unpacked `solve` (their results
    have a different shape or meaning). Fixes are withheld when `--target-torch` is
    older than the new function.
    """

    code = "TFC406"
    name = "removed-or-deprecated-function"
    message = "removed or deprecated torch function"
    safety = Safety.SAFE
    triggers = ("torch",)
    handlers: dict[str, Handler] = {
        "symeig": _symeig, "solve": _solve, "chain_matmul": _chain_matmul, "lu": _lu,
        "range": _range,
        "norm": _norm, "sdp_kernel": _sdp_kernel, "default_tensor_type": _default_tensor_type,
    }
    valid = (
        "import torch\nL = torch.linalg.cholesky(A)\n",
        "import torch\nx = torch.arange(5)\n",
        "import numpy as np\nq, r = np.linalg.qr(a)\n",
        "from mylib import torch\nL = torch.cholesky(A)\n",
    )
    invalid = (
        Example(
            "import torch\nL = torch.cholesky(X, upper=True)\n",
            "import torch\nL = torch.linalg.cholesky(X, upper=True)\n",
        ),
        Example(
            "import torch\nQ, R = torch.qr(S, some=flag)\n",
            "import torch\nQ, R = torch.linalg.qr(S, mode=\"reduced\" if flag else \"complete\")\n",
        ),
        Example(
            "import torch\nr = torch.matrix_rank(A, 1e-5, True)\n",
            "import torch\nr = torch.linalg.matrix_rank(A, atol=1e-5, hermitian=True)\n",
        ),
        Example(
            "import torch\nx = torch.lu_solve(b, LU, piv)\n",
            "import torch\nx = torch.linalg.lu_solve(LU, piv, b)\n",
        ),
        Example(
            "import torch\nx = torch.range(0, 4)\n",
            "import torch\nx = torch.arange(0, 5, dtype=torch.get_default_dtype())\n",
        ),
        Example(
            "import torch\nm = torch.chain_matmul(a, b, c)\n",
            "import torch\nm = torch.linalg.multi_dot([a, b, c])\n",
        ),
        Example(
            "import torch\nn = torch.norm(x, 1, dim=0)\n",
            "import torch\nn = torch.linalg.vector_norm(x, ord=1, dim=0)\n",
        ),
        Example(
            "from functorch import vmap\nf = vmap(g)\n",
            "from torch.func import vmap\nf = vmap(g)\n",
        ),
        Example(
            "import torch\nwith torch.backends.cuda.sdp_kernel(enable_math=False):\n    pass\n",
            "import torch\nwith torch.nn.attention.sdpa_kernel("
            "[torch.nn.attention.SDPBackend.FLASH_ATTENTION, "
            "torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION, "
            "torch.nn.attention.SDPBackend.CUDNN_ATTENTION]):\n    pass\n",
        ),
        Example(
            "import torch\nx = torch.solve(b, A)[0]\n",
            "import torch\nx = torch.linalg.solve(A, b)\n",
        ),
        Example("import torch\nx, lu = torch.solve(b, A)\n"),
    )


# ----------------------------------------------------------------- TFC407


class RequiresGradTypo(Rule):
    """## What it does
    Finds the misspelling `require_grad` (for `requires_grad`): assigned
    (`p.require_grad = False`), called (`x.require_grad_()`) or passed to a
    torch factory (`torch.zeros(3, require_grad=True)`).

    ## Why is this bad?
    Assigning `require_grad` creates a new attribute and does nothing else: the
    parameter you meant to freeze keeps training, or the tensor you meant to
    differentiate gets no gradient, silently. The call and keyword forms raise
    (`AttributeError`, `TypeError: zeros() got an unexpected keyword argument
    'require_grad'`).

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Use instead
    ```python
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    The keyword form in a `torch.*` call is safe (a `TypeError` becomes the
    intended tensor). The attribute forms are unsafe: the fix does what the
    code meant, which changes what trains, and the receiver is not proven to
    be a tensor (an object of your own may define `require_grad`).
    """

    code = "TFC407"
    name = "requires-grad-typo"
    message = "`require_grad` is a typo for `requires_grad`: as written it does nothing"
    safety = Safety.UNSAFE
    triggers = ("require_grad",)
    uses_torch_names = False
    valid = (
        "import torch\nx = torch.zeros(3, requires_grad=True)\n",
        "import torch\nx.requires_grad = False\n",
        "import torch\nflag = cfg.require_grad\n",
    )
    invalid = (
        Example(
            "import torch\nfor p in model.parameters():\n    p.require_grad = False\n",
            "import torch\nfor p in model.parameters():\n    p.requires_grad = False\n",
            unsafe=True,
        ),
        Example(
            "import torch\nx = torch.zeros(3, require_grad=True)\n",
            "import torch\nx = torch.zeros(3, requires_grad=True)\n",
        ),
        Example(
            "import torch\nx = torch.ones(2)\nx.require_grad_()\n",
            "import torch\nx = torch.ones(2)\nx.requires_grad_()\n",
            unsafe=True,
        ),
    )

    def _attribute(self, target: cst.BaseExpression, safety: Safety) -> None:
        # Like TorchFix, only in files that mention torch: elsewhere `require_grad`
        # may be a field of the user's own objects.
        if "torch" not in self.context.source:
            return
        if isinstance(target, cst.Attribute) and target.attr.value in ("require_grad", "require_grad_"):
            new = target.with_changes(attr=cst.Name(target.attr.value.replace("require", "requires")))
            self.report(target, fix=Fix(safety, "spell it `requires_grad`", [(target, new)]))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._attribute(target.target, Safety.UNSAFE)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._attribute(node.target, Safety.UNSAFE)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._attribute(node.target, Safety.UNSAFE)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "require_grad_":
            self._attribute(func, Safety.UNSAFE)
            return
        typo = keyword_arg(node, "require_grad")
        if typo is None:
            return
        qualified = self.qualified_name(func) or ""
        if not qualified.startswith("torch.") or keyword_arg(node, "requires_grad") is not None:
            self.report(node)
            return
        new = typo.with_changes(keyword=cst.Name("requires_grad"))
        self.report(node, fix=Fix(Safety.SAFE, "spell it `requires_grad`", [(typo, new)]))


RULES = [FunctionalAliases, LegacyReduction, CheckpointUseReentrant, WeightNorm,
         RemovedOrDeprecatedFunction, RequiresGradTypo]
