"""TFC406: removed and deprecated torch functions, every argument mapped or the call reported.

Which old name maps to which new one, argument by argument, is data (the
TFC406 rows of ``rules/data/replacements.toml``); this module holds the rule
and the mappings that cannot be said as data (``torch.range``'s inclusive end,
``torch.norm``'s string orders, ``solve``'s swapped operands...), each a
handler named by its row.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.syntax import is_none, literal_bool
from torchfix_codemods.analysis.vocabulary.torch_api import LEGACY_TENSOR_DTYPES
from torchfix_codemods.edits.arguments import as_keyword, as_positional, keyword, with_layout
from torchfix_codemods.edits.call_mapping import Unmappable, bind
from torchfix_codemods.edits.expressions import as_left_operand
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Example, Fix
from torchfix_codemods.rules.table_rule import Handler, TableRule
from torchfix_codemods.rules.tables import Replacement


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
    bound = bind(call, spec.mapping.params, set())
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
               remove_imports=rule.import_removals(call.func))


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
    bound = bind(call, spec.mapping.params, set())
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
               min_torch=spec.min_torch, remove_imports=rule.import_removals(call.func))


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
    bound = bind(call, spec.mapping.params, set())
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
    bound = bind(call, spec.mapping.params, extra)
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
            new_end = cst.BinaryOperation(as_left_operand(value, operator), operator, right)
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
               [(call, new)], imports=imports, remove_imports=rule.import_removals(call.func),  # type: ignore[arg-type]
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
    bound = bind(call, spec.mapping.params, set())
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
    bound = bind(call, spec.mapping.params, set())
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




def _default_tensor_type(rule: TableRule, call: cst.Call, spec: Replacement,
                         func: cst.BaseExpression) -> cst.Call:
    bound = bind(call, spec.mapping.params, set())
    if "t" not in bound:
        raise Unmappable("the type argument is missing")
    value = bound["t"].value
    name = _string(value) or rule.qualified_name(value)
    if name not in LEGACY_TENSOR_DTYPES:
        raise Unmappable("only `torch.FloatTensor`/`torch.DoubleTensor` map to a dtype; for CUDA "
                         "types also call `torch.set_default_device(\"cuda\")`")
    dtype = _reference(rule, LEGACY_TENSOR_DTYPES[name], call)
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
    `torch.backends.cuda.sdp_kernel`, `torch.set_default_tensor_type` and
    `functorch.*` (now `torch.func`); `_register_pytree_node` is TFC411. From
    the torch 0.3/0.4 era: the initialisers without the trailing underscore
    (`nn.init.xavier_uniform`, `kaiming_normal`, `constant`, `normal`,
    `uniform`, `orthogonal`, `sparse`, `dirac`, `eye`, `xavier_normal`,
    `kaiming_uniform`) and `nn.utils.clip_grad_norm` (deprecated since 0.4,
    they warn `FutureWarning`), `torch.cuda.memory_cached`/`max_memory_cached`
    (renamed `memory_reserved`), and `torch.gels`, `potrf`, `potrs`, `potri`,
    `trtrs`, `gesv`, `btrifact`, `btrisolve` (removed in 1.2: `AttributeError`).
    The full mapping is `rules/data/replacements.toml`.

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
    have a different shape or meaning) and the functions removed in 1.2. The
    0.4 renames are safe: each old name calls the new one with the same
    arguments (the same values from the same seed). Fixes are withheld when `--target-torch` is
    older than the new function.

    ## References
    - [`torch.linalg`](https://docs.pytorch.org/docs/stable/linalg.html)
    - [Migrating from functorch to `torch.func`](https://docs.pytorch.org/docs/stable/func.migrating.html)
    - [`torch.range` (deprecated)](https://docs.pytorch.org/docs/stable/generated/torch.range.html)
    - [TorchFix (TOR001, TOR101)](https://github.com/pytorch-labs/torchfix)
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


RULES = [RemovedOrDeprecatedFunction]
