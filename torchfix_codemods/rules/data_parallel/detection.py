"""TFC301's rule: what a file wraps, trains, loads and writes, and the findings it gets.

The visitor collects the wraps, loaders, saves, prints and file writers of one file;
at the end of the module it reports them, with the migration of
:mod:`~torchfix_codemods.rules.data_parallel.migration` as the fix where it applies.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import argument, keyword_arg
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.syntax import (
    code_of,
)
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.dataloaders import DATALOADERS
from torchfix_codemods.analysis.project import ProjectFacts
from torchfix_codemods.analysis.vocabulary.torch_api import EVERY_RANK_WRITERS, RANK_ZERO
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    PROCESS_GROUP_CALLS,
)
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.data_parallel.migration import _Migration
from torchfix_codemods.rules.data_parallel.shapes import (
    DATA_PARALLEL,
    DDP,
    DDP_NAMES,
    EVALUATION,
    FIRST_GPU,
    WRITE_MODES,
    _about_devices,
    _DataSide,
    _Irregular,
    runs_as_script,
)
from torchfix_codemods.rules.data_parallel.templates import (
    _HELPER_TEMPLATE,
    CHECKLIST,
    DATA_SIDE_WITHHELD,
    HELPERS,
    launch_line,
)


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
    Unsafe: the program now runs as several processes. In a notebook the rule
    reports and never rewrites: `torchrun` launches scripts, a kernel is one
    process, so a migrated notebook would train on one device where
    DataParallel used all of them. The helper initialises
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
    net, "epoch": epoch}, path)`, or `state = {"net": net, ...}` saved as
    `torch.save(state, path)`, or handed to a function of the file that pickles
    its parameter: `save_checkpoint({"state_dict": net, ...}, is_best, path)`
    with `torch.save(state, filename)` inside, or `save(net, path)`) saves
    `_ddp_unwrap(net)`, the model (in the literal at the call, or in the
    function's save, where it leaves any other object as it is): a pickled
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
    `replace`, `plt.savefig` (and a figure's `fig.savefig`), `json.dump`/
    `pickle.dump`/`yaml.dump`, `np.save`/`savez`/`savetxt`,
    `torchvision.utils.save_image` and `logging.basicConfig(filename=...)` on a
    line of their own run on rank 0 with the saves (a guarded save followed by
    an unguarded copy of the file made rank 1 copy a file rank 0 was still
    writing; the other processes' logging, left unconfigured, writes no file).
    A function of the file that only prints and writes files, returns no value
    and changes nothing its caller sees (a `save_checkpoint` that saves and
    copies the best checkpoint, a `print_log(text, log)` that prints and writes
    to the log it is given) runs on rank 0 as a whole: `if not _ddp_is_main():
    return` at its top, so what no list names (a write to a file it is given)
    is skipped with the rest; a function that also calls anything else (moves
    a model with `.cpu()`, draws from numpy's random state), writes an item or
    attribute of what it is given, returns a value or names the rank keeps its
    per-call guards. And a
    `with open(path, "a")` block (or `"w"`, `"x"`) runs on rank 0 as a whole
    when nothing it binds is read after it: a CSV log appended every epoch
    gets each line once, not once per process. A write to a path that names
    the rank (`open(f"order.{rank}", "w")`) is each process's own and stays on
    every process. Objects that write for as long as they live write on rank 0
    only: a file opened outside a `with` (or in a `with` block whose names are
    read after it), and a logging `FileHandler`, get `path if _ddp_is_main()
    else os.devnull`, so the other processes keep a real file object and every
    later use (`f.write`, `csv.writer(f)`, `handler.setFormatter`) runs
    unchanged; a TensorBoard `SummaryWriter` used only through method calls
    whose results are not used (`writer.add_scalar(...)`, `writer.close()`)
    becomes `SummaryWriter(...) if _ddp_is_main() else _DDPNoWriter()`, an
    object whose every method does nothing; so does an object of a class of
    the project whose methods only write files and change the object's own
    attributes (a training `Logger` that keeps `log.txt` open and writes a row
    per `append`), when the name it is bound to (in one branch or several) is
    used the same way. They stay reported where that
    could change the program: a writer read as a value (`writer.log_dir`) or
    handed to a function, a file opened with mode `x` (`os.devnull` exists) or
    a mode not written out, and a path the file also opens for reading (the
    other processes would read rank 0's file while it is written). A call, on
    a line of its own, of a function of another file of the run that only
    prints (a progress bar: it prints, formats text or reads the clock, and
    changes nothing its caller or the module sees) runs on rank 0 too, and so
    does a call of one that only prints and writes files in the sense above
    (`mkdir_p(path)`, `savefig(path)`, a `save_model(model, ..., path)` that
    saves `model.state_dict()`); a helper that also does anything else runs
    on every process, and a function of a file outside the run is not known
    to print or write.

    A wrap inside `if __name__ == "__main__":` (directly, or under a condition
    there) is migrated as one at module level is, since every process runs the
    block; `_ddp_setup()` goes at the top of the block and, when the epochs run
    in it, `_ddp_cleanup()` at its end, so importing the file starts no process
    group. Where the epochs run outside the block, it is reported.

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
    loop), the migration is withheld and the file is left as it is: the model
    side alone would have every process of a launch read the whole dataset,
    the same work repeated once per process. A second finding names the data
    side's edit: the function's file and line and why it was not edited, the
    call an epoch loop reads when that function's file is not in the run, or
    the line that hands the loader to the class; the epoch loop for
    `set_epoch`. A file whose model side was migrated without its data side
    (by hand, or by an earlier version of this rule) stays reported until
    `set_epoch` is called there.

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
    loader built in the same file or by another module's function. Twelve
    reduced real scripts, each run in a process of its own (a checkpoint that
    pickles the wrapper and scales its batch by the GPU count, run with
    `device_count()` reporting 2; a `sys.exit()` inside the epoch loop; a
    pix2pixHD-shaped wrap under `opt.isTrain and len(opt.gpu_ids) and not
    opt.fp16` used through `.module`; a `save_checkpoint` helper that copies
    the best checkpoint, beside a CSV log and a JSON summary; pytorch-YOLOv4's
    wrap under a GPU count inside `if __name__ == "__main__":`, with a
    training function that keeps the newest checkpoints and removes the
    oldest; a module-level script that logs to TensorBoard every 10 steps; a
    script whose progress bar is a function of another of its modules; a
    CIFAR trainer whose save helper copies the best checkpoint, and the same
    with its log kept open by a `Logger` object of another module and its
    folder made by that module's `mkdir_p`; a CSV-logging mixup trainer that
    pickles the wrapper through a dict; a trainer with a `save_checkpoint`
    helper; a pruning script that writes every message through a
    `print_log(text, log)` helper to a log opened outside a `with` and pickles
    the wrapper through its save helper's parameter)
    reach the original weights plain and under torchrun (2 processes); rank 1 writes no
    file and prints nothing, rank 0 writes the original's files, the pickled
    model loads in a process without a process group, and no process group is
    left at exit.
    A `DataLoader` named for evaluation (`val_loader`, `testloader`) is never
    taken for the training one; where the training batches come from
    elsewhere (pix2pixHD: `dataset = data_loader.load_data()`, a loader class
    of another file), the migration is withheld and the data-side finding
    names what the epoch loop reads. A
    module that only builds the model (no training, nothing run when it is
    run) gets `torchrun --nproc_per_node=N <the training script that imports
    models.py>`: it is not what a user launches.

    A migration is whole only when the rule sees every side effect of the
    epoch loop, so it is reported, not applied, when the loop (or a function of
    the file it runs) calls the project's own code that the analysis cannot
    resolve (microsoft/human-pose-estimation.pytorch's `train.py` imports
    `train`, `validate` and `save_checkpoint` from `lib/`, which `import
    _init_paths` puts on `sys.path`: they write checkpoints, a results json and
    debug images, and would on every process), or hands a DataLoader the
    migration does not shard to a function of another file of the run
    (`validate(config, valid_loader, ...)`: every process would run the whole
    validation and write its results). Builtins and libraries (`enumerate`,
    `tqdm`) do not count; an evaluation loader this file's own functions read
    (pytorch-cifar's `test(epoch)`) stays migrated, its writes on rank 0.

    Report only, with the launch line and the checklist, when the file already
    has a DDP or process-group path, when models are wrapped in different
    functions, when the wrap is inside a `while` loop, an `else` branch, a
    nested block (a condition inside a loop) or a larger expression
    (`DataParallel(m).to(torch.float64)`), when a place for the helpers cannot
    be found, when the training function returns a value that may outlive the
    process group, when the file loads with `torch.load` after it saves
    (rank-0-only saving would race other ranks), or when one forward of a
    wrapped model is followed by two backward passes
    (`loss_G, loss_D = net(z, real)`, then `loss_G.backward()` and
    `loss_D.backward()`, the second in the same block or in a branch after
    the first): DDP averages gradients in the first backward after a
    forward only, and the second trains each process apart with no error
    (measured on torch 2.13, gloo, 2 processes: 0.27 from the one-process
    weights after 5 steps). A DDP for each part (`net.G` and `net.D` wrapped
    apart) ends just as far from them (0.27): the generator's loss runs the
    discriminator, so the first backward completes the discriminator's
    averaging too, and the second backward's gradients come after it. What
    works: a forward per backward (the generator's loss, its backward and
    step, then a new forward for the discriminator's), or the model left
    unwrapped with its gradients averaged by hand before each step
    (`torch.distributed.all_reduce(p.grad); p.grad /= world_size` for every
    parameter that optimizer steps; measured equal to the one-process weights
    to 1e-8). Of several wraps, the refusal names the
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
            "import torch\nfrom torch import nn\nimport atexit\nimport importlib\nimport os\n"
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
        self._writer_objects: set[int] = set()
        """Calls building an object of a class that only writes files (a ``Logger``)."""
        self._quiet: set[int] = set()

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
        elif self._writer_class(node.func, qualified):
            self._writers.append(node)
            self._writer_objects.add(id(node))
        elif qualified in RANK_ZERO or self._is_builtin(node.func, "print") or (
                qualified == "logging.basicConfig" and keyword_arg(node, "filename") is not None):
            self._outputs.append(node)
            self._saved = self._saved or qualified == "torch.save"
        elif qualified == "torch.load" and self._saved:
            self._reloads = True
        elif qualified is not None and (self.context.project.only_prints(qualified)
                                        or self.context.project.only_outputs(qualified)):
            # A helper of another module that only prints (a progress bar) or writes files
            # (`mkdir_p`, `savefig`, a `save_checkpoint`): rank 0's too.
            self._outputs.append(node)
        elif qualified is None and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value == "savefig":
            self._outputs.append(node)  # a matplotlib figure's `fig.savefig(path)`
        elif self._is_builtin(node.func, "isinstance"):
            classes = argument(node, "class_or_tuple", 1)
            if classes is not None and self._needs_ddp(classes.value) and \
                    not self._negated(node) and not self._implements_data_parallel(node):
                self._isinstance.append((node, classes))

    def _writer_class(self, func: cst.BaseExpression, qualified: str | None) -> bool:
        """A class whose objects only write files (a training ``Logger`` that keeps its log
        open), of another file of the run or of this one (the project index's ``outputs``)."""
        if qualified is not None:
            return bool(self.context.project.writer_class(qualified))
        if not isinstance(func, cst.Name):
            return False
        binding = self.names.binding_of(func)
        module = self.names.module_scope
        return binding is not None and binding.kind == "class" and module is not None and \
            any(b is binding for b in module.bindings.get(func.value, ())) and \
            func.value in self.context.project.own_outputs().get("classes", ())

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
            if id(call) in self._quiet:
                continue  # made to write on rank 0 only by the migration
            if self._rank_guarded(call):
                continue
            what = " ".join(code_of(call.func).split())
            self.report(call, f"`{what}(...)` writes on every process once this file runs under "
                        "DDP (duplicated, interleaved output in one file): create and use it on "
                        "rank 0 only (`if _ddp_is_main():`), or give each rank a path of its own")

    def _rank_guarded(self, call: cst.Call) -> bool:
        """A writer in this rule's helpers, under a rank condition, or with a path that names
        the rank: each process's own, or rank 0's already."""
        return self._in_helper(call) or any(
            isinstance(a, cst.If | cst.IfExp) and "rank" in code_of(a.test).lower()
            or isinstance(a, cst.If | cst.IfExp) and "_ddp_is_main" in code_of(a.test)
            for a in self.names.ancestors(call)) or "rank" in code_of(call).lower() or \
            "_ddp_is_main()" in code_of(call)

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
        if self.context.path.endswith(".ipynb"):
            # torchrun starts scripts; a notebook's kernel is one process. Migrated, the
            # notebook would train on one device (DataParallel used all of them), and the
            # teardown would leave the wrapper unusable when a cell runs again.
            for call in self._wraps:
                self.report(call, f"{self.message}; no automatic rewrite in a notebook: "
                            "`torchrun` cannot launch one, so move the training into a script "
                            "and migrate that")
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
                remaining = migration.data_side_report(str(why), withheld=True)
        except (_Irregular, ImportUnavailable) as why:
            for wrap in self._wraps:
                self.report(wrap, f"{self.message} (`{launch}`; DDP's batch_size is per "
                            f"process); no automatic rewrite: {why}; {CHECKLIST}")
            return False
        passed = migration.passed_shard()
        self._quiet = migration.quiet
        if remaining is not None and passed is not None:
            self.report(call, f"{self.message}: `{launch}`; the model side is migrated here, "
                        f"{passed.loader_path} shards the loader it hands to this class "
                        f"(`{passed.passed_as}=`)", fix=fix)
        elif remaining is None:
            self.report(call, f"{self.message}: `{launch}`; DDP's batch_size is per process "
                        "(the fix divides it by the world size to keep the global batch)", fix=fix)
        else:
            # The model side alone is a half-done migration: under torchrun every process
            # would read the whole dataset, N processes repeating one process's work.
            self.report(call, f"{self.message} (`{launch}`; DDP's batch_size is per process); "
                        "the data side is reported on this line", fix=fix,
                        withheld=DATA_SIDE_WITHHELD)
            self.report(call, remaining)
            return False
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
        migration.writers = [c for c in self._writers if not self._rank_guarded(c)]
        migration.writer_objects = self._writer_objects
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
