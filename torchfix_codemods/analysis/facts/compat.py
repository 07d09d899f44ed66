"""Compatibility guards: code that exists so a program still runs on an older torch.

Library code supports several torch releases at once::

    try:
        scaler = torch.amp.GradScaler(device=device)
    except (AttributeError, TypeError):
        scaler = torch.cuda.amp.GradScaler()          # old torch only

    scaler = torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()

The old spelling in the fallback is deliberate: "fixing" it makes both branches
the same and breaks the release the fallback is for. So no rule reports or
rewrites anything inside a guard; the engine drops such findings for every
rule at once (:func:`guard_of`). A guard is one of:

* an ``except`` handler catching ``TypeError``/``AttributeError``/
  ``ImportError``/``ModuleNotFoundError`` whose ``try`` uses a newer torch API
  (:data:`NEWER_API`, :data:`NEWER_KEYWORDS`); a broad ``except Exception:`` or
  bare ``except:`` counts only when the ``try`` *respells* a call the handler
  makes in the newer API (same function name from a newer module, or with a
  newer keyword: ``torch.amp.GradScaler`` / ``torch.cuda.amp.GradScaler``,
  ``torch.load(p, weights_only=True)`` / ``torch.load(p)``,
  ``from torch import vmap`` / ``from functorch import vmap``);
* the branch of an ``if`` or of a conditional expression that runs on older
  releases when its test is a version check: ``torch.__version__`` compared
  (also through ``packaging.version``, ``LooseVersion``, ``int(...split('.'))``,
  ``importlib.metadata.version("torch")``), ``hasattr(torch..., "name")``,
  lightning_utilities' ``compare_version("torch", operator.ge, ...)`` and
  ``RequirementCache("torch>=...")``, a ``*version*`` function given an operator
  and a version (accelerate's ``is_torch_version(">=", "2.3")``), ``not``/``and``/
  ``or`` of these, or a name bound to one of these in the same file (also a
  ``try``/``except ImportError`` flag set to True/False). A flag imported from
  another file of the run counts when the project index says so
  (:meth:`~torchfix_codemods.analysis.project.ProjectFacts.version_flag`); its
  direction is not known, so the branch that uses the newer API marks the other
  one as the old one, and without that both branches are guarded;
* the branch of an ``if``/conditional expression whose test is a flag this file
  does not bind (imported, or an attribute), when its other branch calls the
  same function from a newer torch module (``torch.amp.GradScaler(...) if FLAG
  else torch.cuda.amp.GradScaler()``: two spellings of one call under a flag are
  a choice between releases, whatever the flag is named). Keyword differences
  do not count here: ``torch.load(p) if a else torch.load(p, weights_only=True)``
  is a choice a user makes on purpose, or a fix this tool applied to one branch.

Name-based hints are a fallback in one place only: an imported name spelled
``TORCH_VERSION``/``torch_version`` (detectron2, accelerate) is taken as the torch
version when compared; flag names such as ``_TORCH_GREATER_EQUAL_2_4`` are never
read for meaning.

## References
- https://pytorch.org/docs/stable/generated/torch.load.html (``weights_only``)
- https://pytorch.org/docs/stable/amp.html (``torch.amp.GradScaler``, the ``torch.cuda.amp`` deprecations)
- https://lightning.ai/docs/utilities/ (``compare_version``, ``RequirementCache``)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.evaluation import Evaluation, module_evaluation
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex, dotted_name
from torchfix_codemods.analysis.core.syntax import literal_bool
from torchfix_codemods.analysis.core.walk import children
from torchfix_codemods.analysis.vocabulary.torch_api import NEWER_API, NEWER_KEYWORDS
from torchfix_codemods.analysis.vocabulary.version_checks import (
    OPERATOR_STRINGS,
    REQUIREMENT_CACHE,
    TORCH_PACKAGES,
    Operand,
    Requirement,
    checks_version,
    comparison_operator,
    requirement,
    version_query,
    version_source,
)

_COMPAT_EXCEPTIONS = frozenset({"TypeError", "AttributeError", "ImportError",
                                "ModuleNotFoundError"})
_BROAD_EXCEPTIONS = frozenset({"Exception", "BaseException"})
_ORDERING = {"GreaterThan": True, "GreaterThanEqual": True, "LessThan": False,
             "LessThanEqual": False}
_MAX_DEPTH = 6
_VERSION_READ_DEPTH = _MAX_DEPTH + 1
"""A comparison's sides are read one step below the test that holds the comparison."""
_OLD_WHEN: Slot[Evaluation[OldWhen | None]] = Slot("compat.old_when")
_VERSION_READ: Slot[Evaluation[str | None]] = Slot("compat.version_read")


