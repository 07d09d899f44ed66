"""Which names are certainly bound where: definite assignment, per scope, in execution order.

The compiler's ``symtable`` says which names a scope binds, never *when*. In
pytorch/examples' ``super_resolve.py`` the checkpoint is loaded thirty lines
before ``device = ...`` runs, and only ``if opt.accel:``; a set-based check
passes ``torch.load(f, map_location=device)`` there, and the script then dies
with a NameError. This module follows each scope's statements in order,
through branches, loops, ``try``/``except``, ``with`` and ``match``, and knows
at every statement which of the scope's own names are bound on *every* path
that reaches it.

Two users:

* the engine's last gate (:mod:`torchfix_codemods.validation`): a rewrite must
  not add a read that may run before its name is bound (:func:`flow_of` on the
  text before and after, :attr:`Flow.unbound_reads` compared);
* rules that choose a name to write (:func:`definitely_bound`): TFC002 writes
  ``map_location=device`` only where ``device`` is bound, and a fix reuses a
  lazily imported alias only below the import.

It reads Python's own ``ast`` (the compiler's parser, fast and independent of
LibCST). Where Python is dynamic it stays conservative in the same way on
both sides of a rewrite, so only *new* doubtful reads count: a loop body may
run zero times, a ``try`` body may stop at its first line, a call never ends
the path (``sys.exit()`` included), and names used by a nested function are
looked up when it is called (never flagged), except a module-level name bound only
under ``if __name__ == "__main__":``: a function defined outside that block may run when
the file is imported, where the name does not exist (deeplab-xception's backbones read
``torch`` that only the script block imports). Annotations are not read (they may be
strings or postponed).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst
from libcst.metadata import CodeRange

from torchfix_codemods.analysis.core.import_time import guarded_suite
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex, Scope
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.walk import walk

State = frozenset[str] | None
"""The scope's own names bound on every path to a point; None: no path reaches it."""
ReadKey = tuple[str, str]
"""(scope path such as ``main.<locals>.load``, name)."""

_BUILTINS = frozenset(dir(builtins))
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""What ends a line for the tokenizer (``str.splitlines`` also splits at form feeds)."""
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass
class Flow:
    """What one module's text says about binding order."""

    unbound_reads: Counter[ReadKey] = field(default_factory=Counter)
    """Reads of a scope's own name that some path reaches before the name is bound."""
    unbound_lines: dict[ReadKey, list[int]] = field(default_factory=dict)
    bound_at: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict)
    """(line, character column) of a reachable statement -> its scope's names bound there."""


@lru_cache(maxsize=8)
def flow_of(text: str) -> Flow:
    """The binding-order facts of a module's text (raises SyntaxError like ``ast.parse``).

    Cached: the engine asks about the same text before and after each round of fixes.
    """
    tree = ast.parse(text)
    flow = Flow()
    lines = _LINE_BREAK.split(text)
    module = _ScopeFlow(flow, lines, "", _local_names(tree.body), None, module_like=True)
    module.script_only = script_only_names(tree.body)
    module.run(tree.body, frozenset())
    return flow


