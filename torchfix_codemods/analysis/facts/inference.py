"""Which functions (and which top-level script regions) run a model for inference.

TFC201/TFC202/TFC203 all ask the same questions of one module, so they are
answered once here and cached on the :class:`NameIndex`:

* an *inference root* is a function named like ``evaluate``/``validate``/
  ``test``/``predict``/``infer``/``score`` (a name token, so ``run_validation``
  and ``eval_epoch`` count) that is not a pytest ``test_*`` function nor a
  ``@pytest.fixture``, not a Lightning ``*_step`` hook, not called by a test that
  trains, and that calls a model, itself or through helpers defined in the same file;
* it never differentiates: no ``.backward()``, ``torch.autograd.grad``,
  optimizer ``step``/``zero_grad``, ``requires_grad_``/``.grad`` on any path it
  takes through this file. A helper shared with training
  (``iteration(data, train=False)``) is followed with the literal ``False``
  bound, so code under ``if train:`` does not count: that is the BERT-pytorch
  ``test()`` -> ``iteration(train=False)`` shape;
* the model it switches is the object that is *called*, expressed in the root's
  own terms: a parameter, ``self.<attr>`` (in a method of the same class) or a
  module-level name; a helper's parameter maps back to the caller's argument.

Anything that cannot be proved downgrades: no model expression means no eval
fix, a differentiating path means no finding at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from torchfix_codemods.analysis.core.callees import defined_function, methods_of
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import NameIndex, dotted_name
from torchfix_codemods.analysis.core.statements import enclosing_statement, starts_a_cell
from torchfix_codemods.analysis.core.syntax import code_of, is_false, is_main_guard, literal_bool
from torchfix_codemods.analysis.core.walk import children, names_in, preorder, walk_local
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.grad_mode import grad_mode_at, sets_grad_mode
from torchfix_codemods.analysis.facts.modules import (
    mode_changes_output,
    module_classes,
    module_evidence,
)
from torchfix_codemods.analysis.facts.optimizers import updates_parameters
from torchfix_codemods.analysis.vocabulary.naming import (
    EVAL_TOKENS,
    PREDICT_TOKENS,
    name_tokens,
    named_for_training,
    named_like_model,
)
from torchfix_codemods.analysis.vocabulary.torch_api import (
    DIFFERENTIATING_FUNCTIONS,
    SETS_OWN_GRAD_MODE,
    VARIABLE_CLASSES,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import is_module_factory

_DIFF_METHODS = frozenset({"backward", "requires_grad_", "retain_grad"})
_LOSS_KEYS = ("loss",)
_RUNS_LAYERS = frozenset({"forward", "sample", "generate", "decode", "encode", "predict",
                          "infer"})
"""Methods of a model switched to eval that run its layers; any other method (a mask or
hidden-state builder, ``state_dict``) is not evidence of inference."""


def is_pytest_file(path: str) -> bool:
    """``test_x.py``, ``x_test.py`` or ``conftest.py``: the files pytest collects by default.

    A ``tests/`` folder alone is not enough: training repos keep evaluation
    scripts there too.
    """
    base = path.replace("\\", "/").split("/")[-1]
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"


@dataclass
class Site:
    """A node inside a function with the ``if <param>:`` guards around it."""

    node: cst.CSTNode
    guards: tuple[tuple[str, bool], ...]
    grad_mode_set: bool = False
    """Under a context that decides the grad mode (``no_grad``, ``enable_grad``, a user's
    inference decorator): adding ``no_grad`` around it would override that decision."""
    deferred: bool = False
    """Inside a lambda: stored for later (a callback), not run by the function itself."""


@dataclass
class FunctionFacts:
    """What one function does directly (nested functions and classes excluded)."""

    node: cst.FunctionDef
    cls: cst.ClassDef | None
    params: list[str]
    calls: list[Site] = field(default_factory=list)
    differentiations: list[Site] = field(default_factory=list)
    eval_calls: list[cst.Call] = field(default_factory=list)
    train_calls: list[cst.Call] = field(default_factory=list)
    grad_mode_calls: list[cst.Call] = field(default_factory=list)
    names_used: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.node.name.value

    @property
    def is_method(self) -> bool:
        return self.cls is not None and bool(self.params) and self.params[0] == "self"


@dataclass(frozen=True)
class ModelUse:
    """A model called for inference, as the inference root must name it."""

    code: str
    call: cst.Call
    evidence: str
    """Why it is a model, as a reviewer reads it ("" while ``pending``)."""
    reads_losses: bool
    pending: bool = False
    """A helper calls its own parameter: whether that is a model is decided by the caller's
    argument, one call up."""
    mode_matters: bool | None = None
    """Whether ``eval()`` changes what it computes (see ``modules.mode_changes_output``)."""


FAST_PATH_MARKERS = ("Transformer", "MultiheadAttention")
"""Under eval + no_grad, ``nn.Transformer``/``MultiheadAttention`` take a fast path that
zeroes padded positions: TFC202's ``no_grad`` is unsafe in a file that names them."""