@dataclass(frozen=True)
class Guard:
    """A region that only runs on older torch releases, and why the tool thinks so."""

    node: cst.CSTNode
    reason: str


@dataclass(frozen=True)
class OldWhen:
    """When a test's branches may run on an older torch release."""

    true: bool
    """The body (the test holds) may run on an older release."""
    false: bool
    """The else branch (the test fails) may run on an older release."""
    reason: str

    @property
    def flipped(self) -> OldWhen:
        return OldWhen(self.false, self.true, self.reason)


_GUARDS: Slot[dict[int, Guard | None]] = Slot("compat.guards")


def guard_of(names: NameIndex, node: cst.CSTNode) -> Guard | None:
    """The innermost compatibility guard ``node`` lies in, or None.

    Only the ``try``/``if``/conditional expressions around ``node`` are examined (and
    remembered per module), so a file pays for this only where a rule reports.
    """
    memo = names.memo.setdefault(_GUARDS, {})
    child: cst.CSTNode = node
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, (cst.ExceptHandler, cst.If, cst.IfExp)):
            key = id(child)
            if key not in memo:
                memo[key] = _region_guard(names, ancestor, child)
            found = memo[key]
            if found is not None:
                return found
        child = ancestor
    return None


def _region_guard(names: NameIndex, owner: cst.CSTNode, region: cst.CSTNode) -> Guard | None:
    """Whether ``region`` (a handler's body, a branch of ``owner``) is a guard."""
    if isinstance(owner, cst.ExceptHandler):
        statement = names.parent(owner)
        if region is not owner.body or not isinstance(statement, cst.Try):
            return None
        reason = compat_handler(names, statement, owner)
        return Guard(region, reason) if reason is not None else None
    assert isinstance(owner, (cst.If, cst.IfExp))
    if region is not owner.body and region is not owner.orelse:
        return None  # the test itself
    what = "`if`" if isinstance(owner, cst.If) else "conditional expression"
    old = old_branches(names, owner.test, owner.body, owner.orelse)
    if old is None:
        return None
    if region is owner.body and old.true:
        return Guard(region, f"runs on older torch releases: the {what} tests {old.reason}")
    if region is owner.orelse and old.false:
        return Guard(region, f"runs on older torch releases: the else branch of the {what} "
                             f"on {old.reason}")
    return None


def old_branches(names: NameIndex, test: cst.BaseExpression, body: cst.CSTNode,
                 orelse: cst.CSTNode | None) -> OldWhen | None:
    """Which branches of ``if test: body else: orelse`` may run on an older torch release."""
    old = old_when(names, test)
    if old is not None:
        if old.true and old.false and orelse is not None:
            # Direction unknown (a flag from another file): the branch using a newer API is
            # the new one.
            newer_in_body = _newer_api_in(names, body) is not None
            newer_in_else = _newer_api_in(names, orelse) is not None
            if newer_in_body != newer_in_else:
                return OldWhen(newer_in_else, newer_in_body, old.reason)
        return old
    if orelse is None or not _unknown_flag(names, test):
        return None
    respelled = _respelled(names, newer=body, older=orelse, keywords=False)
    if respelled is not None:
        return OldWhen(False, True, f"a flag whose branches spell one call two ways: "
                                    f"{respelled}")
    respelled = _respelled(names, newer=orelse, older=body, keywords=False)
    if respelled is not None:
        return OldWhen(True, False, f"a flag whose branches spell one call two ways: "
                                    f"{respelled}")
    return None


