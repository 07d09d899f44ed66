"""TFC307-TFC309: distributed-training steps the DDP guides teach and scripts leave out.

A ``DistributedSampler`` never told the epoch (TFC307), every rank writing the same
checkpoint (TFC308), and a wrapped model's ``module.``-prefixed state_dict saved where an
unwrapped model will read it (TFC309).
"""

from __future__ import annotations

import re

import libcst as cst

from torchfix_codemods.analysis.core.callees import local_function
from torchfix_codemods.analysis.core.calls import keyword_arg
from torchfix_codemods.analysis.core.loops import epoch_loop_of
from torchfix_codemods.analysis.core.statements import comes_before, contains, own_line
from torchfix_codemods.analysis.core.syntax import code_of, literal_bool
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.vocabulary.torch_api import DISTRIBUTED_SAMPLERS, INIT_PROCESS_GROUP
from torchfix_codemods.analysis.vocabulary.torch_classes import DATALOADER_CLASSES, DDP_CLASSES
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import insert_before, parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


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
        elif self.qualified_name(func) in DISTRIBUTED_SAMPLERS:
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
            if isinstance(call, cst.Call) and self.qualified_name(call.func) in DATALOADER_CLASSES and \
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
                    self.qualified_name(call.func) in DATALOADER_CLASSES and arg.keyword is not None and \
                    arg.keyword.value == "sampler":
                found.append(call)
        return found[0] if len(found) == 1 else None



_RANK_WORDS = re.compile(r"rank|main_process|is_main|master|primary|is_root|leader|chief",
                         re.IGNORECASE)
"""Words of a condition or function name that pick one process (``if rank == 0``,
``is_main_process()``, ``master_process``, ``save_on_master``, ``@rank_zero_only``)."""
_MAX_CALLER_DEPTH = 3


