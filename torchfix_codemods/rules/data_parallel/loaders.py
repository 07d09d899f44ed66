"""TFC301's data side: the steps of the rewrite that shard the training ``DataLoader``.

A ``DistributedSampler`` on the training loader (built in this file, or by a function of
another file the project index pairs with it), ``set_epoch`` at the top of its epoch loop,
and, when the loader cannot be placed with confidence, the report that says where it is
built and what is left to do. :class:`LoaderSteps` is one part of
:class:`~.migration._Migration` (its base class): the state it reads and writes is the
migration's (``names``, ``edits``, ``imports``, ``loader``, ``loop``, ``shard``...), and it
calls the migration's helpers (``_helpers``, ``_line_of``...). Split from ``migration.py``
so that each module holds one side of the rewrite; the code is unchanged.
"""

from __future__ import annotations

import os

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function
from torchfix_codemods.analysis.core.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
    positional_args,
)
from torchfix_codemods.analysis.core.loops import epoch_loop_of
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.project import LoaderShard
from torchfix_codemods.analysis.vocabulary.naming import named_for_evaluation
from torchfix_codemods.edits.arguments import add_keyword, keyword
from torchfix_codemods.edits.composer import NestedEdits
from torchfix_codemods.edits.expressions import as_left_operand
from torchfix_codemods.edits.references import ImportRequest
from torchfix_codemods.edits.statements import fresh_name, simple_line
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Fix, RuleContext
from torchfix_codemods.rules.data_parallel.shapes import (
    SAMPLER,
    _DataSide,
    _Irregular,
    _is_literal_false,
    _named_for_evaluation,
    _pure,
    _returns_in,
    _shuffle_of,
)
from torchfix_codemods.rules.data_parallel.templates import (
    _WORLD_TEMPLATE,
)


class LoaderSteps:
    """The data-side steps of :class:`~.migration._Migration` (see the module docstring)."""

    context: RuleContext
    names: NameIndex
    loaders: list[cst.Call]
    edits: NestedEdits
    imports: list[ImportRequest]
    loader: cst.Call | None
    loop: cst.For | None
    loader_name: str | None
    shard: LoaderShard | None
    batch_scaling: list[cst.CSTNode]

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
                    if target is None or named_for_evaluation(target.value):
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