def _unknown_flag(names: NameIndex, test: cst.BaseExpression) -> bool:
    """``FLAG``, ``not FLAG``, ``cfg.flag``: a flag this file does not bind itself (imported,
    an attribute), whose meaning the analysis cannot see."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Attribute):
        return True
    if isinstance(test, cst.Name):
        bindings = names.bindings_of(test)
        return bool(bindings) and all(b.kind == "import" for b in bindings)
    return False


# ------------------------------------------------------------------ try/except
def compat_handler(names: NameIndex, statement: cst.Try,
                   handler: cst.ExceptHandler) -> str | None:
    """Why ``handler`` is a fallback for older torch (None when it is not one)."""
    caught = _caught(handler)
    if caught is None:
        return None
    respelled = _respelled(names, newer=statement.body, older=handler.body)
    narrow = caught and caught <= _COMPAT_EXCEPTIONS
    newer = _newer_api_in(names, statement.body) if narrow else None
    evidence = newer or respelled
    if evidence is None:
        return None
    label = ", ".join(sorted(caught)) if caught else "any exception"
    return f"the `except {label}` fallback of a `try` that uses {evidence}"


def _caught(handler: cst.ExceptHandler) -> frozenset[str] | None:
    """The exception names a handler catches; empty for a bare or broad ``except``; None when
    it catches something else."""
    if handler.type is None:
        return frozenset()
    types = ([e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple)
             else [handler.type])
    spelled = [dotted_name(t) for t in types]
    if any(s is None for s in spelled):
        return None
    caught = frozenset(s for s in spelled if s is not None)
    if caught & _BROAD_EXCEPTIONS:
        return frozenset()
    if caught <= _COMPAT_EXCEPTIONS:
        return caught
    return None


# ------------------------------------------------------------- newer API use
def _newer_api_in(names: NameIndex, node: cst.CSTNode) -> str | None:
    """The first newer torch API ``node`` uses, as a reviewer reads it."""
    for qualified, keyword in _api_uses(names, node):
        if keyword is not None:
            prefixes = NEWER_KEYWORDS.get(keyword, ())
            if any(qualified.startswith(p) for p in prefixes):
                return f"`{qualified}(..., {keyword}=...)` (newer torch API)"
        elif qualified.startswith(NEWER_API):
            return f"`{qualified}` (newer torch API)"
    return None


def _api_uses(names: NameIndex, node: cst.CSTNode) -> Iterator[tuple[str, str | None]]:
    """(qualified name, None) for every torch name used or imported under ``node``, and
    (qualified name of the call, keyword) for every keyword argument of a torch call."""
    for child in _nodes(node):
        if isinstance(child, cst.ImportFrom):
            for qualified in _imported(child):
                yield qualified, None
        elif isinstance(child, cst.Import):
            for alias in child.names:
                yield dotted_name(alias.name) or "", None
        elif isinstance(child, (cst.Name, cst.Attribute)):
            qualified = names.qualified_name(child)
            if qualified is not None and qualified.startswith(TORCH_PACKAGES):
                yield qualified, None
        elif isinstance(child, cst.Call):
            qualified = names.qualified_name(child.func)
            if qualified is not None and qualified.startswith(TORCH_PACKAGES):
                for arg in child.args:
                    if arg.keyword is not None:
                        yield qualified, arg.keyword.value


def _imported(node: cst.ImportFrom) -> list[str]:
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return []
    module = dotted_name(node.module) or ""
    return [f"{module}.{dotted_name(alias.name)}" for alias in node.names]


def _nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def _respelled(names: NameIndex, newer: cst.CSTNode, older: cst.CSTNode, *,
               keywords: bool = True) -> str | None:
    """A call or import in ``older`` that ``newer`` spells with a newer torch API: the same
    function name from a :data:`NEWER_API` module, or (with ``keywords``) the same function
    with one of its :data:`NEWER_KEYWORDS` that ``older`` leaves out."""
    spellings: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for qualified, keywords in _spellings(names, newer):
        spellings.setdefault(qualified.rsplit(".", 1)[-1], []).append((qualified, keywords))
    if not spellings:
        return None
    for qualified, keywords in _spellings(names, older):
        for other, other_keywords in spellings.get(qualified.rsplit(".", 1)[-1], ()):
            if other != qualified:
                if other.startswith(NEWER_API):
                    return f"`{other}` in place of `{qualified}`"
                continue
            if not keywords:
                continue
            for keyword in sorted(other_keywords - keywords):
                if any(other.startswith(p) for p in NEWER_KEYWORDS.get(keyword, ())):
                    return f"`{other}(..., {keyword}=...)`"
    return None


def _spellings(names: NameIndex, node: cst.CSTNode) -> Iterator[tuple[str, frozenset[str]]]:
    """Torch calls (qualified name, keywords) and imports (qualified name, no keywords)."""
    for child in _nodes(node):
        if isinstance(child, cst.Call):
            qualified = names.qualified_name(child.func)
            if qualified is not None and qualified.startswith(TORCH_PACKAGES):
                yield qualified, frozenset(a.keyword.value for a in child.args
                                           if a.keyword is not None)
        elif isinstance(child, cst.ImportFrom):
            for qualified in _imported(child):
                if qualified.startswith(TORCH_PACKAGES):
                    yield qualified, frozenset()


# ------------------------------------------------------------- version checks
def old_when(names: NameIndex, test: cst.BaseExpression, depth: int = 0) -> OldWhen | None:
    """Whether ``test`` depends on the torch release: which outcome may mean an older one."""
    evaluation = module_evaluation(names.memo, _OLD_WHEN, _MAX_DEPTH, cycle=None, too_deep=None)
    return evaluation(test, depth, lambda e, d: _old_when(names, e, d))


def _old_when(names: NameIndex, test: cst.BaseExpression, depth: int) -> OldWhen | None:
    """One step of :func:`old_when`; ``depth`` already counts it."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = old_when(names, test.expression, depth)
        return inner.flipped if inner is not None else None
    if isinstance(test, cst.BooleanOperation):
        left = old_when(names, test.left, depth)
        right = old_when(names, test.right, depth)
        if left is None and right is None:
            return None
        none = OldWhen(False, False, "")
        a, b = left or none, right or none
        reason = (left or right).reason  # type: ignore[union-attr]
        if isinstance(test.operator, cst.And):
            # True: both hold; false: either one failed.
            return OldWhen(a.true or b.true, a.false or b.false, reason)
        # `or` holds when either does, so an operand that fails on old releases may still
        # let the body run there.
        return OldWhen(a.true or b.true or a.false or b.false, a.false or b.false, reason)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _comparison(names, test, depth)
    if isinstance(test, cst.Call):
        return _call_check(names, test)
    if isinstance(test, (cst.Name, cst.Attribute)):
        return _flag(names, test, depth)
    return None


