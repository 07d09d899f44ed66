"""Value facts about a tensor: may it require grad, may it live on an accelerator, is it
integer-typed. Each answer is *yes*, *no* or *unknown*, with the evidence in words.

:mod:`~torchfix_codemods.analysis.facts.tensors` says whether an expression is a torch
tensor; this module says what can go wrong with one. ``t.numpy()`` fails when
``t`` requires grad or lives on a GPU: when both answers are *no* there is
nothing to report, and when one is *no* a fix adds only the missing step
(``.cpu()`` or ``.detach()``).

Evidence (measured on torch 2.13, see the rules' "Fix safety"):

* *requires grad: no* — ``.detach()``, ``.data``; anything computed under
  ``no_grad``/``inference_mode`` (a ``with`` or a decorator, the user's
  configured inference decorators, every call of the function in this file
  made under one; see :func:`~torchfix_codemods.analysis.facts.grad_mode.grad_mode_at`);
  integer or bool results, which autograd never tracks (``argmax``/``argmin``/
  ``argsort``, ``max(...)[1]``, ``.long()``, comparisons, ``randint``);
  ``torch.from_numpy``; factories without ``requires_grad=True``; batches of a
  ``DataLoader``; the else branch of ``if t.requires_grad:``; ``Distribution.sample()``;
  a gradient ``p.grad`` (unless the file asks for ``create_graph=True``).
  :func:`no_history` is this answer for the rules that detach (``.data``, ``Variable``).
  A parameter (``nn.Parameter``, ``.weight``, ``requires_grad=True``) is a leaf
  that requires grad even under ``no_grad``; an op on it there does not.
* from other files of the run, through the project index
  (:meth:`~torchfix_codemods.analysis.project.ProjectFacts.returns`): a function
  that returns a detached CPU tensor, or a CPU tensor.
* *accelerator: no* — ``.cpu()``, ``.to("cpu")`` (also through a name bound once to
  ``torch.device("cpu")``, or a ``self.<attr>`` the class and its bases in this file
  assign once, as detectron2's ``self._cpu_device``), ``torch.from_numpy``, factories
  without ``device=`` (unless the file changes the default device), DataLoader
  batches (collated on the CPU; unless a ``collate_fn`` or a ``TensorDataset``
  of such tensors says otherwise); shape and dtype ops keep the device; where a
  ``.numpy()`` is judged, a module's output whose input an earlier line on every path
  to it already converted with ``.numpy()`` (a module on an accelerator raises on a
  CPU input, and a tensor's device never changes).
* *integer: yes* — the integer and bool results above, ``dtype=torch.long``...

Values are followed through the bindings that reach a read
(:mod:`~torchfix_codemods.analysis.core.flow`), tuple unpacking of
``torch.max``/``topk``/``sort`` results, lists filled by ``append`` and read by
``torch.cat``/``torch.stack``/iteration, and the ``return`` values of functions of
this file. A value written in place (``buf[i] = v``, ``buf.copy_(v)``) requires
grad if what is written may. Anything else is *unknown*, which rules treat as
"may".

What is not seen: a callee in another file returning a parameter under
``no_grad`` (the call's result is taken as computed there), a dataset that
returns GPU tensors from a custom class, a default device set in another file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from torchfix_codemods.analysis.core.callees import local_function
from torchfix_codemods.analysis.core.calls import parameter_bound_by
from torchfix_codemods.analysis.core.definite import runs_before
from torchfix_codemods.analysis.core.evaluation import Evaluation
from torchfix_codemods.analysis.core.evidence import Evidence
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.import_time import has_main_guard
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex, dotted_name, unpack_position
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.syntax import literal_bool
from torchfix_codemods.analysis.core.walk import children, walk_local
from torchfix_codemods.analysis.facts.grad_mode import calls_of_function, grad_mode_at
from torchfix_codemods.analysis.facts.modules import passed_in_file, self_assignments
from torchfix_codemods.analysis.facts.tensors import CONTAINER_LITERAL, module_reason, provenance
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    COMPLEX_CASTS,
    FACTORY_INTEGER_RESULT,
    FLOAT_CASTS,
    FRESH_LIKE_METHODS,
    INTEGER_CASTS,
    LEGACY_CONSTRUCTORS,
    VIEW_METHODS,
)
from torchfix_codemods.analysis.vocabulary.torch_api import (
    CONCATENATIONS,
    DATA_CONVERSIONS,
    DEFAULT_DEVICE_SETTERS,
    LIBRARIES_THAT_PLACE_NOTHING,
    PARAMETER_CLASSES,
    VARIABLE_CLASSES,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    RECURRENT_PARAMETER_PREFIX,
    is_module_parameter,
)

_MAX_DEPTH = 12
_MAX_HOPS = 3
_HOP_START = -2
"""Where a value a call passes to a parameter is asked from: with two steps of budget beyond
a direct question about it (as ``_Analyzer._fresh`` in :mod:`.tensors`)."""


@dataclass(frozen=True)
class Fact(Evidence):
    """One answer about a value and the evidence for it."""

    suspected: bool = False
    """For "unknown": something points at the risk (a move to a device chosen at run time, a
    module's device, a runtime ``requires_grad`` flag), as opposed to knowing nothing."""

    @property
    def evidenced(self) -> bool:
        """The risk is shown (yes) or pointed at (suspected), not merely not excluded."""
        return self.answer == "yes" or (self.answer == "unknown" and self.suspected)


def _yes(reason: str) -> Fact:
    return Fact("yes", reason)


def _no(reason: str) -> Fact:
    return Fact("no", reason)


def _unknown(reason: str) -> Fact:
    return Fact("unknown", reason)


def _suspected(reason: str) -> Fact:
    return Fact("unknown", reason, suspected=True)


@dataclass(frozen=True)
class TensorFacts:
    """What may happen to a tensor value, each fact with its reason."""

    requires_grad: Fact
    accelerator: Fact
    integer: Fact
    leaf: bool = False
    """It requires grad by itself (a parameter, ``requires_grad=True``): ``no_grad`` around
    a use does not change that, unlike for a value computed from it."""

    @property
    def numpy_can_fail(self) -> bool:
        """``.numpy()`` may raise: it may require grad or live on an accelerator, and the code
        shows one of the two (a value the analysis knows nothing about is not a finding:
        report only what can go wrong)."""
        return not (self.requires_grad.is_no and self.accelerator.is_no) and (
            self.requires_grad.evidenced or self.accelerator.evidenced)

    def risks(self) -> list[str]:
        """Why ``.numpy()`` may fail on it, as a reviewer reads it (empty when it cannot)."""
        found = []
        if not self.requires_grad.is_no:
            verb = "requires grad" if self.requires_grad.answer == "yes" else "may require grad"
            found.append(f"it {verb} ({self.requires_grad.reason})")
        if not self.accelerator.is_no:
            verb = ("lives on an accelerator" if self.accelerator.answer == "yes"
                    else "may live on an accelerator")
            found.append(f"it {verb} ({self.accelerator.reason})")
        return found


_UNKNOWN_FACTS = TensorFacts(_unknown("not known"), _unknown("not known"), _unknown("not known"))
_CYCLE = Fact("unknown", "defined in terms of itself")
"""What a value defined in terms of itself (``ys = torch.cat([ys, y])`` in a loop) contributes
to its own facts: nothing. Joins skip it, so the loop-carried value has the facts of its
other sources; where nothing else is known it stays unknown."""
_CYCLE_FACTS = TensorFacts(_CYCLE, _CYCLE, _CYCLE)
_PLAIN = TensorFacts(_no("a Python or numpy value"), _no("a Python or numpy value"),
                     _unknown("not a tensor"))


def tensor_facts(names: NameIndex, expr: cst.BaseExpression,
                 inference_decorators: tuple[str, ...] = ()) -> TensorFacts:
    """The value facts of ``expr`` where it is written."""
    facts = _Values(names, inference_decorators).of(expr, 0)
    if facts.requires_grad is _CYCLE or facts.accelerator is _CYCLE or facts.integer is _CYCLE:
        return TensorFacts(*(_unknown(f.reason) if f is _CYCLE else f
                             for f in (facts.requires_grad, facts.accelerator, facts.integer)),
                           facts.leaf)
    return facts


def no_history(names: NameIndex, expr: cst.BaseExpression,
               inference_decorators: tuple[str, ...] = ()) -> str | None:
    """Why the tensor ``expr`` can carry no autograd history where it is written (None when
    it may): it neither requires grad nor has a ``grad_fn``, so ``.detach()``, ``.data`` or a
    ``Variable(...)`` around it, and ``no_grad`` around an in-place write to it, change
    nothing a program can observe through autograd.

    The one fact behind "this rewrite is churn" in every rule that detaches: a gradient
    (``p.grad``), integer and bool results (``argmax``, comparisons, labels), fresh
    factories, ``DataLoader`` batches, values computed under ``no_grad`` or
    ``inference_mode``, values already detached. Measured on torch 2.13: ``w.grad`` after
    ``backward()`` has ``requires_grad`` False and no ``grad_fn`` (True after
    ``backward(create_graph=True)``, which the answer excludes); an ``argmax`` is ``int64``
    and ``requires_grad_()`` on it raises "only Tensors of floating point dtype can require
    gradients"; a result computed under ``no_grad`` has ``requires_grad`` False. A parameter
    (a leaf that requires grad) has no history but is not in this answer: ``.detach()`` of
    it is a different tensor as far as autograd is concerned.
    """
    facts = tensor_facts(names, expr, inference_decorators)
    if facts.requires_grad.is_no and not facts.leaf:
        return facts.requires_grad.reason
    return None


_HIGHER_ORDER: Slot[bool] = Slot("values.higher_order")


def _parameterless_loss(built_from: str | None) -> bool:
    """A ``torch.nn`` loss class (none has parameters but the adaptive softmax)."""
    return built_from is not None and built_from.startswith("torch.nn.") and \
        built_from.endswith("Loss") and "Adaptive" not in built_from


def _builds_higher_order_graph(names: NameIndex) -> bool:
    """The file asks for ``create_graph=True`` somewhere (``backward``, ``autograd.grad``):
    gradients may then carry history (measured on torch 2.13: ``w.grad.requires_grad`` is
    True after ``backward(create_graph=True)``)."""
    if _HIGHER_ORDER in names.memo:
        return names.memo[_HIGHER_ORDER]
    module = names.module_scope.node if names.module_scope is not None else None
    found = module is not None and any(
        isinstance(node, cst.Arg) and node.keyword is not None and
        node.keyword.value == "create_graph" and literal_bool(node.value) is not False
        for node in _walk(module))
    names.memo[_HIGHER_ORDER] = found
    return found


def _walk(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """Every node under ``node`` (iteratively: deep expressions cannot exhaust the stack)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def conversion_facts(names: NameIndex, expr: cst.BaseExpression,
                     inference_decorators: tuple[str, ...] = ()) -> TensorFacts:
    """The facts of ``expr`` as a ``.numpy()`` (or ``np.asarray``) of it sees them.

    torch refuses a tensor that requires grad only while grad mode is on (measured on torch
    2.13: ``nn.Parameter(...).numpy()`` works under ``no_grad`` and ``inference_mode``), so
    where the conversion itself runs with autograd off, requiring grad cannot make it fail.
    """
    facts = _cpu_by_module_input(names, expr, tensor_facts(names, expr, inference_decorators),
                                 inference_decorators)
    if facts.requires_grad.is_no:
        return facts
    mode = grad_mode_at(names, expr, inference_decorators)
    if mode.enabled is not False:
        return facts
    return TensorFacts(_no(f"converted {mode.reason}, where torch does not check grad"),
                       facts.accelerator, facts.integer, facts.leaf)



def _cpu_by_module_input(names: NameIndex, expr: cst.BaseExpression, facts: TensorFacts,
                         decorators: tuple[str, ...]) -> TensorFacts:
    """A module's output whose input an earlier line already showed on the CPU.

    ``out = model(x)`` is suspected to live on the module's device. When a line that runs
    before the conversion being judged converts the same ``x`` with ``.numpy()`` (directly,
    or through a function of this file that converts its parameter before it can return),
    ``x`` is on the CPU: a tensor's device never changes, and the program got past that
    line. A module on an accelerator raises on a CPU input, so ``out`` is on the CPU too,
    and this ``.numpy()`` cannot be the first line to fail (timm's ``onnx_export``: the
    output checked against ONNX runtime on ``example_input.numpy()``). Only the device
    fact changes; what the earlier line proves about grad is not carried over.
    """
    accelerator = facts.accelerator
    if accelerator.answer != "unknown" or not accelerator.suspected:
        return facts
    calls: list[cst.Call] = []
    if isinstance(expr, cst.Call):
        calls = [expr]
    elif isinstance(expr, cst.Name):
        bindings = reaching_bindings(names, expr)
        if not bindings or not all(b.kind == "assign" and isinstance(b.value, cst.Call)
                                   for b in bindings):
            return facts
        calls = [b.value for b in bindings]  # type: ignore[misc]
    reasons = []
    for call in calls:
        if module_reason(names, call.func) is None:
            return facts
        inputs = [a.value for a in call.args if a.keyword is None and not a.star]
        if not inputs or not isinstance(inputs[0], cst.Name):
            return facts
        shown = _converted_before(names, inputs[0], expr, decorators)
        if shown is None:
            return facts
        reasons.append(shown)
    if not reasons:
        return facts
    return TensorFacts(facts.requires_grad, _no(reasons[0]), facts.integer, facts.leaf)


def _converted_before(names: NameIndex, value: cst.Name, site: cst.CSTNode,
                      decorators: tuple[str, ...]) -> str | None:
    """Why the tensor ``value`` names is on the CPU at ``site``: another read of the same
    binding converted with ``.numpy()`` on a line that runs before ``site`` (None when
    there is none). The earlier conversion counts only where it is not itself a finding
    for its device, so fixing one line never changes the answer for another."""
    reached = {id(b) for b in reaching_bindings(names, value)}
    if not reached:
        return None
    for read in names.loads_in(names.scope_of(value), value.value):
        if read is value or {id(b) for b in reaching_bindings(names, read)} != reached:
            continue
        line = statement_line(names, read)
        if line is None or not runs_before(names, line, site):
            continue
        converted = _converts(names, read, decorators)
        module = names.module_scope.node if names.module_scope is not None else None
        if converted is not None and isinstance(module, cst.Module):
            where = positions_of(module, [line])[id(line)].start.line
            return (f"computed by a module from `{value.value}`, which line {where} converts "
                    f"with `.numpy()`{converted}: a CPU tensor, and a module on an accelerator "
                    "would have raised on it")
    return None


def _converts(names: NameIndex, read: cst.Name, decorators: tuple[str, ...]) -> str | None:
    """" (directly)"/" (in `f`)" when evaluating ``read`` where it stands converts it with
    ``.numpy()`` without a device risk shown there; None otherwise."""
    attribute = names.parent(read)
    if isinstance(attribute, cst.Attribute) and attribute.value is read and \
            attribute.attr.value == "numpy":
        call = names.parent(attribute)
        if isinstance(call, cst.Call) and call.func is attribute and not call.args and \
                _evaluated_with_statement(names, call) and \
                not tensor_facts(names, read, decorators).accelerator.evidenced:
            return ""
        return None
    argument = names.parent(read)
    call = names.parent(argument) if isinstance(argument, cst.Arg) else None
    if not isinstance(argument, cst.Arg) or not isinstance(call, cst.Call) or argument.star or \
            not _evaluated_with_statement(names, call):
        return None
    function = local_function(names, call)
    if function is None:
        return None
    parameter = parameter_bound_by(function, call, argument)
    if parameter is None:
        return None
    return f" (in `{function.name.value}`)" if _converts_parameter(
        names, function, parameter, decorators) else None


def _converts_parameter(names: NameIndex, function: cst.FunctionDef, parameter: str,
                        decorators: tuple[str, ...]) -> bool:
    """``function`` converts ``parameter`` with ``.numpy()`` in a top-level statement of its
    body that every call reaches (no ``return``/``raise`` before it), and never rebinds it."""
    if not isinstance(function.body, cst.IndentedBlock):
        return False
    scope = names.scope_of(function.body)
    if [b.kind for b in scope.bindings.get(parameter, [])] != ["param"]:
        return False
    for statement in function.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for node in walk_local(statement):
            if isinstance(node, cst.Name) and node.value == parameter and \
                    _converts(names, node, decorators) == "":
                return True
        if any(isinstance(s, (cst.Return, cst.Raise)) for s in statement.body):
            return False
    return False


def _evaluated_with_statement(names: NameIndex, node: cst.CSTNode) -> bool:
    """``node`` runs whenever its statement does: not in a lambda, a comprehension, a
    conditional expression or the right side of ``and``/``or``."""
    for ancestor in names.ancestors(node):
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return True
        if isinstance(ancestor, (cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp,
                                 cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False
    return False

def _any(facts: Iterable[Fact], empty: Fact) -> Fact:
    """The fact of a value that has a property when any of its sources may: yes if one is
    yes, no if all are no, else unknown."""
    facts = _without_cycles(facts)
    if not facts:
        return empty
    for fact in facts:
        if fact.answer == "yes":
            return fact
    for fact in facts:
        if fact.answer == "unknown" and fact.suspected:
            return fact
    for fact in facts:
        if fact.answer == "unknown":
            return fact
    return facts[0]


def _all_yes(facts: Iterable[Fact], empty: Fact) -> Fact:
    """Integer when every source is; not when any is not."""
    facts = _without_cycles(facts)
    if not facts:
        return empty
    for fact in facts:
        if fact.answer != "yes":
            return fact
    return facts[0]


def _without_cycles(facts: Iterable[Fact]) -> list[Fact]:
    """``facts`` without the contributions of cycles; just the cycle when that is all."""
    facts = list(facts)
    kept = [fact for fact in facts if fact is not _CYCLE]
    return kept if kept or not facts else [_CYCLE]


def _join(alternatives: list[TensorFacts]) -> TensorFacts:
    """The facts of a value that is one of ``alternatives`` (several bindings, branches)."""
    if not alternatives:
        return _UNKNOWN_FACTS
    if len(alternatives) == 1:
        return alternatives[0]
    integers = _without_cycles(a.integer for a in alternatives)
    integer = integers[0]
    if any(other.answer != integer.answer for other in integers):
        integer = _unknown("integer in one place, not in another")
    return TensorFacts(_any((a.requires_grad for a in alternatives), _UNKNOWN_FACTS.requires_grad),
                       _any((a.accelerator for a in alternatives), _UNKNOWN_FACTS.accelerator),
                       integer, all(a.leaf for a in alternatives))


_INTEGER_RESULTS = frozenset({
    "argmax", "argmin", "argsort", "nonzero", "bucketize", "searchsorted", "multinomial",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "isnan", "isinf", "isfinite", "isclose", "isin", "logical_and", "logical_or",
    "logical_not", "logical_xor", "bincount", "count_nonzero", "randint", "randperm",
    "signbit", "isneginf", "isposinf", "isreal", "one_hot",
})
"""Functions and methods whose result is integer or bool: autograd never tracks it."""
_ONE_TENSOR_ARGUMENT = frozenset({
    "interpolate", "upsample", "pad", "softmax", "log_softmax", "softmin", "normalize", "relu",
    "relu6", "leaky_relu", "gelu", "silu", "mish", "elu", "selu", "celu", "softplus", "sigmoid",
    "tanh", "hardtanh", "hardswish", "hardsigmoid", "logsigmoid", "dropout", "dropout2d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold", "flatten",
    "squeeze", "unsqueeze", "reshape", "transpose", "permute", "sum", "mean", "exp", "log",
    "abs", "sqrt", "clamp", "clip", "round", "cumsum", "flip", "roll", "repeat_interleave",
    "nan_to_num", "norm", "std", "var", "prod", "logsumexp",
})
"""``torch.*`` and ``torch.nn.functional.*`` functions whose one tensor argument is the first:
the others are sizes, modes, dims (an unknown ``size`` says nothing about grad)."""
_KEEPS_ALL = VIEW_METHODS | {
    "clone", "contiguous", "repeat", "reshape_as", "flip", "fliplr", "flipud", "roll",
    "index_select", "gather", "masked_select", "take", "tile", "repeat_interleave", "squeeze_",
    "unsqueeze_", "detach_", "pin_memory", "share_memory_", "ravel", "tril", "triu", "abs",
    "neg", "clamp", "clip", "fill_", "zero_", "normal_", "uniform_", "random_", "exponential_",
    "fill_diagonal_", "clamp_",
}
"""Methods whose result has the receiver's dtype and device (grad follows it too)."""
_INDEX_PAIRS = frozenset({"max", "min", "sort", "topk", "kthvalue", "median", "mode", "cummax",
                          "cummin", "nanmedian"})
"""``(values, indices)`` results: item 1 is integer indices."""
_INTEGER_DTYPES = frozenset({"long", "int64", "int", "int32", "int16", "short", "int8", "uint8",
                             "bool", "uint16", "uint32", "uint64"})
_FLOAT_DTYPES = frozenset({"float", "float32", "float64", "double", "float16", "half",
                           "bfloat16", "complex64", "complex128", "cfloat", "cdouble"})
_INPLACE_WRITES = frozenset({"copy_", "add_", "sub_", "mul_", "div_", "addcmul_", "addcdiv_",
                             "lerp_", "index_copy_", "index_add_", "masked_scatter_",
                             "scatter_", "scatter_add_", "set_", "put_", "index_put_"})
_CPU = "cpu"
_ACCELERATORS = ("cuda", "mps", "xpu", "xla", "hpu", "npu", "mlu", "meta")


_MEMO: Slot[dict[int, TensorFacts]] = Slot("values.memo")
_GRAD_OFF: Slot[dict[int, str | None]] = Slot("values.grad_off")
_DEFAULT_DEVICE: Slot[bool] = Slot("values.default_device")
_PLACES_NOTHING: Slot[bool] = Slot("values.places_nothing")
_PLACEMENT_WORDS = frozenset({"cuda", "to", "device", "devices", "load", "DataParallel",
                              "DistributedDataParallel", "set_default_device",
                              "set_default_tensor_type", "accelerator", "mps", "xpu",
                              "device_map", "map_location", "device_ids"})
"""Names and attributes with which a program places tensors or modules on a device, or gets
them from somewhere that may have (``torch.load`` restores tensors to the device they were
saved from)."""


def _places_nothing_package(module: str | None) -> bool:
    top = (module or "").split(".")[0]
    return bool(top) and (top in sys.stdlib_module_names or top in LIBRARIES_THAT_PLACE_NOTHING)


class _Values:
    """One question's worth of recursion, with answers shared per module."""

    def __init__(self, names: NameIndex, decorators: tuple[str, ...], *, hops: int = 0) -> None:
        self.names = names
        self.decorators = decorators
        self.hops = hops
        """How many parameters are being followed back to their calls (see ``_parameter``)."""
        memo: dict[int, TensorFacts] = \
            names.memo.setdefault(_MEMO.keyed(decorators), {}) if not hops else {}
        self.evaluation = Evaluation(memo, _MAX_DEPTH, cycle=_CYCLE_FACTS,
                                     too_deep=_UNKNOWN_FACTS)

    def of(self, expr: cst.BaseExpression, depth: int) -> TensorFacts:
        return self.evaluation(expr, depth, self._of)

    # ------------------------------------------------------------ grad mode
    def _grad_off(self, node: cst.CSTNode) -> str | None:
        """Why autograd is off where ``node`` runs (None when it may be on)."""
        cache = self.names.memo.setdefault(_GRAD_OFF.keyed(self.decorators), {})
        statement = self.names.enclosing(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        key = id(statement if statement is not None else node)
        if key not in cache:
            mode = grad_mode_at(self.names, node, self.decorators)
            cache[key] = mode.reason if mode.enabled is False else None
        return cache[key]

    def _computed(self, node: cst.CSTNode, grad: Fact) -> Fact:
        """Grad of a result computed at ``node`` from inputs whose grad is ``grad``."""
        if grad.is_no:
            return grad
        off = self._grad_off(node)
        return _no(f"computed {off}") if off is not None else grad

    def _derived(self, node: cst.CSTNode, source: TensorFacts, *,
                 grad: Fact | None = None, accelerator: Fact | None = None,
                 integer: Fact | None = None) -> TensorFacts:
        """An op at ``node`` on ``source``: each fact follows the source unless given."""
        integer = integer if integer is not None else source.integer
        if grad is None:
            grad = (_no(f"integer-typed ({integer.reason}): autograd never tracks it")
                    if integer.answer == "yes" else self._computed(node, source.requires_grad))
        return TensorFacts(grad, accelerator if accelerator is not None else source.accelerator,
                           integer)

    # ------------------------------------------------------------ dispatch
    def _of(self, expr: cst.BaseExpression, depth: int) -> TensorFacts:
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, depth)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self._combined(expr, [expr.left, expr.right], depth)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self._derived(expr, self.of(expr.expression, depth))
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot))
                   for c in expr.comparisons):
                return _PLAIN
            parts = [expr.left, *(c.comparator for c in expr.comparisons)]
            combined = self._combined(expr, parts, depth)
            return TensorFacts(_no("a comparison (bool): autograd never tracks it"),
                               combined.accelerator, _yes("a comparison (bool)"))
        if isinstance(expr, cst.IfExp):
            return _join([self.of(expr.body, depth), self.of(expr.orelse, depth)])
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return _join([self.of(e.value, depth) for e in expr.elements])
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.of(expr.elt, depth)
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                             cst.ConcatenatedString, cst.FormattedString)):
            return _PLAIN
        return _UNKNOWN_FACTS

    def _operand(self, expr: cst.BaseExpression, depth: int) -> TensorFacts:
        """An operand: plain numbers and numpy values neither require grad nor live on a GPU.
        A container is not plain: what it holds decides (`dist_an = []`, then
        `dist_an.append(dist[i].min())` and `torch.cat(dist_an)`: Cysu/open-reid's triplet
        loss, where the result requires grad)."""
        found = provenance(self.names, expr)
        if found.is_not_tensor and found.reason != CONTAINER_LITERAL:
            return _PLAIN
        return self.of(expr, depth)

    def _combined(self, node: cst.CSTNode, parts: list[cst.BaseExpression],
                  depth: int) -> TensorFacts:
        facts = [self._operand(part, depth) for part in parts]
        grad = self._computed(node, _any((f.requires_grad for f in facts),
                                         _UNKNOWN_FACTS.requires_grad))
        return TensorFacts(grad, _any((f.accelerator for f in facts), _UNKNOWN_FACTS.accelerator),
                           _unknown("arithmetic"))

    # ------------------------------------------------------------ calls
    def _call(self, call: cst.Call, depth: int) -> TensorFacts:
        names = self.names
        batch = self._batch_of(call, depth)
        if batch is not None:
            return batch
        qualified = names.qualified_name(call.func)
        if qualified is not None:
            return self._qualified_call(call, qualified, depth)
        func = call.func
        if isinstance(func, cst.Attribute):
            found = self._method(call, func.attr.value, func.value, depth)
            if found is not None:
                return found
        module = module_reason(names, func)
        if module is not None and _parameterless_loss(module.built_from):
            # A torch.nn loss holds no parameters: its output requires grad only where an
            # input does (measured on torch 2.13: `nn.CrossEntropyLoss()(torch.randn(2, 3),
            # torch.tensor([0, 1]))` has `requires_grad` False and no `grad_fn`).
            inputs = [self._operand(arg.value, depth) for arg in call.args if not arg.star]
            grad = self._computed(call, _any((f.requires_grad for f in inputs),
                                             _UNKNOWN_FACTS.requires_grad))
            return TensorFacts(grad, _any((f.accelerator for f in inputs),
                                          _UNKNOWN_FACTS.accelerator), _no("a loss value"))
        if module is not None:
            if self._grad_off(call) is not None:
                grad = _no(f"output of a module computed {self._grad_off(call)}")
            else:
                grad = _yes(f"output of a module ({module.reason}) with autograd on")
            return TensorFacts(grad, self._module_device("on the device of the module's parameters"),
                               _unknown("a module's output"))
        local = self._local_function(func)
        if local is not None:
            returned = self._returns(local, depth)
            if returned is not None:
                grad = returned.requires_grad if returned.leaf else self._computed(
                    call, returned.requires_grad)
                return TensorFacts(grad, returned.accelerator, returned.integer, returned.leaf)
        return TensorFacts(self._computed(call, _unknown("result of a call the analysis does "
                                                         "not follow")),
                           _unknown("result of a call the analysis does not follow"),
                           _unknown("result of a call the analysis does not follow"))

    def _qualified_call(self, call: cst.Call, qualified: str, depth: int) -> TensorFacts:
        if not qualified.startswith("torch."):
            if qualified.startswith(("numpy.", "math.", "random.")):
                return _PLAIN
            returned = self.names.project.returns(qualified)
            if returned is not None and returned.kind in ("detached-cpu-tensor", "cpu-tensor"):
                grad = (_no(returned.reason) if returned.kind == "detached-cpu-tensor" else
                        self._computed(call, _unknown(returned.reason)))
                return TensorFacts(grad, _no(returned.reason), _unknown(returned.reason))
            return TensorFacts(self._computed(call, _unknown(f"result of `{qualified}`")),
                               _unknown(f"result of `{qualified}`"),
                               _unknown(f"result of `{qualified}`"))
        rest = qualified[len("torch."):]
        if qualified == "torch.from_numpy":
            return TensorFacts(_no("`torch.from_numpy` makes a tensor without grad"),
                               _no("`torch.from_numpy` makes a CPU tensor"),
                               _unknown("the numpy array's dtype"))
        if qualified in VARIABLE_CLASSES:
            return self._variable(call, depth)
        if qualified in PARAMETER_CLASSES:
            inner = self._first_tensor_argument(call, depth)
            return TensorFacts(_yes("an `nn.Parameter`"), inner.accelerator, inner.integer,
                               leaf=True)
        if rest in FACTORY_INTEGER_RESULT:
            return self._factory(call, qualified, rest, depth)
        if rest in _INTEGER_RESULTS or (rest.startswith("nn.functional.") and
                                        rest[len("nn.functional."):] in _INTEGER_RESULTS):
            source = self._first_tensor_argument(call, depth)
            return TensorFacts(_no(f"integer-typed (`{qualified}`): autograd never tracks it"),
                               source.accelerator, _yes(f"result of `{qualified}`"))
        if qualified in DATA_CONVERSIONS:
            source = self._first_tensor_argument(call, depth)
            return self._derived(call, source)
        if "." in rest and not rest.startswith(("nn.functional.", "linalg.", "fft.", "special.")):
            return _UNKNOWN_FACTS
        if rest.rsplit(".", 1)[-1] in _ONE_TENSOR_ARGUMENT and rest.count(".") in (0, 2):
            return self._derived(call, self._first_tensor_argument(call, depth),
                                 integer=_unknown(f"result of `{qualified}`"))
        facts = [self._argument(arg.value, depth) for arg in call.args
                 if arg.keyword is None or arg.keyword.value not in ("dim", "out", "dtype")]
        if not facts:
            return _UNKNOWN_FACTS
        grad = self._computed(call, _any((f.requires_grad for f in facts),
                                         _UNKNOWN_FACTS.requires_grad))
        integer = _unknown(f"result of `{qualified}`")
        if rest in ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "where"):
            integer = _all_yes((f.integer for f in facts), integer)
        return TensorFacts(grad, _any((f.accelerator for f in facts), _UNKNOWN_FACTS.accelerator),
                           integer)

    def _variable(self, call: cst.Call, depth: int) -> TensorFacts:
        """``Variable(x)`` is ``x.detach()`` (measured on torch 2.13: a new tensor sharing the
        storage, ``requires_grad`` False), a leaf requiring grad with ``requires_grad=True``
        (unknown for a flag that is not a literal)."""
        inner = self._first_tensor_argument(call, depth)
        flag = next((arg.value for arg in call.args
                     if arg.keyword is not None and arg.keyword.value == "requires_grad"), None)
        if flag is None or literal_bool(flag) is False:
            return TensorFacts(_no("`Variable(x)` returns `x.detach()`"), inner.accelerator,
                               inner.integer)
        if literal_bool(flag) is True:
            return TensorFacts(_yes("`Variable(..., requires_grad=True)`"), inner.accelerator,
                               inner.integer, leaf=True)
        return TensorFacts(_unknown("`Variable` with a runtime `requires_grad` flag"),
                           inner.accelerator, inner.integer)

    def _argument(self, expr: cst.BaseExpression, depth: int) -> TensorFacts:
        """An argument of a torch function: a list of tensors counts by its items."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return _join([self._operand(e.value, depth) for e in expr.elements])
        elements = self._list_elements(expr, depth)
        if elements is not None:
            return elements
        return self._operand(expr, depth)

    def _first_tensor_argument(self, call: cst.Call, depth: int) -> TensorFacts:
        for arg in call.args:
            if arg.keyword is None and not arg.star:
                return self._operand(arg.value, depth)
        return _UNKNOWN_FACTS

    def _factory(self, call: cst.Call, qualified: str, name: str, depth: int) -> TensorFacts:
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        like = FACTORY_INTEGER_RESULT[name] == "like"
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        data = positional[0] if positional else None
        if name in LEGACY_CONSTRUCTORS and len(positional) > 1 and \
                not any(a.star for a in call.args):
            # `torch.FloatTensor(batch, z)`: two or more positional arguments are sizes (a
            # tensor and a size raise `TypeError`, measured on torch 2.13): a fresh tensor.
            data = None
        source = None
        if data is not None and (like or name == "tensor" or name in LEGACY_CONSTRUCTORS) and \
                not provenance(self.names, data).is_not_tensor:
            source = self._operand(data, depth)  # a copy of a tensor keeps its device
            if name in LEGACY_CONSTRUCTORS:
                # `torch.Tensor(t)` returns `t` itself (measured: its grad and device too).
                return source
        leaf = False
        requested = keywords.get("requires_grad")
        if requested is None or literal_bool(requested) is False:
            grad = _no(f"made by `{qualified}` without `requires_grad=True`")
        elif literal_bool(requested) is True:
            grad, leaf = _yes(f"made by `{qualified}` with `requires_grad=True`"), True
        else:
            grad = _suspected(f"`{qualified}(..., requires_grad=...)` with a runtime flag")
        device = keywords.get("device")
        if device is not None:
            accelerator = self._device(device)
        elif source is not None:
            accelerator = source.accelerator
        elif self._default_device_changed():
            accelerator = _suspected("the file changes the default device")
        else:
            accelerator = _no(f"made by `{qualified}` without `device=` (on the CPU)")
        dtype = keywords.get("dtype")
        integer = self._dtype_integer(dtype) if dtype is not None else None
        if integer is None:
            default = FACTORY_INTEGER_RESULT[name]
            if like and source is not None:
                integer = source.integer
            elif default == "yes":
                integer = _yes(f"made by `{qualified}`")
            elif default == "no":
                integer = _no(f"made by `{qualified}` (a float tensor)")
            elif name == "arange" and call.args and all(
                    isinstance(a.value, cst.Integer) for a in call.args if a.keyword is None):
                integer = _yes("`torch.arange` of integers")
            else:
                integer = _unknown(f"the dtype of `{qualified}`'s result")
        return TensorFacts(grad, accelerator, integer, leaf)

    def _device(self, device: cst.BaseExpression) -> Fact:
        text = self._device_literal(device)
        if text is None:
            return _suspected("made on a device chosen at run time")
        if text.split(":")[0] == _CPU:
            return _no(f"on `{text}`")
        if text.split(":")[0] in _ACCELERATORS:
            return _yes(f"on `{text}`")
        return _suspected(f"on `{text}`")

    def _device_literal(self, device: cst.BaseExpression, depth: int = 0) -> str | None:
        """``"cpu"``, ``"cuda:0"``, ``torch.device("cpu")``, or a name bound once to one of
        these, or ``self.<attr>`` that the class's methods assign exactly once, to one of these
        (detectron2's evaluators: ``self._cpu_device = torch.device("cpu")``): the device as
        written, else None."""
        if isinstance(device, cst.SimpleString):
            value = device.evaluated_value
            return value if isinstance(value, str) else None
        if isinstance(device, cst.Call) and \
                self.names.qualified_name(device.func) == "torch.device" and device.args:
            return self._device_literal(device.args[0].value, depth + 1)
        if isinstance(device, cst.Name) and depth < 3:
            bindings = reaching_bindings(self.names, device)
            if len(bindings) == 1 and bindings[0].kind == "assign" and \
                    bindings[0].value is not None:
                return self._device_literal(bindings[0].value, depth + 1)
        if isinstance(device, cst.Attribute) and isinstance(device.value, cst.Name) and \
                device.value.value == "self" and depth < 3:
            values = [value for owner in self._class_and_local_bases(device)
                      for method in owner.body.body if isinstance(method, cst.FunctionDef)
                      for value in self_assignments(method, device.attr.value)]
            if len(values) == 1 and values[0] is not None:
                return self._device_literal(values[0], depth + 1)
        return None

    def _class_and_local_bases(self, node: cst.CSTNode) -> list[cst.ClassDef]:
        """The class around ``node`` and its bases defined in this file, transitively."""
        owner = self.names.enclosing(node, cst.ClassDef)
        found: list[cst.ClassDef] = []
        pending = [owner] if owner is not None else []
        while pending and len(found) < 8:
            current = pending.pop()
            if any(current is seen for seen in found):
                continue
            found.append(current)
            for base in current.bases:
                if isinstance(base.value, cst.Name):
                    binding = self.names.binding_of(base.value)
                    if binding is not None and isinstance(binding.node, cst.ClassDef):
                        pending.append(binding.node)
        return found

    def _dtype_integer(self, dtype: cst.BaseExpression) -> Fact | None:
        qualified = self.names.qualified_name(dtype) or ""
        if not qualified.startswith("torch."):
            return None
        short = qualified[len("torch."):]
        if short in _INTEGER_DTYPES:
            return _yes(f"dtype `{qualified}`")
        if short in _FLOAT_DTYPES:
            return _no(f"dtype `{qualified}`")
        return None

    def _module_device(self, reason: str) -> Fact:
        """Where a module of this file keeps its parameters: suspected to be an accelerator,
        unless the file places nothing anywhere (torch makes parameters on the CPU, and
        nothing here moves them)."""
        if self._places_nothing():
            return _no("the file places nothing on an accelerator (torch makes tensors and "
                       "parameters on the CPU)")
        return _suspected(reason)

    def _places_nothing(self) -> bool:
        """The file is a program (it has a ``__main__`` block) that builds its own objects and
        keeps them on the CPU: it imports only the standard library and
        :data:`LIBRARIES_THAT_PLACE_NOTHING` (no module of its own project, which could hand
        it a model moved elsewhere), never names a device, an accelerator, a placement method
        (``.cuda()``, ``.to(...)``), a ``load`` or a device keyword, and no string mentions
        ``cuda``/``mps``/``xpu`` (docstrings do not count): minimalRL's scripts. Only ever
        removes a suspicion, so a wrong answer can cost a finding, never a fix."""
        if _PLACES_NOTHING in self.names.memo:
            return self.names.memo[_PLACES_NOTHING]
        module = self.names.module_scope.node if self.names.module_scope is not None else None
        stack: list[cst.CSTNode] = [module] if isinstance(module, cst.Module) and \
            has_main_guard(module) else []
        nothing = bool(stack)
        while stack and nothing:
            node = stack.pop()
            if isinstance(node, cst.Expr) and isinstance(node.value, (cst.SimpleString,
                                                                       cst.ConcatenatedString)):
                continue  # a docstring: prose, not a device
            if isinstance(node, cst.Name):
                nothing = node.value not in _PLACEMENT_WORDS
            elif isinstance(node, cst.SimpleString):
                text = node.value.lower()
                nothing = not any(word in text for word in ("cuda", "mps", "xpu"))
            elif isinstance(node, cst.ImportFrom):
                nothing = not node.relative and node.module is not None and \
                    _places_nothing_package(dotted_name(node.module))
                if nothing and not isinstance(node.names, cst.ImportStar):
                    continue  # the imported names are not reads
            elif isinstance(node, cst.Import):
                nothing = all(_places_nothing_package(dotted_name(alias.name))
                              for alias in node.names)
                continue
            elif isinstance(node, (cst.FormattedString, cst.ConcatenatedString)):
                nothing = "cuda" not in cst.Module([]).code_for_node(node).lower()
            stack.extend(children(node))
        self.names.memo[_PLACES_NOTHING] = nothing
        return nothing

    def _default_device_changed(self) -> bool:
        if _DEFAULT_DEVICE in self.names.memo:
            return self.names.memo[_DEFAULT_DEVICE]
        changed = False
        for scope in self.names.all_scopes:
            for reads in scope.loads.values():
                for read in reads:
                    parent = self.names.parent(read)
                    while isinstance(parent, cst.Attribute):
                        parent = self.names.parent(parent)
                    if isinstance(parent, cst.Call) and \
                            self.names.qualified_name(parent.func) in DEFAULT_DEVICE_SETTERS:
                        if self.names.qualified_name(parent.func) != "torch.device" or \
                                isinstance(self.names.parent(parent), cst.WithItem):
                            changed = True
        self.names.memo[_DEFAULT_DEVICE] = changed
        return changed

    def _method(self, call: cst.Call, method: str, receiver: cst.BaseExpression,
                depth: int) -> TensorFacts | None:
        if method in ("numpy", "item", "tolist", "size", "dim", "numel", "state_dict", "keys",
                      "items", "values", "parameters", "modules", "children"):
            return _PLAIN if method in ("numpy", "item", "tolist", "size", "dim", "numel") \
                else _UNKNOWN_FACTS
        if method in ("sample", "rsample") and self._is_distribution(receiver, depth):
            if method == "rsample":
                grad = self._computed(call, _yes("`Distribution.rsample()` keeps the graph"))
            else:
                grad = _no("`Distribution.sample()` runs without grad")
            return TensorFacts(grad, self._module_device("on the distribution's device"),
                               _unknown("the distribution's dtype"))
        if module_reason(self.names, receiver) is not None:
            return None
        source = self.of(receiver, depth)
        if method == "detach":
            return TensorFacts(_no("`.detach()`"), source.accelerator, source.integer)
        if method == "cpu":
            return self._derived(call, source, accelerator=_no("`.cpu()`"))
        if method == "cuda":
            return self._derived(call, source, accelerator=_yes("`.cuda()`"))
        if method == "to":
            return self._to(call, source)
        if method in ("type", "type_as") and len(call.args) == 1 and call.args[0].keyword is None:
            target = call.args[0].value
            integer = (self._dtype_integer(target) if method == "type"
                       else self._operand(target, depth).integer)
            if integer is not None:
                return self._derived(call, source, integer=integer)
            if method == "type":
                # A type the code picks at run time (`dtype = torch.cuda.FloatTensor if cuda
                # else torch.FloatTensor`): dtype and device unknown, but the cast of a tensor
                # without grad has none (measured, docs/measurements/values_without_history).
                chosen = _unknown("the type `.type()` casts to")
                return self._derived(call, source, accelerator=chosen, integer=chosen)
        if method in INTEGER_CASTS:
            return self._derived(call, source, integer=_yes(f"`.{method}()`"))
        if method in FLOAT_CASTS | COMPLEX_CASTS:
            return self._derived(call, source, integer=_no(f"`.{method}()`"))
        if method in _INTEGER_RESULTS:
            return self._derived(call, source, integer=_yes(f"`.{method}()`"))
        if method == "requires_grad_":
            flag = call.args[0].value if call.args else None
            if flag is not None and literal_bool(flag) is False:
                return TensorFacts(_no("`.requires_grad_(False)`"), source.accelerator,
                                   source.integer)
            return TensorFacts(_yes("`.requires_grad_()`"), source.accelerator, source.integer,
                               leaf=True)
        if method in FRESH_LIKE_METHODS - {"new"}:
            return TensorFacts(_no(f"made by `.{method}()` without `requires_grad=True`")
                               if not any(a.keyword and a.keyword.value == "requires_grad"
                                          for a in call.args)
                               else _unknown("`requires_grad=` given"),
                               source.accelerator, source.integer)
        if method in _KEEPS_ALL:
            return self._derived(call, source)
        if method in _INDEX_PAIRS:
            return self._derived(call, source, integer=_unknown(f"`.{method}()`"))
        if provenance(self.names, receiver).is_tensor or source is not _UNKNOWN_FACTS:
            arguments = [self._operand(a.value, depth) for a in call.args
                         if a.keyword is None and not a.star]
            grad = self._computed(call, _any([source.requires_grad,
                                              *(f.requires_grad for f in arguments)],
                                             source.requires_grad))
            return TensorFacts(grad, _any([source.accelerator,
                                           *(f.accelerator for f in arguments)],
                                          source.accelerator),
                               _unknown(f"result of `.{method}()`"))
        return None

    def _to(self, call: cst.Call, source: TensorFacts) -> TensorFacts:
        accelerator: Fact | None = None
        integer: Fact | None = None
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in ("non_blocking", "copy", "memory_format"):
                continue
            if keyword == "dtype" or (keyword is None and self._dtype_integer(arg.value)):
                integer = self._dtype_integer(arg.value) or integer
                continue
            if keyword in (None, "device") and accelerator is None:
                text = self._device_literal(arg.value)
                if text is not None:
                    accelerator = self._device(arg.value)
                elif keyword is None and isinstance(arg.value, cst.Name) and \
                        provenance(self.names, arg.value).is_tensor:
                    accelerator = self.of(arg.value, 0).accelerator
                else:
                    accelerator = _suspected(f"moved with `.to({dotted_name(arg.value) or '...'})`")
        return self._derived(call, source, accelerator=accelerator, integer=integer)

    def _is_distribution(self, receiver: cst.BaseExpression, depth: int) -> bool:
        if isinstance(receiver, cst.Call):
            return (self.names.qualified_name(receiver.func) or "").startswith(
                "torch.distributions.")
        if isinstance(receiver, cst.Name) and depth < _MAX_DEPTH:
            bindings = reaching_bindings(self.names, receiver)
            return bool(bindings) and all(
                b.kind == "assign" and b.value is not None and
                self._is_distribution(b.value, depth + 1) for b in bindings)
        return False

    # ------------------------------------------------------------ functions of this file
    def _local_function(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        if isinstance(func, cst.Name):
            binding = self.names.binding_of(func)
            if binding is not None and binding.kind == "def" and \
                    isinstance(binding.node, cst.FunctionDef):
                return binding.node
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == "self":
            owner = self.names.enclosing(func, cst.ClassDef)
            if owner is None:
                return None
            found = [s for s in owner.body.body
                     if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value]
            return found[0] if len(found) == 1 else None
        return None

    def _returns(self, function: cst.FunctionDef, depth: int) -> TensorFacts | None:
        """The join of what ``function`` returns (None when it yields or returns nothing)."""
        values = []
        for node in walk_local(function.body):
            if isinstance(node, (cst.Yield, cst.Await)):
                return None
            if isinstance(node, cst.Return) and node.value is not None:
                values.append(node.value)
        if not values:
            return None
        return _join([self.of(value, depth) for value in values])

    # ------------------------------------------------------------ names
    def _name(self, name: cst.Name, depth: int) -> TensorFacts:
        guarded = self._requires_grad_guard(name)
        bindings = reaching_bindings(self.names, name)
        if not bindings:
            facts = _UNKNOWN_FACTS
        else:
            facts = _join([self._binding(binding, name, depth) for binding in bindings])
        if guarded is not None:
            return TensorFacts(guarded, facts.accelerator, facts.integer, facts.leaf)
        if facts.requires_grad.is_no and facts.integer.answer != "yes":
            # An integer tensor cannot require grad whatever is written into it (measured on
            # torch 2.13: `x = torch.zeros(3).long(); x[0:1] = w * 2` with `w` requiring grad
            # leaves `x.requires_grad` False and no `grad_fn`).
            written = self._written_in_place(name, depth)
            if written is not None:
                return TensorFacts(written, facts.accelerator, facts.integer)
        return facts

    def _binding(self, binding: Binding, name: cst.Name, depth: int) -> TensorFacts:
        kind = binding.kind
        if kind in ("assign", "annassign", "walrus"):
            if binding.value is not None:
                return self.of(binding.value, depth)
            return self._unpacked(binding, name, depth)
        if kind == "augassign" and binding.value is not None:
            return self._operand(binding.value, depth)
        if kind == "for":
            return self._loop_target(binding, name, depth)
        if kind == "param":
            return self._parameter(binding, depth)
        return _UNKNOWN_FACTS

    def _parameter(self, binding: Binding, depth: int) -> TensorFacts:
        """A parameter of a module-level function: it requires no grad when every call of
        the function in this file passes a value that requires none (vinhkhuc's
        ``predict(model, teX)`` with ``teX = torch.from_numpy(...).float()``). Only that
        answer is carried over; device and dtype stay unknown."""
        function = self.names.enclosing(binding.node, cst.FunctionDef)
        if function is None or any(p.name.value == binding.name and p.default is not None
                                   for p in function.params.params):
            return _UNKNOWN_FACTS
        calls = calls_of_function(self.names, function)
        if not calls:
            return self._method_parameter(binding, function)
        if self.hops >= _MAX_HOPS:
            return _UNKNOWN_FACTS
        # What the calls pass is asked with its own budget and answers, as if asked directly:
        # answers are remembered per expression for the module, and one cut short by this
        # longer chain would stay wrong for every later question (a `length.data` read whose
        # callers pass a `Variable` of a LongTensor was taken for a tensor with history).
        inner = _Values(self.names, self.decorators, hops=self.hops + 1)
        passed = []
        for call in calls:
            bound = [arg for arg in call.args
                     if parameter_bound_by(function, call, arg) == binding.name]
            if len(bound) != 1 or any(arg.star == "*" for arg in
                                      call.args[:call.args.index(bound[0])]):
                return _UNKNOWN_FACTS  # (a `*args` after it binds later parameters only)
            passed.append(inner.of(bound[0].value, _HOP_START))
        return _passed_without_grad(function, passed)

    def _method_parameter(self, binding: Binding, function: cst.FunctionDef) -> TensorFacts:
        """A parameter of a method every call of which, through ``self`` in its class, passes
        a value that requires no grad (wgan-gp's ``self._gradient_penalty(data, ...)`` with
        ``data`` a loader batch): the calls tensor provenance follows there
        (:func:`.modules.passed_in_file`), so a `.data` it proves a tensor is also known to
        hide nothing."""
        values = passed_in_file(self.names, binding) \
            if isinstance(self.names.parent(self.names.parent(function) or function),
                          cst.ClassDef) else None
        if not values or self.hops >= _MAX_HOPS:
            return _UNKNOWN_FACTS
        inner = _Values(self.names, self.decorators, hops=self.hops + 1)
        passed = [inner.of(value, _HOP_START) for value in values]
        return _passed_without_grad(function, passed)

    def _unpacked(self, binding: Binding, name: cst.Name, depth: int) -> TensorFacts:
        """``values, indices = torch.max(x, 1)``, ``x, y = next(iter(loader))``, ``a, b = c, d``."""
        node = binding.node
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            return _UNKNOWN_FACTS
        target, value = node.targets[0].target, node.value
        position = unpack_position(target, name)
        if position is None:
            return _UNKNOWN_FACTS
        if isinstance(value, cst.Tuple) and isinstance(target, (cst.Tuple, cst.List)) and \
                position < len(value.elements):
            return self.of(value.elements[position].value, depth)
        pair = self._index_pair(value, depth)
        if pair is not None:
            return pair[position] if position < 2 else _UNKNOWN_FACTS
        batch = self._batch_of(value, depth)
        if batch is not None:
            return batch
        return TensorFacts(self._computed(value, _unknown("unpacked from a call's result")),
                           _unknown("unpacked from a call's result"),
                           _unknown("unpacked from a call's result"))

    def _index_pair(self, value: cst.BaseExpression,
                    depth: int) -> tuple[TensorFacts, TensorFacts] | None:
        """(values, indices) facts of ``torch.max(x, 1)``, ``x.topk(k)``..."""
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        qualified = self.names.qualified_name(func)
        if qualified is not None:
            if not (qualified.startswith("torch.") and qualified[6:] in _INDEX_PAIRS):
                return None
            arguments = [a for a in value.args if a.keyword is None]
            if not arguments or not self._along_dim(qualified[6:], value.args[1:]):
                return None  # a full reduction or an elementwise max: one tensor, not a pair
            source = self._operand(arguments[0].value, depth)
            what = qualified
        elif isinstance(func, cst.Attribute) and func.attr.value in _INDEX_PAIRS:
            if not self._along_dim(func.attr.value, value.args):
                return None
            source = self.of(func.value, depth)
            what = f".{func.attr.value}()"
        else:
            return None
        values = self._derived(value, source)
        indices = TensorFacts(_no(f"integer indices of `{what}`: autograd never tracks them"),
                              source.accelerator, _yes(f"indices of `{what}`"))
        return values, indices

    def _along_dim(self, function: str, arguments: Sequence[cst.Arg]) -> bool:
        """Whether ``max``/``min``/``median`` get a dimension (a pair result), not a tensor."""
        if function not in ("max", "min", "median", "nanmedian"):
            return True
        for arg in arguments:
            if arg.keyword is not None:
                if arg.keyword.value == "dim":
                    return True
                continue
            value = arg.value
            if isinstance(value, cst.UnaryOperation):
                value = value.expression
            return isinstance(value, cst.Integer) or (
                provenance(self.names, value).is_not_tensor)
        return False

    def _loop_target(self, binding: Binding, name: cst.Name, depth: int) -> TensorFacts:
        node = binding.node
        if not isinstance(node, cst.For):
            return _UNKNOWN_FACTS
        iterator, target = node.iter, node.target
        if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Name) and \
                iterator.func.value == "enumerate" and iterator.args and \
                isinstance(target, cst.Tuple) and len(target.elements) == 2:
            if unpack_position(target.elements[0].value, name) is not None:
                return _PLAIN  # the counter
            iterator = iterator.args[0].value
        iterator = _unwrap_progress(iterator)
        batch = self._batch_of(iterator, depth, iterated=True)
        if batch is not None:
            return batch
        if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute) and \
                iterator.func.attr.value == "named_parameters" and \
                isinstance(target, cst.Tuple) and len(target.elements) == 2 and \
                unpack_position(target.elements[1].value, name) is not None:
            return TensorFacts(_yes("a parameter (loop over `.named_parameters()`)"),
                               self._module_device("on the module's device"), _no("a parameter"),
                               leaf=True)
        if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute) and \
                iterator.func.attr.value in ("parameters", "buffers"):
            if iterator.func.attr.value == "parameters":
                return TensorFacts(_yes("a parameter (loop over `.parameters()`)"),
                                   self._module_device("on the module's device"), _no("a parameter"),
                                   leaf=True)
        if isinstance(target, cst.Name):
            elements = self._list_elements(iterator, depth)
            if elements is not None:
                return elements
        return _UNKNOWN_FACTS

    # ------------------------------------------------------------ DataLoader batches
    def _batch_of(self, expr: cst.BaseExpression, depth: int,
                  iterated: bool = False) -> TensorFacts | None:
        """Facts of a batch: ``next(iter(loader))``, ``next(it)``, ``it.next()``, or (with
        ``iterated``) the loader itself."""
        if iterated:
            return self._loader_batch(expr, depth)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and \
                expr.func.value == "next" and expr.args:
            return self._iterator_batch(expr.args[0].value, depth)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in ("next", "__next__") and not expr.args:
            return self._iterator_batch(expr.func.value, depth)
        return None

    def _iterator_batch(self, expr: cst.BaseExpression, depth: int) -> TensorFacts | None:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and \
                expr.func.value == "iter" and expr.args:
            return self._loader_batch(expr.args[0].value, depth)
        if isinstance(expr, cst.Name) and depth < _MAX_DEPTH:
            batches = []
            for binding in reaching_bindings(self.names, expr):
                if binding.kind != "assign" or binding.value is None:
                    return None
                batch = self._iterator_batch(binding.value, depth + 1)
                if batch is None:
                    return None
                batches.append(batch)
            return _join(batches) if batches else None
        return None

    def _constructed(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The call that built ``expr``: itself, or the one value a name is bound to."""
        if isinstance(expr, cst.Name):
            bindings = reaching_bindings(self.names, expr)
            if len(bindings) != 1 or bindings[0].kind != "assign":
                return None
            expr = bindings[0].value  # type: ignore[assignment]
        return expr if isinstance(expr, cst.Call) else None

    def _loader_batch(self, expr: cst.BaseExpression, depth: int) -> TensorFacts | None:
        """Batches of ``torch.utils.data.DataLoader(...)`` (or a name bound to one; several
        reaching bindings, each a loader: DeNA/PyTorch_YOLOv3 rebuilds its loader at a new
        image size inside the training loop), or an item of a dict literal of loaders
        (``loaders[phase]`` with ``loaders = {'train': train_loader, 'val': val_loader}``)."""
        if isinstance(expr, cst.Subscript) and depth < _MAX_DEPTH:
            values = self._dict_literal_values(expr.value)
            if not values:
                return None
            items = [self._loader_batch(value, depth + 1) for value in values]
            return None if any(b is None for b in items) else _join(items)  # type: ignore[arg-type]
        if isinstance(expr, cst.Name) and depth < _MAX_DEPTH:
            bindings = reaching_bindings(self.names, expr)
            if len(bindings) > 1:
                batches = []
                for binding in bindings:
                    if binding.kind != "assign" or binding.value is None:
                        return None
                    batch = self._loader_batch(binding.value, depth + 1)
                    if batch is None:
                        return None
                    batches.append(batch)
                return _join(batches)
        construct = self._constructed(expr)
        if construct is None:
            return None
        qualified = self.names.qualified_name(construct.func) or ""
        if not (qualified.startswith("torch.utils.data") and qualified.endswith("DataLoader")):
            return None
        keywords = {a.keyword.value: a.value for a in construct.args if a.keyword is not None}
        if "collate_fn" in keywords:
            return None  # a custom collate may move or build anything
        dataset = keywords.get("dataset") or (construct.args[0].value if construct.args and
                                              construct.args[0].keyword is None else None)
        if dataset is not None:
            contents = self._tensor_dataset(dataset, depth)
            if contents is not None:
                return contents
            if self._dataset_moves_items(dataset):
                return None
        reason = "a DataLoader batch (collated on the CPU, without grad)"
        return TensorFacts(_no(reason), _no(reason), _unknown("the dataset's dtype"))

    def _dict_literal_values(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The values of the dict literal ``expr`` names, when that is its only binding and
        no code of its scope stores into it (``d[k] = ...``, ``d.update(...)``); else []."""
        if not isinstance(expr, cst.Name):
            return []
        found = self.names.lookup(expr.value, self.names.scope_of(expr))
        if found is None:
            return []
        scope, bindings = found
        if len(bindings) != 1 or bindings[0].kind != "assign" or \
                not isinstance(bindings[0].value, cst.Dict):
            return []
        elements = bindings[0].value.elements
        if not all(isinstance(e, cst.DictElement) for e in elements):
            return []  # a `**other` spreads values not written here
        for read in self.names.loads_in(scope, expr.value):
            parent = self.names.parent(read)
            if isinstance(parent, cst.Subscript) and parent.value is read and \
                    isinstance(self.names.parent(parent), (cst.AssignTarget, cst.Del)):
                return []
            if isinstance(parent, cst.Attribute) and parent.value is read and \
                    parent.attr.value in ("update", "setdefault", "__setitem__"):
                return []
        return [e.value for e in elements]

    def _tensor_dataset(self, dataset: cst.BaseExpression, depth: int) -> TensorFacts | None:
        """The tensors a ``TensorDataset(a, b)`` hands out (None for other datasets)."""
        construct = self._constructed(dataset)
        if construct is not None and (self.names.qualified_name(construct.func) or "") \
                .endswith("TensorDataset"):
            return _join([self.of(a.value, depth) for a in construct.args])
        return None

    def _dataset_moves_items(self, dataset: cst.BaseExpression) -> bool:
        """A dataset class of this file whose ``__getitem__`` moves or builds tensors on a
        device (``.cuda()``, ``.to(...)``, ``device=``): its batches may live anywhere."""
        construct = self._constructed(dataset)
        if construct is None or not isinstance(construct.func, cst.Name):
            return False
        binding = self.names.binding_of(construct.func)
        if binding is None or not isinstance(binding.node, cst.ClassDef):
            return False
        for statement in binding.node.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == "__getitem__":
                for node in walk_local(statement.body):
                    if isinstance(node, cst.Attribute) and node.attr.value in ("cuda", "to"):
                        return True
                    if isinstance(node, cst.Arg) and node.keyword is not None and \
                            node.keyword.value == "device":
                        return True
        return False

    # ------------------------------------------------------------ lists
    def _list_elements(self, expr: cst.BaseExpression, depth: int) -> TensorFacts | None:
        """Facts of the items of a list filled by ``append``/``extend`` in this scope."""
        if not isinstance(expr, cst.Name):
            return None
        found = self.names.lookup(expr.value, self.names.scope_of(expr))
        if found is None:
            return None
        scope, bindings = found
        if not all(b.kind == "assign" and isinstance(b.value, cst.List) for b in bindings):
            return None
        items: list[cst.BaseExpression] = []
        for binding in bindings:
            assert isinstance(binding.value, cst.List)
            items += [e.value for e in binding.value.elements]
        for read in self.names.loads_in(scope, expr.value):
            parent = self.names.parent(read)
            if isinstance(parent, cst.Attribute) and parent.value is read:
                call = self.names.parent(parent)
                if not (isinstance(call, cst.Call) and call.func is parent):
                    return None
                if parent.attr.value == "append" and len(call.args) == 1:
                    items.append(call.args[0].value)
                    continue
                if parent.attr.value == "extend" and len(call.args) == 1 and \
                        isinstance(call.args[0].value, (cst.List, cst.Tuple)):
                    items += [e.value for e in call.args[0].value.elements]
                    continue
                if parent.attr.value in ("clear", "reverse", "sort"):
                    continue
                return None
            if not _reads_items(self.names, read):
                return None
        if not items:
            return None
        return _join([self.of(item, depth) for item in items])

    # ------------------------------------------------------------ attributes, subscripts
    def _attribute(self, expr: cst.Attribute, depth: int) -> TensorFacts:
        attr = expr.attr.value
        if self.names.qualified_name(expr) is not None:
            return _UNKNOWN_FACTS
        module = module_reason(self.names, expr.value) if (
            attr in ("weight", "bias") or RECURRENT_PARAMETER_PREFIX.match(attr)) else None
        if module is not None and is_module_parameter(attr, module.built_from):
            return TensorFacts(_yes(f"a parameter (`.{attr}` of a module)"),
                               self._module_device("on the module's device"), _no("a parameter"), leaf=True)
        if attr == "data":
            source = self.of(expr.value, depth)
            return TensorFacts(_no("`.data` (detached)"), source.accelerator, source.integer)
        if attr == "grad" and provenance(self.names, expr).is_tensor:
            source = self.of(expr.value, depth)
            if _builds_higher_order_graph(self.names):
                grad = _unknown("a gradient, in a file that calls `backward(create_graph=True)`")
            else:
                grad = _no("a gradient: `backward()` fills `.grad` without history")
            return TensorFacts(grad, source.accelerator, _no("a gradient"))
        if attr in ("T", "mT", "H", "mH", "real", "imag"):
            return self._derived(expr, self.of(expr.value, depth))
        if attr in ("indices", "values"):
            pair = self._index_pair(expr.value, depth)
            if pair is not None:
                return pair[1] if attr == "indices" else pair[0]
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            buffer = self._registered_buffer(expr, attr, depth)
            if buffer is not None:
                return buffer
        return _UNKNOWN_FACTS

    def _registered_buffer(self, expr: cst.Attribute, attr: str, depth: int
                           ) -> TensorFacts | None:
        """``self.pe`` where the class (with its bases in this file) binds ``pe`` only by
        ``self.register_buffer("pe", value)`` and never writes it (no ``self.pe = ...``, no
        ``self.pe[...] = ...``, no in-place method): the buffer is that value, so its grad
        facts are the value's where it is registered (a positional-encoding table built from
        ``torch.zeros``/``arange``/numpy has no history). It moves with the module, so its
        device is the module's."""
        classes = self._class_and_local_bases(expr)
        if not classes:
            return None
        registered: list[cst.BaseExpression] = []
        for cls in classes:
            for node in _walk(cls.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        node.func.attr.value == "register_buffer" and \
                        _is_self(node.func.value) and len(node.args) >= 2:
                    key = node.args[0].value
                    if isinstance(key, cst.SimpleString) and key.evaluated_value == attr:
                        registered.append(node.args[1].value)
                elif isinstance(node, cst.Attribute) and node.attr.value == attr and \
                        _is_self(node.value) and _writes_self_attribute(self.names, node):
                    return None
        if not registered:
            return None
        found = _join([self.of(value, depth + 1) for value in registered])
        if not found.requires_grad.is_no:
            return None
        reason = f"a buffer registered from a value without history (`self.{attr}`)"
        return TensorFacts(_no(reason), self._module_device("a buffer, on the module's device"),
                           found.integer)

    def _subscript(self, expr: cst.Subscript, depth: int) -> TensorFacts:
        index = _literal_index(expr)
        if index is not None and index in (0, 1):
            pair = self._index_pair(expr.value, depth)
            if pair is not None:
                return pair[index]
        elements = self._list_elements(expr.value, depth)
        if elements is not None:
            return elements
        source = self.of(expr.value, depth)
        if source is _UNKNOWN_FACTS:
            return source
        return self._derived(expr, source)

    # ------------------------------------------------------------ guards and writes
    def _requires_grad_guard(self, name: cst.Name) -> Fact | None:
        """``if t.requires_grad: ... else: <here>`` (and ``a if t.requires_grad else <here>``)."""
        child: cst.CSTNode = name
        for ancestor in self.names.ancestors(name):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
                holds = _tests_requires_grad(ancestor.test, name.value)
                if holds is not None:
                    in_body = child is ancestor.body
                    if holds == in_body:
                        return _yes(f"guarded by a `{name.value}.requires_grad` test")
                    return _no(f"guarded by a `{name.value}.requires_grad` test")
            child = ancestor
        return None

    def _written_in_place(self, name: cst.Name, depth: int) -> Fact | None:
        """The grad of what is written into ``name``'s tensor in place, when anything is."""
        found = self.names.lookup(name.value, self.names.scope_of(name))
        if found is None:
            return None
        scope = found[0]
        written: list[Fact] = []
        for read in self.names.loads_in(scope, name.value):
            value = self._write_through(read)
            if value is None:
                continue
            if isinstance(value, Fact):
                return value
            written.append(self._computed(value, self._operand(value, depth).requires_grad))
        if not written:
            return None
        fact = _any(written, written[0])
        return None if fact.is_no else fact

    def _write_through(self, read: cst.Name) -> cst.BaseExpression | Fact | None:
        """What ``buf[i] = v`` / ``buf.copy_(v)`` writes through this read (None: no write)."""
        parent = self.names.parent(read)
        if isinstance(parent, cst.Subscript) and parent.value is read:
            holder = self.names.parent(parent)
            if isinstance(holder, cst.AssignTarget):
                statement = self.names.parent(holder)
                if isinstance(statement, cst.Assign):
                    return statement.value
            if isinstance(holder, cst.AugAssign) and holder.target is parent:
                return holder.value
            return None
        if isinstance(parent, cst.Attribute) and parent.value is read:
            holder = self.names.parent(parent)
            if parent.attr.value == "requires_grad" and isinstance(holder, cst.AssignTarget):
                return _unknown(f"`{read.value}.requires_grad` is assigned")
            if isinstance(holder, cst.Call) and holder.func is parent:
                if parent.attr.value == "requires_grad_":
                    return _yes(f"`{read.value}.requires_grad_()`")
                if parent.attr.value in _INPLACE_WRITES and holder.args:
                    return holder.args[0].value
        return None


def _is_self(expr: cst.BaseExpression) -> bool:
    """``expr`` is the name ``self``."""
    return isinstance(expr, cst.Name) and expr.value == "self"


def _writes_self_attribute(names: NameIndex, attribute: cst.Attribute) -> bool:
    """``self.x`` is assigned, written through (``self.x[i] = v``, ``self.x += v``) or changed
    by an in-place method (``self.x.mul_(m)``, ``self.x.copy_(v)``)."""
    parent = names.parent(attribute)
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign)) or (
            isinstance(parent, cst.AnnAssign) and parent.target is attribute):
        return True
    if isinstance(parent, cst.Subscript) and parent.value is attribute:
        holder = names.parent(parent)
        return isinstance(holder, (cst.AssignTarget, cst.AugAssign))
    if isinstance(parent, cst.Attribute) and parent.value is attribute:
        method = parent.attr.value
        return method.endswith("_") and not method.startswith("_") or \
            method in ("requires_grad", "data", "grad")
    return False


