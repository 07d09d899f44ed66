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

from collections.abc import Sequence

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function
from torchfix_codemods.analysis.core.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
)
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.names import NameIndex, Scope
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.syntax import code_of, is_docstring, is_main_guard
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.project import LoaderShard
from torchfix_codemods.edits.composer import NestedEdits
from torchfix_codemods.edits.references import ImportRequest
from torchfix_codemods.edits.statements import simple_line, with_trailing_comment
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Fix, RuleContext
from torchfix_codemods.rules.data_parallel.loaders import LoaderSteps
from torchfix_codemods.rules.data_parallel.shapes import (
    DDP,
    _about_devices,
    _blocks_of,
    _comprehension_of,
    _conjuncts,
    _Irregular,
    _names_a_device,
    _root_name,
    _saved_objects,
    _wrap_target,
)
from torchfix_codemods.rules.data_parallel.templates import (
    _HELPER_TEMPLATE,
    _NO_WRITER_TEMPLATE,
    _UNWRAP_TEMPLATE,
    HELPERS,
    LAUNCH,
)
from torchfix_codemods.rules.data_parallel.visibility import check_side_effects_visible
from torchfix_codemods.rules.data_parallel.writers import quiet_writers


class _Migration(LoaderSteps):
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
            check_side_effects_visible(self.names, self.context.project, self.context.module,
                                       loop, self.loaders, self.loader)
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