def _direction(newer_when_true: bool | None, reason: str) -> OldWhen:
    if newer_when_true is None:
        return OldWhen(True, True, reason)
    return OldWhen(not newer_when_true, newer_when_true, reason)


def _comparison(names: NameIndex, expr: cst.Comparison, depth: int) -> OldWhen | None:
    target = expr.comparisons[0]
    operator = type(target.operator).__name__
    if operator not in _ORDERING and operator not in ("Equal", "NotEqual"):
        return None
    left = _mentions_version(names, expr.left, depth)
    right = _mentions_version(names, target.comparator, depth) if left is None else None
    source = left or right
    if source is None:
        return None
    direction = _ORDERING.get(operator)
    if direction is not None and right is not None:
        direction = not direction
    return _direction(direction, f"a comparison of {source}")


def _mentions_version(names: NameIndex, expr: cst.BaseExpression, depth: int) -> str | None:
    """How ``expr`` reads the torch release (``torch.__version__``...), or None."""
    evaluation = module_evaluation(names.memo, _VERSION_READ, _VERSION_READ_DEPTH, cycle=None,
                                   too_deep=None)
    return evaluation(expr, depth, lambda e, d: _version_read(names, e, d))


def _version_read(names: NameIndex, expr: cst.BaseExpression, depth: int) -> str | None:
    """One step of :func:`_mentions_version`; ``depth`` already counts it."""
    for child in _nodes(expr):
        if isinstance(child, (cst.Name, cst.Attribute)):
            qualified = names.qualified_name(child)
            source = version_source(qualified) if qualified is not None else None
            if source is not None:
                return source
            if isinstance(child, cst.Name) and qualified is None:
                binding = names.binding_of(child)
                if binding is not None and binding.kind in ("assign", "annassign") and \
                        binding.value is not None:
                    found = _mentions_version(names, binding.value, depth)
                    if found is not None:
                        return found
        elif isinstance(child, cst.Call):
            callee = names.qualified_name(child.func) or dotted_name(child.func) or ""
            if version_query(callee, _strings(child)):
                return f"`{callee}(...)` of a torch package"
    return None


