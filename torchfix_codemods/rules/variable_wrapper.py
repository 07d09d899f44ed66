"""TFC106: ``torch.autograd.Variable(x)``, a pre-0.4 wrapper that now only detaches.

Since torch 0.4 a tensor is what a ``Variable`` was; the call survives in
copied code and reads like a no-op, but returns a new leaf detached from
``x``'s graph.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.calls import keyword_arg, positional_args
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.statements import consecutive_runs, next_statement
from torchfix_codemods.analysis.core.syntax import literal_bool
from torchfix_codemods.analysis.facts.grad_mode import in_no_grad
from torchfix_codemods.analysis.facts.tensors import provenance
from torchfix_codemods.analysis.facts.values import no_history, tensor_facts
from torchfix_codemods.analysis.vocabulary.tensor_methods import NEW_OBJECT_FACTORIES
from torchfix_codemods.analysis.vocabulary.torch_api import (
    DIFFERENTIATING_FUNCTIONS,
    SETS_GRAD_MODE,
    VARIABLE_CLASSES,
)
from torchfix_codemods.edits.expressions import as_receiver, method_call
from torchfix_codemods.edits.references import ImportRemoval, ImportUnavailable
from torchfix_codemods.edits.statements import wrapped_in_with
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class VariableWrapper(Rule):
    """## What it does
    Removes `torch.autograd.Variable(x)`: `x.detach()` in general, `x` itself
    when `x` can carry no autograd history (a fresh tensor from a factory, a
    `DataLoader` batch, an integer tensor, a value computed under
    `torch.no_grad()`), `x.detach().requires_grad_()` for
    `requires_grad=True`. Removes the `Variable` import when it is left
    unused.

    ## Why is this bad?
    Since torch 0.4 tensors and Variables are one type. `Variable(x)` is not a
    no-op: it returns a new leaf, detached from `x`'s graph, which readers do
    not expect; the wrapper is dead weight that hides what happens.

    ## Example
    ```python
    from torch.autograd import Variable
    images = Variable(images.to(device))
    ```

    ## Use instead
    ```python
    images = images.to(device).detach()
    ```

    ## Fix safety
    Safe: `Variable(x)` accepts only tensors and returns exactly
    `x.detach()` (same storage, `requires_grad` from its argument, a leaf).
    Where `x` can carry no history, `x.detach()` differs from `x` only as a
    Python object, so `x` itself replaces the call (measured on torch 2.13:
    `Variable(torch.zeros(2))` shares the storage and has `requires_grad`
    False); not when the result is bound to a name that is later switched to
    require grad or given a gradient, which on `x` itself would change the
    caller's tensor too.
    `volatile=True` was removed in 0.4 and is ignored with a warning
    (`volatile was removed and now has no effect`), so inference silently
    builds graphs, and a DQN target computed through the trained network
    silently stops being a constant: inside `with torch.no_grad():` or a
    function decorated with `torch.no_grad()` (TFC202 adds one to evaluation
    functions) the wrapper is removed like any other, since no graph is built
    there, which is what `volatile` meant. Elsewhere the statements it made
    volatile go under `with torch.no_grad():` (unsafe: their results no
    longer require grad and no gradient flows through them, on purpose; the
    next fix round removes the wrapper): the statement itself where the
    volatile value is used in it (`target[mask] = model(Variable(s,
    volatile=True)).max(1)[0]`), and, where the value is stored
    (`v = Variable(x, volatile=True)`), the rest of its block, only when the
    function does no gradient work at all (no `backward`, step, `zero_grad`,
    `autograd.grad`, `requires_grad` switch). Reported without a fix: a
    stored value at the top of a module or in a function that trains, a
    statement that also builds values that were not volatile
    (`a, b = model(v), other(y)`), and a `volatile` that is not a literal
    `True`. `x.volatile = False` on a tensor does nothing since 0.4 (it only
    warns, measured) and is removed (safe). Under `no_grad` `x` itself
    replaces the call unless the code shows that
    `x` requires grad: nothing records what is done with it there. Other
    arguments (positional flags, `*args`) are reported without a fix. A
    `Variable(x)` that is a statement of its own (its result dropped, perhaps
    after `.cpu()` or `.float()`) did nothing and is removed, not turned into
    an `x.detach()` line that does nothing either; so is a line that would
    assign names to themselves (`data, target = Variable(data),
    Variable(target)` on loader batches).

    ## References
    - [Variable (deprecated)](https://docs.pytorch.org/docs/stable/autograd.html#variable-deprecated)
    - [PyTorch 0.4.0 migration guide: merging `Tensor` and `Variable`](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    """

    code = "TFC106"
    name = "variable-wrapper"
    message = "`Variable` is a no-longer-needed wrapper that detaches: use the tensor"
    safety = Safety.SAFE
    triggers = ("Variable", "volatile")
    needs = Needs.any_of("Variable", "volatile")
    valid = (
        "import torch\nx = torch.randn(3).detach()\n",
        "import tensorflow as tf\nv = tf.Variable(1.0)\n",
        "from torch.autograd import Variable\nok = isinstance(x, Variable)\n",
    )
    invalid = (
        Example(
            "import torch\nfrom torch.autograd import Variable\n"
            "y = torch.randn(3, requires_grad=True) * 2\nx = Variable(y)\n",
            "import torch\ny = torch.randn(3, requires_grad=True) * 2\nx = y.detach()\n",
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n"
            "x = Variable(torch.zeros(3), requires_grad=True)\n",
            "import torch\nx = torch.zeros(3).requires_grad_()\n",
        ),
        Example(
            "import torch\nw = torch.autograd.Variable(torch.ones(2) + 1)\n",
            "import torch\nw = torch.ones(2) + 1\n",
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n"
            "x = Variable(torch.zeros(3), volatile=True)\n",
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n\n\n"
            "def predict_all(model, xs):\n    return [model(Variable(x, volatile=True)) for x in xs]\n",
            "import torch\n\n\n"
            "def predict_all(model, xs):\n    with torch.no_grad():\n        return [model(x) for x in xs]\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch.autograd import Variable\n\n\n@torch.no_grad()\n"
            "def predict(model, x):\n    return model(Variable(x, volatile=True))\n",
            "import torch\n\n\n@torch.no_grad()\n"
            "def predict(model, x):\n    return model(x)\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._self_assigned: list[tuple[cst.Call, cst.SimpleStatementLine,
                                        tuple[ImportRemoval, ...], str | None]] = []
        self._volatile: list[cst.Call] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        """``x.volatile = False``: a tensor's ``volatile`` has done nothing since torch 0.4
        (setting it only warns, measured), so the line goes where ``x`` is a tensor."""
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        line = self.names.parent(node)
        if not (isinstance(target, cst.Attribute) and target.attr.value == "volatile" and
                literal_bool(node.value) is not None and
                isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            return
        found = provenance(self.names, target.value)
        if not found.is_tensor:
            return
        block = self.names.parent(line)
        alone = isinstance(block, (cst.IndentedBlock, cst.Module)) and len(block.body) == 1
        commented = line.trailing_whitespace.comment is not None or any(
            empty.comment is not None for empty in line.leading_lines)
        new: cst.SimpleStatementLine | cst.RemovalSentinel = cst.RemovalSentinel.REMOVE
        if alone or commented:
            new = line.with_changes(body=[cst.Pass()])
        fix = Fix(Safety.SAFE, "remove the line: setting `volatile` does nothing",
                  [(line, new)])
        self.report(node, "setting `volatile` on a tensor has had no effect since torch 0.4 "
                    "(it only warns)", fix=fix, reason=f"the receiver is a tensor "
                    f"({found.reason})")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified not in VARIABLE_CLASSES:
            return
        removal = self._import_removal(node.func)
        positional = positional_args(node)
        data = keyword_arg(node, "data") or (positional[0] if positional else None)
        volatile = keyword_arg(node, "volatile")
        requires = keyword_arg(node, "requires_grad")
        known = {"data", "requires_grad"}
        if volatile is not None:
            if literal_bool(volatile.value) is not True:
                self.report(node, _VOLATILE + " (no fix: `volatile` is not a literal `True`)")
                return
            if not in_no_grad(self.names, node):
                self._volatile.append(node)  # wrapped in `no_grad` at the end of the module
                return
            # Under no_grad the call builds no graph, which is what volatile meant: only
            # the wrapper is left to remove.
            known.add("volatile")
        extra = [a for a in node.args if a.star or (a.keyword is not None
                                                    and a.keyword.value not in known)]
        if data is None or extra or len(positional) > 1:
            self.report(node, self.message + " (no fix: arguments the tool does not rewrite)")
            return
        value = data.value
        line = self._statement_without_effect(node, value)
        if line is not None and requires is None:
            self._report_removal(node, line, removal)
            return
        new: cst.BaseExpression = as_receiver(value)
        fresh = _is_fresh(self.names, value)
        plain = None if fresh else self._without_history(node, value, requires)
        if not fresh and plain is None:
            new = method_call(new, "detach")
        elif (requires is None or literal_bool(requires.value) is False) and \
                isinstance(self.names.parent(node), _WHOLE_VALUE):
            new = value  # `x = Variable(a * 2)` becomes `x = a * 2`, without parentheses
            line = self._assigns_itself(node)
            if line is not None:
                self._report_self_assignment(node, line, removal, plain)
                return
        if requires is not None:
            flag = requires.value
            if isinstance(flag, cst.Name) and flag.value == "True":
                new = method_call(new, "requires_grad_")
            elif not (isinstance(flag, cst.Name) and flag.value == "False"):
                new = method_call(new, "requires_grad_", [cst.Arg(flag)])
        bare = fresh or plain is not None
        description = "replace `Variable(x)` with " + ("`x`" if bare else "`x.detach()`")
        fix = Fix(Safety.SAFE, description,
                  [(node, new.with_changes(lpar=node.lpar, rpar=node.rpar)
                    if node.lpar else new)],
                  remove_imports=removal)
        reason = ("the argument is a fresh tensor from a factory" if fresh else
                  f"the argument can carry no autograd history ({plain})" if plain is not None
                  else "`Variable(x)` returns `x.detach()`")
        self.report(node, fix=fix, reason=reason)

    # ------------------------------------------------------------ volatile outside no_grad
    def _wrap_volatile(self) -> None:
        """Each ``Variable(x, volatile=True)`` outside ``no_grad``: the statements it made
        volatile go under ``with torch.no_grad():`` (the next fix round then removes the
        wrapper, as under any ``no_grad``). Where the code does gradient work there, or the
        statements cannot be wrapped, it is reported."""
        regions: dict[int, tuple[cst.BaseSuite | cst.Module, list[cst.BaseStatement],
                                 list[cst.Call]]] = {}
        for node in self._volatile:
            found = self._volatile_region(node)
            if isinstance(found, str):
                self.report(node, _VOLATILE + f" (no fix: {found})")
                continue
            block, statements = found
            entry = regions.setdefault(id(block), (block, [], []))
            entry[1].extend(s for s in statements if all(s is not t for t in entry[1]))
            entry[2].append(node)
        for block, statements, nodes in regions.values():
            for group, calls in _contiguous_groups(block, statements, nodes, self.names):
                self._wrap_group(group, calls)

    def _volatile_region(self, node: cst.Call
                         ) -> tuple[cst.BaseSuite | cst.Module, list[cst.BaseStatement]] | str:
        """The statements ``node`` made volatile in 0.3: its own statement when the volatile
        value is used there (``model(Variable(x, volatile=True))``), and when it is stored
        (``v = Variable(x, volatile=True)``) that statement and the rest of its block, where
        ``v`` and what is computed from it are used. A reason when there is none to wrap."""
        statement: cst.CSTNode = node
        block = self.names.parent(node)
        while block is not None and not isinstance(block, (cst.IndentedBlock, cst.Module)):
            if isinstance(block, (cst.SimpleStatementSuite, cst.Lambda, cst.FunctionDef,
                                  cst.ClassDef)):
                return "the statement cannot be wrapped where it is"
            statement, block = block, self.names.parent(block)
        if block is None or not isinstance(statement, cst.BaseStatement):
            return "the statement cannot be wrapped where it is"  # pragma: no cover
        body = list(block.body)
        index = next(i for i, s in enumerate(body) if s is statement)
        if not self._stored(node, statement):
            # Used where it is made: what that statement computes was volatile in 0.3, unless
            # it also builds other values beside it (`a, b = model(v), other(y)`).
            if _builds_values_beside(self.names, statement, node):
                return "the statement also computes values that were not volatile"
            statements = [statement]
        elif isinstance(block, cst.Module):
            return ("the value is stored at the top of the module: the rest of the script would "
                    "go under `no_grad`")
        else:
            # Stored: what is computed from it comes later in the block. The rest of the block
            # goes under `no_grad`, only where the function does no gradient work at all (a
            # forward whose result is trained on later must keep its graph).
            statements = body[index:]
            if not _read_after(statement, statements[1:]):
                return ("what it stores is used outside the block that stores it: "
                        "`no_grad` has to go around those uses")
            function = self.names.enclosing(node, cst.FunctionDef)
            blocker = _gradient_work(self.names, [function] if function is not None else [])
            if blocker is not None:
                return (f"the function also does gradient work ({blocker}): wrap only the "
                        "inference in `with torch.no_grad():`")
        blocker = _gradient_work(self.names, statements)
        if blocker is not None:
            return (f"the statements it made volatile also {blocker}: `no_grad` around them would "
                    "change training; wrap only the inference in `with torch.no_grad():`")
        return block, statements

    def _stored(self, node: cst.Call, statement: cst.CSTNode) -> bool:
        """``node`` (through a chain of its own methods, ``.cuda()``, and as an element of a
        tuple, list or comprehension) is the whole value an assignment stores: what is done
        with it comes in later statements."""
        expr: cst.CSTNode = node
        parent = self.names.parent(expr)
        while True:
            if isinstance(parent, cst.Attribute) and parent.value is expr:
                call = self.names.parent(parent)
                if not (isinstance(call, cst.Call) and call.func is parent):
                    return False
                expr = call
            elif isinstance(parent, cst.Element) and parent.value is expr:
                expr = self.names.parent(parent)
            elif isinstance(parent, (cst.ListComp, cst.GeneratorExp, cst.SetComp)) and \
                    parent.elt is expr:
                expr = parent
            else:
                break
            parent = self.names.parent(expr)
        return isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr and \
            isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1

    def _wrap_group(self, statements: list[cst.BaseStatement], calls: list[cst.Call]) -> None:
        try:
            reference = self.context.imports.reference("torch.no_grad", statements[0])
        except ImportUnavailable as error:
            for node in calls:
                self.report(node, _VOLATILE + f" (no fix: {error})")
            return
        imports = (reference.needs,) if reference.needs else ()
        replacements = wrapped_in_with(statements,  # type: ignore[arg-type]
                                       cst.Call(func=reference.expression))
        fix = Fix(Safety.UNSAFE, "run the statements it made volatile under "
                  "`torch.no_grad()`", replacements,  # type: ignore[arg-type]
                  imports=imports)
        for node in calls:
            self.report(node, _VOLATILE, fix=fix, reason="in torch 0.3 nothing computed from a "
                        "volatile value built a graph; `no_grad` around those statements is what "
                        "does that today")

    def _without_history(self, node: cst.Call, value: cst.BaseExpression,
                         requires: cst.Arg | None) -> str | None:
        """Why ``x`` itself can stand for ``Variable(x)`` (None when ``x.detach()`` must):
        ``x`` carries no autograd history, so the detached copy differs from it only as a
        Python object. Not with a ``requires_grad`` flag that may be true, and not when the
        result is bound to a name that is later switched to require grad or given a
        gradient: on ``x`` itself that would change the caller's tensor too."""
        if requires is not None and literal_bool(requires.value) is not False:
            return None
        reason = no_history(self.names, value, self.context.options.inference_decorators)
        if reason is None and in_no_grad(self.names, node) and \
                not tensor_facts(self.names, value,
                                 self.context.options.inference_decorators).requires_grad.evidenced:
            # Under no_grad nothing records what is done with `x`; only a leaf that requires
            # grad would differ, and nothing here points at one.
            reason = "it runs under `torch.no_grad()` and nothing shows it requires grad"
        if reason is None:
            return None
        assign = self.names.parent(node)
        if isinstance(assign, cst.Assign) and assign.value is node:
            for target in assign.targets:
                if not isinstance(target.target, cst.Name):
                    return None
                if _switched_to_grad(self.names, target.target):
                    return None
        return reason

    def _statement_without_effect(self, node: cst.Call, value: cst.BaseExpression
                                  ) -> cst.SimpleStatementLine | None:
        """The line when ``Variable(x)`` (or ``Variable(x).cpu()``...) is a statement of its
        own: its result is dropped, so it did nothing, and ``x.detach()`` on that line
        would do nothing either (a reviewer reads it as a forgotten assignment)."""
        if not _plain_reference(value):
            return None
        expr: cst.BaseExpression = node
        parent = self.names.parent(expr)
        while isinstance(parent, cst.Attribute) and parent.value is expr and \
                parent.attr.value in _NO_EFFECT_METHODS:
            call = self.names.parent(parent)
            if not (isinstance(call, cst.Call) and call.func is parent and not call.args):
                return None
            expr, parent = call, self.names.parent(call)
        if not (isinstance(parent, cst.Expr) and parent.value is expr):
            return None
        line = self.names.parent(parent)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        return None

    def _assigns_itself(self, node: cst.Call) -> cst.SimpleStatementLine | None:
        """The line when, with every ``Variable`` on it replaced by its bare argument, it
        would assign names to themselves: ``x = Variable(x)``, ``data, target =
        Variable(data), Variable(target)``. Such a line does nothing and goes."""
        element = self.names.parent(node)
        tuple_ = self.names.parent(element) if isinstance(element, cst.Element) else None
        value = tuple_ if isinstance(tuple_, cst.Tuple) else node
        assign = self.names.parent(value)
        line = self.names.parent(assign)
        if not (isinstance(assign, cst.Assign) and assign.value is value and
                len(assign.targets) == 1 and isinstance(line, cst.SimpleStatementLine) and
                len(line.body) == 1):
            return None
        target = assign.targets[0].target
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]]
        if isinstance(value, cst.Tuple):
            if not isinstance(target, (cst.Tuple, cst.List)) or \
                    len(target.elements) != len(value.elements):
                return None
            pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements,
                                                        strict=True)]
        else:
            pairs = [(target, value)]
        for name, call in pairs:
            if not (isinstance(name, cst.Name) and isinstance(call, cst.Call) and
                    self.qualified_name(call.func) in VARIABLE_CLASSES):
                return None
            args = [a for a in call.args if not (a.keyword is not None and (
                a.keyword.value == "volatile" or (a.keyword.value == "requires_grad" and
                                                  literal_bool(a.value) is False)))]
            if len(args) != 1 or args[0].keyword is not None or args[0].star or \
                    not (isinstance(args[0].value, cst.Name) and
                         args[0].value.value == name.value):
                return None
            if not _is_fresh(self.names, args[0].value) and \
                    self._without_history(call, args[0].value, None) is None:
                return None
        return line

    def _report_self_assignment(self, node: cst.Call, line: cst.SimpleStatementLine,
                                removal: tuple[ImportRemoval, ...], plain: str | None) -> None:
        """Collected: consecutive such lines go in one fix at the end of the module."""
        self._self_assigned.append((node, line, removal, plain))

    def leave_Module(self, original_node: cst.Module) -> None:
        self._wrap_volatile()
        for run in consecutive_runs(self.names, self._self_assigned, lambda item: item[1]):
            lines: list[cst.SimpleStatementLine] = []
            for _, line, _, _ in run:
                if not lines or lines[-1] is not line:
                    lines.append(line)
            removals = tuple(dict.fromkeys(r for _, _, removal, _ in run for r in removal))
            fix = Fix(Safety.SAFE, "remove the line: without `Variable` it assigns names to "
                      "themselves", self._removed_lines(lines), remove_imports=removals)
            for node, _, _, plain in run:
                self.report(node, fix=fix, reason=f"the argument can carry no autograd history "
                            f"({plain or 'a fresh tensor'}), so the line would read `x = x`")

    def _removed_lines(self, lines: list[cst.SimpleStatementLine]
                       ) -> list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]]:
        """Remove ``lines`` (consecutive in one block); their comments move to the statement
        after them, or stay on a ``pass`` where nothing follows in the block."""
        carried = [empty for line in lines for empty in line.leading_lines
                   if empty.comment is not None or line is lines[0]]
        trailing = [line.trailing_whitespace.comment for line in lines
                    if line.trailing_whitespace.comment is not None]
        carried += [cst.EmptyLine(comment=comment) for comment in trailing]
        replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]] = [
            (line, cst.RemovalSentinel.REMOVE) for line in lines]
        following = next_statement(self.names, lines[-1])
        if following is not None and hasattr(following, "leading_lines"):
            replacements.append((following, following.with_changes(
                leading_lines=[*carried, *following.leading_lines])))
        else:
            block = self.names.parent(lines[0])
            alone = isinstance(block, (cst.IndentedBlock, cst.Module)) and \
                len(block.body) == len(lines)
            if alone or any(empty.comment is not None for empty in carried):
                replacements[-1] = (lines[-1], cst.SimpleStatementLine(
                    body=[cst.Pass()], leading_lines=carried))
        return replacements

    def _report_removal(self, node: cst.Call, line: cst.SimpleStatementLine,
                        removal: tuple[ImportRemoval, ...]) -> None:
        block = self.names.parent(line)
        alone = isinstance(block, (cst.IndentedBlock, cst.Module)) and len(block.body) == 1
        commented = line.trailing_whitespace.comment is not None or any(
            empty.comment is not None for empty in line.leading_lines)
        new: cst.SimpleStatementLine | cst.RemovalSentinel = cst.RemovalSentinel.REMOVE
        if alone or commented:  # keep the block non-empty and the comments where they were
            new = line.with_changes(body=[cst.Pass()])
        fix = Fix(Safety.SAFE, "remove the statement: `Variable(x)` alone does nothing",
                  [(line, new)], remove_imports=removal)
        self.report(node, fix=fix, reason="the result of `Variable(x)` is dropped: the "
                    "statement has no effect, before and after the fix")

    def _import_removal(self, func: cst.BaseExpression) -> tuple[ImportRemoval, ...]:
        if not isinstance(func, cst.Name):
            return ()
        binding = self.names.binding_of(func)
        if binding is None or not binding.qualified or func.value != "Variable":
            return ()
        module, _, name = binding.qualified.rpartition(".")
        return (ImportRemoval(module, name),)


