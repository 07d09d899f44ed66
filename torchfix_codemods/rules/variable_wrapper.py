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
from torchfix_codemods.analysis.facts.values import no_history, tensor_facts
from torchfix_codemods.analysis.vocabulary.tensor_methods import TENSOR_FACTORIES
from torchfix_codemods.analysis.vocabulary.torch_api import VARIABLE_CLASSES
from torchfix_codemods.edits.expressions import as_receiver, method_call
from torchfix_codemods.edits.references import ImportRemoval
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
    builds graphs: inside `with torch.no_grad():` or a function decorated with
    `torch.no_grad()` (TFC202 adds one to evaluation functions) the wrapper is
    removed like any other, since no graph is built there, which is what
    `volatile` meant; elsewhere it is reported without a fix, use
    `with torch.no_grad():` (when TFC202 adds one to the function in the same
    `fix` run, the next round removes the wrapper). Under `no_grad` `x` itself
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
    triggers = ("Variable",)
    needs = Needs.any_of("Variable")
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
            "import torch\nfrom torch.autograd import Variable\n\n\n@torch.no_grad()\n"
            "def predict(model, x):\n    return model(Variable(x, volatile=True))\n",
            "import torch\n\n\n@torch.no_grad()\n"
            "def predict(model, x):\n    return model(x)\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._self_assigned: list[tuple[cst.Call, cst.SimpleStatementLine,
                                        tuple[ImportRemoval, ...], str | None]] = []

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
            if not (literal_bool(volatile.value) is True and (
                    in_no_grad(self.names, node))):
                self.report(node, "`Variable(..., volatile=True)` was removed in torch 0.4 and "
                            "is ignored: run inference under `with torch.no_grad():`")
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
        qualified.split(".")[1] in TENSOR_FACTORIES


# ------------------------------------------------------------------- TFC107


RULES = [VariableWrapper]
