"""TFC301: ``nn.DataParallel`` -> ``DistributedDataParallel``, a migration rather than a swap.

The rewrite touches several places of one file at once (a helper block after
the imports, the wrap, the training ``DataLoader``, the epoch loop, saves and
prints, the end of training), so it is one :class:`Fix` with several
non-overlapping replacements, composed by
:class:`~torchfix_codemods.edits.composer.NestedEdits`. Each place is one
named step of :class:`_Migration`. Anything the rule cannot place with
confidence turns the fix into a report that still carries the launch line and
the checklist.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import libcst as cst

from torchfix_codemods.analysis.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
    positional_args,
)
from torchfix_codemods.analysis.dataloaders import DATALOADERS
from torchfix_codemods.analysis.imports import ImportRequest, ImportUnavailable
from torchfix_codemods.analysis.loops import epoch_loop
from torchfix_codemods.analysis.names import NameIndex, Scope
from torchfix_codemods.analysis.statements import statement_line
from torchfix_codemods.analysis.syntax import is_docstring, is_none, literal_bool
from torchfix_codemods.analysis.usage import assigned_name
from torchfix_codemods.analysis.walk import children, walk_local
from torchfix_codemods.edits.arguments import add_keyword, keyword
from torchfix_codemods.edits.composer import NestedEdits
from torchfix_codemods.edits.expressions import as_left_operand
from torchfix_codemods.edits.statements import simple_line, with_trailing_comment
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule, RuleContext

DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})
DDP = "torch.nn.parallel.DistributedDataParallel"
DDP_NAMES = frozenset({DDP, "torch.nn.parallel.distributed.DistributedDataParallel"})
SAMPLER = "torch.utils.data.DistributedSampler"
DEVICE_CHECKS = frozenset({"torch.cuda.device_count", "torch.cuda.is_available"})
HELPERS = ("_ddp_setup", "_ddp_is_main", "_ddp_wrap", "_ddp_cleanup")

CHECKLIST = (
    "migration checklist: init the process group (nccl on GPU, gloo on CPU) from LOCAL_RANK/"
    "RANK/WORLD_SIZE, torch.cuda.set_device(local_rank), move the model before wrapping, "
    "DistributedDataParallel(model, device_ids=[local_rank]) (no device_ids on CPU), "
    "DistributedSampler instead of shuffle=True with sampler.set_epoch(epoch) every epoch, "
    "per-process batch_size = global // world size, save and print on rank 0, "
    "destroy_process_group() at the end"
)

# The helper block, written once per file. Comments, not docstrings: inserted
# text must follow the file's own indentation (tabs included), which LibCST
# does for statements and comments but not for the inside of a string.
_HELPER_TEMPLATE = '''
def _ddp_setup():
    # TFC301: one process per device, started by `torchrun --nproc_per_node=N {script}`.
    # Plain `python {script}` (no WORLD_SIZE) is a one-process group and trains as before.
    # Safe to call again; returns (local_rank, rank, world_size, device).
    local_rank = int({environ}.get("LOCAL_RANK", "0"))
    rank = int({environ}.get("RANK", "0"))
    world_size = int({environ}.get("WORLD_SIZE", "1"))
    if {torch}.cuda.is_available():
        {torch}.cuda.set_device(local_rank)
        device = {torch}.device("cuda", local_rank)
    else:
        device = {torch}.device("cpu")
    if not {dist}.is_initialized():
        backend = "nccl" if {torch}.cuda.is_available() else "gloo"
        if "WORLD_SIZE" in {environ}:
            {dist}.init_process_group(backend)
        else:
            # No launcher: a one-process group on an in-memory store, no address or port.
            store = {dist}.HashStore()
            {dist}.init_process_group(backend, store=store, rank=0, world_size=1)
    return local_rank, rank, world_size, device


def _ddp_is_main():
    # TFC301: rank 0 saves and prints. Reads the environment only, so it is safe anywhere
    # (DataLoader workers included) and never starts a process group.
    return int({environ}.get("RANK", "0")) == 0


def _ddp_wrap(module):
    # TFC301: the model moves to this process's device before wrapping.
    # BatchNorm statistics are now per process; on GPU, for statistics over the
    # global batch, call {torch}.nn.SyncBatchNorm.convert_sync_batchnorm(module) first.
    # `.module` and the "module." prefix of state_dict keys are unchanged.
    local_rank, _, _, device = _ddp_setup()
    module = module.to(device)
    if device.type == "cuda":
        return {ddp}(module, device_ids=[local_rank])
    return {ddp}(module)


def _ddp_cleanup():
    # TFC301: leave the process group once every process is done training (the barrier
    # keeps one rank from tearing down while another still talks to it).
    if {dist}.is_initialized():
        {dist}.barrier()
        {dist}.destroy_process_group()
'''


def launch_line(path: str) -> str:
    script = os.path.basename(path.split("#", 1)[0]) or "script.py"
    return f"torchrun --nproc_per_node=N {script}"


class _Irregular(Exception):
    """The file does not have the shape the rewrite needs; the message says which part."""


def _is_literal_false(node: cst.BaseExpression) -> bool:
    return literal_bool(node) is False or is_none(node)


def _pure(node: cst.BaseExpression) -> bool:
    """A name or attribute chain: safe to evaluate twice (dataset for the sampler)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