_NO_EFFECT_METHODS = frozenset({"cpu", "detach", "float", "double", "half", "long", "int",
                                "contiguous", "clone"})
"""Tensor methods that return a new value and neither raise on a tensor nor change it
(``.cuda()`` is not one: it raises without a GPU)."""


def _plain_reference(value: cst.BaseExpression) -> bool:
    """``x`` or ``batch.text``: evaluating it has no effect worth keeping."""
    while isinstance(value, cst.Attribute):
        value = value.value
    return isinstance(value, cst.Name)


_WHOLE_VALUE = (cst.Assign, cst.Arg, cst.Return, cst.BaseElement, cst.AnnAssign)
"""Where the call is a whole value: what replaces it needs no parentheses."""


def _switched_to_grad(names: NameIndex, name: cst.Name) -> bool:
    """A read of ``name`` in its scope sets ``requires_grad``, calls ``requires_grad_`` or
    touches ``.grad``."""
    for read in names.loads_in(names.scope_of(name), name.value):
        parent = names.parent(read)
        if isinstance(parent, cst.Attribute) and parent.value is read and \
                parent.attr.value in ("requires_grad_", "requires_grad", "grad", "retain_grad"):
            return True
    return False


def _is_fresh(names: NameIndex, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call) or keyword_arg(value, "requires_grad") is not None:
        return False
    qualified = names.qualified_name(value.func) or ""
    return qualified.count(".") == 1 and qualified.startswith("torch.") and \
        qualified.split(".")[1] in NEW_OBJECT_FACTORIES


