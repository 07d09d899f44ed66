"""TFC414: ``verbose=`` of a learning-rate scheduler, removed from torch.

``ReduceLROnPlateau(optimizer, patience=3, verbose=True)`` is in most training
scripts written before torch 2.2 (yhenon/pytorch-retinanet, the Lightning
examples); torch 2.2 deprecated the argument and torch 2.13 no longer has it:
the constructor raises ``TypeError`` (measured in
``rules/data/legacy_inventory.json``).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg, positional_args
from torchfix_codemods.analysis.core.syntax import literal_bool
from torchfix_codemods.analysis.vocabulary.torch_api import (
    LR_SCHEDULER_CLASSES,
    LR_SCHEDULER_POSITIONALS,
)
from torchfix_codemods.edits.arguments import remove_argument
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_PLATEAU = "ReduceLROnPlateau"
_OLD_PLATEAU_VERBOSE = 4
"""``ReduceLROnPlateau``'s ``verbose`` sat after ``patience`` (the fifth parameter) up to
torch 2.1: a fifth positional argument now lands in ``threshold``."""


class SchedulerVerbose(Rule):
    """## What it does
    Removes the `verbose` argument of `torch.optim.lr_scheduler` schedulers
    (`ReduceLROnPlateau(optimizer, patience=3, verbose=True)`, `StepLR(...,
    verbose=False)`), and the `verbose` a custom scheduler passes on to
    `super().__init__(optimizer, last_epoch, verbose)`.

    ## Why is this bad?
    torch 2.2 deprecated `verbose`, and torch 2.13 no longer has it: the
    constructor raises `TypeError: ReduceLROnPlateau.__init__() got an unexpected keyword
    argument 'verbose'` (measured), so the script stops before training.

    ## Example
    ```python
    scheduler = ReduceLROnPlateau(optimizer, "min", patience=3, verbose=True)
    ```

    ## Use instead
    ```python
    scheduler = ReduceLROnPlateau(optimizer, "min", patience=3)
    print(scheduler.get_last_lr())  # where the rate should be logged
    ```

    ## Fix safety
    Safe for `verbose=False`: the old call printed nothing, and the new one
    builds the same scheduler. Unsafe otherwise: the call no longer raises, but
    the line the old scheduler printed whenever it changed the rate is gone
    (log `scheduler.get_last_lr()` where it matters). A `verbose` passed by
    position is removed only where its place is certain: the third positional
    argument of `LRScheduler.__init__` (the custom-scheduler pattern), or one
    more positional argument than the class takes today. Report only for a
    `ReduceLROnPlateau` given five or more positional arguments: its `verbose`
    was the fifth parameter until torch 2.2, so today the fifth lands in
    `threshold` without an error (measured: `ReduceLROnPlateau(opt, "min",
    0.5, 5, True)` sets `threshold=True`).

    ## References
    - [`torch.optim.lr_scheduler.ReduceLROnPlateau`](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.ReduceLROnPlateau.html)
    - [PyTorch 2.2 release notes: `verbose` of LR schedulers deprecated](https://github.com/pytorch/pytorch/releases/tag/v2.2.0)
    """

    code = "TFC414"
    name = "scheduler-verbose"
    message = "`verbose` was removed from torch's LR schedulers: the call raises `TypeError`"
    safety = Safety.SAFE
    triggers = ("LR",)
    needs = Needs.any_of(fragments=("LR",))
    """Every scheduler class's name holds ``LR`` (``ReduceLROnPlateau``, ``_LRScheduler``)."""
    valid = (
        "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 10, gamma=0.5)\n",
        "import torch\nfrom mylib import Scheduler\ns = Scheduler(opt, verbose=True)\n",
        "import torch\ns = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, 'min', 0.5, 3)\n",
    )
    invalid = (
        Example(
            "from torch.optim.lr_scheduler import ReduceLROnPlateau\n"
            "s = ReduceLROnPlateau(opt, 'min', patience=3, verbose=False)\n",
            "from torch.optim.lr_scheduler import ReduceLROnPlateau\n"
            "s = ReduceLROnPlateau(opt, 'min', patience=3)\n",
        ),
        Example(
            "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 10, verbose=True)\n",
            "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 10)\n",
            unsafe=True,
        ),
        Example(
            "import torch\ns = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, 'min', 0.5, 3, True)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        scheduler = self._scheduler_of(node)
        if scheduler is None:
            return
        name, skip = scheduler
        verbose = keyword_arg(node, "verbose")
        positional = positional_args(node)[skip:]
        if any(arg.star for arg in node.args):
            return
        if verbose is None:
            if name == _PLATEAU and len(positional) > _OLD_PLATEAU_VERBOSE:
                self.report(node, f"`{name}`'s fifth parameter was `verbose` until torch 2.2: "
                            "this positional argument is `threshold` today (no fix: pass the "
                            "arguments by keyword)")
                return
            if name == _PLATEAU or len(positional) != LR_SCHEDULER_POSITIONALS[name] + 1:
                return
            verbose = positional[-1]
        silent = literal_bool(verbose.value) is False
        safety = Safety.SAFE if silent else Safety.UNSAFE
        reason = ("`verbose=False` printed nothing" if silent else
                  "the line the scheduler printed when it changed the rate is gone: log "
                  "`scheduler.get_last_lr()` where it matters")
        fix = Fix(safety, "remove the `verbose` argument", [(node, remove_argument(node, verbose))])
        self.report(node, fix=fix, reason=reason)

    def _scheduler_of(self, node: cst.Call) -> tuple[str, int] | None:
        """The scheduler class ``node`` builds or initialises, and how many leading positional
        arguments are not the constructor's (``self`` of ``Base.__init__(self, ...)``)."""
        qualified = self.qualified_name(node.func)
        if qualified in LR_SCHEDULER_CLASSES:
            return qualified.rsplit(".", 1)[1], 0
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "__init__"):
            return None
        receiver = func.value
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and \
                receiver.func.value == "super":
            base = self._scheduler_base(node)
            return (base, 0) if base is not None else None
        qualified = self.qualified_name(receiver)
        if qualified in LR_SCHEDULER_CLASSES:
            return qualified.rsplit(".", 1)[1], 1
        return None

    def _scheduler_base(self, node: cst.Call) -> str | None:
        """The scheduler class the class around ``node`` derives from directly (its first such
        base), for a ``super().__init__(...)``."""
        owner = self.names.enclosing(node, cst.ClassDef)
        if owner is None:
            return None
        for base in owner.bases:
            qualified = self.qualified_name(base.value)
            if qualified in LR_SCHEDULER_CLASSES:
                return qualified.rsplit(".", 1)[1]
        return None


RULES = [SchedulerVerbose]
