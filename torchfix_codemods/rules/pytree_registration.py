"""TFC411: the deprecated private ``torch.utils._pytree._register_pytree_node``.

The row is the TFC411 entry of ``rules/data/replacements.toml``; the argument
mapping is the handler below, because the two signatures share their first
three positional parameters and their keyword-only ones, and differ in two
positional parameters the old one ignores.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.edits.call_mapping import Unmappable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix
from torchfix_codemods.rules.table_rule import Handler, TableRule
from torchfix_codemods.rules.tables import Replacement

_SHARED_KEYWORDS = frozenset({"cls", "flatten_fn", "unflatten_fn", "serialized_type_name",
                              "to_dumpable_context", "from_dumpable_context",
                              "flatten_with_keys_fn"})
_DROPPED = ("to_str_fn", "maybe_from_str_fn")


def _register(rule: TableRule, call: cst.Call, spec: Replacement,
              func: cst.BaseExpression) -> cst.Call:
    """Same arguments, new callee; the old-only parameters make the call unmappable."""
    positional = 0
    for arg in call.args:
        if arg.star:
            raise Unmappable("arguments come from `*args`/`**kwargs`, which the tool cannot see")
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value in _DROPPED:
            raise Unmappable(f"`{arg.keyword.value}=` does not exist in `register_pytree_node` "
                             "(use `to_dumpable_context`/`from_dumpable_context`)")
        elif arg.keyword.value not in _SHARED_KEYWORDS:
            raise Unmappable(f"the argument `{arg.keyword.value}=` has no counterpart")
    if positional > 3:
        raise Unmappable("positional arguments beyond the third are the old `to_str_fn`/"
                         "`maybe_from_str_fn`, which `register_pytree_node` does not take")
    return call.with_changes(func=func)


class PrivatePytreeRegistration(TableRule):
    """## What it does
    Rewrites calls of the deprecated private
    `torch.utils._pytree._register_pytree_node(cls, flatten_fn, unflatten_fn, ...)`
    to `torch.utils._pytree.register_pytree_node(...)`.

    ## Why is this bad?
    `_register_pytree_node` is deprecated (FutureWarning on every call) and
    registers the type with the Python pytree only; `register_pytree_node`
    also registers it with the C++ pytree that `torch.compile` and
    `torch.export` use when it is available.

    ## Example
    ```python
    from torch.utils import _pytree as pytree
    pytree._register_pytree_node(Point, flatten, unflatten)
    ```

    ## Use instead
    ```python
    from torch.utils import _pytree as pytree
    pytree.register_pytree_node(Point, flatten, unflatten)
    ```

    ## Fix safety
    Checked on torch 2.13: both take `cls, flatten_fn, unflatten_fn`
    positionally and the same keyword-only `serialized_type_name`,
    `to_dumpable_context`, `from_dumpable_context` and `flatten_with_keys_fn`;
    only the old one has the positional `to_str_fn` and `maybe_from_str_fn`
    (ignored there, with a warning). Those, by position (a fourth or fifth
    positional argument) or by keyword, leave the call report only. Unsafe:
    registering a type twice warns and overwrites with the old function, and
    raises `ValueError: ... is already registered as pytree node.` with the
    new one (measured on torch 2.13), so code that re-registers (a module
    reloaded, a type a library already registered) starts to fail. A bare
    reference (`register = _pytree._register_pytree_node`) is reported
    without a fix. The new name exists from torch 2.2.

    ## References
    - [`torch.utils._pytree` source, torch 2.13](https://github.com/pytorch/pytorch/blob/main/torch/utils/_pytree.py)
    - [TorchFix deprecated symbols](https://github.com/pytorch-labs/torchfix)
    """

    code = "TFC411"
    name = "private-pytree-registration"
    message = "`torch.utils._pytree._register_pytree_node` is deprecated: use `register_pytree_node`"
    safety = Safety.UNSAFE
    min_torch = (2, 2)
    triggers = ("_register_pytree_node",)
    needs = Needs.any_of(fragments=("_register_pytree_node",))
    handlers: dict[str, Handler] = {"register_pytree_node": _register}
    valid = (
        "import torch\ntorch.utils._pytree.register_pytree_node(P, f, u)\n",
        "from mylib import _register_pytree_node\n_register_pytree_node(P, f, u)\n",
    )
    invalid = (
        Example(
            "import torch\ntorch.utils._pytree._register_pytree_node(P, f, u,"
            " serialized_type_name='p.P')\n",
            "import torch\ntorch.utils._pytree.register_pytree_node(P, f, u,"
            " serialized_type_name='p.P')\n",
            unsafe=True,
        ),
        Example(
            "from torch.utils import _pytree as pytree\n"
            "pytree._register_pytree_node(P, f, u)\n",
            "from torch.utils import _pytree as pytree\n"
            "pytree.register_pytree_node(P, f, u)\n",
            unsafe=True,
        ),
        Example(
            "import torch\ntorch.utils._pytree._register_pytree_node(P, f, u, to_str)\n"),
        Example(
            "import torch\ntorch.utils._pytree._register_pytree_node(P, f, u,"
            " maybe_from_str_fn=g)\n"),
        Example(
            "from torch.utils._pytree import _register_pytree_node, tree_map\n"
            "_register_pytree_node(P, f, u)\n",
            "from torch.utils._pytree import register_pytree_node, tree_map\n"
            "register_pytree_node(P, f, u)\n",
            unsafe=True,
        ),
    )

    def _import_fix(self, node: cst.ImportFrom, module: str) -> Fix | None:
        """``from torch.utils._pytree import _register_pytree_node`` and every call of the
        name -> the new name in both, when each use of the name is a call that maps."""
        if module != _MODULE or isinstance(node.names, cst.ImportStar):
            return None
        alias = next((a for a in node.names if dotted_name(a.name) == _OLD), None)
        if alias is None or alias.asname is not None:
            return None
        scope = self.names.scope_of(node)  # the module, or the function of a lazy import
        if scope is None or _NEW in scope.bindings or \
                any(b.node is not node for b in scope.bindings.get(_OLD, [])):
            return None
        spec = self.table()[f"{_MODULE}.{_OLD}"]
        replacements: list[tuple[cst.CSTNode, cst.CSTNode]] = [(alias.name, cst.Name(_NEW))]
        for read in self.names.loads_in(scope, _OLD):
            call = self.names.parent(read)
            if not (isinstance(call, cst.Call) and call.func is read):
                return None
            try:
                _register(self, call, spec, read)
            except Unmappable:
                return None
            replacements.append((read, cst.Name(_NEW)))
        return Fix(Safety.UNSAFE, f"import and call `{_NEW}`", replacements,  # type: ignore[arg-type]
                   min_torch=spec.min_torch)


_MODULE = "torch.utils._pytree"
_OLD = "_register_pytree_node"
_NEW = "register_pytree_node"


RULES = [PrivatePytreeRegistration]