def _called(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if isinstance(expr, cst.Call) else expr


@dataclass
class InferenceFunction:
    """An inference root: what it calls, whether it is already covered, who calls it."""

    facts: FunctionFacts
    kind: str  # "eval" (metric-like name) or "predict" (API-like name)
    models: list[ModelUse]
    model_calls: list[Site]
    already_no_grad: bool
    already_eval: bool
    callers: list[tuple[cst.Call, FunctionFacts | None]]
    called_from_training: bool
    result_differentiated: bool
    passed_a_function: bool = False
    """A call of this file passes a function (a ``lambda``) where it runs a model: what it
    runs is not always a module, so it has no mode to switch (``evaluate_loss(net, ...)``
    with ``net = lambda X: linreg(X, w, b)``)."""


@dataclass
class ScriptRegion:
    """Top-level statements of an evaluation script that call a model."""

    block: cst.Module | cst.IndentedBlock
    statements: list[cst.BaseStatement]
    model_code: str
    model_calls: list[cst.Call]


_ANALYSIS: Slot[InferenceAnalysis] = Slot("inference.analysis")
_FORWARD_REACH: Slot[set[int]] = Slot("inference.forward_reach")
_ROOTS: Slot[list[InferenceFunction]] = Slot("inference.roots")
_ORDER: Slot[dict[int, int]] = Slot("inference.order")
_BEHAVIOUR_ROOTS: Slot[list[InferenceFunction]] = Slot("inference.behaviour_roots")


class InferenceAnalysis:
    """Per-module facts for TFC2xx, built once and cached on the name index."""

    def __init__(self, names: NameIndex, inference_decorators: tuple[str, ...] = (),
                 pytest_file: bool = False) -> None:
        self.names = names
        self.decorators = frozenset(inference_decorators)
        self.pytest_file = pytest_file
        """In a test file pytest also collects a bare ``def test(...)``."""
        self.functions: dict[int, FunctionFacts] = {}
        self.module_sites: list[Site] = []
        """Calls made by module-level code (outside every function)."""
        self.module_diffs: list[Site] = []
        self._deferred = 0
        self._collect()
        self._callers: dict[int, list[tuple[cst.Call, FunctionFacts | None]]] = {}
        self._link_callers()
        self._diff_cache: dict[tuple[int, frozenset[str]], bool] = {}

    @classmethod
    def of(cls, names: NameIndex, inference_decorators: tuple[str, ...] = (),
           path: str = "") -> InferenceAnalysis:
        pytest_file = is_pytest_file(path)
        slot = _ANALYSIS.keyed(inference_decorators, pytest_file)
        if slot in names.memo:
            return names.memo[slot]
        analysis = cls(names, inference_decorators, pytest_file)
        names.memo[slot] = analysis
        return analysis

    # ------------------------------------------------------------- collection
    def _collect(self) -> None:
        assert self.names.module_scope is not None
        module = self.names.module_scope.node
        assert isinstance(module, cst.Module)
        self._walk_body(module, None, None, (), False)

    def _walk_body(self, node: cst.CSTNode, facts: FunctionFacts | None,
                   cls: cst.ClassDef | None, guards: tuple[tuple[str, bool], ...],
                   no_grad: bool) -> None:
        for child in children(node):
            self._walk(child, facts, cls, guards, no_grad)

    def _walk(self, node: cst.CSTNode, facts: FunctionFacts | None, cls: cst.ClassDef | None,
              guards: tuple[tuple[str, bool], ...], no_grad: bool) -> None:
        # ``type(node) is``, not ``isinstance``: LibCST's classes are abstract-base-class
        # subclasses, whose ``isinstance`` misses cost a microsecond each, and this runs on
        # every node (2.4 million checks over 194 files); none of these classes has a
        # subclass (tests/test_walk_memo.py checks it).
        kind = type(node)
        if kind is cst.FunctionDef:
            for decorator in node.decorators:
                self._walk(decorator, facts, cls, guards, no_grad)
            params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
            inner = FunctionFacts(node, cls, params)
            self.functions[id(node)] = inner
            self._walk(node.body, inner, None, (), False)
            return
        if kind is cst.ClassDef:
            self._walk_body(node.body, facts, node, guards, no_grad)
            return
        if kind is cst.If and facts is not None:
            guard = self._guard(node.test, facts)
            self._walk(node.test, facts, cls, guards, no_grad)
            if guard is not None:
                self._walk(node.body, facts, cls, (*guards, guard), no_grad)
                if node.orelse is not None:
                    self._walk(node.orelse, facts, cls, (*guards, (guard[0], not guard[1])),
                               no_grad)
                return
            self._walk(node.body, facts, cls, guards, no_grad)
            if node.orelse is not None:
                self._walk(node.orelse, facts, cls, guards, no_grad)
            return
        if kind is cst.Lambda:
            self._deferred += 1
            try:
                self._walk_body(node, facts, cls, guards, no_grad)
            finally:
                self._deferred -= 1
            return
        if kind is cst.With:
            entered = no_grad or any(self._grad_context(item.item) for item in node.items)
            for item in node.items:
                self._walk(item, facts, cls, guards, no_grad)
            self._walk(node.body, facts, cls, guards, entered)
            return
        if kind is cst.Name and facts is not None:
            facts.names_used.add(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Attribute and node.attr.value == "grad":  # type: ignore[attr-defined]
            self._record_diff(node, facts, guards)
        elif kind is cst.Arg and node.keyword is not None and \
                node.keyword.value == "requires_grad" and not is_false(node.value):
            self._record_diff(node, facts, guards)
        elif kind is cst.Call:
            self._record_call(node, facts, guards, no_grad)  # type: ignore[arg-type]
        self._walk_body(node, facts, cls, guards, no_grad)

    def _guard(self, test: cst.BaseExpression, facts: FunctionFacts) -> tuple[str, bool] | None:
        """``if train:`` -> ("train", True); ``if not train:`` -> ("train", False)."""
        if isinstance(test, cst.Name) and test.value in facts.params:
            return test.value, True
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and \
                isinstance(test.expression, cst.Name) and test.expression.value in facts.params:
            return test.expression.value, False
        return None

    def _grad_context(self, expr: cst.BaseExpression) -> bool:
        """``expr`` (a ``with`` item or a decorator) decides the grad mode itself."""
        if sets_grad_mode(self.names, expr):
            return True
        return self._is_user_decorator(expr.func if isinstance(expr, cst.Call) else expr)

    def _is_user_decorator(self, expr: cst.BaseExpression) -> bool:
        if not self.decorators:
            return False
        target = expr.func if isinstance(expr, cst.Call) else expr
        qualified = self.names.qualified_name(target)
        dotted = dotted_name(target)
        return qualified in self.decorators or dotted in self.decorators or any(
            dotted is not None and d.endswith("." + dotted) and
            self.names.qualified_name(target) is None and "." not in dotted
            for d in self.decorators
        )

    def _record_diff(self, node: cst.CSTNode, facts: FunctionFacts | None,
                     guards: tuple[tuple[str, bool], ...]) -> None:
        site = Site(node, guards)
        if facts is None:
            self.module_diffs.append(site)
        else:
            facts.differentiations.append(site)

    def _record_call(self, call: cst.Call, facts: FunctionFacts | None,
                     guards: tuple[tuple[str, bool], ...], no_grad: bool) -> None:
        func = call.func
        qualified = self.names.qualified_name(func)
        if qualified in DIFFERENTIATING_FUNCTIONS:
            self._record_diff(call, facts, guards)
        if qualified in SETS_OWN_GRAD_MODE and facts is not None:
            facts.grad_mode_calls.append(call)
        if isinstance(func, cst.Attribute) and func.attr.value == "enter_context" and \
                call.args and self._grad_context(call.args[0].value) and facts is not None:
            facts.grad_mode_calls.append(call)  # ExitStack().enter_context(torch.no_grad())
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _DIFF_METHODS or updates_parameters(self.names, call):
                self._record_diff(call, facts, guards)
            if facts is not None and method == "eval" and not call.args:
                facts.eval_calls.append(call)
            if facts is not None and method == "train":
                facts.train_calls.append(call)
        site = Site(call, guards, no_grad, self._deferred > 0)
        if facts is None:
            self.module_sites.append(site)
        else:
            facts.calls.append(site)

    # ---------------------------------------------------------------- linking
    def resolve(self, call: cst.Call, facts: FunctionFacts | None) -> FunctionFacts | None:
        """The function of this file that ``call`` runs, when it can be told."""
        func = call.func
        if isinstance(func, cst.Name):
            binding = self.names.binding_of(func)
            if binding is not None and binding.kind == "def":
                return self.functions.get(id(binding.node))
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == "self" and facts is not None and facts.is_method:
            assert facts.cls is not None
            for statement in facts.cls.body.body:
                if isinstance(statement, cst.FunctionDef) and \
                        statement.name.value == func.attr.value:
                    return self.functions.get(id(statement))
        return None

    def _link_callers(self) -> None:
        for facts in [None, *self.functions.values()]:
            sites = self.module_sites if facts is None else facts.calls
            for site in sites:
                assert isinstance(site.node, cst.Call)
                callee = self.resolve(site.node, facts)
                if callee is not None:
                    self._callers.setdefault(id(callee.node), []).append((site.node, facts))

    def callers(self, facts: FunctionFacts) -> list[tuple[cst.Call, FunctionFacts | None]]:
        return self._callers.get(id(facts.node), [])

    def false_bindings(self, call: cst.Call, callee: FunctionFacts,
                       false_params: frozenset[str]) -> frozenset[str]:
        """Parameters of ``callee`` that ``call`` binds to ``False`` (literal or known)."""
        params = list(callee.params)
        if callee.is_method and isinstance(call.func, cst.Attribute):
            params = params[1:]
        bound: set[str] = set()
        position = 0
        for arg in call.args:
            if arg.star:
                return frozenset(bound)
            known_false = is_false(arg.value) or (
                isinstance(arg.value, cst.Name) and arg.value.value in false_params)
            if arg.keyword is not None:
                if known_false:
                    bound.add(arg.keyword.value)
                continue
            if known_false and position < len(params):
                bound.add(params[position])
            position += 1
        return frozenset(bound)

    @staticmethod
    def _live(site: Site, false_params: frozenset[str]) -> bool:
        """Dead only under ``if p:`` with ``p`` known False (``if not p:`` stays live)."""
        return not any(name in false_params and polarity for name, polarity in site.guards)

    def differentiates(self, facts: FunctionFacts,
                       false_params: frozenset[str] = frozenset(),
                       _seen: frozenset[int] = frozenset()) -> bool:
        """Does ``facts`` (or what it calls in this file) differentiate, with these params False?"""
        key = (id(facts.node), false_params)
        cached = self._diff_cache.get(key)
        if cached is not None:
            return cached
        if id(facts.node) in _seen:
            return False
        seen = _seen | {id(facts.node)}
        result = any(self._live(site, false_params) for site in facts.differentiations)
        if not result:
            for site in facts.calls:
                if not self._live(site, false_params):
                    continue
                assert isinstance(site.node, cst.Call)
                callee = self.resolve(site.node, facts)
                if callee is None:
                    continue
                bound = self.false_bindings(site.node, callee, false_params)
                if self.differentiates(callee, bound, seen):
                    result = True
                    break
        self._diff_cache[key] = result
        return result

    def file_differentiates(self) -> bool:
        return bool(self.module_diffs) or any(f.differentiations for f in self.functions.values())

    # ----------------------------------------------------------------- models
    def model_uses(self, facts: FunctionFacts, false_params: frozenset[str] = frozenset(),
                   _seen: frozenset[int] = frozenset()) -> Iterator[tuple[Site, ModelUse | None]]:
        """Model forward calls reached from ``facts``, named in ``facts``' terms (None: cannot)."""
        if id(facts.node) in _seen:
            return
        seen = _seen | {id(facts.node)}
        for site in facts.calls:
            if not self._live(site, false_params) or site.deferred:
                continue
            assert isinstance(site.node, cst.Call)
            call = site.node
            model = self.model_of(call)
            evidence = self._model_evidence(model, facts) if model is not None else None
            if model is not None and evidence is not None:
                yield site, ModelUse(code_of(model), call, evidence, self._reads_losses(call),
                                     mode_matters=mode_changes_output(self.names, model))
                continue
            submodule = self._submodule_use(call, facts)
            if submodule is not None:
                yield site, submodule
                continue
            if _seen and isinstance(model, cst.Name) and model.value in facts.params and \
                    self.resolve(call, facts) is None:
                # A helper calling its parameter: whether it is a model is the caller's to say.
                yield site, ModelUse(code_of(model), call, "", self._reads_losses(call), True)
                continue
            callee = self.resolve(call, facts)
            if callee is None:
                continue
            bound = self.false_bindings(call, callee, false_params)
            for inner_site, use in self.model_uses(callee, bound, seen):
                mapped = self._map(use, call, callee, facts) if use is not None else None
                if mapped is not None and mapped.pending and not _seen:
                    passed = self._passed_from_other_files(facts, mapped.code)
                    if passed is not None:
                        mapped = ModelUse(mapped.code, mapped.call, passed, mapped.reads_losses)
                if use is not None and use.pending and (
                        mapped is None or (mapped.pending and not _seen)):
                    continue  # a called parameter that no caller shows to be a model
                yield Site(inner_site.node, inner_site.guards,
                           inner_site.grad_mode_set or site.grad_mode_set), mapped

    def _submodule_use(self, call: cst.Call, facts: FunctionFacts) -> ModelUse | None:
        """``model.encoder(x)``: a submodule named like one (``encoder``, ``decoder``,
        ``generator``...) of a name that is a model is called, which runs the model's layers;
        the model to switch is ``model`` itself (its ``eval()`` reaches the submodule)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and
                func.value.value != "self" and named_like_model(func.attr.value)):
            return None
        evidence = self._model_evidence(func.value, facts)
        if evidence is None:
            return None
        code = func.value.value
        return ModelUse(code, call, f"`{code}.{func.attr.value}` is called, a submodule of "
                        f"`{code}` ({evidence})", self._reads_losses(call),
                        mode_matters=mode_changes_output(self.names, func.value))

    @staticmethod
    def model_of(call: cst.Call) -> cst.BaseExpression | None:
        """The object a call runs: ``model`` in ``model(x)`` and in ``model.forward(x)``."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            return func.value
        return func

    def called_model(self, call: cst.Call, facts: FunctionFacts | None
                     ) -> tuple[cst.BaseExpression, str] | None:
        """The model ``call`` runs and why it is one (``facts``: the function holding the
        call, None at module level), or None when it is not shown to run a model."""
        model = self.model_of(call)
        evidence = self._model_evidence(model, facts) if model is not None else None
        return (model, evidence) if evidence is not None else None

    def _model_evidence(self, func: cst.BaseExpression, facts: FunctionFacts | None
                        ) -> str | None:
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            return None  # `model.forward(x)`: see model_of()
        if isinstance(func, cst.Name):
            if self.names.qualified_name(func) is not None:
                return None
            binding = self.names.binding_of(func)
            if binding is not None and binding.kind in ("def", "class", "import"):
                return None
            evidence = module_evidence(self.names, func)
            if evidence and (evidence.is_loss or _is_loss_name(func.value)):
                return None  # a criterion is a module too, but not the model to switch
            if evidence:
                return evidence.reason
            if binding is not None and binding.kind == "param":
                passed = self._passed_from_other_files(facts, func.value)
                if passed is not None:
                    return passed
            if named_like_model(func.value) and binding is not None:
                return f"`{func.value}` is called and named like a model"
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == "self" and facts is not None and facts.is_method:
            # `self._wrap_model(fn)` runs a method of the class (it builds a wrapper and has no
            # `.eval()`), not a model held as an attribute.
            own_method = facts.cls is not None and func.attr.value in methods_of(facts.cls)
            if named_like_model(func.attr.value) and not own_method:
                return f"`self.{func.attr.value}` is called and named like a model"
        return None

    def _passed_from_other_files(self, facts: FunctionFacts, param: str) -> str | None:
        """Why ``param`` of a module-level function is a model: every call of it from
        another file of the run passes one (the project index's callers)."""
        if param not in facts.params or not isinstance(self.names.parent(facts.node), cst.Module):
            return None
        passed = self.names.project.module_arguments(facts.name)
        return passed.get(param) if passed else None

    def _reads_losses(self, call: cst.Call) -> bool:
        """``loss_dict = model(images, targets)``: a detection model read in train mode."""
        parent = self.names.parent(call)
        if isinstance(parent, cst.Assign):
            for target in parent.targets:
                if any(key in code_of(target.target).lower() for key in _LOSS_KEYS):
                    return True
        for arg in call.args:
            text = code_of(arg.value).lower()
            if "target" in text or (arg.keyword is not None and "target" in arg.keyword.value):
                return True
        return False

    def _map(self, use: ModelUse, call: cst.Call, callee: FunctionFacts,
             caller: FunctionFacts) -> ModelUse | None:
        """Re-express a model named in ``callee`` as ``caller`` must name it."""
        root = use.code.split(".")[0]
        argument = self._argument_for(root, call, callee)
        if argument is not None:
            return self._mapped_arg(use, argument, use.code[len(root):], caller)
        return use if self.caller_terms(use.code, call, callee, caller) == use.code else None

    def _argument_for(self, param: str, call: cst.Call,
                      callee: FunctionFacts) -> cst.BaseExpression | None:
        """What ``call`` passes for ``callee``'s parameter ``param`` (None: nothing, or not one)."""
        params = list(callee.params)
        if callee.is_method and isinstance(call.func, cst.Attribute):
            params = params[1:]
        if param not in params:
            return None
        index = params.index(param)
        for position, arg in enumerate(a for a in call.args if not a.keyword and not a.star):
            if position == index:
                return arg.value
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == param:
                return arg.value
        return None

    def caller_terms(self, code: str, call: cst.Call, callee: FunctionFacts,
                     caller: FunctionFacts) -> str | None:
        """``code`` (an object named in ``callee``) as ``caller`` names it at ``call``.

        A parameter becomes the caller's argument, ``self.x`` stays when both are methods
        of one class, a closure's or module-level name stays when the caller does not
        rebind it; None when it cannot be named there.
        """
        root = code.split(".")[0]
        rest = code[len(root):]
        if root == "self":
            same_class = callee.is_method and caller.is_method and callee.cls is caller.cls
            return code if same_class and isinstance(call.func, cst.Attribute) else None
        argument = self._argument_for(root, call, callee)
        if argument is not None:
            named = dotted_name(argument)
            return None if named is None else named + rest
        if root in callee.params:
            return None
        if any(a is caller.node for a in self.names.ancestors(callee.node)):
            return code  # a closure: the nested helper reads the caller's own name
        # A module-level name: valid in the caller unless it binds the same name itself.
        module_scope = self.names.module_scope
        assert module_scope is not None
        caller_scope = self.names.scope_of(caller.node.body)
        if root in module_scope.bindings and root not in caller_scope.bindings:
            return code
        return None

    def _mapped_arg(self, use: ModelUse, value: cst.BaseExpression, rest: str,
                    caller: FunctionFacts) -> ModelUse | None:
        """The caller's argument for the helper's model parameter, if it can be named."""
        if dotted_name(value) is None:
            return None
        evidence, pending = use.evidence, use.pending
        if pending and not rest:
            # The helper only called its parameter: the argument itself must look like a model
            # (or be the caller's own parameter, left for the next caller up to decide).
            found = self._model_evidence(value, caller)
            if found is not None:
                evidence, pending = found, False
            elif not (isinstance(value, cst.Name) and value.value in caller.params):
                return None
        mode = use.mode_matters
        if mode is None and not rest:
            mode = mode_changes_output(self.names, value)
        return ModelUse(code_of(value) + rest, use.call, evidence, use.reads_losses, pending,
                        mode)

    # ------------------------------------------------------------------ roots
    def _excluded(self, facts: FunctionFacts) -> bool:
        name = facts.name
        if self._collected_test(facts) or self._inside_a_test(facts) or \
                self._test_helper(facts):
            return True
        if name in ("forward", "__call__") or name.startswith("on_"):
            return True
        if any(self._is_fixture(d.decorator) for d in facts.node.decorators):
            return True  # pytest hands its result to tests the file never calls itself
        if self._run_by_a_forward(facts):
            return True
        if named_for_training(name):
            return True
        if facts.cls is not None:
            for base in facts.cls.bases:
                if "Lightning" in (dotted_name(base.value) or ""):
                    return True  # the Lightning trainer sets eval and no_grad itself
            if self._model_method(facts):
                return True
        return isinstance(facts.node.asynchronous, cst.Asynchronous)

    def _collected_test(self, facts: FunctionFacts) -> bool:
        """A test pytest collects; a test is not inference. Outside a test file, a
        ``test_net(net, dataset)`` that this file calls is an evaluation helper."""
        name = facts.name
        if name.startswith("Test") or (name.startswith("test_") and (
                self.pytest_file or not self.callers(facts))):
            return True
        if self.pytest_file and name.startswith("test"):
            return True
        return facts.cls is not None and facts.cls.name.value.startswith("Test")

    def _inside_a_test(self, facts: FunctionFacts) -> bool:
        """Defined inside a test (a closure a test hands to a process launcher): part of
        that test, whatever its own name says."""
        for ancestor in self.names.ancestors(facts.node):
            if isinstance(ancestor, cst.FunctionDef):
                enclosing = self.functions.get(id(ancestor))
                if enclosing is not None and self._collected_test(enclosing):
                    return True
        return False

    def _test_helper(self, facts: FunctionFacts) -> bool:
        """Named "test" (``reproducibility_test``) and run only by tests: every call in this
        file is made by a test, and every other file of the run that calls it is a pytest
        file. "test" names an evaluation only where the code around it evaluates a model
        (``test(model, loader)`` called by a training script's ``main``)."""
        if "test" not in name_tokens(facts.name) or \
                not isinstance(self.names.parent(facts.node), cst.Module):
            return False
        here = self.callers(facts)
        if any(caller is None or not (self._collected_test(caller) or
                                      self._inside_a_test(caller)) for _, caller in here):
            return False
        elsewhere = self.names.project.caller_files(facts.name)
        return bool(here or elsewhere) and all(is_pytest_file(path) for path in elsewhere)

    def _run_by_a_forward(self, facts: FunctionFacts) -> bool:
        """A model's ``forward`` runs it, directly or through other functions of this file:
        it is part of that model's computation, whose caller may differentiate the result
        (a descriptor switched to eval for frozen statistics, then run on patches); its
        grad mode is the model's caller's to decide, as for the model's own methods."""
        pending, seen = [facts], {id(facts.node)}
        while pending:
            current = pending.pop()
            for _, caller in self.callers(current):
                if caller is None or id(caller.node) in seen:
                    continue
                if caller.cls is not None and id(caller.node) in self._forward_reach(caller.cls):
                    return True
                seen.add(id(caller.node))
                pending.append(caller)
        return False

    def _is_fixture(self, decorator: cst.BaseExpression) -> bool:
        """``@pytest.fixture`` (or ``@fixture(...)``, ``@pytest_asyncio.fixture``): a fixture
        builds values for tests; it is neither inference nor a model."""
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        qualified = self.names.qualified_name(target) or dotted_name(target) or ""
        return qualified == "fixture" or qualified.endswith(".fixture")

    def _run_by_a_training_test(self, root: InferenceFunction) -> bool:
        """A test function that differentiates (``loss.backward()``, ``optimizer.step()``)
        calls it: the test trains, and ``eval()`` or ``no_grad`` added to the helper it calls
        between steps would change what the test trains."""
        return any(caller is not None and self._is_test(caller) and self.differentiates(caller)
                   for _, caller in root.callers)

    def _is_test(self, facts: FunctionFacts) -> bool:
        name = facts.name
        return (name.startswith("test_") or (self.pytest_file and name.startswith("test"))
                or (facts.cls is not None and facts.cls.name.value.startswith("Test")))

    def _model_method(self, facts: FunctionFacts) -> bool:
        """A method of the model itself: of an ``nn.Module`` subclass, or reached from its
        class's own ``forward``. Its mode and grad mode are its caller's to set: the same
        method may run inside a forward or a training step (detectron2's
        ``GeneralizedRCNN.inference``, stable-baselines3's ``evaluate_actions``, which PPO
        differentiates), and ``@torch.no_grad()`` on it would silently stop training."""
        cls = facts.cls
        assert cls is not None
        if any(node is cls for node in module_classes(self.names).values()):
            return True
        for base in cls.bases:
            qualified = self.names.qualified_name(base.value)
            known = self.names.project.class_facts(qualified) if qualified else None
            if known is not None and known.is_module:
                return True
        return id(facts.node) in self._forward_reach(cls)

    def _forward_reach(self, cls: cst.ClassDef) -> set[int]:
        """Methods of ``cls`` its ``forward`` runs, directly or through other methods."""
        slot = _FORWARD_REACH.keyed(id(cls))
        if slot in self.names.memo:
            return self.names.memo[slot]
        reached: set[int] = set()
        pending = [f for f in self.functions.values() if f.cls is cls and f.name == "forward"]
        while pending:
            current = pending.pop()
            if id(current.node) in reached:
                continue
            reached.add(id(current.node))
            for site in current.calls:
                assert isinstance(site.node, cst.Call)
                callee = self.resolve(site.node, current)
                if callee is not None and callee.cls is cls:
                    pending.append(callee)
        self.names.memo[slot] = reached
        return reached

    def kind_of(self, facts: FunctionFacts) -> str | None:
        if self._excluded(facts):
            return None
        tokens = set(name_tokens(facts.name))
        if tokens & EVAL_TOKENS:
            return "eval"
        if tokens & PREDICT_TOKENS:
            return "predict"
        return None

    def decorated_no_grad(self, facts: FunctionFacts) -> bool:
        return any(self._grad_context(d.decorator) for d in facts.node.decorators)

    def inference_functions(self) -> list[InferenceFunction]:
        slot = _ROOTS.keyed(id(self))
        if slot in self.names.memo:
            return self.names.memo[slot]
        roots: list[InferenceFunction] = []
        if not imports_torch(self.names):
            self.names.memo[slot] = roots
            return roots
        for facts in self.functions.values():
            kind = self.kind_of(facts)
            if kind is None or self.differentiates(facts):
                continue
            uses = list(self.model_uses(facts))
            if not uses or self._smoke_test(facts, uses):
                continue
            root = self._root(facts, kind, uses)
            if root.result_differentiated or self._run_by_a_training_test(root):
                continue  # training: a caller's loss is built from what it returns
            roots.append(root)
        # A helper called only from other inference roots (a nested `run_validate`) is
        # covered by their fixes: it is part of them, not a root of its own.
        candidates = {id(root.facts.node) for root in roots}
        roots = [root for root in roots if not root.callers or not all(
            caller is not None and id(caller.node) in candidates and caller is not root.facts
            for _, caller in root.callers)]
        self.names.memo[slot] = roots
        return roots

    def no_grad_roots(self) -> list[InferenceFunction]:
        """The inference functions that lack ``no_grad`` and whose model work is not all done
        through callees that will have it: the functions TFC202 decorates."""
        named = self.inference_functions()
        roots = named + self.behaviour_roots()
        return [root for root in roots
                if not root.already_no_grad and not self.covered_by_callees(root, roots)]

    def behaviour_roots(self) -> list[InferenceFunction]:
        """Inference functions that no name announces (``test_net``, ``detect``, a script's
        ``main``, a model's own ``predict``), recognised by what they do: they switch a
        model to eval mode with ``m.eval()`` and then run that same model, and never
        differentiate or step an optimizer (nor does any caller with what they return).
        Switching to eval is the author saying "not training"; a method of the model
        qualifies only with ``self.eval()`` (a forward helper leaves the mode to its
        caller). Kind "predict": a caller in another file might still differentiate the
        result, so what rests on this is an unsafe fix."""
        cached = self.names.memo.get(_BEHAVIOUR_ROOTS.keyed(id(self)))
        if isinstance(cached, list):
            return cached
        roots: list[InferenceFunction] = []
        if imports_torch(self.names):
            named = {id(root.facts.node) for root in self.inference_functions()}
            for facts in self.functions.values():
                if id(facts.node) in named or self.kind_of(facts) is not None or \
                        self._excluded_by_behaviour(facts) or \
                        self.differentiates(facts) or self._decorated(facts):
                    continue
                if facts.eval_calls:
                    uses = list(self.model_uses(facts)) or self._evaluated_calls(facts)
                    if not uses or self._smoke_test(facts, uses) or \
                            not self._runs_what_it_evals(facts, uses):
                        continue
                elif self._volatile_inputs(facts):
                    uses = list(self.model_uses(facts))
                    if not uses or self._smoke_test(facts, uses):
                        continue
                else:
                    uses = list(self.model_uses(facts))
                    if not uses or self._smoke_test(facts, uses) or not (
                            self._evaluated_by_every_caller(facts, uses) or
                            self._hands_out_no_tensor(facts, uses)):
                        continue
                callers = self.callers(facts)
                if callers and all(caller is not None and id(caller.node) in named
                                   for _, caller in callers):
                    continue  # a helper of a root: covered by that root's fix
                root = self._root(facts, "predict", uses)
                if root.result_differentiated or root.called_from_training or \
                        self._run_by_a_training_test(root):
                    continue
                roots.append(root)
        self.names.memo[_BEHAVIOUR_ROOTS.keyed(id(self))] = roots
        return roots

    def entry_point_call(self, root: InferenceFunction) -> cst.Call | None:
        """The first model call in ``root``'s own body when only module-level code calls
        it and it is the script's ``main`` (``main(args)``): where a reader points for
        script-level inference. A function with a name of its own (``compute_lm_prob(args)``,
        ``generate_caption(encoder, decoder, path)``) is reported at that name, as named
        roots are."""
        callers = root.callers
        if not callers or any(caller is not None for _, caller in callers) or \
                "main" not in name_tokens(root.facts.name):
            return None
        for site in root.model_calls:
            if isinstance(site.node, cst.Call) and \
                    self.names.enclosing(site.node, cst.FunctionDef) is root.facts.node:
                return site.node
        return None

    def _volatile_inputs(self, facts: FunctionFacts) -> bool:
        """The function wraps a value in ``Variable(..., volatile=True)``: the torch < 0.4
        way of saying "inference, no graph" (ignored since 0.4, so the graph is recorded),
        as plain an author's statement as ``m.eval()`` (pytorch-mask-rcnn's ``detect``,
        knowledge-distillation's ``train_evaluate``, fast-neural-style's ``stylize``)."""
        for site in facts.calls:
            call = site.node
            if isinstance(call, cst.Call) and not site.deferred and \
                    self.names.qualified_name(call.func) in VARIABLE_CLASSES and any(
                        arg.keyword is not None and arg.keyword.value == "volatile" and
                        literal_bool(arg.value) is True for arg in call.args):
                return True
        return False

    def _decorated(self, facts: FunctionFacts) -> bool:
        """Any decorator but ``staticmethod``/``classmethod``: it may set the grad mode
        itself (yolov5's ``@smart_inference_mode()``), and a name gives no evidence."""
        return any(not (isinstance(d.decorator, cst.Name) and d.decorator.value in (
            "staticmethod", "classmethod")) for d in facts.node.decorators)

    def _excluded_by_behaviour(self, facts: FunctionFacts) -> bool:
        """:meth:`_excluded`, except that a model's own method that calls ``self.eval()``
        is not excluded: it cannot be part of a training forward."""
        if facts.cls is None or not self._model_method(facts):
            return self._excluded(facts)
        if not any(code_of(call.func.value) == "self" for call in facts.eval_calls
                   if isinstance(call.func, cst.Attribute)) and not self._volatile_inputs(facts):
            return True
        name = facts.name
        return name in ("forward", "__call__") or name.startswith(("on_", "test_")) or \
            named_for_training(name) or \
            isinstance(facts.node.asynchronous, cst.Asynchronous)

    def _evaluated_by_every_caller(self, facts: FunctionFacts,
                                   uses: list[tuple[Site, ModelUse | None]]) -> bool:
        """Every call of ``facts`` in this file comes after its caller switched each model
        ``facts`` runs to eval mode (``m.eval()`` or ``m.train(False)``, the latest mode call
        on that model before the call): the caller says "not training" for it (a caption
        script's ``encoder.eval(); decoder.eval(); generate_caption(encoder, decoder, ...)``,
        a training loop's ``model.train(False); evaluating(model, dev_data)``)."""
        callers = self.callers(facts)
        if not callers or not uses or any(use is None or use.pending for _, use in uses):
            return False
        models = {use.code for _, use in uses if use is not None}
        for call, caller in callers:
            if self._within_a_lambda(call):
                return False
            sites = caller.calls if caller is not None else self.module_sites
            for code in models:
                named = self._named_by_caller(code, call, facts, caller)
                if named is None or self._mode_before(named, call, sites) != "eval":
                    return False
        return True

    def _hands_out_no_tensor(self, facts: FunctionFacts,
                             uses: list[tuple[Site, ModelUse | None]]) -> bool:
        """A module-level function that runs a model and hands out nothing that could carry a
        graph: every ``return`` gives a Python or numpy value (a string joined from decoded
        tokens, ``.item()``, ``.tolist()``, ``.numpy()``, numbers), it stores nothing into
        objects it did not create (no item or attribute written on a parameter or global, no
        ``append`` to them, no ``global``), yields nothing and switches no mode
        (d2l's ``translate_ch7``, a greedy decoder returning a sentence). Nothing it computes
        can reach a backward, so the graphs it builds are waste: its caller cannot train
        through it."""
        node = facts.node
        if not isinstance(self.names.parent(node), cst.Module) or facts.train_calls or \
                any(use is None or use.pending for _, use in uses):
            return False
        if any(self.names.enclosing(site.node, cst.FunctionDef) is not node for site, _ in uses):
            return False  # model work through helpers, whose wrappers may set the grad mode
        returns = []
        for inner in walk_local(node.body):
            if isinstance(inner, (cst.Yield, cst.Global, cst.Nonlocal, cst.Await)):
                return False
            if isinstance(inner, cst.Return):
                if inner.value is None:
                    return False
                returns.append(inner.value)
            if self._writes_outside(inner, facts):
                return False
        return bool(returns) and all(_plain_value(self.names, value, 0) for value in returns)

    def _writes_outside(self, node: cst.CSTNode, facts: FunctionFacts) -> bool:
        """``node`` writes into an object the function did not create: ``p[i] = v``,
        ``p.x = v``, ``p.append(v)`` (and ``extend``/``insert``/``update``/``add``/
        ``setdefault``/``put``) on a parameter or a global."""
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.AssignTarget):
            targets.append(node.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets.append(node.target)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in _STORING_METHODS:
            targets.append(node.func.value)
        for target in targets:
            if isinstance(target, (cst.Subscript, cst.Attribute)) or (
                    isinstance(node, cst.Call) and isinstance(target, cst.Name)):
                root = target
                while isinstance(root, (cst.Subscript, cst.Attribute, cst.Call)):
                    root = root.value if not isinstance(root, cst.Call) else root.func
                if not isinstance(root, cst.Name):
                    return True
                local = self.names.scope_of(facts.node.body).bindings.get(root.value, [])
                if root.value in facts.params or not local or \
                        any(binding.kind not in _LOCAL_KINDS for binding in local):
                    return True
        return False

    def _within_a_lambda(self, call: cst.Call) -> bool:
        return any(isinstance(a, cst.Lambda) for a in self.names.ancestors(call))

    def _named_by_caller(self, code: str, call: cst.Call, callee: FunctionFacts,
                         caller: FunctionFacts | None) -> str | None:
        """``code`` (named in ``callee``) as module-level code or ``caller`` names it."""
        if caller is not None:
            return self.caller_terms(code, call, callee, caller)
        root = code.split(".")[0]
        argument = self._argument_for(root, call, callee)
        if argument is not None:
            named = dotted_name(argument)
            return None if named is None else named + code[len(root):]
        module_scope = self.names.module_scope
        if root in callee.params or root == "self" or module_scope is None or \
                root not in module_scope.bindings:
            return None
        return code

    def _mode_before(self, model: str, call: cst.Call, sites: list[Site]) -> str | None:
        """"eval"/"train": the mode the latest ``model.eval()``/``model.train(...)`` among
        ``sites`` before ``call`` (source order) leaves ``model`` in; None when none."""
        latest: tuple[cst.Call, str] | None = None
        for site in sites:
            other = site.node
            assert isinstance(other, cst.Call)
            func = other.func
            if other is call or not isinstance(func, cst.Attribute) or \
                    func.attr.value not in ("eval", "train") or \
                    code_of(func.value) != model or not self._before(other, call):
                continue
            if func.attr.value == "eval":
                found = "eval" if not other.args else None
            else:
                found = "eval" if other.args and is_false(other.args[0].value) else "train"
            if found is None:
                return None
            if latest is None or self._before(latest[0], other):
                latest = (other, found)
        return latest[1] if latest is not None else None

    def _runs_what_it_evals(self, facts: FunctionFacts,
                            uses: list[tuple[Site, ModelUse | None]]) -> bool:
        """A model call here comes after ``m.eval()`` on that same model (``self`` for
        ``self(x)`` and ``self.forward(x)``)."""
        evals = [(self._evaluated_model(call), call) for call in facts.eval_calls
                 if isinstance(call.func, cst.Attribute)]
        for _, use in uses:
            if use is None or use.pending:
                continue
            code = use.code
            if code.endswith(".forward"):
                code = code[: -len(".forward")]
            if any(model == code and self._before(call, use.call) for model, call in evals):
                return True
        return False

    def _evaluated_calls(self, facts: FunctionFacts) -> list[tuple[Site, ModelUse | None]]:
        """Calls of what ``facts`` switched to eval mode (``encoder(image)``,
        ``decoder.sample(feature)`` after ``decoder.eval()``), for a model built by a class
        of another file that nothing else here types: only an ``nn.Module`` has
        ``.eval()`` and ``.sample()`` of it runs its layers."""
        evaluated = {self._evaluated_model(call) for call in facts.eval_calls
                     if isinstance(call.func, cst.Attribute)}
        found: list[tuple[Site, ModelUse | None]] = []
        for site in facts.calls:
            call = site.node
            assert isinstance(call, cst.Call)
            func = call.func
            code = code_of(func)  # `self.G(z)` after `self.G.eval()`: the model itself
            if code not in evaluated:
                if isinstance(func, cst.Attribute) and func.attr.value not in _RUNS_LAYERS \
                        and not self._runs_own_layers(func):
                    continue  # `model.init_hidden(n)`, `model.create_mask(src)`: bookkeeping
                receiver = func.value if isinstance(func, cst.Attribute) else func
                code = code_of(receiver)
            if code in evaluated and not site.deferred:
                found.append((site, ModelUse(code, call, f"`{code}.eval()` is called on it",
                                             self._reads_losses(call))))
        return found

    def _runs_own_layers(self, func: cst.Attribute) -> bool:
        """``model.translate(src)`` where ``model`` is built by an ``nn.Module`` class of this
        file whose method ``translate`` runs the model's layers (it calls a submodule,
        itself or through other methods) and differentiates nothing: a beam search, a
        sampler, a decoder loop; not a mask or hidden-state builder."""
        evidence = module_evidence(self.names, func.value)
        if evidence is None or evidence.built_from is None or evidence.is_loss:
            return False
        cls = module_classes(self.names).get(evidence.built_from)
        if cls is None:
            return False
        for statement in cls.body.body:
            if isinstance(statement, cst.FunctionDef) and \
                    statement.name.value == func.attr.value:
                method = self.functions.get(id(statement))
                return method is not None and method.is_method and \
                    not self.differentiates(method) and \
                    any(use is not None for _, use in self.model_uses(method))
        return False

    def _evaluated_model(self, call: cst.Call) -> str:
        """What ``x.eval()`` switches, as uses name it: ``x``, or the name a built model
        is bound to (``encoder = EncoderCNN(size).eval()``, through ``.to(device)``)."""
        assert isinstance(call.func, cst.Attribute)
        node: cst.CSTNode = call
        parent = self.names.parent(node)
        while isinstance(parent, (cst.Attribute, cst.Call)):
            node, parent = parent, self.names.parent(parent)
        if isinstance(parent, cst.Assign) and parent.value is node and \
                len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return parent.targets[0].target.value
        return code_of(call.func.value)

    def covered_by_callees(self, root: InferenceFunction,
                           roots: list[InferenceFunction]) -> bool:
        """Every model call ``root`` makes goes through a call of a function of this file
        that runs without autograd already, or will once ``roots`` are fixed (decorated,
        a root itself, or covered the same way): ``run_eval`` whose only model work is
        ``acc = evaluate(loader)``. A second ``no_grad`` there changes nothing."""
        fixed = {id(other.facts.node) for other in roots if other is not root}
        return self._covered(root.facts, fixed, frozenset(), top=True)

    def _covered(self, facts: FunctionFacts, fixed: set[int], seen: frozenset[int],
                 *, top: bool = False) -> bool:
        if not top and (id(facts.node) in fixed or self.decorated_no_grad(facts)):
            return True
        if id(facts.node) in seen:
            return False
        seen = seen | {id(facts.node)}
        through_callee = False
        for site in facts.calls:
            if site.deferred or site.grad_mode_set:
                continue
            call = site.node
            assert isinstance(call, cst.Call)
            model = self.model_of(call)
            if model is not None and self._model_evidence(model, facts) is not None:
                return False  # model work of its own
            callee = self.resolve(call, facts)
            if callee is None or not any(True for _ in self.model_uses(callee)):
                continue
            if not self._covered(callee, fixed, seen):
                return False
            through_callee = True
        return through_callee

    def _smoke_test(self, facts: FunctionFacts,
                    uses: list[tuple[Site, ModelUse | None]]) -> bool:
        """``def test(): net = VGG('VGG11'); print(net(torch.randn(2, 3, 32, 32)).size())``
        (every model file of kuangliu/pytorch-cifar): each model it runs is built right here
        by a class, with its random initial weights, and nothing here loads weights. It
        checks shapes; there is nothing to evaluate, so neither eval mode nor no_grad is a
        finding there."""
        if not uses or any(use is None or use.pending for _, use in uses):
            return False
        body = facts.node.body
        if any(self._loads_weights(node) for node in walk_local(body)):
            return False
        scope = self.names.scope_of(body)
        for _, use in uses:
            assert use is not None
            bindings = scope.bindings.get(use.code, []) if use.code.isidentifier() else []
            if not bindings or not all(self._built_by_class(b.value) for b in bindings):
                return False
        return True

    def _built_by_class(self, value: cst.BaseExpression | None, depth: int = 0) -> bool:
        """A call of an ``nn.Module`` class, or of a function of this file that returns one
        and loads nothing (``ResNet18()`` returning ``ResNet(BasicBlock, [2, 2, 2, 2])``);
        not a library factory, which may load pretrained weights (``resnet18(weights=...)``,
        ``timm.create_model(pretrained=True)``)."""
        if not isinstance(value, cst.Call) or depth > 3:
            return False
        function = defined_function(self.names, value.func)
        if function is not None:
            returns = [n.value for n in walk_local(function.body) if isinstance(n, cst.Return)]
            return bool(returns) and not any(
                self._loads_weights(n) for n in walk_local(function.body)) and all(
                self._built_by_class(r, depth + 1) for r in returns)
        evidence = module_evidence(self.names, value)
        if evidence is None or evidence.built_from is None:
            return False
        qualified = self.names.qualified_name(value.func)
        return not (qualified is not None and is_module_factory(qualified))

    def _root(self, facts: FunctionFacts, kind: str,
              uses: list[tuple[Site, ModelUse | None]]) -> InferenceFunction:
        models: dict[str, ModelUse] = {}
        unknown = False
        for _, use in uses:
            if use is None:
                unknown = True
            elif use.code not in models:
                models[use.code] = use
        callers = self.callers(facts)
        passed_a_function = any(self._passed_a_function(facts, code, callers)
                                for code in models)
        modes = tuple(sorted(self.decorators))
        already_no_grad = self.decorated_no_grad(facts) or bool(facts.grad_mode_calls) or \
            all(site.grad_mode_set for site, _ in uses) or self._called_without_grad(facts) or \
            bool(callers) and all(grad_mode_at(self.names, call, modes).enabled is False
                                  for call, _ in callers)
        already_eval = self._evaluated(facts, callers) or \
            self._evaluated_by_constructor(facts, list(models)) or \
            self._evaluation_script_model(facts, list(models), callers)
        # A training function that runs this one under `with torch.no_grad():` (the GAN
        # collections' per-epoch `visualize_results`) trains nothing through it.
        from_training = any(
            caller is not None and self.differentiates(caller) and
            grad_mode_at(self.names, call, modes).enabled is not False
            for call, caller in callers)
        differentiated = any(self._result_differentiated(call, caller)
                             for call, caller in callers)
        return InferenceFunction(
            facts, kind, [] if unknown or passed_a_function else list(models.values()),
            [s for s, _ in uses], already_no_grad, already_eval, callers, from_training,
            differentiated, passed_a_function)

    def _passed_a_function(self, facts: FunctionFacts, code: str,
                           callers: list[tuple[cst.Call, FunctionFacts | None]]) -> bool:
        """A call of this file passes a function for the parameter ``code`` names (a
        ``lambda``, or a name bound to one or to a ``def``): what the root calls is then
        not always a module, and ``code.eval()`` would raise on that call (d2l's
        ``evaluate_loss(net, ...)`` with ``net = lambda X: linreg(X, w, b)``)."""
        if code not in facts.params:
            return False
        for call, _ in callers:
            argument = self._argument_for(code, call, facts)
            if argument is not None and _is_function_value(self.names, argument):
                return True
        return False

    def _called_without_grad(self, facts: FunctionFacts) -> bool:
        """Every call of this module-level function in the file runs with autograd off, and it
        is never passed around (udacity's ``fc_model.validation``, called only from ``train``
        inside ``with torch.no_grad():``): its caller already decided the grad mode. The
        answer is :func:`~torchfix_codemods.analysis.facts.grad_mode.grad_mode_at` at its body."""
        return grad_mode_at(self.names, facts.node.body, tuple(sorted(self.decorators))) \
            .enabled is False

    def _evaluated(self, facts: FunctionFacts,
                   callers: list[tuple[cst.Call, FunctionFacts | None]],
                   seen: frozenset[int] = frozenset()) -> bool:
        """``.eval()``/``.train(False)`` already here, in a helper, or before every call site
        (also where a caller that neither switches modes nor trains is itself only called in
        eval mode: a nested ``predict`` of ``cv2_demo(net.eval(), ...)``)."""
        if self._calls_eval(facts, frozenset()):
            return True
        if not callers:
            return False
        seen = seen | {id(facts.node)}
        for call, caller in callers:
            if caller is not None and id(caller.node) not in seen and \
                    self._mode_left_by(caller) is None and not self.differentiates(caller) and \
                    self._evaluated(caller, self.callers(caller), seen):
                continue
            evals = caller.eval_calls if caller is not None else self.module_eval_calls()
            if any(self._before(e, call) or self._within(e, call) for e in evals):
                continue
            if caller is not None and self._evaluated_by_helper(caller, call):
                continue
            if caller is None and self._left_in_eval(call):
                continue
            return False
        return True

    def _within(self, inner: cst.CSTNode, outer: cst.Call) -> bool:
        """``inner`` is part of ``outer``'s arguments: ``cv2_demo(net.eval(), transform)``
        (ssd.pytorch ``demo/live.py``) switches the model before the call runs."""
        return any(ancestor is outer for ancestor in self.names.ancestors(inner))

    def _left_in_eval(self, call: cst.Call) -> bool:
        """Module-level code switched to eval last before ``call``: the latest call before it
        that decides a mode is ``x.eval()`` or a function of this file that ends in eval
        mode (a notebook's ``evaluate(test_loader, model)`` cell before
        ``predict_sentiment(text, model)``; bentrevett/pytorch-sentiment-analysis)."""
        mode: str | None = None
        for site in self.module_sites:
            other = site.node
            assert isinstance(other, cst.Call)
            if other is call or not self._before(other, call):
                continue
            func = other.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("eval", "train"):
                found = "eval" if func.attr.value == "eval" or (
                    other.args and is_false(other.args[0].value)) else "train"
            else:
                helper = self.resolve(other, None)
                found = self._mode_left_by(helper) if helper is not None else None
            if found is not None:
                mode = found
        return mode == "eval"

    def _mode_left_by(self, facts: FunctionFacts) -> str | None:
        """"eval"/"train": the mode the last ``.eval()``/``.train()`` of ``facts``' own body
        leaves (in source order); None when it calls neither."""
        calls = [(call, "eval") for call in facts.eval_calls] + [
            (call, "eval" if call.args and is_false(call.args[0].value) else "train")
            for call in facts.train_calls]
        if not calls:
            return None
        last = calls[0]
        for candidate in calls[1:]:
            if self._before(last[0], candidate[0]):
                last = candidate
        return last[1]

    def _evaluated_by_constructor(self, facts: FunctionFacts, models: list[str]) -> bool:
        """A method whose models are attributes that the class's ``__init__`` switches to eval
        and that no method of the class switches back (IBM/pytorch-seq2seq's ``Predictor``,
        whose ``__init__`` calls ``self.model.eval()``): the object only ever evaluates."""
        if not (facts.is_method and facts.cls is not None and models) or \
                not all(model.startswith("self.") for model in models):
            return False
        evaluated: set[str] = set()
        for statement in facts.cls.body.body:
            if not isinstance(statement, cst.FunctionDef):
                continue
            method = self.functions.get(id(statement))
            if method is None:
                continue
            for call in method.train_calls:
                assert isinstance(call.func, cst.Attribute)
                if not (call.args and is_false(call.args[0].value)) and \
                        code_of(call.func.value) in models:
                    return False
            if statement.name.value == "__init__":
                evaluated |= {code_of(call.func.value) for call in method.eval_calls
                              if isinstance(call.func, cst.Attribute)}
        return all(model in evaluated for model in models)

    def _evaluation_script_model(self, facts: FunctionFacts, models: list[str],
                                 callers: list[tuple[cst.Call, FunctionFacts | None]]) -> bool:
        """An evaluation script: its top-level code switches the model to eval
        (``model = torch.load(path); model.eval()``), nothing in the file differentiates or
        switches any mode back (no ``.train(...)``), and the function runs that model (the
        module-level name, or a parameter of the same name) with no call in this file before
        that switch (ZhixiuYe/NER-pytorch's ``eval.py``). It runs in eval mode."""
        if len(models) != 1 or not isinstance(self.names.parent(facts.node), cst.Module) or \
                self.file_differentiates() or self.module_diffs:
            return False
        model = models[0]
        if not model.isidentifier() or any(
                function.train_calls for function in self.functions.values()) or any(
                isinstance(site.node, cst.Call) and isinstance(site.node.func, cst.Attribute)
                and site.node.func.attr.value == "train" for site in self.module_sites):
            return False
        switches = [call for call in self.module_eval_calls()
                    if isinstance(call.func, cst.Attribute) and code_of(call.func.value) == model]
        if not switches or not all(caller is None and any(self._before(e, call)
                                                          for e in switches)
                                   for call, caller in callers):
            return False
        module_scope = self.names.module_scope
        assert module_scope is not None
        return model in module_scope.bindings and (
            model in facts.params or model not in self.names.scope_of(facts.node.body).bindings)

    def _evaluated_by_helper(self, caller: FunctionFacts, call: cst.Call) -> bool:
        """``model = load_model(path)`` before the call, where ``load_model`` calls ``.eval()``."""
        for site in caller.calls:
            other = site.node
            assert isinstance(other, cst.Call)
            if other is call or not self._before(other, call):
                continue
            helper = self.resolve(other, caller)
            if helper is not None and helper is not caller and \
                    self._calls_eval(helper, frozenset()):
                return True
        return False

    def module_eval_calls(self) -> list[cst.Call]:
        """``x.eval()`` calls made by module-level code (a script evaluating before a call)."""
        return [site.node for site in self.module_sites  # type: ignore[misc]
                if isinstance(site.node, cst.Call) and isinstance(site.node.func, cst.Attribute)
                and site.node.func.attr.value == "eval" and not site.node.args]

    def _calls_eval(self, facts: FunctionFacts, seen: frozenset[int]) -> bool:
        if facts.eval_calls or any(
                c.args and is_false(c.args[0].value) for c in facts.train_calls):
            return True
        if id(facts.node) in seen:
            return False
        for site in facts.calls:
            assert isinstance(site.node, cst.Call)
            callee = self.resolve(site.node, facts)
            if callee is not None and self._calls_eval(callee, seen | {id(facts.node)}):
                return True
        return False

    def _before(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """Does ``first`` come before ``second`` in source order (same module)?"""
        order = self.names.memo.get(_ORDER)
        if order is None:
            assert self.names.module_scope is not None
            # Meaningful nodes only (the ones compared here), in LibCST's visiting order.
            order = {id(node): number for number, node in
                     enumerate(preorder(self.names.module_scope.node))}
            self.names.memo[_ORDER] = order
        return order.get(id(first), 0) < order.get(id(second), 0)

    def _result_differentiated(self, call: cst.Call, caller: FunctionFacts | None,
                               depth: int = 0) -> bool:
        """Does the call's result flow, through the caller's assignments, into a line that
        differentiates (``loss.backward()``)? stable-baselines3's PPO builds its loss from
        ``values, log_prob, entropy = policy.evaluate_actions(...)`` three assignments
        before the backward: that call is training, not inference. A caller that returns
        what it built from the result hands the question to its own callers (an A2C
        agent's ``compute_loss`` returns the loss its ``update`` differentiates), up to
        three calls up."""
        if caller is None:  # module-level code: a script's own training lines
            module_scope = self.names.module_scope
            assert module_scope is not None
            sites, body = self.module_diffs, module_scope.node
        else:
            sites, body = caller.differentiations, caller.node.body
        statement = enclosing_statement(self.names, call)
        differentiated = [enclosing_statement(self.names, site.node) for site in sites]
        if any(other is statement for other in differentiated):
            return True
        tainted = _assigned_names(statement) if statement is not None else set()
        returned = statement is not None and _returns(statement)
        if not tainted and not returned:
            return False
        flows = [(_assigned_names(node), {n.value for n in names_in(node)})
                 for node in walk_local(body)
                 if isinstance(node, cst.SimpleStatementLine)]
        changed = True
        while changed:
            changed = False
            for targets, reads in flows:
                if targets - tainted and reads & tainted:
                    tainted |= targets
                    changed = True
        if any(other is not None and tainted & {n.value for n in names_in(other)}
               for other in differentiated):
            return True
        if caller is None or depth >= 2:
            return False
        returned = returned or any(
            isinstance(node, cst.SimpleStatementLine) and _returns(node)
            and tainted & {n.value for n in names_in(node)} for node in walk_local(body))
        return returned and any(self._result_differentiated(outer, outer_caller, depth + 1)
                                for outer, outer_caller in self.callers(caller))

    # ---------------------------------------------------------------- scripts
    def script_region(self, include_no_grad: bool = False) -> ScriptRegion | None:
        """Top-level code of an evaluation script: loads weights (or switches the model to
        eval itself), calls a model, never trains.

        Model calls already under ``no_grad`` count only with ``include_no_grad``
        (for the eval question; the no_grad question must skip them).
        """
        if self.file_differentiates() or not imports_torch(self.names):
            return None
        assert self.names.module_scope is not None
        module = self.names.module_scope.node
        assert isinstance(module, cst.Module)
        if not any(self._loads_weights(s.node) for s in self.module_sites):
            return None
        block: cst.Module | cst.IndentedBlock = module
        for statement in module.body:
            if isinstance(statement, cst.If) and is_main_guard(statement.test) and \
                    isinstance(statement.body, cst.IndentedBlock):
                block = statement.body
        model_calls: list[tuple[cst.BaseStatement, cst.Call, str]] = []
        for site in self.module_sites:
            call = site.node
            assert isinstance(call, cst.Call)
            if (site.grad_mode_set and not include_no_grad) or site.deferred or \
                    not isinstance(call.func, cst.Name):
                continue
            if module_evidence(self.names, call.func) is None:
                continue
            statement = self._top_statement(call, block)
            if statement is None:
                continue
            model_calls.append((statement, call, call.func.value))
        if not model_calls or len({code for _, _, code in model_calls}) != 1:
            return None
        body = list(block.body)
        indices = sorted(body.index(s) for s, _, _ in model_calls)  # type: ignore[arg-type]
        region = body[indices[0]: indices[-1] + 1]
        if any(isinstance(s, (cst.FunctionDef, cst.ClassDef)) or _has_control_exit(s)
               for s in region):
            return None
        if any(starts_a_cell(s) for s in region[1:]):
            return None  # a notebook's cells: one block around them would merge them
        return ScriptRegion(block, region, model_calls[0][2], [c for _, c, _ in model_calls])

    def _loads_weights(self, node: cst.CSTNode) -> bool:
        """A weight load (``torch.load``, ``load_state_dict``, ``from_pretrained``, a model's
        own ``load_weights``/``load_darknet_weights``...), or the script switching a model
        to eval mode itself (``model.eval()``): either way it means to run trained weights."""
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if self.names.qualified_name(func) == "torch.load":
            return True
        if not isinstance(func, cst.Attribute):
            return False
        method = func.attr.value
        if method in ("load_state_dict", "from_pretrained"):
            return True
        tokens = name_tokens(method)
        if tokens[:1] == ["load"] and ("weights" in tokens or "weight" in tokens) and \
                module_evidence(self.names, func.value) is not None:
            return True
        return method == "eval" and not node.args and \
            module_evidence(self.names, func.value) is not None

    def _top_statement(self, node: cst.CSTNode,
                       block: cst.Module | cst.IndentedBlock) -> cst.BaseStatement | None:
        previous: cst.CSTNode = node
        for ancestor in self.names.ancestors(node):
            if ancestor is block:
                return previous if isinstance(previous, cst.BaseStatement) else None
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            previous = ancestor
        return None


_LOCAL_KINDS = frozenset({"assign", "augassign", "annassign", "for", "with", "walrus"})
"""Bindings that make a name the function's own (a parameter or a global is not)."""
_STORING_METHODS = frozenset({"append", "extend", "insert", "update", "add", "setdefault",
                              "put", "put_nowait", "__setitem__", "push", "store", "remember",
                              "record"})
_CONTAINERS = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
               cst.SetComp, cst.GeneratorExp)
"""A name bound to a container may be filled with tensors later (``outs = []`` then
``outs.append(model(x))``): returning it hands them out."""
_PLAIN_CALLS = frozenset({"str", "int", "float", "bool", "len", "round", "repr"})
_PLAIN_METHODS = frozenset({"item", "tolist", "numpy", "join", "format", "strip", "split",
                            "lower", "upper"})


def _plain_value(names: NameIndex, value: cst.BaseExpression, depth: int) -> bool:
    """``value`` is a Python or numpy value, never a tensor: literals, strings built by
    ``join``/``format``/f-strings, ``int(...)``/``len(...)``, ``.item()``, ``.tolist()``,
    ``.numpy()``, arithmetic and tuples of those, or a local name every binding of which is
    one."""
    if depth > 4:
        return False
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                          cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name):
        if value.value in ("True", "False", "None"):
            return True
        bindings = names.bindings_of(value)
        return bool(bindings) and all(
            binding.kind in ("assign", "augassign") and binding.value is not None and
            not isinstance(binding.value, _CONTAINERS) and
            _plain_value(names, binding.value, depth + 1) for binding in bindings)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Name) and func.value in _PLAIN_CALLS and \
                names.qualified_name(func) is None:
            return True
        return isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS
    if isinstance(value, cst.BinaryOperation):
        return _plain_value(names, value.left, depth + 1) and \
            _plain_value(names, value.right, depth + 1)
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(_plain_value(names, element.value, depth + 1) for element in value.elements)
    return False


