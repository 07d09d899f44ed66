"""Functions and classes of the run's files whose only effects are output, which TFC301 runs on
rank 0 alone once a script is migrated (issue 24: "side effects on the file system belong to
rank 0 as a whole: guard the helper, not the one call").

- An *output function* is a module-level function that prints or writes files
  (``torch.save``, ``with open(path, "w")``, ``shutil.copyfile``, ``os.makedirs``,
  ``plt.savefig``, ``log.write`` on a file it is given) and changes nothing its caller or
  the module sees: it binds no global, writes no attribute or item, defines nothing, and every
  other call in it formats text, builds paths, reads tensors (``state_dict()``, ``.item()``)
  or is another such function of its file. Skipping one on the other processes skips only
  their copy of the output.
- A *writer class* (a training ``Logger`` that keeps ``log.txt`` open) has methods of that kind
  that may also change the object's own attributes: an object of it used only through method
  calls whose results are dropped can be an object whose methods do nothing on the other
  processes.

Read off the standard ``ast``; what one file says is the names of its functions and classes
of that kind (``silent`` are the output functions that never return a value, which a guard
at their top can skip whole).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchfix_codemods.analysis.core.ast_walk import walk
from torchfix_codemods.analysis.project.registry import Fact, Question, register
from torchfix_codemods.analysis.vocabulary.torch_api import RANK_ZERO

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.index import IndexedFile, ProjectIndex

NAME = "outputs"
_BUILTINS = frozenset({
    "str", "repr", "format", "len", "int", "float", "round", "abs", "min", "max", "sum",
    "range", "enumerate", "zip", "sorted", "list", "dict", "tuple", "set", "bool",
    "isinstance", "hasattr", "getattr", "vars", "open", "print",
})
"""Builtins that compute values for the output, or are the output (``open``, ``print``)."""
_WRITE_METHODS = frozenset({"write", "writelines", "writerow", "writerows", "savefig"})
"""Methods that write a file (a file object's, a ``csv.writer``'s, a matplotlib figure's)."""
_OTHER_METHODS = frozenset({
    # text
    "format", "join", "ljust", "rjust", "center", "strip", "rstrip", "lstrip", "split",
    "replace", "lower", "upper", "startswith", "endswith",
    # files
    "flush", "close", "read", "readline", "readlines",
    # reads of tensors and mappings (not `cpu()`: a module's moves the module itself)
    "state_dict", "detach", "item", "tolist", "numpy", "clone", "size", "keys", "values",
    "items", "get",
})
_OWN_METHODS = frozenset({"append", "extend", "insert", "pop", "update", "setdefault", "clear"})
"""Methods that change their receiver: only on a value of the function's (or object's) own."""
_PURE_CALLS = ("os.path.", "time.", "json.dumps", "csv.writer", "sys.stdout.write",
               "sys.stdout.flush", "sys.stderr.write", "sys.stderr.flush", "os.getcwd",
               "datetime.")
_FILE_WRITES = RANK_ZERO
_DRAWING = "matplotlib.pyplot."
"""Plotting builds pyplot's figures of this process: nothing another process reads."""
_REJECTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Global,
             ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await, ast.AsyncWith, ast.AsyncFor,
             ast.Import, ast.ImportFrom)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """What each module-level import binds: ``plt`` -> ``matplotlib.pyplot``."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _writes_mode(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and \
        bool(set("wax") & set(mode.value))


class _Verdicts:
    """The fixed point over one module's functions and classes."""

    def __init__(self, tree: ast.Module) -> None:
        self.aliases = _aliases(tree)
        self.functions = {n.name: n for n in tree.body
                          if isinstance(n, ast.FunctionDef) and not n.decorator_list}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)
                        and not n.decorator_list and not n.keywords
                        and all(isinstance(b, ast.Name) and b.id == "object" for b in n.bases)}
        for name in list(self.functions) + list(self.classes):
            if sum(isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name
                   for n in tree.body) > 1 or name in self.aliases:
                self.functions.pop(name, None)
                self.classes.pop(name, None)
        self.kept = set(self.functions)
        """Functions still taken for output or text-only."""
        self.verdicts: dict[str, str | None] = dict.fromkeys(self.functions, "text")

    def function(self, node: ast.FunctionDef, owner: ast.ClassDef | None = None,
                 methods: set[str] | None = None) -> str | None:
        """``"output"``, ``"text"`` (computes values only), or None. In a class (``owner``),
        ``self``'s attributes are the object's own state and ``methods`` its methods still
        taken for output."""
        output = False
        local = {a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                 *node.args.kwonlyargs)}
        params = set(local)
        own = set[str]()
        """Names bound inside the function to values of its own (not what it was given)."""
        for child in walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                own.add(child.id)
        this = node.args.args[0].arg if owner is not None and node.args.args else None
        for child in walk(node):
            if child is node:
                continue
            if isinstance(child, _REJECTED):
                return None
            if isinstance(child, ast.Delete) and not all(
                    isinstance(t, ast.Name) for t in child.targets):
                return None  # `del state` drops a local name; `del d[k]` changes `d`
            if isinstance(child, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    if not self._target(target, this):
                        return None
            if not isinstance(child, ast.Call):
                continue
            verdict = self._call(child, this, own - params | ({this} if this else set()),
                                 methods or set())
            if verdict is None:
                return None
            output = output or verdict
        return "output" if output else "text"

    def _target(self, target: ast.expr, this: str | None) -> bool:
        """A local name (or a tuple of them); in a class also ``self.x`` and ``self.x[k]``."""
        if isinstance(target, ast.Name):
            return True
        if isinstance(target, ast.Tuple | ast.List):
            return all(self._target(e, this) for e in target.elts)
        if this is not None and isinstance(target, ast.Attribute | ast.Subscript):
            root = _root(target)
            return isinstance(root, ast.Name) and root.id == this
        return False

    def _call(self, call: ast.Call, this: str | None, own: set[str],
              methods: set[str]) -> bool | None:
        """True for an output call, False for one that only computes, None otherwise."""
        func = call.func
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            if func.id == "print":
                return True
            if func.id == "open":
                return _writes_mode(call)
            if func.id in _BUILTINS:
                return False
            if func.id in self.kept:
                return self.verdicts.get(func.id) == "output"
            return None
        qualified = _qualified(func, self.aliases)
        if qualified is not None:
            if qualified in _FILE_WRITES:
                return True
            if qualified.startswith(_PURE_CALLS) or qualified.startswith(_DRAWING):
                return False
            if qualified.startswith("numpy.") and not qualified.startswith("numpy.random."):
                return False
            return None
        if not isinstance(func, ast.Attribute):
            return None
        root = _root(func.value)
        if this is not None and isinstance(func.value, ast.Name) and func.value.id == this:
            return False if func.attr in methods else None  # one of the object's own methods
        if func.attr in _WRITE_METHODS:
            return True
        if func.attr in _OTHER_METHODS:
            return False
        if func.attr in _OWN_METHODS and isinstance(root, ast.Name) and root.id in own:
            return False
        return None

    def run(self) -> tuple[list[str], list[str], list[str]]:
        """Output functions, those of them that return no value, writer classes."""
        # Verdicts only fall (text -> output as callees turn out to write, anything -> None),
        # so the loop ends.
        while True:
            verdicts = {name: self.function(self.functions[name]) for name in self.kept}
            if verdicts == self.verdicts:
                break
            self.verdicts = verdicts
            self.kept = {name for name, verdict in verdicts.items() if verdict is not None}
        outputs = sorted(n for n, v in self.verdicts.items() if v == "output")
        silent = [n for n in outputs if not _returns_value(self.functions[n])]
        classes = sorted(n for n, c in self.classes.items() if self._writer_class(c))
        return outputs, silent, classes

    def _writer_class(self, node: ast.ClassDef) -> bool:
        """Every statement of the class is a method (or its docstring); every method changes
        only the object's own attributes and outputs; one of them writes a file."""
        methods = {}
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef) and not statement.decorator_list and \
                    statement.args.args:
                methods[statement.name] = statement
            elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                      or isinstance(statement, ast.Pass)):
                return False
        kept = set(methods)
        while True:
            verdicts = {name: self.function(methods[name], node, kept) for name in kept}
            now = {name for name, verdict in verdicts.items() if verdict is not None}
            if now == kept:
                break
            kept = now
        return kept == set(methods) and any(
            isinstance(c, ast.Call) and self._call(c, None, set(), set()) is True
            and not (isinstance(c.func, ast.Name) and c.func.id == "print")
            for m in methods.values() for c in walk(m))