class DataParallelToDDP(Rule):
    """## What it does
    Finds `nn.DataParallel(model)` (any spelling: `torch.nn.DataParallel`,
    `torch.nn.parallel.DataParallel`, an aliased `from torch.nn import
    DataParallel as DP`, with `device_ids=`/`output_device=`, under
    `if torch.cuda.device_count() > 1:`) and migrates the script to
    `DistributedDataParallel`, launched with `torchrun --nproc_per_node=N script.py`.
    Also finds `isinstance(m, nn.DataParallel)` checks, which must recognise
    both wrappers once a model is wrapped in DDP.

    ## Why is this bad?
    `DataParallel` runs one process that scatters every batch and replicates
    the model on every step; the PyTorch docs recommend `DistributedDataParallel`
    even on a single machine, and it is the only one that scales past one node.
    The migration is never a one-line swap: a process group, one device per
    process, a `DistributedSampler` (with `set_epoch` every epoch, or every
    epoch sees the same order), a per-process batch size, and rank-0-only
    saving and logging.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    model = nn.DataParallel(Net().to(device))
    for epoch in range(10):
        for x, y in loader:
            ...
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    # helpers _ddp_setup() / _ddp_is_main() / _ddp_wrap() / _ddp_cleanup() after the imports
    loader = DataLoader(dataset, batch_size=64 // _ddp_setup()[2],
                        sampler=DistributedSampler(dataset, shuffle=True))
    model = _ddp_wrap(Net().to(device))
    for epoch in range(10):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            ...
    if _ddp_is_main():
        torch.save(model.module.state_dict(), "model.pt")
    _ddp_cleanup()
    ```
    Launch with `torchrun --nproc_per_node=N script.py`; `python script.py`
    still works (one process, world size 1). DDP's `batch_size` is per process:
    the fix divides it by the world size, so the global batch and the
    training math stay the same (DDP averages gradients across processes).

    ## Fix safety
    Unsafe: the program now runs as several processes. The helper initialises
    a one-process group (an in-memory store, no port) when no launcher set
    `WORLD_SIZE`, so `python script.py` trains to the same weights as before,
    and `.module` keeps working. BatchNorm statistics become per process (use
    `SyncBatchNorm` on GPU for global ones); `device_ids=`/`output_device=` are
    dropped (one device per process). Report only, with the launch line and
    the checklist, when the file already has a DDP or process-group path, when
    several models are wrapped, when the wrap is under a condition other than a
    GPU count check or inside a loop, when the training `DataLoader`, its
    epoch loop (in the same function as the wrap) or a place for the helpers
    cannot be found with certainty, when the training function returns a
    value that may outlive the process group, or when the file loads with
    `torch.load` after it saves (rank-0-only saving would race other ranks).
    `isinstance(m, DataParallel)` becomes `isinstance(m, (DataParallel,
    DistributedDataParallel))` (unsafe: DDP-wrapped models are now unwrapped
    too, which is what such checks are for) only together with the migration
    of the file's wrap: without one the edit changes what the check does for
    DDP models and migrates nothing, so it is reported instead. A negated check
    (`assert not isinstance(m, DataParallel)`) rejects DataParallel on purpose
    and is left alone. Code that implements DataParallel support (a function
    annotated with `DataParallel`, a class with such a method, a subclass of
    `DataParallel`: a library's strategy or wrapper) is not a mistake and gets
    no finding.

    ## References
    - [`torch.nn.DataParallel`](https://docs.pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
    - [`torch.nn.parallel.DistributedDataParallel`](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [CUDA semantics: use `DistributedDataParallel` instead of `DataParallel`](https://docs.pytorch.org/docs/stable/notes/cuda.html)
    - [`torchrun`](https://docs.pytorch.org/docs/stable/elastic/run.html)
    - [`torch.utils.data.distributed.DistributedSampler`](https://docs.pytorch.org/docs/stable/data.html)
    """

    code = "TFC301"
    name = "data-parallel"
    message = "`nn.DataParallel` is slower than `DistributedDataParallel`; migrate and launch with torchrun"
    safety = Safety.UNSAFE
    triggers = ("DataParallel",)
    needs = Needs.any_of("DataParallel")
    valid = (
        "import torch\nfrom torch import nn\nm = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))\n",
        "class DataParallel:\n    def __init__(self, m):\n        self.module = m\n"
        "model = DataParallel(object())\n",
        "import torch\nfrom torch import nn\n"
        "ok = isinstance(m, (nn.DataParallel, nn.parallel.DistributedDataParallel))\n",
        # a library's DataParallel strategy implements the feature (Lightning fabric dp.py)
        "from torch.nn import DataParallel, Module\n\n\nclass DataParallelStrategy:\n"
        "    def setup_module(self, module: Module) -> DataParallel:\n"
        "        return DataParallel(module=module, device_ids=self.parallel_devices)\n\n"
        "    def get_module_state_dict(self, module):\n"
        "        if isinstance(module, DataParallel):\n            module = module.module\n"
        "        return module.state_dict()\n",
        # rejects DataParallel on purpose (detectron2's AMPTrainer)
        "from torch.nn import DataParallel\n\n\ndef check(model):\n"
        "    assert not isinstance(model, DataParallel), 'AMPTrainer does not support DP'\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch import nn\n\n\ndef main(ds):\n"
            "    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.DataParallel(nn.Linear(2, 1))\n"
            "    for epoch in range(2):\n        for x, y in loader:\n"
            "            model(x).sum().backward()\n"
            "    torch.save(model.module.state_dict(), 'm.pt')\n",
            "import torch\nfrom torch import nn\nimport os\n\n"
            + _HELPER_TEMPLATE.format(
                script="case.py", environ="os.environ", torch="torch", dist="torch.distributed",
                ddp="nn.parallel.DistributedDataParallel")
            + "\n\ndef main(ds):\n"
            "    _ddp_setup()  # TFC301: join the process group before anything uses a device\n"
            "    # TFC301: DDP's batch_size is per process: global batch // world size keeps the "
            "global batch\n"
            "    loader = torch.utils.data.DataLoader(ds, batch_size=8 // _ddp_setup()[2], "
            "sampler=torch.utils.data.DistributedSampler(ds, shuffle=True))\n"
            "    model = _ddp_wrap(nn.Linear(2, 1))  # TFC301: launch with torchrun "
            "--nproc_per_node=N case.py\n"
            "    for epoch in range(2):\n        loader.sampler.set_epoch(epoch)\n"
            "        for x, y in loader:\n            model(x).sum().backward()\n"
            "    if _ddp_is_main():  # TFC301: rank 0 only\n"
            "        torch.save(model.module.state_dict(), 'm.pt')\n"
            "    _ddp_cleanup()\n",
            unsafe=True,
        ),
        # No wrap migrated in this file: reported, not widened (the widening goes with a migration).
        Example(
            "import torch\nfrom torch import nn\n\n\ndef unwrap(m):\n"
            "    return m.module if isinstance(m, nn.DataParallel) else m\n"),
        Example("import torch\nfrom torch import nn\nmodel = nn.DataParallel(build())\n"),
        Example(
            "import torch\nfrom torch import nn\nimport torch.distributed as dist\n"
            "if dist.is_initialized():\n"
            "    model = nn.parallel.DistributedDataParallel(net)\nelse:\n"
            "    model = nn.DataParallel(net)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._wraps: list[cst.Call] = []
        self._loaders: list[cst.Call] = []
        self._outputs: list[cst.Call] = []
        self._isinstance: list[tuple[cst.Call, cst.Arg]] = []
        self._distributed = False
        self._saved = False
        self._reloads = False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified in DATA_PARALLEL:
            if not self._implements_data_parallel(node):
                self._wraps.append(node)
        elif qualified in DDP_NAMES or (qualified or "").startswith(
                ("torch.distributed.init_process_group", "torch.distributed.run")):
            # This rule's own helpers (a file migrated earlier) are not the user's DDP path.
            if not self._in_helper(node):
                self._distributed = True
        elif qualified in DATALOADERS:
            self._loaders.append(node)
        elif qualified == "torch.save" or self._is_builtin(node.func, "print"):
            self._outputs.append(node)
            self._saved = self._saved or qualified == "torch.save"
        elif qualified == "torch.load" and self._saved:
            self._reloads = True
        elif self._is_builtin(node.func, "isinstance"):
            classes = argument(node, "class_or_tuple", 1)
            if classes is not None and self._needs_ddp(classes.value) and \
                    not self._negated(node) and not self._implements_data_parallel(node):
                self._isinstance.append((node, classes))

    def _implements_data_parallel(self, node: cst.CSTNode) -> bool:
        """Code that offers DataParallel as a feature rather than a user's training set-up:
        a function whose parameters or return are annotated ``DataParallel`` (Lightning's
        ``DataParallelStrategy.setup_module(...) -> DataParallel``), anything in a class
        with such a method, or in a subclass of ``DataParallel``. Issue: a library's
        strategy is not a mistake to migrate; its checks unwrap its own wrapper."""
        for ancestor in self.names.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef) and self._annotated_data_parallel(ancestor):
                return True
            if isinstance(ancestor, cst.ClassDef):
                if any(self.qualified_name(base.value) in DATA_PARALLEL for base in ancestor.bases):
                    return True
                if any(isinstance(s, cst.FunctionDef) and self._annotated_data_parallel(s)
                       for s in ancestor.body.body):
                    return True
        return False

    def _annotated_data_parallel(self, function: cst.FunctionDef) -> bool:
        annotations = [p.annotation for p in (*function.params.params,
                                              *function.params.kwonly_params,
                                              *function.params.posonly_params)
                       if p.annotation is not None]
        if function.returns is not None:
            annotations.append(function.returns)
        return any(self.qualified_name(n) in DATA_PARALLEL
                   for a in annotations for n in (a.annotation, *walk_local(a.annotation))
                   if isinstance(n, (cst.Name, cst.Attribute)))

    def _negated(self, call: cst.Call) -> bool:
        """``not isinstance(m, DataParallel)`` (detectron2's ``assert not isinstance(...)``
        rejects DataParallel on purpose): widening it would reject every DDP model too."""
        parent = self.names.parent(call)
        return isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)

    def _in_helper(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.FunctionDef) and a.name.value in HELPERS
                   for a in self.names.ancestors(node))

    def _is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        return (isinstance(func, cst.Name) and func.value == name
                and not self.names.bindings_of(func))

    def _needs_ddp(self, classes: cst.BaseExpression) -> bool:
        elements = ([e.value for e in classes.elements] if isinstance(classes, cst.Tuple)
                    else [classes])
        names = {self.qualified_name(e) for e in elements}
        return bool(names & DATA_PARALLEL) and not names & DDP_NAMES

    # ---------------------------------------------------------------- reports
    def leave_Module(self, original_node: cst.Module) -> None:
        migrated = self._report_wraps() or self._migrated_earlier()
        for call, classes in self._isinstance:
            self._report_isinstance(call, classes, migrated)

    def _migrated_earlier(self) -> bool:
        """The file holds this rule's helper block: its wrap was migrated (in an earlier
        round of this run, when the check sat inside a statement the migration rewrote)."""
        scope = self.names.module_scope
        return scope is not None and any(
            binding.kind == "def" for binding in scope.bindings.get("_ddp_wrap", []))

    def _report_wraps(self) -> bool:
        """Reports every wrap; True when the file's one wrap gets the migration fix."""
        launch = launch_line(self.context.path)
        if not self._wraps:
            return False
        if self._distributed:
            for call in self._wraps:
                self.report(call, f"`nn.DataParallel` next to a DistributedDataParallel/process-"
                            f"group path in the same file: no rewrite; make DDP the only path, "
                            f"launched with `{launch}` (DDP's batch_size is per process)")
            return False
        if len(self._wraps) > 1:
            for call in self._wraps:
                self.report(call, f"{self.message} (`{launch}`; DDP's batch_size is per process); "
                            "several models are wrapped, so "
                            f"no automatic rewrite: {CHECKLIST}")
            return False
        call = self._wraps[0]
        migration = _Migration(self.context, self._loaders, self._outputs, self._reloads, launch)
        try:
            fix = migration.fix(call)
        except (_Irregular, ImportUnavailable) as why:
            self.report(call, f"{self.message} (`{launch}`; DDP's batch_size is per process); "
                        f"no automatic rewrite: {why}; {CHECKLIST}")
            return False
        self.report(call, f"{self.message}: `{launch}`; DDP's batch_size is per process "
                    "(the fix divides it by the world size to keep the global batch)", fix=fix)
        return True

    def _report_isinstance(self, call: cst.Call, classes: cst.Arg, migrated: bool) -> None:
        """Widened only together with this file's migration: on its own the edit changes
        what the check does for DDP-wrapped models and migrates nothing."""
        message = ("`isinstance(..., DataParallel)` misses models wrapped in "
                   "`DistributedDataParallel`; check for both wrappers")
        if not migrated:
            self.report(call, message + " when the models it sees are migrated (no fix: this "
                        "file's DataParallel wrap, if any, is not migrated in this change)")
            return
        try:
            ddp = self.context.imports.reference(DDP, call, "torch.nn.parallel")
        except ImportUnavailable:
            self.report(call, message)
            return
        value = classes.value
        if isinstance(value, cst.Tuple):
            last = value.elements[-1].with_changes(comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" ")))
            new_value: cst.BaseExpression = value.with_changes(
                elements=[*value.elements[:-1], last, cst.Element(ddp.expression)])
        else:
            new_value = cst.Tuple([
                cst.Element(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Element(ddp.expression)])
        new_call = call.with_changes(args=[
            arg.with_changes(value=new_value) if arg is classes else arg for arg in call.args])
        fix = Fix(Safety.UNSAFE, "recognise DistributedDataParallel too",
                  [(call, new_call)], imports=tuple(r for r in [ddp.needs] if r))
        self.report(call, message, fix=fix)


class _Migration:
    """The DataParallel -> DDP rewrite of one file, one named step per place it touches."""

    def __init__(self, context: RuleContext, loaders: list[cst.Call], outputs: list[cst.Call],
                 reloads: bool, launch: str) -> None:
        self.context = context
        self.names: NameIndex = context.names
        self.loaders = loaders
        self.outputs = outputs
        self.reloads = reloads
        """The file loads with ``torch.load`` after it saves."""
        self.launch = launch
        self.edits = NestedEdits(self.names.ancestors)
        self.imports: list[ImportRequest] = []

    def fix(self, call: cst.Call) -> Fix:
        """Every step, in order; any step that cannot place its edit raises :class:`_Irregular`."""
        statement, guard = self._wrap_statement(call)
        scope = self.names.scope_of(statement)
        self._check_helper_names()
        self._wrap_model(call, statement, guard)
        loader_name = self._shard_training_loader(scope)
        self._set_epoch_each_epoch(scope, loader_name)
        self._outputs_on_rank_zero()
        self._setup_first_cleanup_last(scope)
        self._helpers_after_imports(scope)
        description = (f"migrate to DistributedDataParallel: launch with `{self.launch}` (plain "
                       "`python` still runs one process); DistributedSampler + set_epoch, "
                       "batch_size per process = global // world size, rank-0 saves and prints, "
                       "process group torn down at the end")
        return Fix(Safety.UNSAFE, description, self.edits.replacements(),
                   imports=tuple(dict.fromkeys(self.imports)))

    # ------------------------------------------------------------------ steps
    def _wrap_model(self, call: cst.Call, statement: cst.SimpleStatementLine,
                    guard: cst.If | None) -> None:
        """``DataParallel(model)`` -> ``_ddp_wrap(model)``; the device-count guard dropped."""
        if has_star_args(call) or has_star_kwargs(call):
            raise _Irregular("the DataParallel arguments come from *args/**kwargs")
        wrapped = argument(call, "module", 0)
        if wrapped is None:
            raise _Irregular("DataParallel is called without a module")
        if argument(call, "dim", 3) is not None:
            raise _Irregular("DataParallel(dim=...) has no DDP equivalent")
        new_wrap = cst.Call(cst.Name("_ddp_wrap"), [cst.Arg(wrapped.value)])
        self.edits.rewrite(call, lambda _: new_wrap)
        self.edits.rewrite(statement, lambda line: with_trailing_comment(
            line, f"TFC301: launch with {self.launch}"))  # type: ignore[arg-type]
        if guard is not None:
            self.edits.rewrite(guard, lambda g: g.body.body[0].with_changes(  # type: ignore[attr-defined]
                leading_lines=[*g.leading_lines, *g.body.body[0].leading_lines]))  # type: ignore[attr-defined]

    def _shard_training_loader(self, scope: Scope) -> str:
        """The training DataLoader gets a DistributedSampler and a per-process batch size."""
        loader, loader_name = self._training_loader(scope)
        sampler = self.context.imports.reference(SAMPLER, loader, "torch.utils.data")
        self.imports.extend(r for r in [sampler.needs] if r)
        self.edits.rewrite(loader, lambda _: self._new_loader(loader, sampler.expression))
        self.edits.rewrite(self._line_of(loader), lambda line: line.with_changes(leading_lines=[
            *line.leading_lines,  # type: ignore[attr-defined]
            cst.EmptyLine(comment=cst.Comment(
                "# TFC301: DDP's batch_size is per process: global batch // world size keeps "
                "the global batch"))]))
        return loader_name

    def _set_epoch_each_epoch(self, scope: Scope, loader_name: str) -> None:
        """``sampler.set_epoch(epoch)`` at the top of the epoch loop. Training must happen in
        the wrap's scope, or the teardown at its end would come before it."""
        loop = epoch_loop(self.names, scope, loader_name)
        if loop is None or not isinstance(loop.target, cst.Name) or not isinstance(
                loop.body, cst.IndentedBlock):
            raise _Irregular(f"no single epoch loop over `{loader_name}` found next to the wrap "
                             "for sampler.set_epoch(epoch)")
        self.edits.before(loop.body.body[0], simple_line(
            f"{loader_name}.sampler.set_epoch({loop.target.value})"))

    def _outputs_on_rank_zero(self) -> None:
        """Saves and prints on a line of their own run on rank 0 only."""
        if self.reloads:
            raise _Irregular("the file loads with torch.load after it saves: once saving is on "
                             "rank 0 only, other ranks could read the file before it is written "
                             "(add torch.distributed.barrier() where that is safe)")
        for output in self.outputs:
            line = statement_line(self.names, output)
            if line is not None and len(line.body) == 1 and isinstance(line.body[0], cst.Expr):
                self.edits.rewrite(line, _rank_zero_guard)

    def _setup_first_cleanup_last(self, scope: Scope) -> None:
        """``_ddp_setup()`` first in the training scope, ``_ddp_cleanup()`` at its end."""
        if scope.kind == "module":
            body: list[cst.BaseStatement] = list(self.context.module.body)
        elif isinstance(scope.node, cst.FunctionDef) and isinstance(
                scope.node.body, cst.IndentedBlock):
            body = list(scope.node.body.body)
            first = body[0]
            setup = simple_line("_ddp_setup()", "TFC301: join the process group before anything "
                                "uses a device")
            if is_docstring(first) and len(body) > 1:
                self.edits.before(body[1], setup)
            else:
                self.edits.before(first, setup)
        else:
            raise _Irregular("the wrap is not in a function or at module level")
        last = body[-1]
        cleanup = simple_line("_ddp_cleanup()")
        # Plain isinstance checks (from speed): libcst.matchers costs 0.3 s to import.
        if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and \
                isinstance(last.body[0], cst.Return):
            value = last.body[0].value  # type: ignore[attr-defined]
            constant = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)
            if value is not None and not isinstance(value, constant) and not (
                    isinstance(value, cst.Name) and value.value in ("None", "True", "False")):
                raise _Irregular("the training function returns a value that may still use the "
                                 "process group; tear it down where training really ends")
            self.edits.before(last, cleanup)
        else:
            self.edits.after(last, cleanup)

    def _helpers_after_imports(self, scope: Scope) -> None:
        """The helper block right after the file's leading imports."""
        anchor = self._helper_anchor()
        helpers, needs = self._helpers(anchor)
        self.imports.extend(needs)
        self.edits.after(anchor, *helpers)
        if scope.kind == "module":
            self.edits.after(anchor, simple_line("_ddp_setup()").with_changes(
                leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))

    # ---------------------------------------------------------------- helpers
    def _check_helper_names(self) -> None:
        for scope in self.names.all_scopes:
            for helper in HELPERS:
                if helper in scope.bindings or helper in scope.loads:
                    raise _Irregular(f"the file already uses the name `{helper}`")

    def _line_of(self, node: cst.CSTNode) -> cst.SimpleStatementLine:
        line = statement_line(self.names, node)
        if line is None:
            raise _Irregular("the call is not on a statement line of its own")
        return line

    def _wrap_statement(self, call: cst.Call) -> tuple[cst.SimpleStatementLine, cst.If | None]:
        """The assignment that wraps, and the GPU-count ``if`` around it (dropped by the fix)."""
        statement = self._line_of(call)
        if len(statement.body) != 1 or not isinstance(statement.body[0], cst.Assign | cst.AnnAssign):
            raise _Irregular("the DataParallel wrap is not a plain assignment")
        block = self.names.parent(statement)
        owner = self.names.parent(block) if block is not None else None
        if isinstance(block, cst.Module) or isinstance(owner, cst.FunctionDef):
            return statement, None
        if (isinstance(owner, cst.If) and owner.orelse is None and isinstance(block, cst.IndentedBlock)
                and len(block.body) == 1 and self._is_device_check(owner.test)):
            outer = self.names.parent(owner)
            if isinstance(outer, cst.Module) or isinstance(self.names.parent(outer), cst.FunctionDef):
                return statement, owner
        raise _Irregular("the wrap is inside a condition or loop that is not a plain GPU-count "
                         "check (DDP must wrap in every process)")

    def _is_device_check(self, test: cst.BaseExpression) -> bool:
        return any(self.names.qualified_name(call.func) in DEVICE_CHECKS
                   for call in _calls_in(test))

    def _training_loader(self, scope: Scope) -> tuple[cst.Call, str]:
        shuffled = [c for c in self.loaders
                    if _shuffle_of(c) is not None and not _is_literal_false(_shuffle_of(c))]  # type: ignore[arg-type]
        if len(shuffled) == 1:
            loader = shuffled[0]
        elif not shuffled and len(self.loaders) == 1:
            loader = self.loaders[0]
        elif not self.loaders:
            raise _Irregular("no DataLoader in this file to shard with a DistributedSampler")
        else:
            raise _Irregular("cannot tell which DataLoader is the training one")
        target = assigned_name(self.names, loader)
        if target is None or self.names.scope_of(target) is not scope:
            raise _Irregular("the training DataLoader is not assigned to a name next to the wrap")
        if has_star_args(loader) or has_star_kwargs(loader) or len(positional_args(loader)) > 3:
            raise _Irregular("the DataLoader's arguments cannot all be read")
        if argument(loader, "sampler", 3) is not None or argument(loader, "batch_sampler", 4):
            raise _Irregular("the DataLoader already has a sampler")
        dataset = argument(loader, "dataset", 0)
        if dataset is None or not _pure(dataset.value):
            raise _Irregular("the DataLoader's dataset is not a plain name the sampler can share")
        batch = argument(loader, "batch_size", 1)
        if batch is None or _is_literal_false(batch.value):
            raise _Irregular("the DataLoader has no batch_size to divide by the world size")
        return loader, target.value

    @staticmethod
    def _new_loader(loader: cst.Call, sampler_func: cst.BaseExpression) -> cst.Call:
        dataset = argument(loader, "dataset", 0)
        batch = argument(loader, "batch_size", 1)
        shuffle = argument(loader, "shuffle", 2)
        assert dataset is not None and batch is not None
        shuffle_value = shuffle.value if shuffle is not None else cst.Name("False")
        sampler = cst.Call(sampler_func, [
            cst.Arg(dataset.value.deep_clone(), comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" "))),
            keyword("shuffle", shuffle_value),
        ])
        per_process = cst.BinaryOperation(
            as_left_operand(batch.value, cst.FloorDivide()), cst.FloorDivide(),
            cst.Subscript(cst.Call(cst.Name("_ddp_setup")),
                          [cst.SubscriptElement(cst.Index(cst.Integer("2")))]))
        args = []
        for arg in loader.args:
            if arg is batch:
                args.append(arg.with_changes(value=per_process))
            elif arg is shuffle:
                args.append(arg.with_changes(value=sampler, keyword=cst.Name("sampler"),
                                             equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                                   cst.SimpleWhitespace(""))))
            else:
                args.append(arg)
        new = loader.with_changes(args=args)
        if shuffle is None:
            new = add_keyword(new, "sampler", sampler)
        return new

    def _helper_anchor(self) -> cst.BaseStatement:
        """The last import of the file's leading import block: the helpers go right after it."""
        module = self.context.module
        anchor: int | None = None
        for index, statement in enumerate(module.body):
            if isinstance(statement, cst.SimpleStatementLine):
                if all(isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body):
                    anchor = index
                continue
            break
        if anchor is None:
            raise _Irregular("no import block at the top of the file to put the helpers after")
        top = {id(s): i for i, s in enumerate(module.body)}
        for node in self.edits.nodes():
            outer = [node, *self.names.ancestors(node)]
            index = next((top[id(a)] for a in outer if id(a) in top), None)
            if index is not None and index <= anchor and not isinstance(
                    module.body[index], cst.FunctionDef | cst.ClassDef):
                raise _Irregular("module-level code runs before the end of the import block")
        return module.body[anchor]

    def _helpers(self, anchor: cst.CSTNode) -> tuple[list[cst.BaseStatement], list[ImportRequest]]:
        imports = self.context.imports
        # The helpers go after the import block: name things as the first statement there
        # sees them (the anchor itself is the block's last import, not yet run at its start).
        module = self.context.module
        body = list(module.body)
        after = next((body[i + 1] for i, s in enumerate(body) if s is anchor and i + 1 < len(body)),
                     anchor)
        refs = {
            "torch": imports.reference("torch", after),
            "dist": imports.reference("torch.distributed", after, "torch.distributed"),
            "environ": imports.reference("os.environ", after, "os"),
            "ddp": imports.reference(DDP, after, "torch.nn.parallel"),
        }
        text = _HELPER_TEMPLATE.format(script=self.launch.split()[-1],
                                       **{key: ref.code for key, ref in refs.items()})
        statements = [s.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
                      for s in cst.parse_module(text).body]
        return statements, [ref.needs for ref in refs.values() if ref.needs is not None]


def _shuffle_of(loader: cst.Call) -> cst.BaseExpression | None:
    arg = argument(loader, "shuffle", 2)
    return arg.value if arg is not None else None


def _rank_zero_guard(line: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(line, cst.SimpleStatementLine)
    guard = cst.parse_statement("if _ddp_is_main():  # TFC301: rank 0 only\n    pass\n")
    assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
    return guard.with_changes(
        leading_lines=line.leading_lines,
        body=guard.body.with_changes(body=[line.with_changes(leading_lines=[])]))


RULES = [DataParallelToDDP]


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call under ``node`` (itself included), nested ones too."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(children(current))
