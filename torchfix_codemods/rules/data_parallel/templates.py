"""TFC301's text: the helper code a migrated file gets, the launch line and the checklist.

Templates are text formatted with the names the file uses (``{torch}``, ``{dist}``,
``{environ}``, ``{ddp}``, ``{atexit}``) and parsed into statements where they are inserted.
"""

from __future__ import annotations

import os

HELPERS = ("_ddp_setup", "_ddp_is_main", "_ddp_wrap", "_ddp_cleanup", "_ddp_world",
           "_ddp_unwrap", "_DDPNoWriter")

CHECKLIST = (
    "migration checklist: init the process group (nccl on GPU, gloo on CPU) from LOCAL_RANK/"
    "RANK/WORLD_SIZE, torch.cuda.set_device(local_rank), move the model before wrapping, "
    "DistributedDataParallel(model, device_ids=[local_rank]) (no device_ids on CPU), "
    "DistributedSampler instead of shuffle=True with sampler.set_epoch(epoch) every epoch, "
    "per-process batch_size = global // world size, save and print on rank 0, "
    "destroy_process_group() at the end"
)

DATA_SIDE_WITHHELD = (
    "the data side cannot be migrated (see the data-side finding on this line): with the model "
    "side alone, every process of a torchrun launch would train on the whole dataset, the same "
    "work repeated once per process"
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
        # DDP imports dynamo (torch's compiler) when it wraps a model; imported after the
        # group is made, it keeps the group alive past destroy_process_group(): imported first.
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


# Written only where a writer that makes files as it is built (a TensorBoard SummaryWriter)
# is used through method calls alone: the processes other than rank 0 get this in its place.
_NO_WRITER_TEMPLATE = '''

class _DDPNoWriter:
    # TFC301: what the processes other than rank 0 use in place of a writer of log files:
    # every method is accepted and writes nothing.
    def __getattr__(self, name):
        return lambda *args, **kwargs: None
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