def _returns_value(function: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None and not (
        isinstance(n.value, ast.Constant) and n.value.value is None)
        for n in walk(function))


def summarize(tree: ast.Module) -> dict[str, list[str]]:
    outputs, silent, classes = _Verdicts(tree).run()
    return {"functions": outputs, "silent": silent, "classes": classes}


def _facts(found_file: IndexedFile) -> dict[str, list[str]]:
    facts = found_file.summary.facts.get(NAME)
    return facts if isinstance(facts, dict) else {}


def only_outputs(index: ProjectIndex, file: IndexedFile, qualified: str) -> bool | None:
    """True for a function of the run that only prints or writes files; False for anything
    else a file of the run defines; None when no file of the run defines ``qualified``."""
    found = index.definition(qualified, file)
    if found is None:
        return None
    return found.kind == "function" and found.name in _facts(found.file).get("functions", ())


def writer_class(index: ProjectIndex, file: IndexedFile, qualified: str) -> bool | None:
    """True for a class of the run whose objects only write files (and keep their own
    state); None when no file of the run defines ``qualified``."""
    found = index.definition(qualified, file)
    if found is None:
        return None
    return found.kind == "class" and found.name in _facts(found.file).get("classes", ())


def own_outputs(index: ProjectIndex, file: IndexedFile) -> dict[str, tuple[str, ...]]:
    """This file's own output functions (``functions``, ``silent``) and writer classes."""
    return {key: tuple(value) for key, value in _facts(file).items()}


register(Fact(NAME, summarize, {
    "only_outputs": Question(only_outputs),
    "writer_class": Question(writer_class),
    "own_outputs": Question(own_outputs, {}),
}))