def script_suite(node: ast.stmt) -> list[ast.stmt] | None:
    """The suite of ``if __name__ == "__main__":`` (or the ``else`` of ``!=``) that runs only
    when the file is run as a script, or None."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or \
            len(node.test.ops) != 1:
        return None
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    texts = {s.value for s in sides if isinstance(s, ast.Constant)}
    if names != {"__name__"} or texts != {"__main__"}:
        return None
    if isinstance(node.test.ops[0], ast.Eq):
        return node.body
    if isinstance(node.test.ops[0], ast.NotEq) and node.orelse:
        return node.orelse
    return None


def script_only_names(body: Sequence[ast.stmt]) -> frozenset[str]:
    """Module-level names bound only inside the module's ``__main__`` block(s): they do not
    exist when the file is imported."""
    script: list[ast.stmt] = []
    rest: list[ast.AST] = []
    for statement in body:
        suite = script_suite(statement)
        if suite is None:
            rest.append(statement)
            continue
        script.extend(suite)
        assert isinstance(statement, ast.If)
        rest.append(statement.test)
        rest.extend(statement.orelse if suite is statement.body else statement.body)
    if not script:
        return frozenset()
    return _local_names(script).names - _local_names(rest).names


def _meet(*states: State) -> State:
    live = [state for state in states if state is not None]
    if not live:
        return None
    result = live[0]
    for state in live[1:]:
        result = result & state
    return result


def _bind(state: State, names: Iterable[str]) -> State:
    return None if state is None else state | frozenset(names)


@dataclass
class _Locals:
    bound: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)
    """``global``/``nonlocal`` names: bound elsewhere, never local here."""
    star: bool = False

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.bound - self.declared)


def _local_names(body: Sequence[ast.AST], params: Iterable[str] = ()) -> _Locals:
    """The names a scope's body binds (nested function, class and lambda bodies excluded)."""
    found = _Locals(set(params))
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            found.bound.add(node.name)
            stack.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                stack.extend([*node.bases, *node.keywords])
            else:
                stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, ast.Lambda):
            stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, _COMPREHENSIONS):
            # Only a walrus inside a comprehension binds in the enclosing scope.
            stack.append(node.generators[0].iter)
            found.bound.update(n.target.id for n in ast.walk(node)
                               if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name))
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    found.star = True
                else:
                    found.bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.declared.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            found.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.bound.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _parameters(args: ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


class _ScopeFlow:
    """One scope's statements followed in order, with the set of its names bound so far."""

    def __init__(self, flow: Flow, lines: list[str], path: str, local: _Locals,
                 outer: tuple[_ScopeFlow, State] | None, *, module_like: bool = False) -> None:
        self.flow = flow
        self.lines = lines
        self.path = path
        self.local = local.names
        self.unchecked = local.star
        """A star import may bind anything: no read of this scope is judged."""
        self.outer = outer
        """The scope that runs this one at once (a class body, a comprehension), with its
        state at that point: reads of its names are judged there."""
        self.module_like = module_like
        """Module and class bodies fall back to builtins for a name not bound yet."""
        self.script_only: frozenset[str] = frozenset()
        """Module level: its names bound only under the ``__main__`` guard."""
        self.deferred: frozenset[str] = frozenset()
        """Names of the module that a read here may find unbound when it runs: the
        script-only ones, for code defined outside the ``__main__`` block."""
        self._in_script = False
        self._breaks: list[list[State]] = []

    # ---------------------------------------------------------------- reads
    def read(self, node: ast.Name, state: State) -> None:
        name = node.id
        if name in self.local:
            if self.unchecked or state is None or name in state:
                return
            if self.module_like and name in _BUILTINS:
                return
            key = (self.path, name)
            self.flow.unbound_reads[key] += 1
            self.flow.unbound_lines.setdefault(key, []).append(node.lineno)
        elif self.outer is not None:
            scope, outer_state = self.outer
            scope.read(node, outer_state)
        elif name in self.deferred:
            key = (self.path, name)
            self.flow.unbound_reads[key] += 1
            self.flow.unbound_lines.setdefault(key, []).append(node.lineno)

    # ----------------------------------------------------------- statements
    def run(self, body: Sequence[ast.stmt], state: State) -> State:
        for statement in body:
            if state is not None:
                self.flow.bound_at[self._position(statement)] = state
            state = self.statement(statement, state)
        return state

    def _position(self, node: ast.stmt) -> tuple[int, int]:
        """(line, column in characters): ``ast`` counts UTF-8 bytes, LibCST characters."""
        line = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else ""
        if line.isascii():
            return node.lineno, node.col_offset
        prefix = line.encode("utf-8")[: node.col_offset]
        return node.lineno, len(prefix.decode("utf-8", errors="replace"))

    def statement(self, node: ast.stmt, state: State) -> State:
        if isinstance(node, (ast.Return, ast.Raise)):
            self.expressions(ast.iter_child_nodes(node), state)
            return None
        if isinstance(node, ast.Break):
            if self._breaks:
                self._breaks[-1].append(state)
            return None
        if isinstance(node, ast.Continue):
            return None
        if isinstance(node, ast.Assign):
            state = self.expression(node.value, state)
            for target in node.targets:
                state = self.target(target, state)
            return state
        if isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                self.read(ast.Name(node.target.id, ast.Load(), lineno=node.lineno), state)
            else:
                state = self.target(node.target, state)
            state = self.expression(node.value, state)
            return self.target(node.target, state)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return state if isinstance(node.target, ast.Name) else \
                    self.target(node.target, state)
            return self.target(node.target, self.expression(node.value, state))
        if isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    state = None if state is None else state - {target.id}
                else:
                    state = self.expression(target, state)
            return state
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return _bind(state, (a.asname or a.name.split(".")[0]
                                 for a in node.names if a.name != "*"))
        if isinstance(node, ast.If):
            state = self.expression(node.test, state)
            if self.script_only and script_suite(node) is not None:
                self._in_script = True
                try:
                    return _meet(self.run(node.body, state), self.run(node.orelse, state))
                finally:
                    self._in_script = False
            return _meet(self.run(node.body, state), self.run(node.orelse, state))
        if isinstance(node, ast.While):
            state = self.expression(node.test, state)
            breaks = self._loop(node.body, state)
            normal = None if _always_true(node.test) else self.run(node.orelse, state)
            return _meet(normal, *breaks)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            state = self.expression(node.iter, state)
            breaks = self._loop(node.body, self.target(node.target, state))
            return _meet(self.run(node.orelse, state), *breaks)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                state = self.expression(item.context_expr, state)
                if item.optional_vars is not None:
                    state = self.target(item.optional_vars, state)
            return self.run(node.body, state)
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            return self._try(node, state)  # type: ignore[arg-type]
        if isinstance(node, _FUNCTIONS):
            state = self.expressions([*node.decorator_list, *node.args.defaults,
                                      *(d for d in node.args.kw_defaults if d)], state)
            self._function(node.name, node.args, node.body)
            return _bind(state, [node.name])
        if isinstance(node, ast.ClassDef):
            state = self.expressions([*node.decorator_list, *node.bases, *node.keywords], state)
            body = _ScopeFlow(self.flow, self.lines, f"{self.path}{node.name}.",
                              _local_names(node.body), (self, state), module_like=True)
            body.deferred = self._deferred_inside()
            body.run(node.body, frozenset())
            return _bind(state, [node.name])
        if isinstance(node, ast.Match):
            return self._match(node, state)
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Pass)):
            return state
        if type(node).__name__ == "TypeAlias":  # Python 3.12: `type X = ...`
            return _bind(state, [node.name.id])  # type: ignore[attr-defined]
        return self.expressions(ast.iter_child_nodes(node), state)

    def _loop(self, body: Sequence[ast.stmt], state: State) -> list[State]:
        """Run a loop body once (what is bound on entry is what every iteration may rely on);
        the states at its ``break`` statements."""
        self._breaks.append([])
        self.run(body, state)
        return self._breaks.pop()

    def _try(self, node: ast.Try, state: State) -> State:
        body = self.run(node.body, state)
        handlers: list[State] = []
        for handler in node.handlers:
            entry = state if handler.type is None else self.expression(handler.type, state)
            if handler.name:
                entry = _bind(entry, [handler.name])
            out = self.run(handler.body, entry)
            if handler.name and out is not None:
                out = out - {handler.name}  # Python deletes it when the handler ends
            handlers.append(out)
        normal = _meet(self.run(node.orelse, body), *handlers)
        if not node.finalbody:
            return normal
        final = self.run(node.finalbody, state if normal is None else _meet(state, normal))
        if normal is None or final is None:
            return None
        return normal | final

    def _match(self, node: ast.Match, state: State) -> State:
        state = self.expression(node.subject, state)
        outs: list[State] = []
        exhaustive = False
        for case in node.cases:
            entry = state
            for part in ast.walk(case.pattern):
                if isinstance(part, (ast.MatchValue, ast.MatchClass)):
                    entry = self.expression(getattr(part, "value", None) or part.cls, entry)  # type: ignore[attr-defined]
            bound = [n.name for n in ast.walk(case.pattern)
                     if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name]
            bound += [n.rest for n in ast.walk(case.pattern)
                      if isinstance(n, ast.MatchMapping) and n.rest]
            entry = _bind(entry, bound)
            if case.guard is not None:
                entry = self.expression(case.guard, entry)
            elif isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                exhaustive = True
            outs.append(self.run(case.body, entry))
        return _meet(*outs) if exhaustive else _meet(state, *outs)

    def _function(self, name: str, args: ast.arguments, body: Sequence[ast.stmt]) -> None:
        """A function body runs later, as a scope of its own, its parameters bound."""
        params = _parameters(args)
        scope = _ScopeFlow(self.flow, self.lines, f"{self.path}{name}.<locals>.",
                           _local_names(body, params), None)
        scope.deferred = self._deferred_inside()
        scope.run(body, frozenset(params))

    def _deferred_inside(self) -> frozenset[str]:
        """What a function or class defined here may find unbound among the module's names."""
        if self.script_only:
            return frozenset() if self._in_script else self.script_only
        if self.module_like:
            return self.deferred  # a class body: its methods skip its own names
        return self.deferred - self.local

    def target(self, node: ast.expr, state: State) -> State:
        """Bind an assignment target (reading what a subscript or attribute target reads)."""
        if isinstance(node, ast.Name):
            return _bind(state, [node.id])
        if isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                state = self.target(element, state)
            return state
        if isinstance(node, ast.Starred):
            return self.target(node.value, state)
        return self.expressions(ast.iter_child_nodes(node), state)

    # ---------------------------------------------------------- expressions
    def expressions(self, nodes: Iterable[ast.AST], state: State) -> State:
        for node in nodes:
            state = self.expression(node, state)
        return state

    def expression(self, node: ast.AST, state: State) -> State:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.read(node, state)
            return state
        if isinstance(node, ast.NamedExpr):
            state = self.expression(node.value, state)
            return self.target(node.target, state)
        if isinstance(node, ast.Lambda):
            state = self.expressions([*node.args.defaults,
                                      *(d for d in node.args.kw_defaults if d)], state)
            params = _parameters(node.args)
            scope = _ScopeFlow(self.flow, self.lines, f"{self.path}<lambda>.",
                               _local_names([node.body], params), None)
            scope.deferred = self._deferred_inside()
            scope.expression(node.body, frozenset(params))
            return state
        if isinstance(node, _COMPREHENSIONS):
            return self._comprehension(node, state)
        if isinstance(node, ast.BoolOp):
            # Only the first operand always runs: a walrus in a later one may not.
            first = self.expression(node.values[0], state)
            for value in node.values[1:]:
                self.expression(value, first)
            return first
        if isinstance(node, ast.IfExp):
            state = self.expression(node.test, state)
            return _meet(self.expression(node.body, state), self.expression(node.orelse, state))
        return self.expressions(ast.iter_child_nodes(node), state)

    def _comprehension(self, node: ast.expr, state: State) -> State:
        """A comprehension runs at once in a scope of its own; a walrus in it binds here."""
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        state = self.expression(generators[0].iter, state)
        targets = [n.id for g in generators for n in ast.walk(g.target) if isinstance(n, ast.Name)]
        inner = _ScopeFlow(self.flow, self.lines, f"{self.path}<comprehension>.",
                           _Locals(set(targets)), (self, state))
        inner_state: State = frozenset()
        for index, generator in enumerate(generators):
            if index:
                inner_state = inner.expression(generator.iter, inner_state)
            inner_state = inner.target(generator.target, inner_state)
            inner_state = inner.expressions(generator.ifs, inner_state)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]  # type: ignore[attr-defined]
        inner.expressions(parts, inner_state)
        walrus = [n.target.id for n in ast.walk(node)
                  if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)]
        return _bind(state, walrus)


