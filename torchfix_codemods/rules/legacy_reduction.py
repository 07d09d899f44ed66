"""TFC403: the legacy ``size_average=``/``reduce=`` arguments of losses.

Which losses take them, in which positional order, is data
(``rules/data/legacy_reduction.toml``); the mapping to ``reduction=`` is
torch's own (``torch.nn._reduction.legacy_get_string``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.analysis.core.syntax import is_none, literal_bool
from torchfix_codemods.edits.arguments import as_keyword, keyword, with_layout
from torchfix_codemods.edits.call_mapping import Unmappable, bind
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.tables import load_data

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

    ## References
    - [`torch.nn.MSELoss` (`size_average`, `reduce` deprecated; use `reduction`)](https://docs.pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
    """

    code = "TFC403"
    name = "legacy-reduction"
    message = "legacy `size_average`/`reduce` argument: use `reduction=`"
    safety = Safety.SAFE
    triggers = ("size_average", "reduce", "loss", "Loss", "entropy", "kl_div")

    @classmethod
    def file_needs(cls) -> Needs:
        # The legacy arguments may be positional: the loss's own name is what must appear.
        return Needs.any_of(*{qualified.rsplit(".", 1)[-1] for qualified in _losses()})
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


RULES = [LegacyReduction]