def _strings(call: cst.Call) -> list[str]:
    """The call's string arguments, as the version vocabulary reads them."""
    return [str(arg.value.evaluated_value) for arg in call.args
            if isinstance(arg.value, cst.SimpleString)]


def _torch_package_argument(call: cst.Call) -> Requirement | None:
    """The first string argument that names a torch package (``"torch"``, ``"torch>=2.1"``)."""
    return next((found for found in map(requirement, _strings(call)) if found is not None), None)


def _call_check(names: NameIndex, call: cst.Call) -> OldWhen | None:
    callee = names.qualified_name(call.func) or dotted_name(call.func) or ""
    last = callee.rsplit(".", 1)[-1]
    args = [a.value for a in call.args]
    if last == "hasattr" and len(args) == 2:
        owner = names.qualified_name(args[0])
        if owner is not None and owner.split(".")[0] in TORCH_PACKAGES and \
                isinstance(args[1], cst.SimpleString):
            return _direction(True, f"`hasattr({owner}, {args[1].value})`")
        return None
    package = _torch_package_argument(call)
    if last == REQUIREMENT_CACHE:
        if package is None or package.operator is None:
            return None
        return _direction(OPERATOR_STRINGS[package.operator],
                          f"`RequirementCache(\"{package.package}{package.specifier}\")`")
    flagged = callee != "" and names.qualified_name(call.func) is not None and \
        names.project.version_flag(callee) is True
    operands = [_operand(names, arg.value) for arg in call.args]
    if not flagged and not checks_version(callee, operands):
        return None
    found = comparison_operator(operands)
    if found is not None:
        position, direction = found
        value = args[position]
        if isinstance(value, cst.SimpleString):
            return _direction(direction, f"`{callee}({value.value}, ...)`")
        return _direction(direction, f"`{callee}(..., {operands[position].dotted}, ...)`")
    if flagged:
        return _direction(None, f"`{callee}(...)`, a torch-version check of the project")
    return None


def _operand(names: NameIndex, value: cst.BaseExpression) -> Operand:
    return Operand(str(value.evaluated_value) if isinstance(value, cst.SimpleString) else None,
                   names.qualified_name(value))


def _flag(names: NameIndex, expr: cst.Name | cst.Attribute, depth: int) -> OldWhen | None:
    """A name bound to a version check in this file, or a flag the project index knows."""
    qualified = names.qualified_name(expr)
    if qualified is not None:
        if names.project.version_flag(qualified):
            return OldWhen(True, True, f"`{qualified}`, a torch-version flag of the project")
        return None
    if not isinstance(expr, cst.Name):
        return None
    bindings = names.bindings_of(expr)
    if not bindings:
        return None
    checks = [_binding_check(names, binding, depth) for binding in bindings]
    if any(check is None for check in checks):
        return None
    known = [check for check in checks if check is not None]
    return OldWhen(any(c.true for c in known), any(c.false for c in known),
                   f"`{expr.value}`, bound to {known[0].reason}")


def _binding_check(names: NameIndex, binding: Binding, depth: int) -> OldWhen | None:
    if binding.kind not in ("assign", "annassign") or binding.value is None:
        return None
    flag = literal_bool(binding.value)
    if flag is not None:
        return _try_flag(names, binding.node, flag)
    return old_when(names, binding.value, depth)


def _try_flag(names: NameIndex, statement: cst.CSTNode, flag: bool) -> OldWhen | None:
    """``HAS_X = True`` in a ``try`` that uses a newer API, ``False`` in its fallback."""
    child: cst.CSTNode = statement
    for ancestor in names.ancestors(statement):
        if isinstance(ancestor, cst.ExceptHandler) and child is ancestor.body:
            owner = names.parent(ancestor)
            if isinstance(owner, cst.Try) and compat_handler(names, owner, ancestor):
                return _direction(not flag, "a flag set in an older-torch fallback")
            return None
        if isinstance(ancestor, cst.Try) and child is ancestor.body:
            if any(compat_handler(names, ancestor, h) for h in ancestor.handlers):
                return _direction(flag, "a flag set where a newer torch API imports")
            return None
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return None
        child = ancestor
    return None