def _is_function_value(names: NameIndex, value: cst.BaseExpression) -> bool:
    """``value`` is a function: a ``lambda``, or a name whose every binding is a ``def`` or an
    assignment of a ``lambda`` (also one element of a tuple assignment,
    ``net, loss = lambda X: ..., squared_loss``)."""
    if isinstance(value, cst.Lambda):
        return True
    if not isinstance(value, cst.Name):
        return False
    bindings = names.bindings_of(value)
    if not bindings:
        return False
    for binding in bindings:
        if binding.kind == "def":
            continue
        bound = binding.value
        node = binding.node
        if bound is None and isinstance(node, cst.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0].target, (cst.Tuple, cst.List)) and \
                isinstance(node.value, (cst.Tuple, cst.List)):
            targets, values = node.targets[0].target.elements, node.value.elements
            positions = [i for i, element in enumerate(targets)
                         if isinstance(element.value, cst.Name) and
                         element.value.value == value.value]
            if len(positions) == 1 and len(targets) == len(values):
                bound = values[positions[0]].value
        if not isinstance(bound, cst.Lambda):
            return False
    return True


def _returns(statement: cst.CSTNode) -> bool:
    """A simple statement line that returns a value."""
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Return) and small.value is not None for small in statement.body)


def _assigned_names(statement: cst.CSTNode) -> set[str]:
    """Names a simple statement line assigns (``a, b = ...``, ``x += ...``, ``y: T = ...``)."""
    found: set[str] = set()
    if not isinstance(statement, cst.SimpleStatementLine):
        return found
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                found |= {n.value for n in names_in(target.target)}
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            found |= {n.value for n in names_in(small.target)}
    return found


def _is_loss_name(name: str) -> bool:
    lowered = name.lower()
    return "loss" in lowered or "criterion" in lowered


def _has_control_exit(statement: cst.CSTNode) -> bool:
    """Statements that a ``with`` block would change: ``global``, ``return``, ``yield``."""
    if isinstance(statement, (cst.Global, cst.Nonlocal, cst.Return, cst.Yield)):
        return True
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_has_control_exit(child) for child in children(statement))