class EveryRankSaves(Rule):
    """## What it does
    Finds `torch.save(...)` in a script that starts a process group
    (`torch.distributed.init_process_group`) with nothing that restricts it to
    one rank, and guards it to run on rank 0 only.

    ## Why is this bad?
    Every process of the job runs the save: N processes write the same file at
    the same time. The writes race (a reader can see a half-written file, and
    on shared file systems the result can be corrupt), the disk and network
    work is N times what is needed, and a process that reads the file right
    after may read it while another rank is still writing.

    ## Example
    ```python
    dist.init_process_group("nccl")
    ...
    for epoch in range(epochs):
        train(model, loader)
        torch.save(model.module.state_dict(), "checkpoint.pt")
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    ...
    for epoch in range(epochs):
        train(model, loader)
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "checkpoint.pt")
    ```

    ## Fix safety
    Unsafe: the other ranks stop writing. The guard also saves when no process
    group is initialized (`dist.get_rank()` raises there), so a script that
    also runs on one process keeps saving. When the same function later loads
    the same path, a barrier (under `dist.is_initialized()`) follows the save
    so that no rank reads before rank 0 has written. Measured on torch 2.13
    under `torchrun --nproc_per_node=2` (gloo, CPU): as written both ranks
    wrote the file; fixed, only rank 0 wrote and rank 1 read it after the
    barrier. With one process the fixed script saves and loads the same
    tensors.
    Report only when the save is not a statement of its own in a block. Not a
    finding: a save under a condition or in a function that names a rank
    (`if rank == 0`, `if is_main_process()`, `if not master: return`,
    `save_on_master`, `@rank_zero_only`), a path that holds the rank (one file
    per rank), a helper whose every call in the file is so guarded, a method
    or a function never called in the file that does not start the process
    group itself (its callers are unknown), and a file that never starts a
    process group.

    ## References
    - [Getting started with distributed data parallel: save and load checkpoints](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    - [`torch.distributed.barrier`](https://docs.pytorch.org/docs/stable/distributed.html#torch.distributed.barrier)
    """

    code = "TFC308"
    name = "every-rank-saves"
    message = "every rank runs this `torch.save`: all processes write the same file"
    safety = Safety.UNSAFE
    triggers = ("init_process_group",)
    needs = Needs.any_of("init_process_group") & Needs.any_of("save")
    valid = (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
        "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'm.pt')\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
        "torch.save(model.state_dict(), f'm_{rank}.pt')\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
            "torch.save(model.state_dict(), 'm.pt')\n",
            "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
            "if not dist.is_initialized() or dist.get_rank() == 0:\n"
            "    torch.save(model.state_dict(), 'm.pt')\n",
            unsafe=True,
        ),
        Example(
            "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
            "if args.save: torch.save(model.state_dict(), 'm.pt')\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._saves: list[cst.Call] = []
        self._loads: list[cst.Call] = []
        self._starts_group = False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified == "torch.save":
            self._saves.append(node)
        elif qualified == "torch.load":
            self._loads.append(node)
        elif qualified in INIT_PROCESS_GROUP:
            self._starts_group = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._starts_group:
            return
        for save in self._saves:
            if len(save.args) >= 2 and not any(a.star for a in save.args) and \
                    not _RANK_WORDS.search(code_of(save.args[1].value)) and \
                    not self._guarded(save, 0):
                self._report(save)

    def _guarded(self, node: cst.CSTNode, depth: int) -> bool:
        """Whether ``node`` runs on one rank only, or may (unknown callers)."""
        for ancestor in self.names.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and \
                    _RANK_WORDS.search(code_of(ancestor.test)):
                return True
            if isinstance(ancestor, cst.FunctionDef):
                return self._function_guarded(ancestor, node, depth)
        return False

    def _function_guarded(self, function: cst.FunctionDef, node: cst.CSTNode,
                          depth: int) -> bool:
        if _RANK_WORDS.search(function.name.value) or any(
                _RANK_WORDS.search(code_of(d.decorator)) for d in function.decorators):
            return True
        for statement in walk_local(function.body):
            if isinstance(statement, cst.If) and comes_before(self.names, statement, node) and \
                    not contains(self.names, statement, node) and \
                    _RANK_WORDS.search(code_of(statement.test)) and any(
                        isinstance(n, (cst.Return, cst.Raise)) for n in walk_local(statement)):
                return True  # `if not is_main_process(): return` before the save
        if self.names.enclosing(function, (cst.FunctionDef, cst.ClassDef)) is not None:
            return True  # a method or nested function: its callers are unknown
        callers = self._callers(function)
        if not callers:
            return not self._starts_group_in(function)  # the entry point, or unknown callers
        if depth >= _MAX_CALLER_DEPTH:
            return True
        return all(self._guarded(call, depth + 1) for call in callers)

    def _starts_group_in(self, function: cst.FunctionDef) -> bool:
        return any(isinstance(n, cst.Call) and self.qualified_name(n.func) in INIT_PROCESS_GROUP
                   for n in walk_local(function.body))

    def _callers(self, function: cst.FunctionDef) -> list[cst.Call]:
        module = self.names.module_scope
        if module is None:
            return []
        found = []
        for read in self.names.loads_in(module, function.name.value):
            call = self.names.parent(read)
            if isinstance(call, cst.Call) and call.func is read:
                found.append(call)
        return found

    def _report(self, save: cst.Call) -> None:
        line = own_line(self.names, save)
        if line is None:
            self.report(save, f"{self.message} (no fix: the save is not a statement of its own)")
            return
        try:
            initialized = self.context.imports.reference(
                "torch.distributed.is_initialized", at=line)
            rank = self.context.imports.reference("torch.distributed.get_rank", at=line)
            barrier = self.context.imports.reference("torch.distributed.barrier", at=line)
        except ImportUnavailable as error:
            self.report(save, f"{self.message} (no fix: {error})")
            return
        guard = cst.If(
            test=cst.parse_expression(f"not {initialized.code}() or {rank.code}() == 0"),
            body=cst.IndentedBlock(body=[line.with_changes(leading_lines=())]),
            leading_lines=line.leading_lines)
        new: list[cst.BaseStatement] = [guard]
        if self._read_later(save):
            new.append(parse_statement(f"if {initialized.code}():\n    {barrier.code}()\n"))
        needs = tuple({r.needs for r in (initialized, rank, barrier) if r.needs is not None})
        self.report(save, self.message, fix=Fix(
            Safety.UNSAFE, "save on rank 0 only", [(line, cst.FlattenSentinel(new))],
            imports=needs))

    def _read_later(self, save: cst.Call) -> bool:
        """A ``torch.load`` of the same path after the save, in the same function."""
        path = code_of(save.args[1].value)
        function = self.names.enclosing(save, cst.FunctionDef)
        return any(load.args and code_of(load.args[0].value) == path and
                   self.names.enclosing(load, cst.FunctionDef) is function and
                   comes_before(self.names, save, load) for load in self._loads)



_PREFIX_STRIPPERS = ("consume_prefix_in_state_dict_if_present",)


class WrappedStateDictSaved(Rule):
    """## What it does
    Finds `torch.save` of a `DistributedDataParallel` model's `state_dict()`
    and saves the wrapped module's instead: `model.module.state_dict()`.

    ## Why is this bad?
    DDP keeps your model as its `module` attribute, so every key of its
    state_dict starts with `module.`. The model that evaluation, export or
    fine-tuning code builds is the plain one, and its `load_state_dict` raises
    on every key. Measured on torch 2.13 (one gloo process): the keys were
    `module.weight`, `module.bias`; loading them into an unwrapped
    `nn.Linear` raised `RuntimeError: Error(s) in loading state_dict for
    Linear`, and `model.module.state_dict()` loaded.

    ## Example
    ```python
    model = DistributedDataParallel(model, device_ids=[rank])
    ...
    torch.save(model.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    model = DistributedDataParallel(model, device_ids=[rank])
    ...
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Fix safety
    Unsafe: the file's keys lose the `module.` prefix, on purpose, so a reader
    that expects the prefix would break. That is why nothing is reported when
    the file itself loads a state_dict into the wrapped model (a resume, as in
    the DDP tutorial) or strips the prefix (a `"module."` or `"module"` string,
    as in `k.replace("module.", "")`, or
    `consume_prefix_in_state_dict_if_present`).
    Report only when the wrap is conditional (`if args.distributed: model =
    DDP(model)`): `.module` would not exist on the other path. Readers in
    other files are not seen.

    ## References
    - [`torch.nn.parallel.DistributedDataParallel`](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [Getting started with distributed data parallel: save and load checkpoints](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    """

    code = "TFC309"
    name = "ddp-state-dict-with-module-prefix"
    message = ("saving a DistributedDataParallel model's state_dict: every key starts with "
               "`module.`, and an unwrapped model cannot load it")
    safety = Safety.UNSAFE
    triggers = ("DistributedDataParallel",)
    needs = Needs.any_of("DistributedDataParallel") & Needs.any_of("state_dict")
    valid = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\ntorch.save(model.module.state_dict(), 'm.pt')\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\ntorch.save(model.state_dict(), 'm.pt')\n"
        "model.load_state_dict(torch.load('m.pt'))\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(net)\ntorch.save(model.state_dict(), 'm.pt')\n",
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(net)\ntorch.save(model.module.state_dict(), 'm.pt')\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "if distributed:\n    net = DDP(net)\ntorch.save(net.state_dict(), 'm.pt')\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._saves: list[cst.Call] = []
        self._loaded_into: set[str] = set()
        self._strips = any(marker in self.context.source for marker in _PREFIX_STRIPPERS)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.value.strip("'\"rbuRBU") in ("module.", "module"):
            self._strips = True  # `k.replace("module.", "")`, `k.startswith("module")`

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict":
            self._loaded_into.add(code_of(func.value))
        elif self.qualified_name(func) == "torch.save" and node.args:
            self._saves.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._strips:
            return
        for save in self._saves:
            value = save.args[0].value
            for node in (value, *walk_local(value)):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        node.func.attr.value == "state_dict" and not node.args and \
                        isinstance(node.func.value, cst.Name):
                    self._check(save, node, node.func.value)

    def _check(self, save: cst.Call, call: cst.Call, receiver: cst.Name) -> None:
        if receiver.value in self._loaded_into:
            return  # the file loads into the wrapped model: the prefix is expected
        before = [b for b in self.names.bindings_of(receiver)
                  if b.node is not None and comes_before(self.names, b.node, save)]
        if not before:
            return
        last = before[-1]
        if not (isinstance(last.value, cst.Call) and
                self.qualified_name(last.value.func) in DDP_CLASSES):
            return
        conditional = any(isinstance(a, (cst.If, cst.Try)) and
                          not contains(self.names, a, save)
                          for a in self.names.ancestors(last.node))
        if conditional:
            self.report(call, f"{self.message} (no fix: the model is wrapped on some paths only;"
                        " `.module` does not exist on the others)")
            return
        wrapped = cst.Attribute(value=receiver, attr=cst.Name("module"))
        self.report(call, self.message, fix=Fix(
            Safety.UNSAFE, f"save `{receiver.value}.module.state_dict()`",
            [(receiver, wrapped)]))


RULES = [SamplerWithoutSetEpoch, EveryRankSaves, WrappedStateDictSaved]