def _unwrap_progress(iterator: cst.BaseExpression) -> cst.BaseExpression:
    """``tqdm(loader, ...)`` -> ``loader``: progress bars yield what they wrap."""
    while isinstance(iterator, cst.Call) and iterator.args and \
            (dotted_name(iterator.func) or "").rsplit(".", 1)[-1] in ("tqdm", "track"):
        iterator = iterator.args[0].value
    return iterator


def _literal_index(expr: cst.Subscript) -> int | None:
    if len(expr.slice) != 1:
        return None
    element = expr.slice[0].slice
    if isinstance(element, cst.Index) and isinstance(element.value, cst.Integer):
        return int(element.value.value)
    return None


def _tests_requires_grad(test: cst.BaseExpression, name: str) -> bool | None:
    """True for ``name.requires_grad``, False for ``not name.requires_grad``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _tests_requires_grad(test.expression, name)
        return None if inner is None else not inner
    if isinstance(test, cst.Attribute) and test.attr.value == "requires_grad" and \
            isinstance(test.value, cst.Name) and test.value.value == name:
        return True
    return None


def _reads_items(names: NameIndex, read: cst.Name) -> bool:
    """The list is only read for its items: ``torch.cat(l)``, ``torch.stack(l)``, ``l[i]``,
    ``for x in l``, ``len(l)``."""
    parent = names.parent(read)
    if isinstance(parent, cst.Subscript) and parent.value is read:
        return not isinstance(names.parent(parent), (cst.AssignTarget, cst.Del))
    if isinstance(parent, cst.For) and parent.iter is read:
        return True
    if isinstance(parent, cst.CompFor) and parent.iter is read:
        return True
    if isinstance(parent, cst.Arg):
        call = names.parent(parent)
        if isinstance(call, cst.Call):
            callee = names.qualified_name(call.func) or dotted_name(call.func) or ""
            return callee == "len" or callee in CONCATENATIONS
    return False


def _passed_without_grad(function: cst.FunctionDef, passed: Sequence[TensorFacts]) -> TensorFacts:
    """A parameter's facts from what every call of ``function`` passes it: without grad when
    every value passed provably has none (and none is a leaf that could be made to)."""
    grad = _any((facts.requires_grad for facts in passed), _UNKNOWN_FACTS.requires_grad)
    if not grad.is_no or any(facts.leaf for facts in passed):
        return _UNKNOWN_FACTS
    return TensorFacts(_no(f"every call of `{function.name.value}` in this file passes a "
                           f"value without grad ({grad.reason})"),
                       _unknown("a parameter"), _unknown("a parameter"))
