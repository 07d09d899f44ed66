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
from collections.abc import Iterator, Sequence

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function
from torchfix_codemods.analysis.core.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
    positional_args,
)
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.loops import epoch_loop_of
from torchfix_codemods.analysis.core.names import NameIndex, Scope
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.syntax import (
    code_of,
    is_docstring,
    is_main_guard,
    is_none,
    literal_bool,
)
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import children, walk_local
from torchfix_codemods.analysis.facts.dataloaders import DATALOADERS
from torchfix_codemods.analysis.project import LoaderShard, ProjectFacts
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    DATA_PARALLEL_CLASSES,
    DDP_CLASSES,
    PROCESS_GROUP_CALLS,
)
from torchfix_codemods.edits.arguments import add_keyword, keyword
from torchfix_codemods.edits.composer import NestedEdits
from torchfix_codemods.edits.expressions import as_left_operand
from torchfix_codemods.edits.references import ImportRequest, ImportUnavailable
from torchfix_codemods.edits.statements import fresh_name, simple_line, with_trailing_comment
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule, RuleContext

DATA_PARALLEL = DATA_PARALLEL_CLASSES
DDP = "torch.nn.parallel.DistributedDataParallel"
DDP_NAMES = DDP_CLASSES
SAMPLER = "torch.utils.data.DistributedSampler"
RANK_ZERO = frozenset({
    "torch.save", "os.mkdir", "os.makedirs", "os.remove", "os.rename", "os.replace",
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "shutil.rmtree",
    "matplotlib.pyplot.savefig", "json.dump", "pickle.dump",
})
"""Calls that run on rank 0 only once migrated: two processes writing one file (or making
one directory after both saw it missing) race, and a copy of a file rank 0 is still writing
crashes (``torch.save(state, path)`` then ``shutil.copyfile(path, best)``)."""
WRITE_MODES = frozenset("wax")
EVERY_RANK_WRITERS = frozenset({
    "torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter", "logging.FileHandler", "logging.handlers.RotatingFileHandler",
})
"""Objects that write files for as long as they live: the migration cannot guard them (every
later use would need the guard too), so a migrated file reports them."""
FIRST_GPU = ('"cuda:0"', "'cuda:0'")
EVALUATION = frozenset({"torch.no_grad", "torch.inference_mode"})
HELPERS = ("_ddp_setup", "_ddp_is_main", "_ddp_wrap", "_ddp_cleanup", "_ddp_world",
           "_ddp_unwrap")

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
        # DDP imports torch._dynamo when it wraps a model; imported after the group is made,
        # it keeps the group alive past destroy_process_group(), so it is imported first.
        try:
            {import_module}("torch._dynamo")
        except ImportError:  # torch < 2.0
            pass
        backend = "nccl" if {torch}.cuda.is_available() else "gloo"
        if "WORLD_SIZE" in {environ}:
            {dist}.init_process_group(backend)
        else:
            # No launcher: a one-process group on an in-memory store, no address or port.
            store = {dist}.HashStore()
            {dist}.init_process_group(backend, store=store, rank=0, world_size=1)
        # Torn down at exit too: a sys.exit() or an early return skips _ddp_cleanup(). No
        # barrier there: a rank that failed must not wait at exit for ranks still training.
        {atexit}(_ddp_cleanup, False)
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
        wrapped = {ddp}(module, device_ids=[local_rank])
    else:
        wrapped = {ddp}(module)
    # Remembered weakly, so that _ddp_cleanup() can release the group from every live wrapper.
    if not hasattr(_ddp_wrap, "live"):
        _ddp_wrap.live = {weakset}()
    _ddp_wrap.live.add(wrapped)
    return wrapped


def _ddp_cleanup(barrier=True):
    # TFC301: leave the process group once every process is done training (the barrier
    # keeps one rank from tearing down while another still talks to it).
    if {dist}.is_initialized():
        if barrier:
            {dist}.barrier()
        # A live wrapper holds the group: released here, the group and its threads end now,
        # not while the interpreter shuts down (where they can abort the process).
        for wrapped in getattr(_ddp_wrap, "live", ()):
            for name in ("reducer", "logger", "process_group"):
                wrapped.__dict__.pop(name, None)
        {dist}.destroy_process_group()
'''


# Written only where the file pickles the wrapper itself (`torch.save(net, path)`,
# `torch.save({"net": net}, path)`): a pickled DistributedDataParallel cannot be loaded by a
# process without a process group ("Default process group has not been initialized").
_UNWRAP_TEMPLATE = '''
def _ddp_unwrap(module):
    # TFC301: save the model itself, not the DDP wrapper: a pickled DistributedDataParallel
    # loads only in a process that has a process group. torch.load gives the bare model.
    return module.module if isinstance(module, {ddp}) else module
'''


# The helper of a file that builds another file's training DataLoader: the sampler's rank and
# world size come from the environment `torchrun` sets, so the file needs no process group of
# its own and behaves the same whether or not the training file is migrated in this change.
_WORLD_TEMPLATE = '''
def _ddp_world():
    # TFC301: (rank, world size) as `torchrun` sets them; (0, 1) under plain `python`.
    # Read from the environment: building the loader needs no process group.
    return int({environ}.get("RANK", "0")), int({environ}.get("WORLD_SIZE", "1"))