_VOLATILE = ("`Variable(..., volatile=True)` was removed in torch 0.4 and is ignored: run the "
             "inference under `with torch.no_grad():`")
_GRADIENT_METHODS = frozenset({"backward", "step", "zero_grad", "requires_grad_",
                               "retain_grad", "register_hook"})
"""Methods whose call in the statements a volatile value reaches means gradient work there:
a backward, an optimizer or scheduler step, gradients reset or hooked, a leaf switched on."""


class _GradientWork(cst.CSTVisitor):
    def __init__(self, names: NameIndex) -> None:
        self.names = names
        self.found: str | None = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _GRADIENT_METHODS:
            self.found = self.found or f"call `.{func.attr.value}()`"
        qualified = self.names.qualified_name(func) or ""
        if qualified in DIFFERENTIATING_FUNCTIONS or qualified in SETS_GRAD_MODE:
            self.found = self.found or f"call `{qualified}`"

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value in ("requires_grad", "grad"):
            self.found = self.found or f"set `.{target.attr.value}`"

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = self.found or "yield (the grad mode would leak to the consumer)"

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.found = self.found or "define a function"
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.found = self.found or "define a class"
        return False


def _gradient_work(names: NameIndex, statements: list[cst.BaseStatement]) -> str | None:
    """What gradient work ``statements`` do (as a phrase), or None. A function given whole is
    read through its body (its own definition is not "defining a function")."""
    visitor = _GradientWork(names)
    for statement in statements:
        if isinstance(statement, cst.FunctionDef):
            statement.body.visit(visitor)
        else:
            statement.visit(visitor)
    return visitor.found


