"""TFC302-TFC303: DataLoader worker processes, and how they start (spawn re-runs the script,
fork cannot re-initialise CUDA)."""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.callees import class_of_instance, local_function, methods_of
from torchfix_codemods.analysis.core.import_time import (
    has_main_guard,
    import_time_functions,
    reaches,
    runs_on_import,
    script_tail,
)
from torchfix_codemods.analysis.core.loops import iterates_or_passes
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.dataloaders import (
    dataset_argument,
    is_dataloader,
    start_method,
    worker_functions,
    worker_methods,
    workers,
)
from torchfix_codemods.analysis.facts.devices import cuda_work
from torchfix_codemods.analysis.facts.inference import is_pytest_file
from torchfix_codemods.edits.statements import guarded_by_main
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_GUARD = 'if __name__ == "__main__":'


class DataLoaderWithoutMainGuard(Rule):
    """## What it does
    Finds a `DataLoader` with worker processes (`num_workers` > 0, or a
    value the tool cannot read) that module-level script code iterates
    without an `if __name__ == "__main__":` guard: the loop is at module
    level, or in a function (`main()`) that module-level code calls. The
    unsafe fix moves the script's tail, everything after its last `def`,
    `class` and import, under the guard.

    ## Why is this bad?
    With the `spawn` start method (the default on Windows and macOS) and
    `forkserver`, each worker starts a fresh interpreter that imports the
    main script again. Unguarded script code then runs in every worker, and
    the loader it iterates tries to start workers of its own while the
    worker is still starting: `RuntimeError: An attempt has been made to
    start a new process before the current process has finished its
    bootstrapping phase`, and in the parent `DataLoader worker (pid(s) ...)
    exited unexpectedly`. On Linux (`fork`) the same script works, so the bug
    shows up on a colleague's laptop.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=32, num_workers=4)
    for batch in loader:
        train_step(batch)
    ```

    ## Use instead
    ```python
    if __name__ == "__main__":
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            train_step(batch)
    ```

    ## Fix safety
    Unsafe: names the tail defines stop existing when another module
    imports this file (the tool cannot see the other files), and the code
    stops running on import, which is the point. Measured on torch 2.13 and
    Python 3.11: a script iterating `DataLoader(num_workers=2,
    multiprocessing_context="spawn")` at module level fails with the
    bootstrapping error above; the same script with its tail moved under the
    guard prints the right total, in about 6 seconds each on CPU.

    No fix (a report) when the module already has a guard, when the script
    code is not one contiguous tail (a `def` or an import comes after it),
    or when a class or a `collate_fn`/`worker_init_fn` reads a name only the
    tail defines: spawned workers do not run the guarded code, so they would
    not have it. No finding in notebooks (workers never re-run a notebook),
    in a package's `__main__.py` (Python does not re-run it in workers), in
    pytest files, for `num_workers=0`, for a loader built with
    `multiprocessing_context="fork"`, or when the loop only runs under the
    guard.

    ## References
    - [`torch.utils.data`: platform-specific behaviours](https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors)
    - [Python `multiprocessing`: safe importing of main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods)
    - [`__main__`: idiomatic usage](https://docs.python.org/3/library/__main__.html#idiomatic-usage)
    """

    code = "TFC302"
    name = "dataloader-workers-without-main-guard"
    message = (f"`DataLoader` workers are started by script code outside `{_GUARD}`: with the "
               "spawn start method (Windows, macOS) every worker re-runs the script and fails")
    safety = Safety.UNSAFE
    triggers = ("DataLoader",)
    needs = Needs.any_of(fragments=("DataLoader",))
    valid = (
        "from torch.utils.data import DataLoader\ndef main():\n"
        "    for batch in DataLoader(range(8), num_workers=2):\n        print(batch)\n"
        "if __name__ == '__main__':\n    main()\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(range(8), num_workers=0)\n"
        "for batch in loader:\n    print(batch)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(range(8), num_workers=2)\n"
        "def train():\n    for batch in loader:\n        print(batch)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(range(8), num_workers=2, "
        "multiprocessing_context='fork')\nfor batch in loader:\n    print(batch)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.data import DataLoader\n\n"
            "loader = DataLoader(range(8), num_workers=2)\nfor batch in loader:\n"
            "    print(batch)\n",
            "import torch\nfrom torch.utils.data import DataLoader\n\n"
            "if __name__ == \"__main__\":\n    loader = DataLoader(range(8), num_workers=2)\n"
            "    for batch in loader:\n        print(batch)\n",
            unsafe=True,
        ),
        Example(
            "from torch.utils.data import DataLoader\ndef main():\n"
            "    loader = DataLoader(range(8), num_workers=4)\n    for batch in loader:\n"
            "        print(batch)\nmain()\n",
            "from torch.utils.data import DataLoader\ndef main():\n"
            "    loader = DataLoader(range(8), num_workers=4)\n    for batch in loader:\n"
            "        print(batch)\nif __name__ == \"__main__\":\n    main()\n",
            unsafe=True,
        ),
        Example(
            "from torch.utils.data import DataLoader\nloader = DataLoader(range(8), num_workers=2)\n"
            "for batch in loader:\n    print(batch)\ndef helper():\n    pass\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loaders: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if is_dataloader(self.names, node) and workers(node) != "none" and \
                start_method(self.names, node) != "fork":
            self._loaders.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        path = self.context.path.replace("\\", "/")
        if path.endswith(".ipynb") or path.split("/")[-1] == "__main__.py" or \
                is_pytest_file(path):
            return
        for loader in self._loaders:
            if not runs_on_import(self.names, loader):
                continue
            uses = _import_time_uses(self.names, loader)
            if uses:
                self._report(original_node, loader, uses)

    def _report(self, module: cst.Module, loader: cst.Call, uses: list[cst.CSTNode]) -> None:
        message = self.message
        if workers(loader) == "unknown":
            message += " (when `num_workers` > 0)"
        if has_main_guard(module):
            self.report(loader, message + f"; no fix: the file already has an `{_GUARD}` block, "
                        "move the script code into it")
            return
        tail = script_tail(module)
        targets = {id(node) for node in (loader, *uses)}
        required = [s for s in module.body if reaches(self.names, s, targets)]
        if not required or any(s not in tail for s in required):
            self.report(loader, message + "; no fix: the script code is not one block after the "
                        "last `def`, `class` and import")
            return
        read = _read_by_worker_code(self.names, module, tail, loader)
        if read is not None:
            self.report(loader, message + f"; no fix: `{read[0]}` is defined by the script code "
                        f"and read by {read[1]}, which workers run without it")
            return
        fix = Fix(Safety.UNSAFE, f"move the script code under `{_GUARD}`",
                  guarded_by_main(tail))  # type: ignore[arg-type]
        self.report(loader, message, fix=fix)


def _import_time_uses(names: NameIndex, loader: cst.Call) -> list[cst.CSTNode]:
    """Where code that runs on import iterates the loader or hands it on."""
    if iterates_or_passes(names, loader):  # type: ignore[arg-type]
        return [loader]
    parent = names.parent(loader)
    if isinstance(parent, cst.Return):
        function = names.enclosing(parent, cst.FunctionDef)
        return [parent] if function is not None and \
            id(function) in import_time_functions(names) else []
    target = assigned_name(names, loader)
    if target is not None:
        scope = names.scope_of(target)
        return [read for read in names.loads_in(scope, target.value)
                if iterates_or_passes(names, read) and runs_on_import(names, read)]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        stored = parent.targets[0].target
        if isinstance(stored, cst.Attribute) and isinstance(stored.value, cst.Name) and \
                stored.value.value == "self":
            return _self_attribute_uses(names, loader, stored.attr.value)
    return []


def _self_attribute_uses(names: NameIndex, loader: cst.Call, attr: str) -> list[cst.CSTNode]:
    """``self.loader = DataLoader(...)``: reads of ``self.loader`` in the class's methods that
    run on import and iterate it or hand it on."""
    owner = names.enclosing(loader, cst.ClassDef)
    if owner is None:
        return []
    found: list[cst.CSTNode] = []
    for method in methods_of(owner).values():
        if id(method) not in import_time_functions(names):
            continue
        for node in walk_local(method.body):
            if isinstance(node, cst.Attribute) and node.attr.value == attr and \
                    isinstance(node.value, cst.Name) and node.value.value == "self" and \
                    iterates_or_passes(names, node):  # type: ignore[arg-type]
                found.append(node)
    return found


def _read_by_worker_code(names: NameIndex, module: cst.Module, tail: list[cst.BaseStatement],
                         loader: cst.Call) -> tuple[str, str] | None:
    """A name only the tail defines, read by a class or a ``collate_fn``/``worker_init_fn``:
    (the name, who reads it)."""
    assert names.module_scope is not None
    in_tail = {id(statement) for statement in tail}
    worker_fns = {id(function): keyword for keyword, function in worker_functions(names, loader)}
    for name, bindings in names.module_scope.bindings.items():
        if not all(_top_statement(names, b.node, module) in in_tail for b in bindings):
            continue
        for read in names.loads_in(names.module_scope, name):
            owner = names.enclosing(read, cst.ClassDef)
            if owner is not None:
                return name, f"class `{owner.name.value}`"
            function = names.enclosing(read, cst.FunctionDef)
            if function is not None and id(function) in worker_fns:
                return name, f"the `{worker_fns[id(function)]}` `{function.name.value}`"
    return None


def _top_statement(names: NameIndex, node: cst.CSTNode, module: cst.Module) -> int | None:
    previous = node
    for ancestor in names.ancestors(node):
        if ancestor is module:
            return id(previous)
        previous = ancestor
    return None


class CudaInDataLoaderWorker(Rule):
    """## What it does
    Reports CUDA work (`.cuda()`, `.to("cuda")`, a torch function called with
    `device="cuda"`, `torch.cuda.*` calls) in the code a `DataLoader` with
    worker processes runs in them: its dataset's `__getitem__`/`__iter__`
    (and the methods they call), its `collate_fn` and its `worker_init_fn`.

    ## Why is this bad?
    On Linux, workers are forked from the training process, which has
    usually initialised CUDA by then (the model is on the GPU). CUDA cannot
    be used in a forked child: the worker raises `RuntimeError: Cannot
    re-initialize CUDA in forked subprocess. To use CUDA with
    multiprocessing, you must use the 'spawn' start method`. With `spawn`
    every worker creates its own CUDA context (hundreds of MB each) and
    ships GPU tensors between processes.

    ## Example
    ```python
    class Images(Dataset):
        def __getitem__(self, i):
            return self.images[i].cuda()

    loader = DataLoader(Images(), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    class Images(Dataset):
        def __getitem__(self, i):
            return self.images[i]

    loader = DataLoader(Images(), batch_size=32, num_workers=4, pin_memory=True)
    for batch in loader:
        batch = batch.cuda(non_blocking=True)
    ```

    ## Fix safety
    Report only: the transfer belongs in the training loop, after the batch
    arrives, which is a change to two places the tool cannot make for you.
    The error text is `torch.cuda._lazy_init`'s in torch 2.13 (a CPU-only
    build raises "Torch not compiled with CUDA enabled" instead, so this was
    read in the source, not run). The datasets and functions of this file
    passed to a loader in this file are followed, and a dataset class that
    another file of the run defines (reported at the loader, naming the
    method; its base classes in a third file are not followed);
    `num_workers=0`, and a loader built with
    `multiprocessing_context="spawn"` or `"forkserver"`, are not reported;
    `torch.cuda.is_available()`/`device_count()` do not initialise CUDA and
    are fine.

    ## References
    - [`torch.utils.data`: multi-process data loading](https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading)
    - [Multiprocessing best practices: CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "TFC303"
    name = "cuda-in-dataloader-worker"
    message = ("CUDA work in code that `DataLoader` workers run: forked workers raise \"Cannot "
               "re-initialize CUDA in forked subprocess\"; keep it in the training process "
               "(move batches to the GPU in the training loop)")
    triggers = ("DataLoader",)
    needs = Needs.any_of(fragments=("DataLoader",))
    valid = (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        return torch.zeros(3)\n"
        "loader = DataLoader(D(), num_workers=4)\nfor x in loader:\n    x = x.cuda()\n",
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        return torch.zeros(3).cuda()\n"
        "loader = DataLoader(D(), num_workers=0)\n",
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        return torch.zeros(3).cuda()\n"
        "loader = DataLoader(D(), num_workers=2, multiprocessing_context='spawn')\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass D(Dataset):\n"
            "    def __getitem__(self, i):\n        return torch.zeros(3).cuda()\n"
            "loader = DataLoader(D(), num_workers=4)\n"
        ),
        Example(
            "import torch\nfrom torch.utils.data import DataLoader\ndef collate(batch):\n"
            "    return torch.stack(batch).to('cuda')\n"
            "loader = DataLoader(range(8), num_workers=2, collate_fn=collate)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loaders: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if is_dataloader(self.names, node) and workers(node) != "none" and \
                start_method(self.names, node) not in ("spawn", "forkserver"):
            self._loaders.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        reported: set[int] = set()
        for loader in self._loaders:
            self._dataset_of_another_file(loader)
            for where, function in _worker_code(self.names, loader):
                for node in walk_local(function.body):
                    if not isinstance(node, cst.Call) or id(node) in reported:
                        continue
                    why = cuda_work(self.names, node)
                    if why is not None:
                        reported.add(id(node))
                        self.report(node, self.message.replace(
                            "code that `DataLoader` workers run", f"{where}, which `DataLoader` "
                            "workers run"), reason=why)

    def _dataset_of_another_file(self, loader: cst.Call) -> None:
        """A dataset class another file of the run defines: the project says what its worker
        code does (``dataset_cuda_work``); reported at the loader, which starts the workers."""
        dataset = dataset_argument(loader)
        qualified = _imported_class_of_instance(self.names, dataset) if dataset else None
        work = self.context.project.dataset_cuda_work(qualified) if qualified else None
        if work is not None:
            self.report(loader, self.message.replace(
                "code that `DataLoader` workers run", f"`{work.method}` ({work.where}), which "
                "this loader's workers run"), reason=work.what)


def _imported_class_of_instance(names: NameIndex, expr: cst.BaseExpression) -> str | None:
    """The qualified name of the imported class ``expr`` is an instance of: ``Images(...)``
    (``from data import Images``), or a name bound only once to such a call."""
    for _ in range(4):
        if not isinstance(expr, cst.Name):
            break
        bindings = names.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or \
                bindings[0].value is None:
            return None
        expr = bindings[0].value
    return names.qualified_name(expr.func) if isinstance(expr, cst.Call) else None


def _worker_code(names: NameIndex, loader: cst.Call) -> list[tuple[str, cst.FunctionDef]]:
    """The functions of this file a loader runs in its workers, each with where it sits:
    the dataset's methods, ``collate_fn``, ``worker_init_fn``, and the module-level functions
    they call."""
    found: list[tuple[str, cst.FunctionDef]] = []
    dataset = dataset_argument(loader)
    cls = class_of_instance(names, dataset) if dataset is not None else None
    if cls is not None:
        for method in worker_methods(names, cls):
            owner = names.enclosing(method, cst.ClassDef) or cls
            found.append((f"`{owner.name.value}.{method.name.value}`", method))
    found += [(f"the `{keyword}` `{f.name.value}`", f) for keyword, f in
              worker_functions(names, loader)]
    seen = {id(function) for _, function in found}
    index = 0
    while index < len(found):
        where, function = found[index]
        index += 1
        for node in walk_local(function.body):
            if isinstance(node, cst.Call):
                callee = local_function(names, node)
                if callee is not None and id(callee) not in seen:
                    seen.add(id(callee))
                    found.append((f"`{callee.name.value}` (called from {where})", callee))
    return found


RULES = [DataLoaderWithoutMainGuard, CudaInDataLoaderWorker]