'''


LAUNCH = "torchrun --nproc_per_node=N "


def launch_line(path: str, imported: bool = False) -> str:
    """``torchrun --nproc_per_node=N train.py``; a package's ``__main__.py`` runs as
    ``-m package`` (its relative imports need the package). A module that is ``imported``
    (no ``__main__`` block, nothing run at module level) is not what a user launches: the
    line names the script that imports it."""
    clean = path.split("#", 1)[0]
    script = os.path.basename(clean) or "script.py"
    package = os.path.basename(os.path.dirname(os.path.abspath(clean)))
    if script == "__main__.py" and package.isidentifier():
        return f"{LAUNCH}-m {package}"
    if imported:
        return f"{LAUNCH}<the training script that imports {script}>"
    return LAUNCH + script


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


class DataParallelToDDP(Rule):
    """## What it does
    Finds `nn.DataParallel(model)` (any spelling: `torch.nn.DataParallel`,
    `torch.nn.parallel.DataParallel`, an aliased `from torch.nn import
    DataParallel as DP`, with `device_ids=`/`output_device=`, followed by
    `.cuda()`/`.to(device)`, under any condition: a GPU count, `device == "cuda"`,
    a flag, a GPU list) and migrates the script to `DistributedDataParallel`,
    launched with `torchrun --nproc_per_node=N script.py`. The model may be built
    by a function or in another module and wrapped in a helper; the training
    `DataLoader` may be built inline, returned by a function of the file or of
    another file of the run (the sampler goes where it is built), or read by a
    `train(epoch)` function that the epoch loop calls.
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
    dropped (one device per process). Under a condition, the wrap gets its own:
    `if _ddp_setup()[2] > 1 or <the condition>:`, because under `torchrun` on CPU
    a GPU-count or device check is false, yet every process must wrap or the
    ranks train separate copies, while a single process still wraps wherever
    the original did, so a later `model.module` keeps working under plain
    `python`. In an `and` chain, the parts that name no device (`opt.isTrain
    and len(opt.gpu_ids) and not opt.fp16`) hold for a launch too: `opt.isTrain
    and (_ddp_setup()[2] > 1 or len(opt.gpu_ids)) and not opt.fp16`. The rest
    of the branch (a print, `cudnn.benchmark = True`) keeps its original
    condition.

    A save of the wrapper itself (`torch.save(net, path)`, `torch.save({"net":
    net, "epoch": epoch}, path)`) saves `_ddp_unwrap(net)`, the model: a pickled
    DataParallel loaded anywhere, a pickled DistributedDataParallel only in a
    process that has a process group ("Default process group has not been
    initialized", measured on torch 2.13); code that loads such a file gets the
    model itself, without `.module`. `_ddp_setup()` registers the teardown of
    the process group with `atexit`, so a `sys.exit()` in the epoch loop or an
    early `return` still destroys it; without a barrier, since a rank that
    failed must not wait for ranks still training (measured on torch 2.13,
    gloo, 2 processes, rank 0 raising at its second step: with a barrier at
    exit the launch hung until killed at 120 s, without one it failed in
    16 s). The teardown ends the group for good: on torch 2.13 a group stays
    alive after `destroy_process_group()` while a DDP wrapper holds it, or when
    `torch._dynamo` (which DDP imports when it wraps) was first imported after
    the group was made; gloo's threads then run into interpreter shutdown,
    where about 2 launches in 100 aborted at exit ("terminate called without
    an active exception", measured with two processes under load). So
    `_ddp_setup()` imports `torch._dynamo` before making the group, and the
    teardown releases the group from every live wrapper first (a wrapper's
    `.module` and `state_dict()` keep working; a forward after the teardown
    does not). A batch scaled by the GPU count
    (`if n_gpu > 1: batch_size *= n_gpu`) is the global batch DataParallel split
    across the GPUs; it stays, since the loader divides it by the world size
    (measured with `device_count()` reporting 2: the same weights under plain
    `python` and `torchrun --nproc_per_node=2`). Where the data side is only
    reported, the report names that line: until the division is in place each
    process would put the whole scaled batch on its one GPU. A `.cuda()`/
    `.to(device)` on the wrapper is dropped (`_ddp_wrap` moves the model to this
    process's device) and `"cuda:0"` becomes `"cuda"` (this process's GPU after
    `set_device(local_rank)`; GPU 0 in a one-process run, as before).
    `os.mkdir`/`os.makedirs`, `shutil` copies and moves, `os.remove`/`rename`/
    `replace`, `plt.savefig` and `json.dump`/`pickle.dump` on a line of their
    own run on rank 0 with the saves (a guarded save followed by an unguarded
    copy of the file made rank 1 copy a file rank 0 was still writing), and a
    `with open(path, "a")` block (or `"w"`, `"x"`) runs on rank 0 as a whole
    when nothing it binds is read after it: a CSV log appended every epoch
    gets each line once, not once per process. A write to a path that names
    the rank (`open(f"order.{rank}", "w")`) is each process's own and stays on
    every process. A `SummaryWriter`, a logging `FileHandler` and a file opened
    outside a `with` keep writing on every process (every later use would need
    the guard): a migrated file reports each one not under a rank condition.
    Prints made by functions of other modules are not seen.

    Several models are migrated together when their wraps are in one function
    (or all at module level): a GAN's `netG = DataParallel(netG)` and `netD =
    DataParallel(netD)`, under one condition or each under its own (each run
    of consecutive wraps in a branch gets `if _ddp_setup()[2] > 1 or
    <condition>:`, the other
    statements keep the original condition, in their order), an element of a
    comprehension (`[DataParallel(m) for m in models]`), or an assignment
    directly in the body of a `for` loop over models (`models[i] =
    DataParallel(m)`): every process runs those loops the same way, so every
    process wraps every model. Measured on torch 2.13 (gloo, 2 processes): a
    GAN whose discriminator runs twice per step (real, then detached fake) and
    whose generator step backpropagates through the discriminator reaches the
    one-process weights of both models with the default
    `find_unused_parameters=False`, as does an ensemble wrapped by a
    comprehension and a `for` loop. A wrap under a condition inside a loop, in
    a `while` loop, or models wrapped in different functions stay reported.
    One behaviour DataParallel did not have: a model with parameters that take
    no part in the loss (an unused head, a branch a step skips) raises at its
    second step under DDP ("Expected to have finished reduction in the prior
    iteration before starting a new one", measured on torch 2.13, gloo, 2
    processes); the tool cannot see which parameters a loss reaches, so it
    does not guess: pass `find_unused_parameters=True` in `_ddp_wrap` for such
    a model (it then runs, at the cost of a graph walk every step).

    A training `DataLoader` built by a module-level function of another file of
    the run (`train_loader = make_loader(...)`) is sharded where it is built:
    that file gets `sampler=DistributedSampler(dataset, num_replicas=
    _ddp_world()[1], rank=_ddp_world()[0], shuffle=...)` and `batch_size //
    _ddp_world()[1]`, where `_ddp_world()` reads `RANK` and `WORLD_SIZE` from
    the environment (torch 2.13: `DistributedSampler` given `num_replicas` and
    `rank` calls nothing in `torch.distributed`, so that file needs no process
    group, and `python` alone gives (0, 1): every sample, as before). The
    training file gets `if isinstance(loader.sampler, DistributedSampler):
    loader.sampler.set_epoch(epoch)`, so that it still runs when the other file
    is left as it was (a plain `DataLoader`'s `SequentialSampler` has no
    `set_epoch`). The project index pairs the two only when the function
    returns one `DataLoader` it builds (no `*args`/`**kwargs`, a `batch_size`,
    no sampler of its own), is called exactly once in the run (a loader also
    used for evaluation or by another script would be sharded there too), the
    training file's wraps are in one function, it trains and has no DDP path of its own, and both
    files are fixed by this rule with the same policy; a file run alone, or
    excluded, is never edited for the other. A wrap inside a class that another
    file builds with its training loader (BERT-pytorch: `loader =
    DataLoader(...)`, `trainer = BERTTrainer(..., train_dataloader=loader)`,
    `for epoch in ...: trainer.train(epoch)`) is paired the same way when the
    loader is read only there, one epoch loop calls a method of the trainer
    with the epoch, and the class is built once in the run: the building file
    gets the sampler and `set_epoch` (both its own, so it is whole alone), the
    class's file the model side, and the launch line names the building script
    (`-m package` for a package's `__main__.py`). Otherwise, and whenever the
    training `DataLoader` cannot be placed (none in the file, no single epoch
    loop), only the model side is migrated and a second finding names the data
    side's edit: the function's file and line and why it was not edited, the
    call an epoch loop reads when that function's file is not in the run, or
    the line that hands the loader to the class; the epoch loop for
    `set_epoch`. It stays reported on the migrated file until `set_epoch` is
    called there.

    Measured with torch 2.13: ten DataParallel scripts of different
    shapes (a module-level tutorial script with a GPU-count guard,
    pytorch-cifar's device guard and `train(epoch)`, a flag guard with an
    aliased import, `device_ids`, `.cuda()` and an inline dataset, factory
    functions, a multi-file project whose loader is built by a function of
    another module, a BERT-shaped project whose entry script hands the loader
    to a trainer class, a two-model GAN under one guard, models wrapped by a
    comprehension and a `for` loop, and two further training scripts), migrated and run under
    `torchrun --standalone --nproc_per_node=2` (gloo, CPU) and as plain
    `python`, end with the original one-process weights (rtol 1e-5; no
    shuffle, no BatchNorm). The multi-file project with only one of its two
    files migrated (the other as written) ends with the same weights too,
    plain and under torchrun (a file whose model side is not migrated runs as
    plain `python` only); so does the BERT-shaped project with one of its files
    migrated: where the data side is not sharded, every process reads the whole
    data and DDP averages identical gradients. With `shuffle=True` each rank reads exactly
    `randperm(64, seed=epoch)[rank::2]`, a new order each epoch, with the
    loader built in the same file or by another module's function. Four
    reduced real scripts, each run in a process of its own (a checkpoint that
    pickles the wrapper and scales its batch by the GPU count, run with
    `device_count()` reporting 2; a `sys.exit()` inside the epoch loop; a
    pix2pixHD-shaped wrap under `opt.isTrain and len(opt.gpu_ids) and not
    opt.fp16` used through `.module`; a `save_checkpoint` helper that copies
    the best checkpoint, beside a CSV log and a JSON summary) reach the
    original weights plain and under torchrun (2 processes); rank 1 writes no
    file and prints nothing, rank 0 writes the original's files, the pickled
    model loads in a process without a process group, and no process group is
    left at exit.
    A `DataLoader` named for evaluation (`val_loader`, `testloader`) is never
    taken for the training one; where the training batches come from
    elsewhere (pix2pixHD: `dataset = data_loader.load_data()`, a loader class
    of another file), the data-side finding names what the epoch loop reads,
    and it stays on the migrated file until `set_epoch` is called there. A
    module that only builds the model (no training, nothing run when it is
    run) gets `torchrun --nproc_per_node=N <the training script that imports
    models.py>`: it is not what a user launches.

    Report only, with the launch line and the checklist, when the file already
    has a DDP or process-group path, when models are wrapped in different
    functions, when the wrap is inside a `while` loop, an `else` branch, a
    nested block (a condition inside a loop) or a larger expression
    (`DataParallel(m).to(torch.float64)`), when a place for the helpers cannot
    be found, when the training function returns a value that may outlive the
    process group, when the file loads with `torch.load` after it saves
    (rank-0-only saving would race other ranks), or when one forward of a
    wrapped model is followed by two backward passes in one block
    (`loss_G, loss_D = net(z, real)`, then `loss_G.backward()` and
    `loss_D.backward()`): DDP averages gradients in the first backward after a
    forward only, and the second trains each process apart with no error
    (measured on torch 2.13, gloo, 2 processes: 0.27 from the one-process
    weights after 5 steps); wrap the parts each loss reaches in a DDP of their
    own, or run a forward per backward. Of several wraps, the refusal names the
    one refused (its line and function) and the blocks around it. A file with no backward and no
    optimizer that evaluates (`.eval()`, `no_grad`) is told that no migration is
    needed: DDP synchronises gradients, and there are none.
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
    project_facts = ("module-classes", "loader-shards")  # a training DataLoader of another file
    # `_ddp_wrap`: a file migrated earlier, whose data side stays reported until it is done.
    needs = Needs.any_of("DataParallel", fragments=("_ddp_wrap",))
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
            "import torch\nfrom torch import nn\nimport atexit\nimport os\nimport importlib\n"
            "import weakref\n\n"
            + _HELPER_TEMPLATE.format(
                script="case.py", environ="os.environ", torch="torch", dist="torch.distributed",
                ddp="nn.parallel.DistributedDataParallel", atexit="atexit.register",
                import_module="importlib.import_module", weakset="weakref.WeakSet")
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
        # Models wrapped in two different functions: reported with the checklist.
        Example("import torch\nfrom torch import nn\n\n\ndef build_g():\n"
                "    return nn.DataParallel(G())\n\n\ndef build_d():\n"
                "    d = nn.DataParallel(D())\n    return d\n"),
        Example(
            "import torch\nfrom torch import nn\nimport torch.distributed as dist\n"
            "if dist.is_initialized():\n"
            "    model = nn.parallel.DistributedDataParallel(net)\nelse:\n"
            "    model = nn.DataParallel(net)\n"
        ),
    )

    @classmethod
    def wanted_by_project(cls, project: ProjectFacts) -> bool:
        """A file with no DataParallel that builds another file's training DataLoader."""
        return bool(project.training_loaders())

    def visit_Module(self, node: cst.Module) -> None:
        self._wraps: list[cst.Call] = []
        self._loaders: list[cst.Call] = []
        self._outputs: list[cst.Call] = []
        self._isinstance: list[tuple[cst.Call, cst.Arg]] = []
        self._distributed = False
        self._saved = False
        self._reloads = False
        self._trains = False
        self._evaluates = False
        self._first_gpu: list[cst.SimpleString] = []
        self._migrated_wraps: list[cst.Call] = []
        self._set_epoch = False
        self._batch_scaling: list[cst.CSTNode] = []
        self._file_writes: list[cst.Call] = []
        self._writers: list[cst.Call] = []

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.MultiplyAssign):
            self._note_batch_scaling(node, node.target, [node.value])

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) == 1 and isinstance(value, cst.BinaryOperation) and \
                isinstance(value.operator, cst.Multiply):
            self._note_batch_scaling(node, node.targets[0].target, [value.left, value.right])

    def _note_batch_scaling(self, node: cst.CSTNode, target: cst.BaseExpression,
                            factors: list[cst.BaseExpression]) -> None:
        """``batch_size *= n_gpu``: the global batch DataParallel split across the GPUs."""
        if "batch" in code_of(target).lower() and any(_about_devices(f) for f in factors):
            self._batch_scaling.append(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.value in FIRST_GPU:
            self._first_gpu.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        self._note_training_or_evaluation(node, qualified)
        if isinstance(node.func, cst.Name) and node.func.value == "_ddp_wrap":
            self._migrated_wraps.append(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
            self._set_epoch = True
        if qualified in DATA_PARALLEL:
            if not self._implements_data_parallel(node):
                self._wraps.append(node)
        elif qualified in DDP_NAMES or (qualified or "").startswith(PROCESS_GROUP_CALLS):
            # This rule's own helpers (a file migrated earlier) are not the user's DDP path.
            if not self._in_helper(node):
                self._distributed = True
        elif qualified in DATALOADERS:
            self._loaders.append(node)
        elif self._is_builtin(node.func, "open"):
            mode = argument(node, "mode", 1)
            if mode is not None and isinstance(mode.value, cst.SimpleString) and \
                    WRITE_MODES & set(str(mode.value.evaluated_value)):
                self._file_writes.append(node)
                if not isinstance(self.names.parent(node), cst.WithItem):
                    self._writers.append(node)
        elif qualified in EVERY_RANK_WRITERS:
            self._writers.append(node)
        elif qualified in RANK_ZERO or self._is_builtin(node.func, "print"):
            self._outputs.append(node)
            self._saved = self._saved or qualified == "torch.save"
        elif qualified == "torch.load" and self._saved:
            self._reloads = True
        elif self._is_builtin(node.func, "isinstance"):
            classes = argument(node, "class_or_tuple", 1)
            if classes is not None and self._needs_ddp(classes.value) and \
                    not self._negated(node) and not self._implements_data_parallel(node):
                self._isinstance.append((node, classes))

    def _note_training_or_evaluation(self, node: cst.Call, qualified: str | None) -> None:
        """``.backward()`` or a ``torch.optim`` class: this file trains. ``.eval()``,
        ``no_grad``/``inference_mode``: it evaluates."""
        if isinstance(node.func, cst.Attribute):
            if node.func.attr.value == "backward":
                self._trains = True
            elif node.func.attr.value == "eval" and not node.args:
                self._evaluates = True
        if qualified is not None:
            if qualified.startswith("torch.optim."):
                self._trains = True
            elif qualified in EVALUATION:
                self._evaluates = True

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
        if not self._wraps and self._migrated_earlier():
            self._report_data_side_left()
        if not self._wraps:
            self._shard_for_other_files()
        for call, classes in self._isinstance:
            self._report_isinstance(call, classes, migrated)
        if migrated:
            self._report_every_rank_writers()

    def _report_every_rank_writers(self) -> None:
        """A ``SummaryWriter``, a logging ``FileHandler`` or a file opened outside a ``with``
        writes on every process once the file runs under ``torchrun``; not where a rank
        condition guards it or the path names the rank."""
        for call in self._writers:
            if self._in_helper(call) or any(
                    isinstance(a, cst.If) and "rank" in code_of(a.test).lower()
                    or isinstance(a, cst.If) and "_ddp_is_main" in code_of(a.test)
                    for a in self.names.ancestors(call)) or "rank" in code_of(call).lower():
                continue
            what = " ".join(code_of(call.func).split())
            self.report(call, f"`{what}(...)` writes on every process once this file runs under "
                        "DDP (duplicated, interleaved output in one file): create and use it on "
                        "rank 0 only (`if _ddp_is_main():`), or give each rank a path of its own")

    def _shard_for_other_files(self) -> None:
        """The loaders this file builds for another file's DataParallel training loop (the
        project index pairs them): a DistributedSampler here, ``set_epoch`` there."""
        for shard in self.context.project.training_loaders():
            if shard.passed_as is None:
                function = next((s for s in self.context.module.body
                                 if isinstance(s, cst.FunctionDef)
                                 and s.name.value == shard.function), None)
                loaders = [c for c in self._loaders
                           if self.names.enclosing(c, cst.FunctionDef) is function]
                if function is None:
                    continue
            else:
                lines = positions_of(self.context.module, self._loaders)
                loaders = [c for c in self._loaders
                           if lines[id(c)].start.line == shard.loader_line]
            if len(loaders) != 1:
                continue  # the index and this file disagree: nothing to pair
            loader = loaders[0]
            if argument(loader, "sampler", 3) is not None:
                continue  # sharded already (an earlier round of this run, or an earlier run)
            message = (f"the training DataLoader of {shard.training_path}'s DataParallel -> DDP "
                       "migration: each process must read its own shard")
            launch = launch_line(self.context.path if shard.passed_as else shard.training_path)
            migration = self._migration(launch)
            try:
                fix = migration.shard_for_other_file(loader, shard)
            except (_Irregular, ImportUnavailable) as why:
                self.report(loader, f"{message}; no automatic rewrite: {why}; add "
                            "`sampler=torch.utils.data.DistributedSampler(dataset, shuffle=<its "
                            "shuffle>)` and divide `batch_size` by the world size")
                continue
            self.report(loader, message, fix=fix)

    def _report_data_side_left(self) -> None:
        """A file whose model side this rule migrated (this run or an earlier one) and that
        still calls no ``set_epoch``: the data side is left, reported until it is done."""
        if not self._migrated_wraps or self._set_epoch or self._in_helper(self._migrated_wraps[0]):
            return
        migration = self._migration(self._launch(self._migrated_wraps[0]))
        migration.wrap = self._migrated_wraps[0]
        if migration.passed_shard() is not None:
            return  # the file that builds the loader shards it and calls set_epoch
        owner = self.names.enclosing(self._migrated_wraps[0], cst.ClassDef)
        if owner is not None and self.context.project.loaders_passed_to(owner.name.value):
            # Another file builds the loader and hands it to this class: the data side is
            # that file's (the index pairs the two only while this file still wraps with
            # DataParallel, so a migrated class cannot tell whether it was sharded there).
            return
        try:
            migration.locate_data_side()
            why = "the training DataLoader has no DistributedSampler"
        except _DataSide as reason:
            why = str(reason)
        self.report(self._migrated_wraps[0], migration.data_side_report(why))

    def _migrated_earlier(self) -> bool:
        """The file holds this rule's helper block: its wrap was migrated (in an earlier
        round of this run, when the check sat inside a statement the migration rewrote)."""
        scope = self.names.module_scope
        return scope is not None and any(
            binding.kind == "def" for binding in scope.bindings.get("_ddp_wrap", []))

    def _report_wraps(self) -> bool:
        """Reports every wrap; True when the file's one wrap gets the migration fix."""
        if not self._wraps:
            return False
        launch = self._launch(self._wraps[0])
        if self._distributed:
            for call in self._wraps:
                self.report(call, f"`nn.DataParallel` next to a DistributedDataParallel/process-"
                            f"group path in the same file: no rewrite; make DDP the only path, "
                            f"launched with `{launch}` (DDP's batch_size is per process)")
            return False
        call = self._wraps[0]
        if self._evaluates and not self._trains:
            self.report(call, "`nn.DataParallel` in evaluation-only code (no backward or "
                        "optimizer in this file): no migration needed, DistributedDataParallel "
                        "exists to synchronise gradients; for multi-process inference launch "
                        f"with `{launch}` and shard the data with DistributedSampler(shuffle=False)",
                        note=True)
            return False
        remaining: str | None = None
        try:
            try:
                migration = self._migration(launch)
                fix = migration.fix(self._wraps)
            except _DataSide as why:
                located = migration
                migration = self._migration(launch)
                fix = migration.fix(self._wraps, data=False)
                migration.shard, migration.loop = located.shard, located.loop
                remaining = migration.data_side_report(str(why))
        except (_Irregular, ImportUnavailable) as why:
            for wrap in self._wraps:
                self.report(wrap, f"{self.message} (`{launch}`; DDP's batch_size is per "
                            f"process); no automatic rewrite: {why}; {CHECKLIST}")
            return False
        passed = migration.passed_shard()
        if remaining is not None and passed is not None:
            self.report(call, f"{self.message}: `{launch}`; the model side is migrated here, "
                        f"{passed.loader_path} shards the loader it hands to this class "
                        f"(`{passed.passed_as}=`)", fix=fix)
        elif remaining is None:
            self.report(call, f"{self.message}: `{launch}`; DDP's batch_size is per process "
                        "(the fix divides it by the world size to keep the global batch)", fix=fix)
        else:
            self.report(call, f"{self.message}: `{launch}`; the model side is migrated, the data "
                        "side is reported on this line", fix=fix)
            self.report(call, remaining)
        return True

    def _launch(self, wrap: cst.Call) -> str:
        """The launch line: this file, or the script that builds the loader and hands it to
        the class around the wrap (the script a user runs, when the index pairs them)."""
        owner = self.names.enclosing(wrap, cst.ClassDef)
        shard = self.context.project.passed_loader_shard(owner.name.value) if owner else None
        if shard is not None and shard.problem is None:
            return launch_line(shard.loader_path)
        # A module that builds the model for other files (no training, nothing run when it is
        # run) is not what a user launches.
        library = not self._trains and not runs_as_script(self.context.module)
        return launch_line(self.context.path, imported=library)

    def _migration(self, launch: str) -> _Migration:
        migration = _Migration(self.context, self._loaders, self._outputs, self._reloads, launch)
        migration.first_gpu = self._first_gpu
        migration.batch_scaling = self._batch_scaling
        migration.file_writes = self._file_writes
        return migration

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
        self.loader: cst.Call | None = None
        """The training DataLoader, once found (for the data side's report)."""
        self.loop: cst.For | None = None
        """Its epoch loop, once found."""
        self.first_gpu: list[cst.SimpleString] = []
        """The file's ``"cuda:0"`` literals."""
        self.batch_scaling: list[cst.CSTNode] = []
        self.file_writes: list[cst.Call] = []
        """``open(path, "w"/"a"/"x")`` calls of the file."""
        """``batch_size *= n_gpu`` statements of the file."""
        self.unwraps = False
        """A save of the wrapper itself was rewritten to ``_ddp_unwrap(...)``."""
        self.wrap: cst.Call | None = None
        self.loader_name: str | None = None
        """The name the epoch loop reads the loader by, when only that is known."""
        self.shard: LoaderShard | None = None
        """The training DataLoader's shard in the file that builds it, when that is another
        file of the run (the project index pairs the two)."""

    def fix(self, calls: list[cst.Call], data: bool = True) -> Fix:
        """Every step, in order; any step that cannot place its edit raises :class:`_Irregular`
        (:class:`_DataSide` for the sampler, batch size and set_epoch: with ``data=False``
        only the model side is migrated). ``calls`` are the file's wraps: one model, or
        several (a GAN's generator and discriminator, a loop over models), all in one scope."""
        self.wrap = calls[0]
        placed = [self._placed(call, len(calls)) for call in calls]
        scopes = {id(self.names.scope_of(unit)) for unit, _, _ in placed}
        if len(scopes) != 1:
            raise _Irregular("the models are wrapped in different functions")
        scope = self.names.scope_of(placed[0][0])
        self._check_helper_names()
        self._one_backward_per_forward(placed)
        for call, (_, guard, replaced) in zip(calls, placed, strict=True):
            self._wrap_model(call, replaced, guard)
        guards: list[cst.If] = []
        for _, guard, _ in placed:
            if guard is not None and not any(g is guard for g in guards):
                guards.append(guard)
        for guard in guards:
            self._split_guard(guard, [unit for unit, g, _ in placed if g is guard])
        self._setup_first(scope)  # before the data side's statements, which may share its anchor
        training: Scope | None = None
        if data:
            loader_name, loop = self._shard_training_loader()
            self._set_epoch_each_epoch(loop, loader_name)
            training = self.names.scope_of(loop)
        self._outputs_on_rank_zero()
        self._save_the_model_not_the_wrapper(placed)
        self._own_device_per_process()
        if training is not None:
            self._cleanup_last(training)
        self._helpers_after_imports(scope)
        for guard in guards:
            self._check_guard_untouched(guard)
        if data:
            description = (f"migrate to DistributedDataParallel: launch with `{self.launch}` "
                           "(plain `python` still runs one process); DistributedSampler + "
                           "set_epoch, batch_size per process = global // world size, rank-0 "
                           "saves and prints, process group torn down at the end")
        else:
            description = (f"migrate the model to DistributedDataParallel: launch with "
                           f"`{self.launch}` (plain `python` still runs one process); rank-0 "
                           "saves and prints; the data side is reported, not edited")
        return Fix(Safety.UNSAFE, description, self.edits.replacements(),
                   imports=tuple(dict.fromkeys(self.imports)))

    def shard_for_other_file(self, loader: cst.Call, shard: LoaderShard) -> Fix:
        """This file builds the training DataLoader of ``shard.training_path``: the sampler
        and the per-process batch here, with ``_ddp_world()`` (the environment's rank and
        world size), so this file's edit is right whether or not the other file is migrated."""
        self._check_helper_names()
        self.loader = loader
        if shard.passed_as is not None:
            self._set_epoch_of_passed_loader(loader, shard)
        world = cst.parse_expression("_ddp_world()[1]")
        placement = [keyword("num_replicas", world),
                     keyword("rank", cst.parse_expression("_ddp_world()[0]"))]
        self._add_sampler(loader, world, placement)
        anchor = self._helper_anchor()
        helpers, needs = self._helpers(anchor, _WORLD_TEMPLATE)
        self.imports.extend(needs)
        self.edits.after(anchor, *helpers)
        return Fix(Safety.UNSAFE,
                   f"DistributedSampler (rank and world size from the environment `torchrun` "
                   f"sets) and batch_size per process = global // world size; "
                   f"{shard.training_path} calls set_epoch every epoch",
                   self.edits.replacements(), imports=tuple(dict.fromkeys(self.imports)))

    def _set_epoch_of_passed_loader(self, loader: cst.Call, shard: LoaderShard) -> None:
        """``loader = DataLoader(...)`` handed to ``trainer = Trainer(..., key=loader)``, and
        ``for epoch in ...: trainer.train(epoch)``: ``set_epoch`` at the top of that loop,
        here, where the sampler is added too (this file's edit is whole on its own)."""
        target = assigned_name(self.names, loader)
        reads = self.names.loads_in(self.names.scope_of(target), target.value) \
            if target is not None else []
        argument_node = self.names.parent(reads[0]) if len(reads) == 1 else None
        constructor = self.names.parent(argument_node) if argument_node is not None else None
        instance = assigned_name(self.names, constructor) if isinstance(
            constructor, cst.Call) else None
        if target is None or instance is None:
            raise _Irregular(f"`{shard.target}` is not handed to one constructor whose result "
                             "is assigned to a name")
        loops: dict[int, cst.For] = {}
        for read in self.names.loads_in(self.names.scope_of(instance), instance.value):
            method = self.names.parent(read)
            call = self.names.parent(method) if isinstance(method, cst.Attribute) else None
            if not (isinstance(call, cst.Call) and call.func is method):
                continue
            passed = {a.value.value for a in call.args if isinstance(a.value, cst.Name)}
            for ancestor in self.names.ancestors(call):
                if isinstance(ancestor, cst.For) and isinstance(ancestor.target, cst.Name) and \
                        ancestor.target.value in passed:
                    loops[id(ancestor)] = ancestor
                    break
        if len(loops) != 1:
            raise _Irregular(f"no single epoch loop calls a method of `{instance.value}` with "
                             "the epoch")
        loop = next(iter(loops.values()))
        if not isinstance(loop.body, cst.IndentedBlock) or not isinstance(loop.target, cst.Name):
            raise _Irregular("the epoch loop's body is not an indented block")
        self.edits.before(loop.body.body[0], simple_line(
            f"{target.value}.sampler.set_epoch({loop.target.value})",
            f"TFC301: {os.path.basename(shard.training_path)} wraps the model"))

    def locate_data_side(self) -> None:
        """The training DataLoader and its epoch loop, for :meth:`data_side_report`."""
        self.loader = self._training_loader()
        self.loop = epoch_loop_of(self.names, self._loader_name(self.loader))

    def data_side_report(self, why: str) -> str:
        """The remaining finding of a model-side-only migration: the exact edit the data
        side needs, where this file shows it."""
        where = self._where_loader_is_built()
        lines = positions_of(self.context.module, [n for n in (self.loader, self.loop) if n])
        epoch = (f"at the top of the epoch loop (line {lines[id(self.loop)].start.line})"
                 if self.loop is not None else "at the top of every epoch")
        here = self.loader is not None or bool(self._candidate_loaders())
        world = "`_ddp_setup()[2]`" if here else (
            "`int(os.environ.get(\"WORLD_SIZE\", \"1\"))` there, with `num_replicas=` and "
            "`rank=` read from WORLD_SIZE and RANK")
        name = self.shard.target if self.shard is not None else self.loader_name or "loader"
        return (f"DataParallel -> DDP: data side not migrated ({why}). Until it is, every "
                "process reads the whole dataset (each step's gradient is the same as in one "
                "process, so the weights match, but nothing is faster). To shard it: in "
                f"{where} add `sampler=torch.utils.data.DistributedSampler(dataset, "
                "shuffle=<its shuffle>)` in place of `shuffle=` and divide `batch_size` by "
                f"the world size ({world}); {epoch} call "
                f"`{name}.sampler.set_epoch(epoch)`; call `_ddp_cleanup()` where training ends"
                + self._scaling_note())

    def _scaling_note(self) -> str:
        """``batch_size *= n_gpu`` made the global batch DataParallel split across the GPUs;
        until the loader divides it by the world size, each process puts it whole on its one
        GPU."""
        if not self.batch_scaling:
            return ""
        lines = positions_of(self.context.module, self.batch_scaling)
        where = ", ".join(str(lines[id(n)].start.line) for n in self.batch_scaling)
        return (f"; line {where} multiplies the batch size by the GPU count (the global batch "
                "DataParallel split across GPUs): until batch_size is divided by the world "
                "size, each process takes that whole batch on its one GPU")

    def _where_loader_is_built(self) -> str:
        lines = positions_of(self.context.module, [n for n in (self.loader,) if n])
        if self.loader is not None:
            where = f"the training DataLoader (line {lines[id(self.loader)].start.line})"
        elif self._candidate_loaders():
            candidates = self._candidate_loaders()
            found = positions_of(self.context.module, candidates)
            where = "the training DataLoader (one of lines " + ", ".join(
                str(found[id(c)].start.line) for c in candidates) + ")"
        elif self.shard is not None:
            where = (f"`{self.shard.function}()` in {self.shard.loader_path} (its DataLoader, "
                     f"line {self.shard.loader_line})")
        else:
            where = self._loader_elsewhere() or self._loader_passed_in() or \
                "the training DataLoader (not in this file)"
        return where

    def passed_shard(self) -> LoaderShard | None:
        """The loader another file hands to the class around the wrap and shards itself."""
        owner = self.names.enclosing(self.wrap, cst.ClassDef) if self.wrap is not None else None
        shard = self.context.project.passed_loader_shard(owner.name.value) if owner else None
        return shard if shard is not None and shard.problem is None else None

    def _loader_passed_in(self) -> str | None:
        """The wrap is in a class another file builds with a DataLoader (a trainer given
        ``train_dataloader=``): where that file passes it, from the project index."""
        owner = self.names.enclosing(self.wrap, cst.ClassDef) if self.wrap is not None else None
        if owner is None:
            return None
        passed = self.context.project.loaders_passed_to(owner.name.value)
        if not passed:
            return None
        shard = self.context.project.passed_loader_shard(owner.name.value)
        unpaired = f" (not edited: {shard.problem})" if shard is not None and shard.problem else ""
        return "the DataLoader passed as " + "; ".join(passed) + unpaired

    def _loader_elsewhere(self) -> str | None:
        """Where a loader of this file comes from when another file builds it: a function the
        project index says returns a DataLoader, else the call whose result an epoch loop of
        this file reads (its file is not in the run, or not known to the index)."""
        calls = self._assigned_calls()
        for _, function in calls:
            facts = self.context.project.returns(function)
            if facts is not None and facts.kind == "dataloader":
                return f"the DataLoader built by `{function}()` ({facts.reason})"
        for target, function in calls:
            if function.startswith(("torch.", "builtins.")) or "." not in function:
                continue
            loop = epoch_loop_of(self.names, target)
            if loop is not None:
                self.loop, self.loader_name = loop, target.value
                line = positions_of(self.context.module, [target])[id(target)].start.line
                return (f"the loader `{function}()` returns (line {line} assigns it to "
                        f"`{target.value}`, which the epoch loop reads; that function's file "
                        "is not in this run)")
        return self._batches_read_by_an_epoch_loop()

    def _batches_read_by_an_epoch_loop(self) -> str | None:
        """``dataset = data_loader.load_data()`` (pix2pixHD: a loader class of another file)
        read by one epoch loop, not named for evaluation: where the training batches come
        from, when nothing closer is known."""
        module = self.context.module
        found = []
        for scope in self.names.all_scopes:
            for bindings in scope.bindings.values():
                for binding in bindings:
                    value = binding.value
                    target = assigned_name(self.names, value) if isinstance(value, cst.Call) \
                        else None
                    if target is None or any(word in target.value.lower()
                                             for word in ("test", "val", "eval")):
                        continue
                    loop = epoch_loop_of(self.names, target)
                    if loop is not None:
                        found.append((target, value, loop))
        if len(found) != 1:
            return None
        target, value, loop = found[0]
        self.loop, self.loader_name = loop, target.value
        line = positions_of(module, [target])[id(target)].start.line
        return (f"the loader behind `{target.value}`, which the epoch loop reads (line {line}: "
                f"`{target.value} = {' '.join(code_of(value).split())}`)")

    # ------------------------------------------------------------------ steps
    def _wrap_model(self, call: cst.Call, replaced: cst.BaseExpression,
                    guard: cst.If | None) -> None:
        """``DataParallel(model)`` -> ``_ddp_wrap(model)`` (a ``.cuda()``/``.to(device)`` on
        the wrapper goes: ``_ddp_wrap`` moves the model to this process's device)."""
        if has_star_args(call) or has_star_kwargs(call):
            raise _Irregular("the DataParallel arguments come from *args/**kwargs")
        wrapped = argument(call, "module", 0)
        if wrapped is None:
            raise _Irregular("DataParallel is called without a module")
        if argument(call, "dim", 3) is not None:
            raise _Irregular("DataParallel(dim=...) has no DDP equivalent")
        new_wrap = cst.Call(cst.Name("_ddp_wrap"), [cst.Arg(wrapped.value)])
        self.edits.rewrite(replaced, lambda _: new_wrap)
        line = statement_line(self.names, call)
        if guard is None and line is not None:
            self.edits.rewrite(line, lambda node: with_trailing_comment(
                node, f"TFC301: launch with {self.launch}"))  # type: ignore[arg-type]

    def _split_guard(self, guard: cst.If, units: list[cst.BaseStatement]) -> None:
        """Under a condition, the wraps get their own: world size > 1, so every process of a
        launch wraps. The rest of the branch keeps the original condition, in order: each
        run of consecutive wraps becomes an ``if _ddp_setup()[2] > 1:`` of its own."""
        body = list(guard.body.body)
        wraps = {i for i, s in enumerate(body) if any(s is u for u in units)}
        condition = " ".join(code_of(guard.test).split())
        header = cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "),
            comment=cst.Comment(f"# TFC301: every process of a launch wraps, one process "
                                f"where it did (was: `if {condition}:`)"))

        def split(node: cst.CSTNode) -> cst.FlattenSentinel:
            assert isinstance(node, cst.If) and isinstance(node.body, cst.IndentedBlock)
            statements = list(node.body.body)
            runs: list[tuple[bool, list[cst.BaseStatement]]] = []
            for index, statement in enumerate(statements):
                wrap = index in wraps
                if runs and runs[-1][0] == wrap:
                    runs[-1][1].append(statement)
                else:
                    runs.append((wrap, [statement]))
            world = _wrap_condition(node.test)
            parts: list[cst.BaseStatement] = []
            for wrap, run in runs:
                leading = node.leading_lines if not parts else []
                if wrap:
                    parts.append(node.with_changes(
                        test=world, leading_lines=leading,
                        body=node.body.with_changes(body=run, header=header)))
                else:
                    parts.append(node.with_changes(leading_lines=leading,
                                                   body=node.body.with_changes(body=run)))
            return cst.FlattenSentinel(parts)

        self.edits.rewrite(guard, split)

    def _check_guard_untouched(self, guard: cst.If) -> None:
        """The guard is split by position: no other step may insert statements inside it."""
        for node in self.edits.nodes():
            if self.edits.inserts_around(node) and any(a is guard for a in self.names.ancestors(node)):
                raise _Irregular("other migrated statements sit inside the condition around "
                                 "the wrap")

    def _shard_training_loader(self) -> tuple[str, cst.For]:
        """The training DataLoader gets a DistributedSampler and a per-process batch size."""
        elsewhere = self._loader_of_other_file()
        if elsewhere is not None:
            return elsewhere
        loader = self._training_loader()
        self.loader = loader
        target = self._loader_name(loader)
        loop = self._epoch_loop(target)
        self._check_epoch_loop(loop, target)
        self._add_sampler(loader, cst.parse_expression("_ddp_setup()[2]"))
        return target.value, loop

    def _epoch_loop(self, target: cst.Name) -> cst.For:
        loop = epoch_loop_of(self.names, target)
        if loop is None or not isinstance(loop.target, cst.Name) or not isinstance(
                loop.body, cst.IndentedBlock):
            raise _DataSide(f"no single epoch loop over `{target.value}` found for "
                            "sampler.set_epoch(epoch)")
        return loop

    def _check_epoch_loop(self, loop: cst.For, target: cst.Name) -> None:
        seen = self.names.lookup(target.value, self.names.scope_of(loop))
        if seen is None or seen[0] is not self.names.scope_of(target):
            raise _DataSide(f"the epoch loop does not see the training DataLoader as "
                            f"`{target.value}`")
        self.loop = loop

    def _loader_of_other_file(self) -> tuple[str, cst.For] | None:
        """``loader = make_loader(...)`` with ``make_loader`` another file's function that the
        project index pairs with this file: the sampler is added there, ``set_epoch`` here."""
        for target, qualified in self._assigned_calls():
            shard = self.context.project.loader_shard(qualified)
            if shard is None:
                continue
            self.shard = shard
            if shard.problem is not None:
                self.loop = epoch_loop_of(self.names, target)
                raise _DataSide(f"the training DataLoader is built by `{shard.function}()` in "
                                f"{shard.loader_path}, which is not edited: {shard.problem}")
            loop = self._epoch_loop(target)
            self._check_epoch_loop(loop, target)
            return target.value, loop
        return None

    def _assigned_calls(self) -> list[tuple[cst.Name, str]]:
        """``name = f(...)`` anywhere in the file: the name and ``f``'s qualified name."""
        found = []
        for scope in self.names.all_scopes:
            for bindings in scope.bindings.values():
                for binding in bindings:
                    value = binding.value
                    target = assigned_name(self.names, value) if isinstance(
                        value, cst.Call) else None
                    qualified = self.names.qualified_name(value.func) if target is not None \
                        else None  # type: ignore[union-attr]
                    if target is not None and qualified is not None:
                        found.append((target, qualified))
        return found

    def _add_sampler(self, loader: cst.Call, world: cst.BaseExpression,
                     placement: list[cst.Arg] | None = None) -> None:
        """``sampler=DistributedSampler(dataset, ...)`` in place of ``shuffle=`` and
        ``batch_size`` divided by ``world`` (the world size, as this file computes it)."""
        self._validate_loader(loader)
        sampler = self.context.imports.reference(SAMPLER, loader, "torch.utils.data")
        self.imports.extend(r for r in [sampler.needs] if r)
        line = self._line_of(loader)
        dataset = argument(loader, "dataset", 0)
        assert dataset is not None
        shared: cst.BaseExpression = dataset.value
        if not _pure(dataset.value):
            # An inline dataset (`DataLoader(TensorDataset(x, y), ...)`): named on the line
            # before, so that the loader and its sampler share one dataset object.
            taken = {n for scope in self.names.all_scopes for n in (*scope.bindings, *scope.loads)}
            name = fresh_name("train_dataset", taken)
            self.edits.before(line, simple_line(f"{name} = {code_of(dataset.value)}"))
            shared = cst.Name(name)
        self.edits.rewrite(loader, lambda _: self._new_loader(loader, sampler.expression, shared,
                                                              world, placement or []))
        self.edits.rewrite(line, lambda line: line.with_changes(leading_lines=[
            *line.leading_lines,  # type: ignore[attr-defined]
            cst.EmptyLine(comment=cst.Comment(
                "# TFC301: DDP's batch_size is per process: global batch // world size keeps "
                "the global batch"))]))

    def _set_epoch_each_epoch(self, loop: cst.For, loader_name: str) -> None:
        """``sampler.set_epoch(epoch)`` at the top of the epoch loop. For a loader another
        file builds, only when its sampler is a DistributedSampler: this file's edit stays
        right when that file is not edited (excluded later, reverted, run alone)."""
        assert isinstance(loop.target, cst.Name) and isinstance(loop.body, cst.IndentedBlock)
        set_epoch = simple_line(f"{loader_name}.sampler.set_epoch({loop.target.value})")
        if self.shard is None:
            self.edits.before(loop.body.body[0], set_epoch)
            return
        sampler = self.context.imports.reference(SAMPLER, loop, "torch.utils.data")
        self.imports.extend(r for r in [sampler.needs] if r)
        # Relative to this file: a comment in the code must not name the user's machine.
        where = os.path.relpath(self.shard.loader_path,
                                os.path.dirname(self.shard.training_path) or ".")
        guard = cst.If(
            test=cst.Call(cst.Name("isinstance"), [
                cst.Arg(cst.parse_expression(f"{loader_name}.sampler"), comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Arg(sampler.expression)]),
            body=cst.IndentedBlock(
                [set_epoch], header=cst.TrailingWhitespace(
                    whitespace=cst.SimpleWhitespace("  "),
                    comment=cst.Comment(f"# TFC301: its sampler is added in {where}"))))
        self.edits.before(loop.body.body[0], guard)

    def _outputs_on_rank_zero(self) -> None:
        """Saves and prints on a line of their own run on rank 0 only."""
        if self.reloads:
            raise _Irregular("the file loads with torch.load after it saves: once saving is on "
                             "rank 0 only, other ranks could read the file before it is written "
                             "(add torch.distributed.barrier() where that is safe)")
        groups = self._writing_with_blocks()
        for output in self.outputs:
            line = statement_line(self.names, output)
            if any(any(a is group for a in self.names.ancestors(output)) for group in groups):
                continue  # inside a `with open(..., "a")` block that runs on rank 0 as a whole
            if self._per_rank(output) and not (
                    isinstance(output.func, cst.Name) and output.func.value == "print"):
                continue  # a file of each rank's own (a print still runs on rank 0 only)
            if line is not None and len(line.body) == 1 and isinstance(line.body[0], cst.Expr):
                self.edits.rewrite(line, _rank_zero_guard)
        for group in groups:
            self.edits.rewrite(group, _rank_zero_guard)

    def _per_rank(self, node: cst.CSTNode) -> bool:
        """A write to a path of each rank's own (``f"log.{rank}"``, ``... + os.environ["RANK"]``)
        is meant for every process: the call, or the ``with`` items around it, say ``rank``."""
        ancestors = [node, *self.names.ancestors(node)]
        texts = [code_of(node)] + [code_of(item) for a in ancestors if isinstance(a, cst.With)
                                   for item in a.items]
        return any("rank" in text.lower() for text in texts)

    def _inside(self, node: cst.CSTNode, block: cst.CSTNode) -> bool:
        return node is block or any(a is block for a in self.names.ancestors(node))

    def _writing_with_blocks(self) -> list[cst.With]:
        """``with open(log, "a") as f: csv.writer(f).writerow(...)``: the whole block writes a
        file, so it runs on rank 0 (every rank appending to one log interleaves the lines).
        Only where nothing the block binds is read after it (rank 1 skips the block)."""
        groups: list[cst.With] = []
        for call in self.file_writes:
            item = self.names.parent(call)
            block = self.names.parent(item) if isinstance(item, cst.WithItem) else None
            if not isinstance(block, cst.With) or any(g is block for g in groups) or \
                    self._per_rank(call):
                continue
            scope = self.names.scope_of(block)
            bound = {name for name, bindings in scope.bindings.items()
                     if any(self._inside(b.node, block) for b in bindings)}
            if any(not self._inside(read, block) and any(
                    self._inside(b.node, block) for b in reaching_bindings(self.names, read))
                   for name in bound for read in self.names.loads_in(scope, name)):
                continue
            groups.append(block)
        return groups

    def _one_backward_per_forward(
            self, placed: list[tuple[cst.BaseStatement, cst.If | None, cst.BaseExpression]],
    ) -> None:
        """``loss_G, loss_D = net(z, real)`` then ``loss_G.backward()`` and ``loss_D.backward()``
        in one block: DDP all-reduces the gradients of the first backward after a forward
        only; the second trains each process apart, with no error. Two ``.backward()`` calls
        among the statements of one block, with no call of (or passing) a wrapped model
        between them and one before, are refused: the parts need a DDP each."""
        targets = [t for unit, _, _ in placed if (t := _wrap_target(unit)) is not None]
        if not targets:
            return
        wrapped = {code_of(t) for t in targets}
        for function in [self.context.module, *self._functions()]:
            body = function.body if isinstance(function, cst.Module) else function.body.body
            found = self._second_backward(body, wrapped, forwarded=False)
            if found is not None:
                lines = positions_of(self.context.module, list(found))
                raise _Irregular(
                    f"line {lines[id(found[1])].start.line} calls backward a second time after "
                    f"one forward of the wrapped model (the first at line "
                    f"{lines[id(found[0])].start.line}): DDP averages gradients across "
                    "processes in the first backward after a forward only, the second trains "
                    "each process apart; wrap the parts that each loss reaches in a DDP of "
                    "their own, or run a forward per backward")

    def _functions(self) -> list[cst.FunctionDef]:
        return [s.node for s in self.names.all_scopes if isinstance(s.node, cst.FunctionDef)]

    def _second_backward(self, statements: Sequence[cst.BaseStatement], wrapped: set[str],
                         forwarded: bool) -> tuple[cst.Call, cst.Call] | None:
        """Walks one block's statements in order; nested blocks are walked on their own
        (their backward calls may be exclusive branches), starting from what was seen."""
        last_backward: cst.Call | None = None
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for node in walk_local(statement):
                    if not isinstance(node, cst.Call):
                        continue
                    if self._forwards(node, wrapped):
                        forwarded, last_backward = True, None
                    elif isinstance(node.func, cst.Attribute) and \
                            node.func.attr.value == "backward" and forwarded:
                        if last_backward is not None:
                            return last_backward, node
                        last_backward = node
                continue
            for block in _blocks_of(statement):
                found = self._second_backward(block, wrapped, forwarded)
                if found is not None:
                    return found
            if any(isinstance(n, cst.Call) and self._forwards(n, wrapped)
                   for n in walk_local(statement)):
                forwarded, last_backward = True, None
        return None

    @staticmethod
    def _forwards(call: cst.Call, wrapped: set[str]) -> bool:
        """``net(x)``, or ``net`` passed to a call (a helper may run its forward)."""
        if code_of(call.func) in wrapped:
            return True
        return any(code_of(arg.value) in wrapped for arg in call.args)

    def _save_the_model_not_the_wrapper(
            self, placed: list[tuple[cst.BaseStatement, cst.If | None, cst.BaseExpression]],
    ) -> None:
        """``torch.save(net, path)`` or ``torch.save({"net": net, ...}, path)`` with ``net`` the
        wrapped model pickles the wrapper: DataParallel loads anywhere, a DistributedDataParallel
        only where a process group exists. ``net`` becomes ``_ddp_unwrap(net)`` (the model
        itself; the wrapper only where it is one, so an unwrapped run saves what it saved)."""
        targets = [t for unit, _, _ in placed if (t := _wrap_target(unit)) is not None]
        if not targets:
            return
        for output in self.outputs:
            if self.names.qualified_name(output.func) != "torch.save":
                continue
            saved = argument(output, "obj", 0)
            if saved is None:
                continue
            for node in _saved_objects(saved.value):
                if any(self._same_object(node, target) for target in targets):
                    self.unwraps = True
                    self.edits.rewrite(node, lambda old: cst.Call(
                        cst.Name("_ddp_unwrap"), [cst.Arg(old)]))  # type: ignore[arg-type]

    def _same_object(self, node: cst.BaseExpression, target: cst.BaseExpression) -> bool:
        """``net`` (or ``self.net``) here is the name the wrap assigned: the same code, and its
        root name bound in the same scope (``self`` in the same class)."""
        if code_of(node) != code_of(target):
            return False
        root, wrapped = _root_name(node), _root_name(target)
        if root is None or wrapped is None:
            return False
        if root.value == "self" and isinstance(node, cst.Attribute):
            here = self.names.enclosing(node, cst.ClassDef)
            return here is not None and here is self.names.enclosing(target, cst.ClassDef)
        seen = self.names.lookup(root.value, self.names.scope_of(node))
        return seen is not None and seen[0] is self.names.scope_of(wrapped)

    def _own_device_per_process(self) -> None:
        """``"cuda:0"`` -> ``"cuda"``: after ``_ddp_setup()``'s ``set_device(local_rank)``,
        ``"cuda"`` is this process's GPU (GPU 0 in a one-process run, as before); a pinned
        ``cuda:0`` would put every process's batches on the first GPU."""
        for node in self.first_gpu:
            quote = node.value[0]
            self.edits.rewrite(node, lambda _, q=quote: cst.SimpleString(f"{q}cuda{q}"))

    def _body_of(self, scope: Scope) -> list[cst.BaseStatement]:
        if scope.kind == "module":
            return list(self.context.module.body)
        if isinstance(scope.node, cst.FunctionDef) and isinstance(scope.node.body, cst.IndentedBlock):
            return list(scope.node.body.body)
        raise _Irregular("the wrap or the training is not in a function or at module level")

    def _setup_first(self, scope: Scope) -> None:
        """``_ddp_setup()`` first in the wrap's function (at module level: after the helpers)."""
        body = self._body_of(scope)
        if scope.kind == "module":
            return
        setup = simple_line("_ddp_setup()", "TFC301: join the process group before anything "
                            "uses a device")
        first = body[0]
        self.edits.before(body[1] if is_docstring(first) and len(body) > 1 else first, setup)

    def _cleanup_last(self, scope: Scope) -> None:
        """``_ddp_cleanup()`` at the end of the function (or script) that runs the epochs."""
        body = self._body_of(scope)
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
        template = _HELPER_TEMPLATE + (_UNWRAP_TEMPLATE if self.unwraps else "")
        helpers, needs = self._helpers(anchor, template)
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

    def _wrap_statement(self, call: cst.Call) -> tuple[cst.BaseStatement, cst.If | None,
                                                       cst.BaseExpression]:
        """The statement that wraps (an assignment, or the ``for`` loop around one), the
        ``if`` around it (any condition: a GPU count, a device string, a flag), and the
        expression the wrap replaces (the call, or the ``.cuda()``/``.to(device)`` called on
        it). A wrap may be the element of a comprehension (``[DataParallel(m) for m in
        models]``) or the value of an assignment directly in the body of a ``for`` loop over
        models: both wrap every model in every process."""
        statement = self._line_of(call)
        if len(statement.body) != 1 or not isinstance(statement.body[0], cst.Assign | cst.AnnAssign):
            raise _Irregular("the DataParallel wrap is not a plain assignment")
        replaced = self._moved_wrapper(call)
        value = statement.body[0].value
        if value is not replaced and not _comprehension_of(value, replaced):
            raise _Irregular("the DataParallel wrapper is used inside a larger expression")
        unit: cst.BaseStatement = statement
        block = self.names.parent(statement)
        owner = self.names.parent(block) if block is not None else None
        if isinstance(owner, cst.For) and owner.orelse is None and \
                isinstance(block, cst.IndentedBlock) and value is replaced:
            unit = owner  # `for i, m in enumerate(models): models[i] = DataParallel(m)`
            block = self.names.parent(owner)
            owner = self.names.parent(block) if block is not None else None
        if isinstance(block, cst.Module) or isinstance(owner, cst.FunctionDef):
            return unit, None, replaced
        if isinstance(owner, cst.If) and owner.orelse is None and isinstance(block, cst.IndentedBlock):
            outer = self.names.parent(owner)
            if isinstance(outer, cst.Module) or isinstance(self.names.parent(outer), cst.FunctionDef):
                return unit, owner, replaced
        raise _Irregular(f"the wrap is inside {self._blocks_around(statement)} (DDP must wrap "
                         "in every process, and the rule moves a wrap only out of one `if` "
                         "without `else`)")

    def _placed(self, call: cst.Call, count: int) -> tuple[cst.BaseStatement, cst.If | None,
                                                        cst.BaseExpression]:
        """:meth:`_wrap_statement`; of several wraps, the refusal names the one refused (its
        line and function), which may be a test's or a demo's wrap beside the training one."""
        try:
            return self._wrap_statement(call)
        except _Irregular as why:
            if count == 1:
                raise
            line = positions_of(self.context.module, [call])[id(call)].start.line
            function = self.names.enclosing(call, cst.FunctionDef)
            where = f" in `{function.name.value}()`" if function is not None else ""
            raise _Irregular(f"of the file's {count} wraps, the one at line {line}{where}: "
                             f"{why}; models wrapped apart are not migrated apart") from why

    def _blocks_around(self, statement: cst.CSTNode) -> str:
        """``a `while` loop``, ``the `else` branch of an `if` ``, ``an `if` in a `for` loop``:
        the blocks between the wrap and its function (or the module), innermost first."""
        names: list[str] = []
        for ancestor in self.names.ancestors(statement):
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Module):
                break
            if isinstance(ancestor, cst.Else):
                names.append("the else branch of")
            elif isinstance(ancestor, cst.If):
                if names and names[-1] == "the else branch of":
                    names[-1] += " an `if`"
                    continue
                names.append("an `if` with an else branch" if ancestor.orelse is not None
                             else "an `if`")
            elif isinstance(ancestor, cst.While | cst.For):
                names.append("a `while` loop" if isinstance(ancestor, cst.While)
                             else "a `for` loop")
            elif isinstance(ancestor, cst.With):
                names.append("a `with` block")
            elif isinstance(ancestor, cst.Try | cst.ExceptHandler | cst.Finally):
                names.append("a `try` statement")
            elif isinstance(ancestor, cst.BaseCompoundStatement):
                names.append("a compound statement")
        return " in ".join(names) or "a nested block"

    def _moved_wrapper(self, call: cst.Call) -> cst.BaseExpression:
        """``DataParallel(m).cuda()`` / ``.to(device)``: the move, else the call itself."""
        attribute = self.names.parent(call)
        if not (isinstance(attribute, cst.Attribute) and attribute.value is call):
            return call
        move = self.names.parent(attribute)
        if not (isinstance(move, cst.Call) and move.func is attribute):
            return call
        if attribute.attr.value == "cuda":
            return move
        if attribute.attr.value == "to" and len(move.args) == 1 and move.args[0].keyword is None \
                and _names_a_device(move.args[0].value):
            return move
        return call

    def _training_loader(self) -> cst.Call:
        shuffled = [c for c in self.loaders
                    if _shuffle_of(c) is not None and not _is_literal_false(_shuffle_of(c))]  # type: ignore[arg-type]
        if len(shuffled) == 1:
            return shuffled[0]
        training = self._candidate_loaders()
        if not shuffled and len(training) == 1:
            # One unshuffled loader not named for evaluation (`trainloader` beside `testloader`).
            return training[0]
        if not self.loaders:
            raise _DataSide("no DataLoader in this file")
        if not training:
            lines = positions_of(self.context.module, self.loaders)
            named = ", ".join(f"`{code_of(assigned_name(self.names, c))}` (line "  # type: ignore[arg-type]
                              f"{lines[id(c)].start.line})" for c in self.loaders)
            raise _DataSide(f"this file's DataLoaders, {named}, are named for evaluation: the "
                            "training batches come from elsewhere")
        raise _DataSide("cannot tell which DataLoader is the training one")

    def _candidate_loaders(self) -> list[cst.Call]:
        """The file's DataLoaders that are not named for evaluation (``val_loader``)."""
        return [c for c in self.loaders if not _named_for_evaluation(self.names, c)]

    def _validate_loader(self, loader: cst.Call) -> None:
        if has_star_args(loader) or has_star_kwargs(loader) or len(positional_args(loader)) > 3:
            raise _DataSide("the DataLoader's arguments cannot all be read")
        if argument(loader, "sampler", 3) is not None or argument(loader, "batch_sampler", 4):
            raise _DataSide("the DataLoader already has a sampler")
        if argument(loader, "dataset", 0) is None:
            raise _DataSide("the DataLoader has no dataset argument")
        batch = argument(loader, "batch_size", 1)
        if batch is None or _is_literal_false(batch.value):
            raise _DataSide("the DataLoader has no batch_size to divide by the world size")

    def _loader_name(self, loader: cst.Call) -> cst.Name:
        """The name the training loop reads the loader by: the one it is assigned to, or, for
        a function of this file that returns it, the one its only call is assigned to."""
        target = assigned_name(self.names, loader)
        function = self.names.enclosing(loader, cst.FunctionDef)
        parent = self.names.parent(loader)
        returned = isinstance(parent, cst.Return) or (
            target is not None and function is not None and any(
                isinstance(r.value, cst.Name) and r.value.value == target.value
                for r in _returns_in(function)))
        if not returned:
            if target is None:
                raise _DataSide("the training DataLoader is not assigned to a name")
            return target
        if function is None:
            raise _DataSide("the training DataLoader is not assigned to a name")
        calls = [read for read in self.names.loads_in(self.names.scope_of(function),
                                                      function.name.value)
                 if isinstance(self.names.parent(read), cst.Call)
                 and self.names.parent(read).func is read  # type: ignore[union-attr]
                 and defined_function(self.names, read) is function]
        result = assigned_name(self.names, self.names.parent(calls[0])) if len(calls) == 1 else None
        if result is None:
            raise _DataSide(f"`{function.name.value}()`, which builds the training DataLoader, "
                            "is not called once with its result assigned to a name")
        return result

    @staticmethod
    def _new_loader(loader: cst.Call, sampler_func: cst.BaseExpression,
                    shared: cst.BaseExpression, world: cst.BaseExpression,
                    placement: list[cst.Arg]) -> cst.Call:
        dataset = argument(loader, "dataset", 0)
        batch = argument(loader, "batch_size", 1)
        shuffle = argument(loader, "shuffle", 2)
        assert dataset is not None and batch is not None
        shuffle_value = shuffle.value if shuffle is not None else cst.Name("False")
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        sampler = cst.Call(sampler_func, [
            cst.Arg(shared.deep_clone(), comma=comma),
            *[arg.with_changes(value=arg.value.deep_clone(), comma=comma) for arg in placement],
            keyword("shuffle", shuffle_value),
        ])
        per_process = cst.BinaryOperation(
            as_left_operand(batch.value, cst.FloorDivide()), cst.FloorDivide(), world.deep_clone())
        args = []
        for arg in loader.args:
            if arg is batch:
                args.append(arg.with_changes(value=per_process))
            elif arg is shuffle:
                args.append(arg.with_changes(value=sampler, keyword=cst.Name("sampler"),
                                             equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                                   cst.SimpleWhitespace(""))))
            elif arg is dataset and shared is not dataset.value:
                args.append(arg.with_changes(value=shared))
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

    def _helpers(self, anchor: cst.CSTNode, template: str = _HELPER_TEMPLATE,
                 ) -> tuple[list[cst.BaseStatement], list[ImportRequest]]:
        imports = self.context.imports
        # The helpers go after the import block: name things as the first statement there
        # sees them (the anchor itself is the block's last import, not yet run at its start).
        module = self.context.module
        body = list(module.body)
        after = next((body[i + 1] for i, s in enumerate(body) if s is anchor and i + 1 < len(body)),
                     anchor)
        wanted = {
            "torch": ("torch", None),
            "dist": ("torch.distributed", "torch.distributed"),
            "environ": ("os.environ", "os"),
            "ddp": (DDP, "torch.nn.parallel"),
            "atexit": ("atexit.register", "atexit"),
            "import_module": ("importlib.import_module", "importlib"),
            "weakset": ("weakref.WeakSet", "weakref"),
        }
        refs = {key: imports.reference(name, after, module)
                for key, (name, module) in wanted.items() if "{" + key + "}" in template}
        text = template.format(script=self.launch.removeprefix(LAUNCH),
                               **{key: ref.code for key, ref in refs.items()})
        statements = [s.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
                      for s in cst.parse_module(text).body]
        return statements, [ref.needs for ref in refs.values() if ref.needs is not None]


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


def _wrap_condition(test: cst.BaseExpression) -> cst.BaseExpression:
    """The wrap's own condition. Every process of a launch wraps (world size > 1); one process
    wraps where the original did, so a later ``model.module`` stays valid (``_ddp_wrap`` gives
    a one-process DDP). Of an ``and`` chain, the conditions not about devices (``opt.isTrain``,
    ``not opt.fp16``) hold under the launch too: ``opt.isTrain and len(opt.gpu_ids) and not
    opt.fp16`` becomes ``opt.isTrain and (_ddp_setup()[2] > 1 or len(opt.gpu_ids)) and not
    opt.fp16``."""
    world = "_ddp_setup()[2] > 1"
    conjuncts = list(_conjuncts(test))
    device = [c for c in conjuncts if _about_devices(c)]
    if not device or len(device) == len(conjuncts):
        whole = code_of(test).strip()
        if isinstance(test, cst.BooleanOperation | cst.IfExp | cst.Lambda | cst.NamedExpr) \
                and not test.lpar:
            whole = f"({whole})"
        return cst.parse_expression(f"{world} or {whole}")
    parts: list[str] = []
    for conjunct in conjuncts:
        if conjunct is device[0]:
            parts.append(f"({world} or " + " and ".join(code_of(d).strip() for d in device) + ")")
        elif not any(conjunct is d for d in device):
            parts.append(code_of(conjunct).strip())
    return cst.parse_expression(" and ".join(parts))


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
    return target is not None and any(word in target.value.lower()
                                      for word in ("test", "val", "eval"))


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


def _rank_zero_guard(line: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(line, cst.SimpleStatementLine | cst.With)
    guard = cst.parse_statement("if _ddp_is_main():  # TFC301: rank 0 only\n    pass\n")
    assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
    return guard.with_changes(
        leading_lines=line.leading_lines,
        body=guard.body.with_changes(body=[line.with_changes(leading_lines=[])]))


RULES = [DataParallelToDDP]


def _returns_in(node: cst.CSTNode) -> Iterator[cst.Return]:
    """Every ``return`` under ``node``, nested ones too."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Return):
            yield current
        stack.extend(children(current))
