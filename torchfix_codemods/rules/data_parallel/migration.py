"""TFC301's rewrite of one file, one named step of :class:`_Migration` per place it touches.

The rewrite touches several places of one file at once (a helper block after
the imports, the wrap, the training ``DataLoader``, the epoch loop, saves and
prints, the end of training), so it is one :class:`Fix` with several
non-overlapping replacements, composed by
:class:`~torchfix_codemods.edits.composer.NestedEdits`. A step that cannot place
its edit with confidence raises :class:`_Irregular`, which the rule turns into a
report that still carries the launch line and the checklist.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

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
from torchfix_codemods.analysis.core.syntax import code_of, is_docstring, is_main_guard
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.project import LoaderShard
from torchfix_codemods.edits.arguments import add_keyword, keyword
from torchfix_codemods.edits.composer import NestedEdits
from torchfix_codemods.edits.expressions import as_left_operand
from torchfix_codemods.edits.references import ImportRequest
from torchfix_codemods.edits.statements import fresh_name, simple_line, with_trailing_comment
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Fix, RuleContext
from torchfix_codemods.rules.data_parallel.shapes import (
    DDP,
    SAMPLER,
    _about_devices,
    _blocks_of,
    _comprehension_of,
    _conjuncts,
    _DataSide,
    _Irregular,
    _is_literal_false,
    _named_for_evaluation,
    _names_a_device,
    _pure,
    _returns_in,
    _root_name,
    _saved_objects,
    _shuffle_of,
    _wrap_target,
)
from torchfix_codemods.rules.data_parallel.templates import (
    _HELPER_TEMPLATE,
    _NO_WRITER_TEMPLATE,
    _UNWRAP_TEMPLATE,
    _WORLD_TEMPLATE,
    HELPERS,
    LAUNCH,
)
from torchfix_codemods.rules.data_parallel.writers import quiet_writers


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
        """``batch_size *= n_gpu`` statements of the file."""
        self.file_writes: list[cst.Call] = []
        """``open(path, "w"/"a"/"x")`` calls of the file."""
        self.writers: list[cst.Call] = []
        """Objects that write files for as long as they live (a file opened outside a
        ``with``, a ``FileHandler``, a ``SummaryWriter``)."""
        self.guarded: list[cst.CSTNode] = []
        """Statements moved under ``if _ddp_is_main():``."""
        self.writer_objects: set[int] = set()
        """The ids of ``writers`` that build an object of a class that only writes files (a
        training ``Logger`` of the project): like a ``SummaryWriter``, a no-op object elsewhere."""
        self.quiet: set[int] = set()
        """The writers made to write on rank 0 only (the others stay reported)."""
        self.no_writer = False
        """A writer was replaced by ``_DDPNoWriter()`` on the other processes."""
        self.unwraps = False
        """A save of the wrapper itself was rewritten to ``_ddp_unwrap(...)``."""
        self.wrap: cst.Call | None = None
        self.loader_name: str | None = None
        """The name the epoch loop reads the loader by, when only that is known."""
        self.main_block: cst.If | None = None
        """The ``if __name__ == "__main__":`` block the wraps are in, when they are in one:
        the process group is joined at its top and left at its end, not when the file is
        imported."""
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
        if scope.kind == "module":
            blocks = {id(self._main_block_around(unit)) for unit, _, _ in placed}
            if len(blocks) != 1:
                raise _Irregular("some models are wrapped in the `if __name__ == \"__main__\":` "
                                 "block and some outside it")
            self.main_block = self._main_block_around(placed[0][0])
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
        self._output_helpers_on_rank_zero()
        self._outputs_on_rank_zero()
        self.quiet = quiet_writers(self, [*self.writers, *self._ungrouped_with_writes()],
                                   self.guarded)
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

    def data_side_report(self, why: str, withheld: bool = False) -> str:
        """The data side's finding: the exact edit it needs, where this file shows it. With
        ``withheld``, the migration is not applied at all (a model side alone would have every
        process repeat the same work); else the model side was migrated earlier."""
        where = self._where_loader_is_built()
        lines = positions_of(self.context.module, [n for n in (self.loader, self.loop) if n])
        epoch = (f"at the top of the epoch loop (line {lines[id(self.loop)].start.line})"
                 if self.loop is not None else "at the top of every epoch")
        here = self.loader is not None or bool(self._candidate_loaders())
        world = "`_ddp_setup()[2]`" if here else (
            "`int(os.environ.get(\"WORLD_SIZE\", \"1\"))` there, with `num_replicas=` and "
            "`rank=` read from WORLD_SIZE and RANK")
        name = self.shard.target if self.shard is not None else self.loader_name or "loader"
        if withheld:
            return (f"DataParallel -> DDP: data side not migrated ({why}), so the migration is "
                    "withheld: with the model side alone every process of a launch would read "
                    "the whole dataset and repeat the same work. To shard it by hand: in "
                    f"{where} add `sampler=torch.utils.data.DistributedSampler(dataset, "
                    "shuffle=<its shuffle>)` in place of `shuffle=` and divide `batch_size` by "
                    f"the world size; {epoch} call `{name}.sampler.set_epoch(epoch)`"
                    + self._scaling_note())
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
        groups = [g for g in self._writing_with_blocks()
                  if not any(self._inside(g, h) for h in self.guarded)]
        for output in self.outputs:
            line = statement_line(self.names, output)
            if any(self._inside(output, h) for h in self.guarded):
                continue  # in a helper that runs on rank 0 as a whole
            if any(any(a is group for a in self.names.ancestors(output)) for group in groups):
                continue  # inside a `with open(..., "a")` block that runs on rank 0 as a whole
            if self._per_rank(output) and not (
                    isinstance(output.func, cst.Name) and output.func.value == "print"):
                continue  # a file of each rank's own (a print still runs on rank 0 only)
            if line is not None and len(line.body) == 1 and isinstance(line.body[0], cst.Expr):
                self.edits.rewrite(line, _rank_zero_guard)
                self.guarded.append(line)
        for group in groups:
            self.edits.rewrite(group, _rank_zero_guard)
            self.guarded.append(group)

    def _output_helpers_on_rank_zero(self) -> None:
        """A function of this file that only prints and writes files (``save_checkpoint``:
        ``torch.save``, then ``shutil.copyfile`` of the same file; ``print_log``: a print and
        a write to the log it is given) runs on rank 0 as a whole: ``if not _ddp_is_main():
        return`` at its top. Guarding each call apart left rank 1 free to run the parts no
        vocabulary names (a copy of a file rank 0 was still writing crashed it). Only a
        function that returns no value (rank 1 gets the same ``None``), changes nothing its
        caller sees and writes no path of each rank's own (the project index's ``outputs``)."""
        silent = set(self.context.project.own_outputs().get("silent", ()))
        for statement in self.context.module.body:
            if not (isinstance(statement, cst.FunctionDef) and statement.name.value in silent
                    and isinstance(statement.body, cst.IndentedBlock)):
                continue
            if self._per_rank(statement) or self.wrap is not None and \
                    self._inside(self.wrap, statement):
                continue
            body = list(statement.body.body)
            first = body[1] if is_docstring(body[0]) and len(body) > 1 else body[0]
            if first is body[0] and is_docstring(first):
                continue  # a docstring alone
            self.edits.before(first, cst.parse_statement(
                "if not _ddp_is_main():  # TFC301: rank 0 writes what this function writes\n"
                "    return\n"))
            self.guarded.append(statement)

    def _ungrouped_with_writes(self) -> list[cst.Call]:
        """``with open(log, "a") as f:`` blocks that stay on every process (something they
        bind is read after them), writing to a path that is not each rank's own."""
        return [call for call in self.file_writes
                if isinstance(self.names.parent(call), cst.WithItem)
                and not any(self._inside(call, g) for g in self.guarded)
                and not self._per_rank(call)]

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
        between them and one before, are refused. A DDP per submodule is no fix where the
        first loss runs the part the second steps (measured in
        tests/ddp_real/measure_two_backward.py); the message says what is."""
        targets = [t for unit, _, _ in placed if (t := _wrap_target(unit)) is not None]
        if not targets:
            return
        wrapped = {code_of(t) for t in targets}
        for function in [self.context.module, *self._functions()]:
            body = function.body if isinstance(function, cst.Module) else function.body.body
            found = self._second_backward(body, wrapped, forwarded=False)
            if found is not None:
                lines = positions_of(self.context.module, list(found))
                model = f" of `{code_of(targets[0])}`" if len(targets) == 1 else ""
                raise _Irregular(
                    f"line {lines[id(found[1])].start.line} calls backward a second time after "
                    f"one forward of the wrapped model (the first at line "
                    f"{lines[id(found[0])].start.line}): DDP averages gradients across "
                    "processes in the first backward after a forward only, so the second "
                    "loss's gradients stay each process's own and the copies drift apart with "
                    f"no error. A DDP per submodule{model} does not help where the first "
                    "loss also runs the part the second one steps (a generator loss through "
                    "the discriminator completes the discriminator's averaging in the first "
                    "backward). Either run a forward per backward (the first loss, its "
                    "backward and step, then a new forward for the second), or leave the "
                    "model unwrapped and average by hand before each step: for every "
                    "parameter `p` that optimizer steps, `torch.distributed.all_reduce(p.grad)"
                    "; p.grad /= world_size`")

    def _functions(self) -> list[cst.FunctionDef]:
        return [s.node for s in self.names.all_scopes if isinstance(s.node, cst.FunctionDef)]

    def _second_backward(self, statements: Sequence[cst.BaseStatement], wrapped: set[str],
                         forwarded: bool, last: cst.Call | None = None,
                         ) -> tuple[cst.Call, cst.Call] | None:
        """Walks one block's statements in order: the first backward after a forward of the
        wrapped model, then a second one before the next forward. A nested block starts from
        what was seen before it (``loss_G.backward()`` then ``if train_d: loss_D.backward()``
        is two backward passes whenever the branch runs); exclusive branches (``if``/``else``)
        are walked apart, each from that state."""
        found, _, _ = self._backward_state(statements, wrapped, forwarded, last)
        return found

    def _backward_state(self, statements: Sequence[cst.BaseStatement], wrapped: set[str],
                        forwarded: bool, last: cst.Call | None,
                        ) -> tuple[tuple[cst.Call, cst.Call] | None, bool, cst.Call | None]:
        """:meth:`_second_backward`, with the state at the end of ``statements``: whether a
        forward was seen, and the backward since it (None when none)."""
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for node in walk_local(statement):
                    if not isinstance(node, cst.Call):
                        continue
                    if self._forwards(node, wrapped):
                        forwarded, last = True, None
                    elif isinstance(node.func, cst.Attribute) and \
                            node.func.attr.value == "backward" and forwarded:
                        if last is not None:
                            return (last, node), forwarded, last
                        last = node
                continue
            ends = []
            for block in _blocks_of(statement):
                found, block_forwarded, block_last = self._backward_state(
                    block, wrapped, forwarded, last)
                if found is not None:
                    return found, forwarded, last
                ends.append((block_forwarded, block_last))
            if isinstance(statement, cst.With) and len(ends) == 1:
                forwarded, last = ends[0]  # a `with` block runs once, in order
            elif any(isinstance(n, cst.Call) and self._forwards(n, wrapped)
                     for n in walk_local(statement)):
                forwarded, last = True, None
            else:
                last = next((b for _, b in ends if b is not None), last)
        return None, forwarded, last

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
            for node in _saved_objects(self._literal_behind(saved.value)):
                if any(self._same_object(node, target) for target in targets):
                    self._unwrap(node)
        self._unwrap_through_helpers(targets)

    def _unwrap(self, node: cst.BaseExpression) -> None:
        self.unwraps = True
        self.edits.rewrite(node, lambda old: cst.Call(
            cst.Name("_ddp_unwrap"), [cst.Arg(old)]))  # type: ignore[arg-type]

    def _unwrap_through_helpers(self, targets: list[cst.BaseExpression]) -> None:
        """The wrapper handed to a function of this file that pickles its parameter: he-y's
        soft-filter-pruning ``save_checkpoint({"state_dict": net, ...}, is_best, ...)`` with
        ``torch.save(state, filename)`` inside, or ``save(net, path)`` with ``torch.save(net,
        path)``. A literal at the call holding the wrapper gets ``_ddp_unwrap(net)`` there;
        the wrapper passed whole gets ``torch.save(_ddp_unwrap(net), path)`` in the function
        (the model itself for a DDP, anything else as it was, whoever calls it)."""
        saved_params = self._saved_parameters()
        done: set[int] = set()
        for scope in self.names.all_scopes:
            for reads in scope.loads.values():
                for read in reads:
                    call = self.names.parent(read)
                    if not (isinstance(call, cst.Call) and call.func is read):
                        continue
                    function = defined_function(self.names, read)
                    params = saved_params.get(id(function)) if function is not None else None
                    if not params or has_star_args(call) or has_star_kwargs(call):
                        continue
                    for name, value in self._arguments(call, function):  # type: ignore[arg-type]
                        for saved in params.get(name, ()):
                            if any(self._same_object(value, t) for t in targets):
                                if id(saved) not in done:
                                    done.add(id(saved))
                                    self._unwrap(saved)
                            elif isinstance(value, cst.Dict | cst.List | cst.Tuple) and \
                                    self._only_saved(function, name, params[name]):
                                for node in _saved_objects(value):
                                    if any(self._same_object(node, t) for t in targets) and \
                                            id(node) not in done:
                                        done.add(id(node))
                                        self._unwrap(node)

    def _only_saved(self, function: cst.FunctionDef | None, name: str,
                    saved: list[cst.Name]) -> bool:
        """The parameter ``name`` is read nowhere in ``function`` but by its saves: what the
        caller's literal holds reaches nothing else there."""
        if function is None:
            return False
        reads = self.names.loads_in(self.names.scope_of(saved[0]), name)
        return all(any(read is node for node in saved) for read in reads)

    def _saved_parameters(self) -> dict[int, dict[str, list[cst.Name]]]:
        """For each module-level function of this file, its parameters that a ``torch.save``
        in it pickles whole (``torch.save(state, path)``), by name: the reads saved."""
        found: dict[int, dict[str, list[cst.Name]]] = {}
        for output in self.outputs:
            if self.names.qualified_name(output.func) != "torch.save":
                continue
            saved = argument(output, "obj", 0)
            function = self.names.enclosing(output, cst.FunctionDef)
            if saved is None or function is None or \
                    self.names.parent(function) is not self.context.module:
                continue
            params = {p.name.value for p in (*function.params.posonly_params,
                                             *function.params.params)}
            for node in _saved_objects(saved.value):
                if isinstance(node, cst.Name) and node.value in params and all(
                        b.kind == "param" for b in reaching_bindings(self.names, node)):
                    found.setdefault(id(function), {}).setdefault(node.value, []).append(node)
        return found

    @staticmethod
    def _arguments(call: cst.Call, function: cst.FunctionDef,
                   ) -> list[tuple[str, cst.BaseExpression]]:
        """The arguments of ``call`` by the name of the parameter each one binds."""
        positional = [p.name.value for p in (*function.params.posonly_params,
                                             *function.params.params)]
        bound = []
        for index, arg in enumerate(call.args):
            if arg.keyword is not None:
                bound.append((arg.keyword.value, arg.value))
            elif index < len(positional):
                bound.append((positional[index], arg.value))
        return bound

    def _literal_behind(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``state`` of ``state = {"net": net, ...}; torch.save(state, path)`` (mixup-cifar10's
        ``checkpoint()``): the one dict, list or tuple literal that reaches the save."""
        if not isinstance(node, cst.Name):
            return node
        bindings = reaching_bindings(self.names, node)
        value = bindings[0].value if len(bindings) == 1 else None
        return value if isinstance(value, cst.Dict | cst.List | cst.Tuple) else node

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

    def _main_block_around(self, node: cst.CSTNode) -> cst.If | None:
        """The module-level ``if __name__ == "__main__":`` block (no ``else``) around ``node``."""
        for ancestor in self.names.ancestors(node):
            if isinstance(ancestor, cst.If) and isinstance(self.names.parent(ancestor), cst.Module):
                if ancestor.orelse is None and is_main_guard(ancestor.test) and \
                        isinstance(ancestor.body, cst.IndentedBlock):
                    return ancestor
                return None
        return None

    def _setup_first(self, scope: Scope) -> None:
        """``_ddp_setup()`` first in the wrap's function, or at the top of the ``__main__``
        block the wraps are in (at module level: after the helpers)."""
        body = self._body_of(scope)
        if scope.kind == "module" and self.main_block is not None:
            body = list(self.main_block.body.body)  # type: ignore[union-attr]
        elif scope.kind == "module":
            return
        setup = simple_line("_ddp_setup()", "TFC301: join the process group before anything "
                            "uses a device")
        first = body[0]
        self.edits.before(body[1] if is_docstring(first) and len(body) > 1 else first, setup)

    def _cleanup_last(self, scope: Scope) -> None:
        """``_ddp_cleanup()`` at the end of the function (or script, or ``__main__`` block)
        that runs the epochs."""
        body = self._body_of(scope)
        if scope.kind == "module" and self.main_block is not None:
            if self.loop is None or self._main_block_around(self.loop) is not self.main_block:
                raise _Irregular("the wrap is in the `if __name__ == \"__main__\":` block and "
                                 "the epoch loop is not")
            body = list(self.main_block.body.body)  # type: ignore[union-attr]
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
        template = _HELPER_TEMPLATE + (_UNWRAP_TEMPLATE if self.unwraps else "") + (
            _NO_WRITER_TEMPLATE if self.no_writer else "")
        helpers, needs = self._helpers(anchor, template)
        self.imports.extend(needs)
        self.edits.after(anchor, *helpers)
        if scope.kind == "module" and self.main_block is None:
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
        if isinstance(block, cst.Module) or isinstance(owner, cst.FunctionDef) or \
                self._in_main_block(block):
            return unit, None, replaced
        if isinstance(owner, cst.If) and owner.orelse is None and isinstance(block, cst.IndentedBlock):
            outer = self.names.parent(owner)
            if isinstance(outer, cst.Module) or isinstance(self.names.parent(outer), cst.FunctionDef) \
                    or self._in_main_block(outer):
                return unit, owner, replaced
        raise _Irregular(f"the wrap is inside {self._blocks_around(statement)} (DDP must wrap "
                         "in every process, and the rule moves a wrap only out of one `if` "
                         "without `else`)")

    def _in_main_block(self, block: cst.CSTNode | None) -> bool:
        """``block`` is the body of the module-level ``if __name__ == "__main__":`` block: as
        module level, since every process runs it."""
        owner = self.names.parent(block) if block is not None else None
        return isinstance(block, cst.IndentedBlock) and isinstance(owner, cst.If) and \
            self._main_block_around(block) is owner

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


def _rank_zero_guard(line: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(line, cst.SimpleStatementLine | cst.With)
    guard = cst.parse_statement("if _ddp_is_main():  # TFC301: rank 0 only\n    pass\n")
    assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
    return guard.with_changes(
        leading_lines=line.leading_lines,
        body=guard.body.with_changes(body=[line.with_changes(leading_lines=[])]))