def _read_after(binding: cst.BaseStatement, statements: list[cst.BaseStatement]) -> bool:
    """Whether ``statements`` read a name the assignment ``binding`` binds."""
    assign = binding.body[0] if isinstance(binding, cst.SimpleStatementLine) else None
    bound: set[str] = set()
    for target in getattr(assign, "targets", None) or [getattr(assign, "target", None)]:
        node = getattr(target, "target", target)
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, cst.Name):
                bound.add(item.value)
            elif isinstance(item, (cst.Tuple, cst.List)):
                stack.extend(element.value for element in item.elements)

    class _Reads(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in bound:
                self.found = True

    visitor = _Reads()
    for statement in statements:
        statement.visit(visitor)
    return visitor.found


def _builds_values_beside(names: NameIndex, statement: cst.BaseStatement,
                          node: cst.Call) -> bool:
    """``statement`` assigns or returns a tuple or list written out, one of whose elements does
    not contain ``node``: that element was not volatile in 0.3."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    value = getattr(small, "value", None)
    if not isinstance(value, (cst.Tuple, cst.List)):
        return False
    inside = {id(a) for a in names.ancestors(node)} | {id(node)}
    return any(id(element.value) not in inside for element in value.elements)


def _contiguous_groups(block: cst.BaseSuite | cst.Module, statements: list[cst.BaseStatement],
                       nodes: list[cst.Call], names: NameIndex
                       ) -> list[tuple[list[cst.BaseStatement], list[cst.Call]]]:
    """``statements`` of ``block`` in order, split into runs of consecutive ones (one
    ``with`` each), with the volatile calls of each run."""
    order = {id(s): i for i, s in enumerate(block.body)}
    ordered = sorted(statements, key=lambda s: order[id(s)])
    groups: list[tuple[list[cst.BaseStatement], list[cst.Call]]] = []
    for statement in ordered:
        if groups and order[id(groups[-1][0][-1])] + 1 == order[id(statement)]:
            groups[-1][0].append(statement)
        else:
            groups.append(([statement], []))
    for node in nodes:
        inside = {id(a) for a in names.ancestors(node)}
        for group, calls in groups:
            if any(id(s) in inside for s in group):
                calls.append(node)
                break
    return groups


# ------------------------------------------------------------------- TFC107


RULES = [VariableWrapper]