# ------------------------------------------------------------------ rules' question
def execution_scope(names: NameIndex, node: cst.CSTNode) -> Scope:
    """The scope whose code runs ``node`` at once: comprehensions run inline."""
    scope = names.scope_of(node)
    while scope.kind == "comprehension" and scope.parent is not None:
        scope = scope.parent
    return scope


def _statement_of(names: NameIndex, node: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost statement (small or compound) that runs ``node``."""
    for candidate in (node, *names.ancestors(node)):
        if isinstance(candidate, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return candidate
    return None


_FLOW: Slot[Flow | None] = Slot("definite.flow")


def _module_flow(names: NameIndex) -> Flow | None:
    if _FLOW in names.memo:
        return names.memo[_FLOW]
    module = names.module_scope.node if names.module_scope is not None else None
    flow: Flow | None = None
    if isinstance(module, cst.Module):
        try:
            flow = flow_of(module.code)
        except SyntaxError:  # LibCST accepts a few things Python rejects
            flow = None
    names.memo[_FLOW] = flow
    return flow


def runs_before(names: NameIndex, earlier: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``earlier`` is a simple statement line of a block that holds ``node``, before it.

    The cheap sufficient test: such a line has run on every path to ``node``.
    """
    line = earlier if isinstance(earlier, cst.SimpleStatementLine) else names.parent(earlier)
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    block = names.parent(line)
    previous: cst.CSTNode = node
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if ancestor is block:
            body = getattr(block, "body", ())
            for statement in body:
                if statement is previous:
                    return False
                if statement is line:
                    return True
            return False
        previous = ancestor
    return False


def definitely_bound(names: NameIndex, node: cst.CSTNode, name: str) -> bool:
    """Would reading ``name`` at ``node`` find it bound, on every path that gets there?

    A name of an enclosing scope (a module-level name read in a function) counts
    as bound: it is looked up when the function runs; except a module-level name
    bound only under ``if __name__ == "__main__":``, read from code defined outside
    that block, which may run when the file is imported. A name of the scope that
    runs ``node`` must be bound before it in execution order, on every branch.
    """
    found = names.lookup(name, names.scope_of(node))
    if found is None:
        return False
    scope, bindings = found
    if scope is not execution_scope(names, node):
        return scope is not names.module_scope or \
            not _script_only(names, bindings) or _in_script_block(names, node)
    if any(runs_before(names, b.node, node) for b in bindings
           if b.kind in ("import", "assign", "annassign")):
        return True
    flow = _module_flow(names)
    statement = _statement_of(names, node)
    module = names.module_scope.node if names.module_scope is not None else None
    if flow is None or statement is None or not isinstance(module, cst.Module):
        return False
    position = _statement_positions(names, module).get(id(statement))
    if position is None:
        return False
    bound = flow.bound_at.get((position.start.line, position.start.column))
    return bound is not None and name in bound


_STATEMENT_POSITIONS: Slot[dict[int, CodeRange]] = Slot("definite.statement_positions")


def _statement_positions(names: NameIndex, module: cst.Module) -> dict[int, CodeRange]:
    """The range of every statement of the module, from one code generation per module: one
    per question made the analysis quadratic in file size (a generated 80 KiB training
    script: 10.9 s of CPU against 1.0 s for 20 KiB, most of it in this code generation)."""
    def build() -> dict[int, CodeRange]:
        statements: list[cst.CSTNode] = []

        def enter(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
            if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                statements.append(node)
            return not isinstance(node, cst.BaseExpression)

        walk(module, enter, lambda node: None)
        return positions_of(module, statements)

    return names.memo.built(_STATEMENT_POSITIONS, build)


def _script_only(names: NameIndex, bindings: Sequence[Binding]) -> bool:
    """Every binding is inside a module-level ``__main__`` block."""
    return bool(bindings) and all(_in_script_block(names, b.node) for b in bindings)


def _in_script_block(names: NameIndex, node: cst.CSTNode) -> bool:
    """``node`` is inside the suite of a module-level ``if __name__ == "__main__":``."""
    child: cst.CSTNode = node
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, cst.Module):
            if not isinstance(child, cst.BaseStatement):
                return False
            suite = guarded_suite(child)
            return suite is not None and any(a is suite for a in names.ancestors(node))
        child = ancestor
    return False
