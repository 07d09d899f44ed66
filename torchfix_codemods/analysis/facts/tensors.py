"""Is this expression a torch tensor? *tensor / not a tensor / unknown*, with a reason.

Every TFC1xx rule rewrites an expression only when it knows the receiver is a
torch tensor: a third of the ``.data`` in real code is not one
(``torch.utils.data``, ``args.data``, a dataset's ``.data``, numpy's memoryview),
and a TensorFlow tensor has ``.numpy()`` and ``.cpu()`` but no ``.detach()``.
So the answer is built from evidence only, and the reason travels to the
finding, where a reviewer sees why a fix was judged safe.

Evidence for *tensor*: results of ``torch.*`` functions and tensor methods,
outputs of ``nn.Module`` instances and losses, loop variables over
``.parameters()``, ``.weight``/``.bias`` of modules, ``.grad`` of tensors,
``nn.Parameter``, parameters annotated ``torch.Tensor`` or passed a tensor by every call
of their function in the file (none from another file), ``isinstance`` guards.
Evidence for *not a tensor*: numpy and pandas values, argparse namespaces,
datasets, module paths, ``PackedSequence``, and every value that sees an import
of TensorFlow, Keras, JAX or Paddle (at module level, or in a function or class
it is in). A name bound to a tensor in one
place and to something else (or to something unknown) in another is unknown, except where
an attribute no Python number (or None) has is read: ``x = 0`` before the loop that binds a
tensor cannot be what such a read sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import libcst as cst

from torchfix_codemods.analysis.core.callees import (
    class_of_instance,
    defined_function,
    local_function,
    methods_of,
    own_method,
    returned_items,
)
from torchfix_codemods.analysis.core.evaluation import Evaluation
from torchfix_codemods.analysis.core.evidence import Answer, Evidence
from torchfix_codemods.analysis.core.flow import reaching_bindings
from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import (
    Binding,
    NameIndex,
    dotted_name,
    paired_value,
    unpack_position,
)
from torchfix_codemods.analysis.core.walk import walk_local
from torchfix_codemods.analysis.facts.frameworks import (
    foreign_framework,
    foreign_framework_at,
    imports_package,
)
from torchfix_codemods.analysis.facts.modules import (
    ModuleEvidence,
    module_classes,
    module_evidence,
    passed_in_file,
    passed_to_apply,
)
from torchfix_codemods.analysis.facts.modules import self_assignments as method_self_assignments
from torchfix_codemods.analysis.vocabulary.tensor_methods import (
    CONVERSIONS,
    COPIES,
    DEVICE_METHODS,
    ELEMENTWISE_ARITHMETIC,
    ELEMENTWISE_UNARY,
    FRESH_LIKE_METHODS,
    LEGACY_CONSTRUCTORS,
    LIKE_FACTORIES,
    METADATA_READS,
    NUMBER_METHODS,
    SHAPE_TEMPLATE_METHODS,
    TENSOR_ONLY_METHODS,
    VIEW_METHODS,
    WHOLE_REDUCTIONS,
)
from torchfix_codemods.analysis.vocabulary.torch_api import (
    FILLED_FACTORIES,
    LITERAL_TENSOR_FUNCTIONS,
    NOT_TENSOR_FUNCTIONS,
    NOT_TENSOR_PACKAGES,
    PACKED_SEQUENCE,
    PARAMETER_CLASSES,
    TENSOR_ANNOTATIONS,
    TENSOR_CLASSES,
    TENSOR_NAMESPACES,
    VARIABLE_CLASSES,
)
from torchfix_codemods.analysis.vocabulary.torch_classes import (
    RECURRENT_PARAMETER_PREFIX,
    is_module_parameter,
)

if TYPE_CHECKING:
    from torchfix_codemods.analysis.project.scalar_returns import ScalarReturn

Kind = Literal["tensor", "not-tensor", "unknown"]
_MAX_DEPTH = 10
_MAX_HOPS = 3
_HOP_START = -2
"""The depth a value passed to a parameter (or returned) is asked about from: two steps of
budget beyond a direct question, which a rule asks of the receiver the value wraps (`out`
of `helper(out.data)`, `x` of `f(x.cpu())`), so the shared answers about what that receiver
is built from (its module, its class) are not cut shorter than the direct question cuts."""
_KINDS: dict[Answer, Kind] = {"yes": "tensor", "no": "not-tensor", "unknown": "unknown"}


@dataclass(frozen=True)
class Provenance(Evidence):
    """Is this expression a tensor (yes / no / unknown), and why."""

    numeric: bool = False
    """A Python number: arithmetic with a tensor gives a tensor."""
    literal: bool = False
    """Written as a literal (``0``, ``1.5``): ``x += 1`` keeps what ``x`` was."""

    @property
    def kind(self) -> Kind:
        return _KINDS[self.answer]

    @property
    def is_tensor(self) -> bool:
        return self.answer == "yes"

    @property
    def is_not_tensor(self) -> bool:
        return self.answer == "no"


CONTAINER_LITERAL = "a container literal"
"""Why a list, tuple, dict or set display is not a tensor: it may still hold tensors (`outs =
[]`, then `outs.append(model(x))` and `torch.cat(outs)`)."""


def _tensor(reason: str) -> Provenance:
    return Provenance("yes", reason)


def _not(reason: str, *, numeric: bool = False, literal: bool = False) -> Provenance:
    return Provenance("no", reason, numeric, literal)


def _unknown(reason: str) -> Provenance:
    return Provenance("unknown", reason)


# torch.* functions that return something other than one tensor (tuples, flags, objects).
_TORCH_NOT_TENSOR = frozenset({
    "is_tensor", "is_storage", "is_grad_enabled", "is_floating_point", "is_complex",
    "is_nonzero", "is_inference_mode_enabled", "numel", "typename", "no_grad", "enable_grad",
    "set_grad_enabled", "inference_mode", "device", "dtype", "Size", "Generator", "load",
    "save", "manual_seed", "seed", "initial_seed", "set_default_dtype", "get_default_dtype",
    "set_default_device", "set_printoptions", "set_num_threads", "get_num_threads",
    "compile", "use_deterministic_algorithms", "chunk", "split", "tensor_split", "unbind",
    "meshgrid", "broadcast_tensors", "max", "min", "sort", "topk", "kthvalue", "median",
    "mode", "aminmax", "var_mean", "std_mean", "unique", "unique_consecutive", "histogram",
    "frexp", "lu", "qr", "svd", "eig", "symeig", "slogdet", "lstsq", "where", "nonzero",
    "hsplit", "vsplit", "dsplit", "autocast", "finfo", "iinfo", "is_same_size", "equal",
    "allclose", "result_type", "promote_types", "can_cast", "cummax", "cummin",
    "sym_int", "sym_float", "get_rng_state_all",
})
# The tuple-returning ones whose items are tensors: `torch.max(x, 1)[1]` is a tensor.
_TORCH_TENSOR_TUPLES = frozenset({
    "max", "min", "sort", "topk", "kthvalue", "median", "mode", "aminmax", "var_mean",
    "std_mean", "chunk", "split", "tensor_split", "unbind", "meshgrid", "cummax", "cummin",
    "broadcast_tensors", "where", "unique", "frexp", "hsplit", "vsplit", "dsplit",
})
# Tensor methods whose result is again a tensor (an allowlist: anything else is unknown).
TENSOR_METHODS = frozenset("""
abs absolute acos add addcdiv addcmul addmm all amax amin angle any argmax argmin argsort
asin atan atan2 baddbmm bernoulli bfloat16 bitwise_and bitwise_not bitwise_or bmm bool
byte ceil char clamp clamp_max clamp_min clip clone conj contiguous cos cosh count_nonzero
cpu cross cuda cumprod cumsum deg2rad detach diag diag_embed diagonal diff digamma div
divide dot double eq erf erfinv exp expand expand_as expm1 exp2 flatten flip fliplr flipud
float floor floor_divide fmod frac gather ge gt half index_add index_copy index_fill
index_put index_select int inverse isfinite isinf isnan kron le lerp lgamma log log10
log1p log2 log_softmax logical_and logical_not logical_or logical_xor logit logsumexp long
lt masked_fill masked_scatter masked_select matmul mean mm movedim mul multiply mv
nan_to_num nanmean nansum narrow ne neg negative new_empty new_full new_ones new_tensor
new_zeros norm normal_ numpy_ outer permute pin_memory pow prod rad2deg reciprocal
relu remainder renorm repeat repeat_interleave reshape reshape_as roll rot90 round rsqrt
scatter scatter_add select sgn short sigmoid sign sin sinh slice_scatter softmax sqrt
square squeeze std sub subtract sum swapaxes t take tan tanh tile to transpose tril triu
true_divide trunc type_as unfold unsqueeze var view view_as where xlogy zero_ fill_
add_ sub_ mul_ div_ copy_ clamp_ uniform_ requires_grad_ float_power logaddexp hypot
""".split()) - {"numpy_"}
_NOT_TENSOR_METHODS = {
    "numpy": "a numpy array (result of `.numpy()`)", "tolist": "a Python list (`.tolist()`)",
    "item": "a Python number (`.item()`)", "to_numpy": "a numpy array (`.to_numpy()`)",
    "parse_args": "an argparse namespace", "parse_known_args": "argparse results",
    "size": "a `torch.Size` or an int", "dim": "an int", "numel": "an int",
    "state_dict": "a state dict", "keys": "dict keys", "items": "dict items",
    "values": "dict values", "named_parameters": "an iterator",
}
_NUMBER_BUILTINS = frozenset({"len", "float", "int", "round", "abs", "max", "min", "sum"})
# Functions outside `torch.` documented to return one tensor.
_ECOSYSTEM_TENSOR_FUNCTIONS = frozenset({
    "torchvision.utils.make_grid", "torchvision.transforms.functional.to_tensor",
    "torchvision.transforms.functional.pil_to_tensor",
})


def provenance(names: NameIndex, expr: cst.BaseExpression) -> Provenance:
    """What ``expr`` is: a torch tensor, not one, or unknown, with the evidence."""
    framework = foreign_framework_at(names, expr)
    if framework is not None:
        return _not(f"this file imports {framework}, whose tensors have `.numpy()` but "
                    "no `.detach()`")
    return _Analyzer(names).of(expr, 0)


def module_reason(names: NameIndex, expr: cst.BaseExpression) -> ModuleEvidence | None:
    """Why ``expr`` is an ``nn.Module``: :func:`module_evidence` plus loop and guard evidence."""
    return _Analyzer(names).module(expr, 0)


_MEMO: Slot[dict[int, Provenance]] = Slot("tensors.memo")
_SCALAR_RESOLVING: Slot[set[tuple[int, ...]]] = Slot("tensors.scalar_resolving")
_UNTYPED_NUMBERS: Slot[bool] = Slot("tensors.untyped_numbers")
"""Set while a ``.data[0]`` receiver is asked about: names the file does not type count as
plain numbers scaling a 0-dim value."""
_THROUGH_DATA: Slot[bool] = Slot("tensors.through_data")
"""Set while the receiver of a ``.data[0]`` is asked about: ``.data`` is a tensor's (an array's
is a buffer, a DataFrame has none), so a whole reduction whose operand another file does not
type is a tensor's there."""


_ONE_ELEMENT_OK: Slot[bool] = Slot("tensors.one_element_ok")
"""Set in the last, unsafe tier of a ``.data[0]`` receiver: a binding to a one-element tensor
literal (``Variable(torch.FloatTensor([0]))``, mask-rcnn's "no ROI" branch of a loss helper)
may stand beside 0-dim ones; ``.item()`` is the number on both, and ``[0]`` raises on the
0-dim one."""
_ONE_ELEMENT_LITERAL = "a one-element tensor literal"


def _first(reasons: list[str]) -> str:
    """The first reason that is not only a one-element literal: what makes a value 0-dim."""
    return next((reason for reason in reasons if _ONE_ELEMENT_LITERAL not in reason),
                reasons[0])


_TOO_MANY_STEPS = _unknown("too many steps to follow")


class _Analyzer:
    """One question's worth of recursion, with a guard against cyclic bindings."""

    def __init__(self, names: NameIndex, *, hops: int = 0) -> None:
        self.names = names
        self.resolving: set[tuple[int, ...]] = set()
        self.hops = hops
        """How many calls or returns are being followed back (see :meth:`_fresh`)."""
        memo: dict[int, Provenance] = names.memo.setdefault(_MEMO, {}) if not hops else {}
        self.evaluation = Evaluation(memo, _MAX_DEPTH,
                                     cycle=_TOO_MANY_STEPS, too_deep=_TOO_MANY_STEPS)

    # ------------------------------------------------------------- modules
    def module(self, expr: cst.BaseExpression, depth: int) -> ModuleEvidence | None:
        if isinstance(expr, cst.Name):
            # The nearest evidence first: `if isinstance(m, nn.Conv2d):` around the read.
            guard = self._isinstance_guard(expr)
            if guard is not None and guard[0] == "module":
                return ModuleEvidence(guard[1])
        found = module_evidence(self.names, expr)
        if found is not None:
            return found
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            bindings = self.names.bindings_of(expr)
            if len(bindings) == 1:
                return self._module_binding(bindings[0], expr)
        return None

    def _module_binding(self, binding: Binding, name: cst.Name) -> ModuleEvidence | None:
        if binding.kind == "for" and isinstance(binding.node, (cst.For, cst.CompFor)):
            iterator = binding.node.iter
            if (isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute)
                    and iterator.func.attr.value in ("modules", "children")
                    and isinstance(binding.node.target, cst.Name)):
                return ModuleEvidence(f"loop variable over `.{iterator.func.attr.value}()`")
        if binding.kind == "param":
            function = self.names.enclosing(binding.node, cst.FunctionDef)
            if function is not None and passed_to_apply(self.names, function):
                return ModuleEvidence(f"parameter of `{function.name.value}`, passed to `.apply()`")
        return None

    def _isinstance_guard(self, name: cst.Name) -> tuple[str, str] | None:
        """``if isinstance(m, nn.Conv2d):`` around ``name``: ("module"|"tensor", reason).

        The test speaks of the value the name had when it ran: a guard holds for the read
        only when the same bindings reach both (``input = Boxes.from_tensor(input)`` inside
        ``if isinstance(input, torch.Tensor):`` makes a later ``input`` something else)."""
        child: cst.CSTNode = name
        for ancestor in self.names.ancestors(name):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(ancestor, cst.If) and child is ancestor.body:
                found = self._guard_test(ancestor.test, name.value)
                if found is not None:
                    kind, reason, subject = found
                    return (kind, reason) if self._same_value(subject, name) else None
            child = ancestor
        return None

    def _same_value(self, tested: cst.Name, read: cst.Name) -> bool:
        """No binding of the name can run between the guard's test and the read."""
        return ({id(b) for b in reaching_bindings(self.names, tested)}
                == {id(b) for b in reaching_bindings(self.names, read)})

    def _guard_test(self, test: cst.BaseExpression,
                    name: str) -> tuple[str, str, cst.Name] | None:
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._guard_test(test.left, name) or self._guard_test(test.right, name)
        if (isinstance(test, cst.Call) and len(test.args) == 1
                and self.names.qualified_name(test.func) == "torch.is_tensor"
                and isinstance(test.args[0].value, cst.Name)
                and test.args[0].value.value == name):
            return "tensor", "guarded by `torch.is_tensor(...)`", test.args[0].value
        if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name)
                and test.func.value == "isinstance" and len(test.args) == 2):
            return None
        subject, classes = test.args[0].value, test.args[1].value
        if not (isinstance(subject, cst.Name) and subject.value == name):
            return None
        options = ([e.value for e in classes.elements] if isinstance(classes, cst.Tuple)
                   else [classes])
        qualified = [self.names.qualified_name(option) or "" for option in options]
        if qualified and all(q in TENSOR_CLASSES for q in qualified):
            return "tensor", f"guarded by `isinstance(..., {qualified[0]})`", subject
        if qualified and all(q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper()
                             and q.split(".")[-1] not in ("Parameter", "Module")
                             for q in qualified):
            return "module", f"guarded by `isinstance(..., {qualified[0]})`", subject
        return None

    # ------------------------------------------------------------- tensors
    def of(self, expr: cst.BaseExpression, depth: int) -> Provenance:
        return self.evaluation(expr, depth, self._of)

    def _of(self, expr: cst.BaseExpression, depth: int) -> Provenance:
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, depth)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary([expr.left, expr.right], depth)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            inner = self.of(expr.expression, depth)
            return inner if inner.is_tensor else _unknown(inner.reason)
        if isinstance(expr, cst.Comparison):
            parts = [expr.left, *(c.comparator for c in expr.comparisons)]
            if all(not isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot))
                   for c in expr.comparisons):
                return self._binary(parts, depth)
            return _not("a comparison result")
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
            return _not("a number", numeric=True, literal=True)
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return _not("a string")
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
                             cst.SetComp, cst.GeneratorExp)):
            return _not(CONTAINER_LITERAL)
        return _unknown("an expression the analysis does not follow")

    def _binary(self, parts: list[cst.BaseExpression], depth: int) -> Provenance:
        results = [self.of(part, depth) for part in parts]
        tensors = [r for r in results if r.is_tensor]
        if tensors and not any(r.is_not_tensor and not r.numeric for r in results):
            return _tensor(f"arithmetic on a tensor ({tensors[0].reason})")
        return _unknown("arithmetic on values that are not all known")

    def _call(self, call: cst.Call, depth: int) -> Provenance:
        names = self.names
        qualified = names.qualified_name(call.func)
        if qualified is not None:
            return self._qualified_call(call, qualified)
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _NOT_TENSOR_METHODS:
                return _not(_NOT_TENSOR_METHODS[method], numeric=method in NUMBER_METHODS)
            if method == "modules" or method == "parameters" or method == "children":
                return _not(f"an iterator (`.{method}()`)")
            receiver = self.of(func.value, depth)
            if receiver.is_tensor and method == "type" and call.args:
                return _tensor(f"result of `.type(...)` on a tensor ({receiver.reason})")
            if receiver.is_tensor and method in TENSOR_METHODS:
                return _tensor(f"result of `.{method}()` on a tensor ({receiver.reason})")
            if receiver.is_not_tensor and method in ("copy", "astype", "reshape", "mean",
                                                     "sum", "transpose", "squeeze", "flatten"):
                return _not(f"result of `.{method}()` on {receiver.reason}")
        module = self.module(func, depth)
        if module is not None:
            if module.returns_tuple:
                return _unknown(f"output of a recurrent or attention module ({module.reason})")
            return _tensor(f"output of a module ({module.reason})")
        function = local_function(names, call)
        if function is not None:
            returned = self._returned_tensor(function, depth)
            if returned is not None:
                return returned
        if isinstance(func, cst.Name):
            binding = names.binding_of(func)
            if binding is None and func.value in _NUMBER_BUILTINS and \
                    not names.bindings_of(func) and func.value in ("len", "float", "int"):
                return _not(f"a number (`{func.value}()`)", numeric=True)
            if binding is not None and binding.kind == "class":
                if _subclasses_dataset(names, binding.node):
                    return _not(f"instance of `{func.value}`, a Dataset subclass")
                if func.value not in module_classes(names):
                    return _unknown(f"instance of `{func.value}`")
        return _unknown("result of a call the analysis does not know")

    def _returned_tensor(self, function: cst.FunctionDef, depth: int) -> Provenance | None:
        """``y_soft = gumbel_softmax_sample(logits)`` where that function of this file returns
        a tensor on every path: undecorated, no ``yield``, every ``return`` has a value the
        analysis calls a tensor, and the body ends in a ``return`` or ``raise`` (it cannot
        fall off its end and give ``None``)."""
        body = function.body
        if function.decorators or function.asynchronous is not None or \
                not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        last = body.body[-1]
        if not (isinstance(last, cst.SimpleStatementLine) and
                isinstance(last.body[-1], (cst.Return, cst.Raise))):
            return None
        found: list[Provenance] = []
        for node in walk_local(body):
            if isinstance(node, (cst.Yield, cst.Await)):
                return None
            if isinstance(node, cst.Return):
                if node.value is None:
                    return None
                returned = self.of(node.value, depth + 1)
                if not returned.is_tensor:
                    return None
                found.append(returned)
        if not found:
            return None
        return _tensor(f"`{function.name.value}()` returns a tensor on every path "
                       f"({found[0].reason})")

    def _qualified_call(self, call: cst.Call, qualified: str) -> Provenance:
        last = qualified.split(".")[-1]
        if qualified in PACKED_SEQUENCE:
            return _not("a PackedSequence (its `.data` carries grad; it has no `.detach()`)")
        if qualified in PARAMETER_CLASSES:
            return _tensor("an `nn.Parameter`")
        if qualified in _ECOSYSTEM_TENSOR_FUNCTIONS:
            return _tensor(f"result of `{qualified}`")
        if qualified in VARIABLE_CLASSES:
            return _tensor("a `Variable` (a tensor since torch 0.4)")
        for package, what in NOT_TENSOR_PACKAGES.items():
            if qualified == package or qualified.startswith(package + "."):
                return _not(f"result of `{qualified}` ({what})")
        if qualified.startswith("torch."):
            rest = qualified[len("torch."):]
            if "." not in rest:
                if rest in _TORCH_NOT_TENSOR or rest[:1] == "_":
                    return _unknown(f"`{qualified}` does not return one tensor")
                if rest[:1].isupper() and not rest.endswith("Tensor"):
                    return _unknown(f"`{qualified}` is not a tensor factory")
                return _tensor(f"result of `{qualified}`")
            if qualified in NOT_TENSOR_FUNCTIONS:
                return _unknown(f"`{qualified}` returns a tuple")
            if qualified.startswith(TENSOR_NAMESPACES) and last[:1].islower():
                return _tensor(f"result of `{qualified}`")
            if qualified.startswith("torch.nn.") and last[:1].isupper():
                return _not(f"an `{qualified}` instance (a module)")
        return _unknown(f"result of `{qualified}`")

    def _attribute(self, expr: cst.Attribute, depth: int) -> Provenance:
        names = self.names
        qualified = names.qualified_name(expr)
        if qualified is not None:
            return _not(f"module path `{qualified}`")
        attr = expr.attr.value
        if attr in ("weight", "bias") or RECURRENT_PARAMETER_PREFIX.match(attr):
            module = self.module(expr.value, depth)
            if module is not None and is_module_parameter(attr, module.built_from):
                return _tensor(f"`.{attr}` of a module ({module.reason})")
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            own = self._self_attribute(expr, depth)
            if own is not None:
                return own
        receiver = self.of(expr.value, depth)
        if attr in ("grad", "data", "T", "mT", "real", "imag") and receiver.is_tensor:
            return _tensor(f"`.{attr}` of a tensor ({receiver.reason})")
        if receiver.is_not_tensor:
            return _not(f"attribute of {receiver.reason}")
        return _unknown(f"attribute `.{attr}` of a value the analysis cannot identify")

    def _self_attribute(self, expr: cst.Attribute, depth: int) -> Provenance | None:
        """``self.x`` inside a class: what every ``self.x = ...`` in that class assigns."""
        owner = self.names.enclosing(expr, cst.ClassDef)
        if owner is None:
            return None
        if _subclasses_dataset(self.names, owner):
            return _not(f"attribute of `{owner.name.value}`, a Dataset subclass")
        values = _self_assignments(owner, expr.attr.value)
        if not values:
            return None
        results = [self.of(value, depth) for value in values]
        if all(r.is_tensor for r in results):
            return _tensor(f"`self.{expr.attr.value}` is assigned {results[0].reason}")
        if all(r.is_not_tensor for r in results):
            return _not(f"`self.{expr.attr.value}` is assigned {results[0].reason}")
        return None

    def _subscript(self, expr: cst.Subscript, depth: int) -> Provenance:
        value = expr.value
        if isinstance(value, cst.Call):
            qualified = self.names.qualified_name(value.func) or ""
            if qualified.startswith("torch.") and qualified.split(".")[-1] in \
                    _TORCH_TENSOR_TUPLES and qualified.count(".") == 1:
                return _tensor(f"an item of `{qualified}`'s result")
        receiver = self.of(value, depth)
        if receiver.is_tensor:
            return _tensor(f"indexing a tensor ({receiver.reason})")
        if receiver.is_not_tensor:
            return _not(f"an item of {receiver.reason}")
        return _unknown("an item of a container the analysis cannot identify")

    def _name(self, name: cst.Name, depth: int) -> Provenance:
        guard = self._isinstance_guard(name)
        if guard is not None and guard[0] == "tensor":
            return _tensor(guard[1])
        # Only the bindings that can reach this read (`dist = model(x)` then
        # `dist = dist.gather(...)`: the second read sees the first binding only).
        bindings = reaching_bindings(self.names, name)
        if not bindings:
            return _unknown(f"`{name.value}` is not bound in this file")
        parent = self.names.parent(name)
        if isinstance(parent, cst.Attribute) and parent.value is name and \
                not parent.attr.value.startswith("__"):
            # `predict = None` before a loop that binds it: `predict.data` raises on None, so
            # a read that succeeds sees one of the other bindings; so does `w_dist.data` after
            # `w_dist = 0`, an attribute no Python number has.
            attr = parent.attr.value
            numbers = attr not in _NUMBER_ATTRIBUTES and any(_binds_number(b) for b in bindings)
            bindings = [b for b in bindings if not _binds_none(b) and not (
                attr not in _NUMBER_ATTRIBUTES and _binds_number(b))] or bindings
            if numbers:
                accumulated = self._accumulated(name, bindings, depth)
                if accumulated is not None:
                    return accumulated
        key = tuple(id(binding) for binding in bindings)
        if key in self.resolving:
            return _unknown(f"`{name.value}` is defined in terms of itself")
        self.resolving.add(key)
        try:
            results = [self._binding(binding, name, depth) for binding in bindings]
        finally:
            self.resolving.discard(key)
        results = [r for r in results if r is not None]
        if not results:
            return _unknown(f"`{name.value}` is only updated in place")
        if all(r.is_tensor for r in results):
            return results[0]
        if all(r.is_not_tensor for r in results):
            return results[0]
        if len(results) > 1 and any(r.is_tensor for r in results):
            return _unknown(f"`{name.value}` is bound to a tensor in one place and to "
                            "something else in another")
        return next((r for r in results if r.kind == "unknown"), results[0])

    def _fresh(self, values: list[cst.BaseExpression]) -> list[Provenance] | None:
        """What ``values`` (what calls pass to a parameter, what a function returns) are, each
        with the whole depth budget and answers kept apart from the module's: answers are
        remembered per expression for the module, so one cut short by a longer chain of
        questions would stay wrong for every later, direct question about it (a notebook's
        `out.data` lost its finding when a helper's parameter, passed `out.data`, was asked
        about first). At most ``_MAX_HOPS`` such steps are followed back in one question,
        which bounds the recursion."""
        if self.hops >= _MAX_HOPS:
            return None
        inner = _Analyzer(self.names, hops=self.hops + 1)
        return [inner.of(value, _HOP_START) for value in values]

    def _accumulated(self, name: cst.Name, bindings: list[Binding],
                     depth: int) -> Provenance | None:
        """``total = 0``, then only ``total += loss`` with tensors or literal numbers: a read
        of an attribute no number has succeeds only after a tensor was added, and a number
        plus a tensor is a tensor."""
        if not bindings or any(b.kind != "augassign" or b.value is None for b in bindings):
            return None
        found = [self.of(b.value, depth + 1) for b in bindings if b.value is not None]
        tensors = [f for f in found if f.is_tensor]
        if not tensors or not all(f.is_tensor or f.literal for f in found):
            return None
        return _tensor(f"`{name.value}` starts as a number and has tensors added to it "
                       f"({tensors[0].reason})")

    def _unpacked(self, binding: Binding, name: cst.Name, depth: int) -> Provenance:
        """``out, attention = model(x)`` where ``model`` is an instance of a module class of
        this file whose ``forward`` returns a tuple on every path: the item at ``out``'s
        position is whatever ``forward`` puts there (a tensor, where every return's item is)."""
        unknown = _unknown(f"`{name.value}` is unpacked from a tuple")
        items = returned_items(self.names, binding)
        if items is not None:
            # `input_param, optimizer = get_input_param_optimizer(img)`: a function of this
            # file whose every `return` puts a tensor at that position.
            found = self._fresh(items)
            if found is not None and all(item.is_tensor for item in found):
                return _tensor(f"an item of the tuple a function of this file returns "
                               f"({found[0].reason})")
            return unknown
        node = binding.node
        if not isinstance(node, cst.Assign) or len(node.targets) != 1 or \
                not isinstance(node.value, cst.Call):
            return unknown
        position = unpack_position(node.targets[0].target, name)
        cls = class_of_instance(self.names, node.value.func) or self._module_class(node.value.func)
        forward = methods_of(cls).get("forward") if cls is not None else None
        if position is None or forward is None or cls is None:
            return unknown
        returns = [n for n in walk_local(forward.body) if isinstance(n, cst.Return)]
        items: list[Provenance] = []
        for returned in returns:
            value = returned.value
            if not isinstance(value, cst.Tuple) or position >= len(value.elements) or \
                    any(isinstance(e, cst.StarredElement) for e in value.elements):
                return unknown
            items.append(self.of(value.elements[position].value, depth + 1))
        if not items or not all(item.is_tensor for item in items):
            return unknown
        return _tensor(f"item {position} of the tuple `{cls.name.value}.forward` returns "
                       f"({items[0].reason})")

    def _module_class(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of this file a module instance was built from, followed through
        ``.to()``, wrappers and ``self.x = ...`` (:func:`module_evidence`)."""
        evidence = module_evidence(self.names, expr)
        built = evidence.built_from if evidence is not None else None
        scope = self.names.module_scope
        if built is None or "." in built or scope is None:
            return None
        bindings = scope.bindings.get(built, [])
        if len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
            return bindings[0].node
        return None

    def _binding(self, binding: Binding, name: cst.Name, depth: int) -> Provenance | None:
        kind = binding.kind
        if kind == "import":
            return _not(f"module path `{binding.qualified}`")
        if kind in ("def", "class"):
            return _not(f"`{name.value}` is a {kind}")
        if kind == "param":
            return self._param(binding, name, depth)
        if kind in ("assign", "annassign", "walrus"):
            if binding.annotation is not None:
                annotated = self._annotation(binding.annotation)
                if annotated is not None:
                    return annotated
            if binding.value is None:
                paired = paired_value(binding)  # `out, h = model(x), None`
                if paired is not None:
                    return self.of(paired, depth)
                return self._unpacked(binding, name, depth)
            return self.of(binding.value, depth)
        if kind == "augassign":
            # `x += y` keeps x's kind when y is a tensor or a number; other bindings decide.
            value = self.of(binding.value, depth) if binding.value is not None else None
            if value is not None and (value.is_tensor or value.literal):
                return None
            return _unknown(f"`{name.value}` is updated with a value the analysis cannot identify")
        if kind == "for":
            return self._loop_variable(binding, name, depth)
        return _unknown(f"`{name.value}` is bound by a `{kind}` statement")

    def _param(self, binding: Binding, name: cst.Name, depth: int) -> Provenance:
        if name.value == "self":
            owner = self.names.enclosing(binding.node, cst.ClassDef)
            if owner is not None:
                if owner.name.value in module_classes(self.names):
                    return _not(f"`self` of nn.Module subclass `{owner.name.value}`")
                if _subclasses_dataset(self.names, owner):
                    return _not(f"`self` of Dataset subclass `{owner.name.value}`")
        if binding.annotation is not None:
            annotated = self._annotation(binding.annotation)
            if annotated is not None:
                return annotated
        passed = self._passed_tensor(binding, depth)
        if passed is not None:
            return passed
        return _unknown(f"parameter `{name.value}` has no type evidence")

    def _passed_tensor(self, binding: Binding, depth: int) -> Provenance | None:
        """Every call of the parameter's function passes a tensor there: the calls in this
        file (:func:`passed_in_file`: a function used only by calling it, a method only
        through ``self``), when no other file of the run calls it
        (``init_wt_normal(self.embedding.weight)``; ``_pgd_whitebox(model, X, y)`` after
        ``X = Variable(data, requires_grad=True)``)."""
        function = self.names.enclosing(binding.node, cst.FunctionDef)
        values = passed_in_file(self.names, binding)
        if function is None or not values or \
                self.names.project.caller_files(function.name.value):
            return None
        results = self._fresh(values)
        if results is None or not all(result.is_tensor for result in results):
            return None
        return _tensor(f"every call of `{function.name.value}` in this file passes a tensor "
                       f"({results[0].reason})")

    def _annotation(self, annotation: cst.BaseExpression) -> Provenance | None:
        qualified = self.names.qualified_name(annotation) or ""
        if qualified in TENSOR_ANNOTATIONS:
            return _tensor(f"annotated `{qualified}`")
        if qualified.startswith(("numpy.", "pandas.")):
            return _not(f"annotated `{qualified}`")
        return None

    def _loop_variable(self, binding: Binding, name: cst.Name, depth: int) -> Provenance:
        node = binding.node
        if not isinstance(node, (cst.For, cst.CompFor)):
            return _unknown(f"`{name.value}` is a loop variable")
        iterator, target = node.iter, node.target
        if isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Attribute):
            method = iterator.func.attr.value
            source = dotted_name(iterator.func.value) or "..."
            if method == "parameters" and isinstance(target, cst.Name):
                return _tensor(f"loop variable over `{source}.parameters()`")
            if method in ("named_parameters", "named_buffers") and _second_of_pair(target, name):
                return _tensor(f"loop variable over `{source}.{method}()`")
            if method == "buffers" and isinstance(target, cst.Name):
                return _tensor(f"loop variable over `{source}.buffers()`")
        if isinstance(iterator, cst.Subscript) and isinstance(target, cst.Name):
            key = iterator.slice[0].slice if len(iterator.slice) == 1 else None
            if (isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString)
                    and key.value.evaluated_value == "params"):
                return _tensor("loop variable over an optimizer param group's `params`")
        if (isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Name)
                and iterator.func.value == "zip" and not self.names.bindings_of(iterator.func)
                and isinstance(target, cst.Tuple)):
            for position, element in enumerate(target.elements):
                if (isinstance(element.value, cst.Name) and element.value.value == name.value
                        and position < len(iterator.args)):
                    source = iterator.args[position].value
                    if (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
                            and source.func.attr.value in ("parameters", "buffers")
                            and not iterator.args[position].star):
                        dotted = dotted_name(source.func.value) or "..."
                        return _tensor(f"loop variable over `{dotted}.{source.func.attr.value}()`"
                                       " (zipped)")
        if isinstance(target, cst.Name):
            source = self.of(iterator, depth)
            if source.is_not_tensor:
                return _not(f"loop variable over {source.reason}")
        return _unknown(f"`{name.value}` is a loop variable over something not known")


_NUMBER_ATTRIBUTES = frozenset(dir(0)) | frozenset(dir(0.0))
"""What a Python ``int``, ``bool`` or ``float`` has as attributes (``.real``, ``.imag``, ...):
any other attribute read raises ``AttributeError`` on a number."""


def _binds_number(binding: Binding) -> bool:
    """``x = 0``, ``x = -1.5``: a literal number."""
    value = binding.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    return binding.kind == "assign" and isinstance(value, (cst.Integer, cst.Float))


def _binds_none(binding: Binding) -> bool:
    return binding.kind == "assign" and isinstance(binding.value, cst.Name) and \
        binding.value.value == "None"


def _second_of_pair(target: cst.BaseExpression, name: cst.Name) -> bool:
    return (isinstance(target, cst.Tuple) and len(target.elements) == 2
            and isinstance(target.elements[1].value, cst.Name)
            and target.elements[1].value.value == name.value)


def _subclasses_dataset(names: NameIndex, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.ClassDef):
        return False
    for base in node.bases:
        qualified = names.qualified_name(base.value) or ""
        if qualified.startswith(("torch.utils.data", "torchvision.datasets")) or \
                qualified.endswith("Dataset"):
            return True
        if isinstance(base.value, cst.Name) and base.value.value.endswith("Dataset"):
            return True
    return False


def _self_assignments(owner: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """Values of every ``self.<attr> = value`` in the class's methods (unknown ones as a
    placeholder name that resolves to nothing)."""
    found: list[cst.BaseExpression] = []
    for statement in owner.body.body:
        if isinstance(statement, cst.FunctionDef):
            for value in method_self_assignments(statement, attr):
                found.append(value if value is not None else cst.Name("__unknown__"))
    return found


# ----------------------------------------------------------------- 0-dim
_LOSS_FUNCTIONS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "triplet_margin_loss", "ctc_loss",
})
_REDUCTIONS = WHOLE_REDUCTIONS


def scalar_reason(names: NameIndex, expr: cst.BaseExpression, depth: int = 0) -> str | None:
    """Why ``expr`` is a 0-dim tensor (a reduced loss), or None without evidence."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        if foreign_framework_at(names, expr) is not None:
            # TensorFlow beside torch (pointer_summarizer's eval.py logs with `tf`): only a
            # call torch's own names make is read, `loss = torch.mean(batch_avg_loss)`.
            return _torch_scalar_call(names, expr, torch_only=True)
        return _scalar_call(names, expr, depth)
    if isinstance(expr, cst.Name):
        # Only the bindings that reach the read (`loss = crit(...)` in the loop, read there,
        # and `loss = cum_loss / n` after it: pcyin/pytorch_nmt's `evaluate_loss`).
        bindings = reaching_bindings(names, expr) or names.bindings_of(expr)
        key = tuple(id(binding) for binding in bindings)
        resolving = names.memo.setdefault(_SCALAR_RESOLVING, set())
        if key in resolving:
            return None  # defined in terms of itself: no evidence, and no exponential walk
        resolving.add(key)
        try:
            reasons = []
            started_at_zero = False
            for binding in bindings:
                if binding.kind == "augassign":
                    continue
                if _number_binding(binding):
                    # `loss = 0` then `loss += criterion(...)`: the seq2seq/char-RNN sum.
                    started_at_zero = True
                    continue
                if _added_to_itself(binding.value, expr.value) is not None:
                    continue  # `loss = loss + criterion(...)`: read like `+=` below
                paired = paired_value(binding)
                if paired is not None:
                    reason = scalar_reason(names, paired, depth + 1)
                    if reason is None:
                        return None
                    reasons.append(reason)
                    continue
                if binding.kind == "assign" and binding.value is None:
                    unpacked = _unpacked_scalar(names, binding, expr, depth)
                    if unpacked is None:
                        return None
                    reasons.append(unpacked)
                    continue
                if binding.kind not in ("assign", "annassign", "walrus") or binding.value is None:
                    return None
                if names.memo.get(_ONE_ELEMENT_OK) and _one_element_literal(
                        names, binding.value):
                    reasons.append(_ONE_ELEMENT_LITERAL)
                    continue
                reason = scalar_reason(names, binding.value, depth + 1)
                if reason is None:
                    return None
                reasons.append(reason)
            if started_at_zero and not reasons:
                summed = [scalar_reason(names, part, depth + 1)
                          for part in summed_parts(names, bindings, expr.value) or ()]
                if summed and all(summed):
                    return f"a sum from 0 of {summed[0]}"
                return None
            return _first(reasons) if reasons else None
        finally:
            resolving.discard(key)
    if isinstance(expr, cst.BinaryOperation):
        # An operand that is itself an operation costs no step: `a + b + c + d + e` (five
        # helper losses) is one sum, and the syntax tree bounds that recursion anyway.
        left = scalar_reason(names, expr.left, depth + (
            0 if isinstance(expr.left, cst.BinaryOperation) else 1))
        right = scalar_reason(names, expr.right, depth + (
            0 if isinstance(expr.right, cst.BinaryOperation) else 1))
        if left and right:
            return _first([left, right])
        if left and _plain_number(names, expr.right):
            return left
        if right and _plain_number(names, expr.left):
            return right
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return scalar_reason(names, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute):
        return _instance_attribute_scalar(names, expr)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator,
                                                          (cst.Minus, cst.Plus)):
        return scalar_reason(names, expr.expression, depth + 1)
    return None


def _instance_attribute_scalar(names: NameIndex, expr: cst.Attribute) -> str | None:
    """``net.bbox_loss`` / ``net.loss`` where ``net`` is bound once, to an instance of a class
    of another file of the run that sets that attribute to a 0-dim value in its methods, or
    whose property of that name returns one (yolo2's ``Darknet19``; the project index,
    ``scalar-returns``)."""
    if not isinstance(expr.value, cst.Name) or expr.value.value == "self":
        return None
    bindings = names.bindings_of(expr.value)
    if len(bindings) != 1 or bindings[0].kind != "assign" or \
            not isinstance(bindings[0].value, cst.Call):
        return None
    qualified = names.qualified_name(bindings[0].value.func)
    if qualified is None:
        return None
    return _tiered(names, names.project.scalar_attribute(qualified, expr.attr.value))


_SAME_SHAPE = CONVERSIONS | COPIES
"""Methods whose result has the receiver's shape: a 0-dim loss stays 0-dim through them."""


def whole_reduction_reason(names: NameIndex, expr: cst.BaseExpression) -> str | None:
    """Why ``expr`` is the result of ``.sum()``/``.mean()``/... with no argument (seen
    through ``.data``, device and dtype moves, and one plain assignment), in a file that
    imports torch: 0-dim for a tensor and a numpy scalar for an array, so ``[0]`` on it
    raises either way and ``.item()`` is the number both times. The chain must also show
    a tensor's own ``.data``/``.detach()``/``.cpu()``/``.cuda()`` (``frame.sum()`` of a
    pandas DataFrame is a Series, and its ``[0]`` is ordinary). None without that."""
    from torchfix_codemods.analysis.facts.frameworks import imports_torch

    if not imports_torch(names) or foreign_framework(names) is not None:
        return None
    tensor_only = False
    for _ in range(_MAX_DEPTH):
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr, tensor_only = expr.value, True
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in _SAME_SHAPE:
            tensor_only = tensor_only or expr.func.attr.value in _TENSOR_ONLY_METHODS
            expr = expr.func.value
        elif isinstance(expr, cst.Name):
            bindings = names.bindings_of(expr)
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
                return None
            expr = bindings[0].value
        else:
            break
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in _REDUCTIONS and not expr.args):
        return None
    known = provenance(names, expr.func.value)
    if known.is_not_tensor or not (tensor_only or known.is_tensor
                                   or _tensor_marked(names, expr.func.value, 0)):
        return None
    return f"`.{expr.func.attr.value}()` over a whole tensor is 0-dim"


_TENSOR_ONLY_METHODS = TENSOR_ONLY_METHODS


def _tensor_marked(names: NameIndex, expr: cst.BaseExpression, depth: int) -> bool:
    """``expr`` is computed from something only a tensor has: a ``.data``, ``.detach()``,
    ``.cpu()`` or ``.cuda()`` on the way (``pred = out.data.max(1)[1]``, then
    ``pred.eq(y)`` or ``pred == y``), and from nothing known not to be one. Counts from
    ``(pred == y).sum()`` are built this way from a model output the file cannot type."""
    if depth > _MAX_DEPTH:
        return False
    known = provenance(names, expr)
    if known.is_tensor:
        return True
    if known.is_not_tensor:
        return False
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "data" or _tensor_marked(names, expr.value, depth + 1)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value in _TENSOR_ONLY_METHODS or \
            _tensor_marked(names, expr.func.value, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _tensor_marked(names, expr.value, depth + 1)
    if isinstance(expr, cst.Comparison):
        return any(_tensor_marked(names, part, depth + 1) for part in
                   (expr.left, *(c.comparator for c in expr.comparisons)))
    if isinstance(expr, cst.BinaryOperation):
        return _tensor_marked(names, expr.left, depth + 1) or \
            _tensor_marked(names, expr.right, depth + 1)
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        return len(bindings) == 1 and bindings[0].kind == "assign" and \
            bindings[0].value is not None and \
            _tensor_marked(names, bindings[0].value, depth + 1)
    return False


_LOSS_MODULE_NAMES = frozenset({"loss_fn", "lossfn", "loss_func", "loss_function",
                                "loss_module"})


def loss_named_reason(names: NameIndex, expr: cst.BaseExpression) -> str | None:
    """Weaker evidence than :func:`scalar_reason`: ``expr`` is (a name bound once to) a call
    of something *named* like a loss module (``criterion(out, y)``, ``self.loss_fn(...)``;
    not a method such as ``model.compute_loss(batch)``) with no
    ``reduction``/``reduce`` argument, whose module this file cannot see (a parameter, an
    attribute). Usually a reduced, 0-dim loss; a criterion built with ``reduction='none'``
    elsewhere is not, so what rests on this is an unsafe fix."""
    if isinstance(expr, cst.Name):
        bindings = names.bindings_of(expr)
        parts = summed_parts(names, bindings, expr.value)
        if parts and len(parts) < len(bindings):  # `loss = 0`, then `loss += criterion(...)`
            reasons = [scalar_reason(names, part) or loss_named_reason(names, part)
                       for part in parts]
            return f"a sum from 0 of {reasons[0]}" if all(reasons) else None
        calls = [_number_scaled(names, b.value) if b.kind == "assign" else None
                 for b in bindings]
        if not calls or None in calls:
            return None
        # Every binding the same kind of call: a training loop's and a validation loop's
        # `loss = criterion(output, label)` in one function; divided by the batch size
        # (`criterion(outputs, labels) / N`) or scaled by a number it stays what it was.
        reasons = [loss_named_reason(names, call) for call in calls if call is not None]
        return reasons[0] if reasons and all(reasons) else None
    if not isinstance(expr, cst.Call) or any(
            arg.keyword is not None and arg.keyword.value in ("reduction", "reduce")
            for arg in expr.args):
        return None
    func = expr.func
    if isinstance(func, cst.Name):
        name = func.value
        if any(binding.kind != "param" for binding in names.bindings_of(func)):
            return None  # built in this file: scalar_reason reads how, and it said no
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
            and func.value.value == "self":
        name = func.attr.value
        owner = names.enclosing(func, cst.ClassDef)
        if owner is not None and _self_assignments(owner, name):
            return None
    else:
        return None  # `model.compute_loss(batch)`: a method whose result may be anything
    if "criterion" not in name.lower() and name.lower() not in _LOSS_MODULE_NAMES:
        return None
    return f"`{name}(...)` is named like a loss module, which is 0-dim unless built unreduced"


def _number_scaled(names: NameIndex, value: cst.BaseExpression | None) -> cst.Call | None:
    """The call in ``value`` when ``value`` is a call, or a call multiplied or divided by a
    plain number (``criterion(outputs, labels) / N`` with ``N = inputs.size(0)``): the same
    shape as the call's result."""
    if isinstance(value, cst.Call):
        return value
    if isinstance(value, cst.BinaryOperation) and isinstance(
            value.operator, (cst.Multiply, cst.Divide)):
        if isinstance(value.left, cst.Call) and _plain_number(names, value.right):
            return value.left
        if isinstance(value.operator, cst.Multiply) and isinstance(value.right, cst.Call) \
                and _plain_number(names, value.left):
            return value.right
    return None


def zero_dim_index_reason(names: NameIndex, node: cst.Subscript) -> tuple[str, bool] | None:
    """Why ``x[0]`` / ``x.data[0]`` indexes a 0-dim tensor, and whether that is proven
    (True) or rests on a name only (False: ``criterion(...)`` of a parameter). The one
    answer both TFC105 (which rewrites the subscript to ``.item()``) and TFC102 (which
    must then leave its ``.data`` alone: ``x.detach()[0]`` still raises) read."""
    receiver = node.value
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
        receiver = receiver.value
    through_data = receiver is not node.value or _read_through_data(node.value)
    if through_data:
        names.memo[_THROUGH_DATA] = True
    try:
        reason = scalar_reason(names, receiver) or whole_reduction_reason(names, node.value)
    finally:
        names.memo.pop(_THROUGH_DATA)
    if reason is not None:
        return reason, True
    if through_data:  # `.data[0]`, `.data.cpu()[0]`: the 0.3 idiom
        named = loss_named_reason(names, receiver)
        if named is not None:
            return named, False
        scaled = _scalar_reason_with(names, receiver, (_UNTYPED_NUMBERS, _THROUGH_DATA))
        if scaled is not None:
            return f"{scaled}, scaled by values the file does not type", False
        mixed = _scalar_reason_with(names, receiver,
                                    (_UNTYPED_NUMBERS, _THROUGH_DATA, _ONE_ELEMENT_OK))
        if mixed is not None and _ONE_ELEMENT_LITERAL not in mixed:
            return f"{mixed}; some paths give a one-element tensor, where `.item()` is the " \
                "same number", False
    return None


def _read_through_data(expr: cst.BaseExpression) -> bool:
    """``expr`` is a tensor's ``.data`` moved by same-shape methods (``loss.data.cpu()``)."""
    for _ in range(_MAX_DEPTH):
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            return True
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value in _SAME_SHAPE):
            return False
        expr = expr.func.value
    return False


def one_element_index_reason(names: NameIndex, node: cst.Subscript) -> str | None:
    """Why ``x.data[0]`` reads the one element of a one-element tensor (see
    :func:`one_element_reason`): the 0.3 idiom for a number, now a 0-dim tensor."""
    value = node.value
    if isinstance(value, cst.Attribute) and value.attr.value == "data":
        return one_element_reason(names, value.value)
    return None


def _added_to_itself(value: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """``part`` when ``value`` is ``name + part`` or ``name - part``: the spelled-out ``+=``."""
    if isinstance(value, cst.BinaryOperation) and isinstance(
            value.operator, (cst.Add, cst.Subtract)) and isinstance(value.left, cst.Name) \
            and value.left.value == name:
        return value.right
    return None


def summed_parts(names: NameIndex, bindings: list[Binding],
                 name: str) -> list[cst.BaseExpression] | None:
    """What a running sum adds (``total += part``, ``total = total + part``), or None when
    one of ``bindings`` does anything else to it (a fresh value that is not a number, a
    product with something other than a plain number). The parts decide what the sum is:
    a sum from 0 of 0-dim tensors, scaled by numbers (``style_loss *= args.weight``), is
    0-dim."""
    parts: list[cst.BaseExpression] = []
    for binding in bindings:
        node = binding.node
        if binding.kind == "augassign":
            if not isinstance(node, cst.AugAssign) or binding.value is None:
                return None
            if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
                parts.append(binding.value)
            elif not (isinstance(node.operator, (cst.MultiplyAssign, cst.DivideAssign))
                      and _plain_number(names, binding.value)):
                return None
        elif binding.kind == "assign" and binding.value is not None:
            part = _added_to_itself(binding.value, name)
            if part is not None:
                parts.append(part)
            elif not _number_binding(binding):
                return None
        elif not _number_binding(binding):
            return None
    return parts


def _scalar_call(names: NameIndex, call: cst.Call, depth: int) -> str | None:
    func = call.func
    if isinstance(func, cst.Attribute) and (
            func.attr.value in _SAME_SHAPE
            or (func.attr.value in ELEMENTWISE_UNARY and not call.args)
            or (func.attr.value in ELEMENTWISE_ARITHMETIC and call.args and (
                func.attr.value.endswith("_")
                or all(arg.keyword is None and _plain_number(names, arg.value)
                       for arg in call.args)))):
        # `torch.sum(kld).mul_(-0.5)`, `c.exp()`: elementwise, the receiver's shape
        return scalar_reason(names, func.value, depth + 1)
    if any(arg.keyword is not None and arg.keyword.value in ("dim", "axis", "keepdim")
           for arg in call.args) or not _reducing_arguments(call):
        return None
    qualified = names.qualified_name(call.func)
    if qualified is not None:
        torch_call = _torch_scalar_call(names, call, torch_only=False)
        if torch_call is not None:
            return torch_call
        return _project_scalar(names, qualified)
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _REDUCTIONS and not call.args:
        known = provenance(names, func.value)
        if known.is_tensor:
            return f"`.{func.attr.value}()` of a whole tensor"
        whole = whole_reduction_reason(names, call)
        if whole is None and names.memo.get(_UNTYPED_NUMBERS) and \
                names.memo.get(_THROUGH_DATA) and not known.is_not_tensor \
                and _imports_torch(names) and not imports_package(names, "pandas"):
            # `d_loss = d_fake.mean() - d_real.mean() + gp`, then `d_loss.data[0]`: a
            # critic's output the file cannot type, reduced whole; for a tensor 0-dim, for
            # an array a numpy scalar, and `[0]` raises on both (unsafe tier only).
            return f"`.{func.attr.value}()` of a whole value read through `.data`"
        return whole
    module = module_reason(names, func)
    if module is not None and module.is_loss and _loss_reduces(names, func):
        return f"output of a loss module ({module.reason})"
    if module is not None and module.built_from is not None:
        returned = _forward_returns_scalar(names, module.built_from, depth)
        if returned is not None:
            return f"output of `{module.built_from}`, whose `forward` returns {returned}"
    function = local_function(names, call) or own_method(names, call)
    if function is not None:
        returned = _returned_scalar(names, function, depth)
        if returned is not None:
            return f"`{function.name.value}()` returns {returned}"
    if isinstance(func, cst.Name):
        passed = _passed_function_scalar(names, func, depth + 1)
        if passed is not None:
            return f"`{func.value}` is, at every call, a function that returns {passed}"
    return None


def _project_scalar(names: NameIndex, qualified: str) -> str | None:
    """Why a function of another file of the run returns a 0-dim value (the project index's
    ``scalar-returns``), at the tier the asker accepts."""
    return _tiered(names, names.project.scalar_return(qualified))


def _tiered(names: NameIndex, returned: ScalarReturn | None) -> str | None:
    """The reason of a fact of the project index, when it is at the tier the asker
    accepts (a tensor, or a `.data` read says so; proven, or untyped numbers allowed)."""
    if returned is None or not (returned.tensor or names.memo.get(_THROUGH_DATA)):
        return None
    if not returned.proven and not names.memo.get(_UNTYPED_NUMBERS):
        return None
    return returned.reason


def _passed_function_scalar(names: NameIndex, func: cst.Name, depth: int) -> str | None:
    """``loss = loss_fn_kd(output, labels, ...)`` with ``loss_fn_kd`` a parameter: every call
    of the function in this file passes a function whose every ``return`` is 0-dim (a
    function of this file, one of another file of the run, or a parameter of the caller
    passed on the same way: knowledge-distillation's ``train_kd``, handed ``net.loss_fn_kd``
    by ``main`` through ``train_and_evaluate_kd``)."""
    bindings = names.bindings_of(func)
    if depth > _MAX_DEPTH or len(bindings) != 1 or bindings[0].kind != "param":
        return None
    passed = passed_in_file(names, bindings[0])
    if not passed:
        return None
    reasons = [_function_value_scalar(names, value, depth + 1) for value in passed]
    return reasons[0] if reasons and all(reasons) else None


def _function_value_scalar(names: NameIndex, value: cst.BaseExpression,
                           depth: int) -> str | None:
    """Why the function ``value`` names (not calls) returns a 0-dim value."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, cst.Name):
        bindings = names.bindings_of(value)
        if not bindings:
            return None
        if len(bindings) == 1 and bindings[0].kind == "param":
            return _passed_function_scalar(names, value, depth + 1)
        function = defined_function(names, value)
        if function is not None:
            return _returned_scalar(names, function, depth + 1)
        if all(binding.kind == "assign" and binding.value is not None
               for binding in bindings):
            # `loss_fn_kd = net.loss_fn_kd` on each branch of `main`
            reasons = [_function_value_scalar(names, binding.value, depth + 1)
                       for binding in bindings if binding.value is not None]
            return reasons[0] if all(reasons) else None
    if isinstance(value, (cst.Name, cst.Attribute)):
        qualified = names.qualified_name(value)
        if qualified is not None:
            return _project_scalar(names, qualified)
    return None


def _torch_scalar_call(names: NameIndex, call: cst.Call, *, torch_only: bool) -> str | None:
    """Why a call of a library's reduction is 0-dim: a reducing ``F.*_loss``, or
    ``torch.sum(x)`` / ``torch.mean(x)`` with no dimension (``np.mean(x)`` too unless
    ``torch_only``: a numpy scalar, whose ``[0]`` raises as well)."""
    if any(arg.keyword is not None and arg.keyword.value in ("dim", "axis", "keepdim")
           for arg in call.args) or not _reducing_arguments(call):
        return None
    qualified = names.qualified_name(call.func)
    if qualified is None:
        return None
    last = qualified.split(".")[-1]
    if qualified.startswith("torch.nn.functional.") and last in _LOSS_FUNCTIONS:
        return f"result of `{qualified}` (a reduced loss)"
    if (qualified.startswith("torch.") or not torch_only) and qualified.count(".") == 1 \
            and last in _REDUCTIONS and len(call.args) == 1:
        return f"result of `{qualified}` over a whole tensor"
    return None


def _unpacked_scalar(names: NameIndex, binding: Binding, name: cst.Name,
                     depth: int) -> str | None:
    """``loss, preds, n_correct = masked_cross_entropy(...)``: the item at ``loss``'s position
    of the tuple every ``return`` of a function of this file builds, when each is 0-dim."""
    node = binding.node
    if not isinstance(node, cst.Assign) or len(node.targets) != 1 or \
            not isinstance(node.value, cst.Call):
        return None
    position = unpack_position(node.targets[0].target, name)
    function = local_function(names, node.value) or own_method(names, node.value)
    if position is None or function is None or depth > _MAX_DEPTH:
        return None
    reasons = []
    for returned in walk_local(function.body):
        if isinstance(returned, (cst.Yield, cst.Await)):
            return None
        if not isinstance(returned, cst.Return):
            continue
        value = returned.value
        if not isinstance(value, (cst.Tuple, cst.List)) or position >= len(value.elements) or \
                any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None  # a list literal unpacks like a tuple: mask-rcnn's `compute_losses`
        reason = scalar_reason(names, value.elements[position].value, depth + 1)
        if reason is None:
            return None
        reasons.append(reason)
    if not reasons:
        return None
    return f"item {position} of what `{function.name.value}()` returns ({_first(reasons)})"


def _imports_torch(names: NameIndex) -> bool:
    from torchfix_codemods.analysis.facts.frameworks import imports_torch

    return imports_torch(names)


def _one_element_literal(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``expr`` builds a tensor of one element from a literal: ``torch.FloatTensor([0])``,
    ``torch.tensor([0.])``, ``torch.zeros(1)``, through ``Variable(...)`` and device moves
    (mask-rcnn's ``loss = Variable(torch.FloatTensor([0]), requires_grad=False)``)."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_SHAPE \
                and expr.func.attr.value != "type":
            expr = expr.func.value
            continue
        qualified = names.qualified_name(expr.func) or ""
        positional = [arg for arg in expr.args if arg.keyword is None]
        if qualified in VARIABLE_CLASSES and positional and not positional[0].star:
            expr = positional[0].value
            continue
        if len(positional) != 1 or positional[0].star or not qualified.startswith("torch."):
            return False
        value = positional[0].value
        if qualified in FILLED_FACTORIES:
            return isinstance(value, cst.Integer) and value.value == "1"
        if qualified in LITERAL_TENSOR_FUNCTIONS or (
                qualified.startswith("torch.") and
                qualified.split(".")[-1] in LEGACY_CONSTRUCTORS):
            return isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1 \
                and isinstance(value.elements[0], cst.Element) and isinstance(
                    value.elements[0].value, (cst.Integer, cst.Float, cst.UnaryOperation))
        return False
    return False



def _forward_returns_scalar(names: NameIndex, class_name: str, depth: int) -> str | None:
    """Why every ``return`` of ``forward`` of the nn.Module class ``class_name`` of this
    file is 0-dim (a label-smoothing criterion ending in ``loss.sum() / n``), whatever
    the class is called. A class of another file needs the project index's facts."""
    owner = module_classes(names).get(class_name)
    if owner is None or depth > _MAX_DEPTH:
        return None
    for statement in owner.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "forward":
            return _returned_scalar(names, statement, depth + 1)
    return None


def _returned_scalar(names: NameIndex, function: cst.FunctionDef, depth: int) -> str | None:
    """Why every ``return`` of ``function`` (a function of this file) is 0-dim."""
    reasons = []
    for node in walk_local(function.body):
        if isinstance(node, (cst.Yield, cst.Await)):
            return None
        if isinstance(node, cst.Return):
            if node.value is None:
                return None
            reason = scalar_reason(names, node.value, depth + 1)
            if reason is None:
                return None
            reasons.append(reason)
    return _first(reasons) if reasons else None


def _loss_reduces(names: NameIndex, func: cst.BaseExpression) -> bool:
    """The loss module was built without ``reduction='none'`` / ``reduce=False``."""
    construct: cst.BaseExpression | None = func
    if isinstance(func, cst.Name):
        # `criterion = criterion.cuda()` under `if cuda:` moves the same module: the
        # other binding (the constructor) decides.
        built = [b for b in names.bindings_of(func) if not _moved_itself(b, func.value)]
        if len(built) == 1 and built[0].kind == "param":
            # `def evaluate(..., evaluateL2, evaluateL1)`: what every call in this file
            # passes (`evaluateL2 = nn.MSELoss(size_average=False)`) decides.
            passed = passed_in_file(names, built[0])
            return bool(passed) and all(
                isinstance(value, cst.Call) or (isinstance(value, cst.Name) and not any(
                    b.kind == "param" for b in names.bindings_of(value)))
                for value in passed or ()) and all(
                _loss_reduces(names, value) for value in passed or ())
        return bool(built) and all(
            b.kind == "assign" and (_loss_reduces(names, b.value) if b.value is not None else
                                    _returned_losses_reduce(names, b))
            for b in built)
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
            and func.value.value == "self":
        owner = names.enclosing(func, cst.ClassDef)
        values = _self_assignments(owner, func.attr.value) if owner else []
        construct = values[0] if len(values) == 1 else None
    return isinstance(construct, cst.Call) and _reducing_arguments(construct)


def _returned_losses_reduce(names: NameIndex, binding: Binding) -> bool:
    """``..., cross_entropy_loss = init_training(args)``: the loss every ``return`` of that
    function of this file puts at the name's position was built reducing."""
    items = returned_items(names, binding)
    return bool(items) and all(isinstance(item, (cst.Name, cst.Call))
                               and _loss_reduces(names, item) for item in items or ())


def _reducing_arguments(call: cst.Call) -> bool:
    """No ``reduction=``/``reduce=`` other than a literal reducing one (``'mean'``,
    ``'sum'``, ``reduce=True``) among the arguments of a loss or its constructor."""
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "reduction":
            return isinstance(arg.value, cst.SimpleString) and \
                arg.value.evaluated_value in ("mean", "sum")
        if arg.keyword.value == "reduce":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return True


def _moved_itself(binding: Binding, name: str) -> bool:
    """``name = name.cuda()`` / ``name = name.to(device)``: the same object, moved."""
    value = binding.value
    return binding.kind == "assign" and isinstance(value, cst.Call) and isinstance(
        value.func, cst.Attribute) and value.func.attr.value in DEVICE_METHODS \
        and isinstance(value.func.value, cst.Name) and value.func.value.value == name


def _number_binding(binding: Binding) -> bool:
    """``total = 0`` / ``n_correct, dev_loss = 0, 0``: the name starts as a number literal."""
    if binding.kind != "assign":
        return False
    if isinstance(binding.value, (cst.Integer, cst.Float)):
        return True
    node = binding.node
    if binding.value is None and isinstance(node, cst.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0].target, cst.Tuple) \
            and isinstance(node.value, cst.Tuple):
        targets, values = node.targets[0].target.elements, node.value.elements
        return len(targets) == len(values) and any(
            isinstance(t.value, cst.Name) and t.value.value == binding.name
            and isinstance(v.value, (cst.Integer, cst.Float))
            for t, v in zip(targets, values, strict=True))
    return False


def _plain_number(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """A Python number: a literal (negated too), ``len(...)``, ``x.size(0)``,
    ``x.shape[0]``, an ``argparse`` option (``args.content_weight``)."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator,
                                                          (cst.Minus, cst.Plus)):
        expr = expr.expression
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    known = provenance(names, expr)
    if known.is_not_tensor and (known.numeric or "argparse" in known.reason):
        return True
    if names.memo.get(_UNTYPED_NUMBERS) and not known.is_tensor and isinstance(
            expr, cst.Attribute) and isinstance(expr.value, cst.Name) and \
            expr.value.value != "self":
        # `args.content_weight * mse_loss(...)` with `args` a parameter: an option, a
        # number in practice and a broadcasting tensor in principle; only the unsafe
        # tier asks this. A bare `weights` argument is as likely a vector: never.
        return True
    if names.memo.get(_UNTYPED_NUMBERS) and _number_attribute(names, expr):
        return True
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in ("len", "float", "int"):
            return True
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("size", "item") \
                and len(expr.args) <= 1:
            return bool(expr.args) or expr.func.attr.value == "item"
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) \
            and expr.value.attr.value == "shape":
        return True
    return False


def _number_attribute(names: NameIndex, expr: cst.BaseExpression) -> bool:
    """``self.gp_weight`` where every ``self.gp_weight = ...`` of the class is a number
    literal, a parameter whose default is one (wgan-gp's ``gp_weight=10``) or an option
    read from a parameter (BEGAN's ``self.gamma = config.gamma``): a hyper-parameter, a
    number in practice (a caller may pass a tensor: unsafe tier only)."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"):
        return False
    owner = names.enclosing(expr, cst.ClassDef)
    values = _self_assignments(owner, expr.attr.value) if owner is not None else []
    if not values:
        return False
    for value in values:
        if isinstance(value, cst.UnaryOperation):
            value = value.expression
        if isinstance(value, (cst.Integer, cst.Float)):
            continue
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and any(
                binding.kind == "param" for binding in names.bindings_of(value.value)) \
                and value.value.value != "self":
            continue  # `self.gamma = config.gamma`: an option, like `args.content_weight`
        if not isinstance(value, cst.Name):
            return False
        bindings = names.bindings_of(value)
        if len(bindings) != 1 or bindings[0].kind != "param" or not isinstance(
                bindings[0].node, cst.Param):
            return False
        default = bindings[0].node.default
        if isinstance(default, cst.UnaryOperation):
            default = default.expression
        if not isinstance(default, (cst.Integer, cst.Float)):
            return False
    return True


# ----------------------------------------------------------- how .data is used
DataUse = Literal["read", "inplace", "assign", "delete"]


def data_use(names: NameIndex, node: cst.BaseExpression) -> tuple[DataUse, cst.CSTNode]:
    """How ``x.data`` at ``node`` (or any tensor expression) is used, and the outermost node
    of that use.

    ``inplace``: written through (an in-place method, possibly after views;
    a subscript or augmented assignment; the first argument of a function whose
    name ends in ``_``, or ``out=``). ``assign``: ``x.data = y``.
    """
    current: cst.CSTNode = node
    wrote = False
    while True:
        parent = names.parent(current)
        if isinstance(parent, cst.Attribute) and parent.value is current:
            grand = names.parent(parent)
            if not (isinstance(grand, cst.Call) and grand.func is parent):
                return ("inplace" if wrote else "read"), current
            method = parent.attr.value
            if method.endswith("_") and not method.startswith("__"):
                wrote = True
                current = grand
                continue
            if method in VIEW_METHODS and not wrote:
                current = grand
                continue
            return ("inplace" if wrote else "read"), current
        if wrote:
            return "inplace", current
        if isinstance(parent, cst.Subscript) and parent.value is current:
            current = parent
            continue
        if isinstance(parent, cst.AssignTarget) and parent.target is current:
            return ("assign" if current is node else "inplace"), parent
        if isinstance(parent, cst.AugAssign) and parent.target is current:
            return "inplace", parent
        if isinstance(parent, (cst.Element, cst.StarredElement)):
            container = names.parent(parent)
            holder = names.parent(container) if container is not None else None
            if isinstance(holder, (cst.AssignTarget, cst.For)):
                return "assign", current
            return "read", current
        if isinstance(parent, cst.Del):
            return "delete", parent
        if isinstance(parent, cst.Arg):
            call = names.parent(parent)
            if isinstance(call, cst.Call) and _mutating_argument(call, parent):
                return "inplace", call
        return "read", current


def metadata_only(names: NameIndex, node: cst.BaseExpression) -> str | None:
    """Why the tensor at ``node`` is read only for its metadata (shape, dtype, device), else
    None: ``t.size()``, ``t.shape``, ``t.numel()``, ``t.new_zeros(...)``, ``y.view_as(t)``,
    ``torch.zeros_like(t)``. Nothing computed from ``t`` there can carry its autograd history
    (measured on torch 2.13, see :data:`SHAPE_TEMPLATE_METHODS`), so ``t.data`` and
    ``t.detach()`` give the same result."""
    parent = names.parent(node)
    compared = names.parent(parent) if isinstance(parent, cst.ComparisonTarget) else parent
    if isinstance(compared, cst.Comparison) and all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) for c in compared.comparisons) and any(
            isinstance(side, cst.Name) and side.value == "None"
            for side in (compared.left, *(c.comparator for c in compared.comparisons))):
        # `m.bias.data is not None`: `.data` and `.detach()` are both a tensor, never None
        return "it is only compared with `None`"
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attribute = parent.attr.value
        call = names.parent(parent)
        called = isinstance(call, cst.Call) and call.func is parent
        bare_call = called and isinstance(call, cst.Call) and not call.args
        if attribute in METADATA_READS or (attribute == "type" and bare_call):
            return f"only its metadata is read (`.{attribute}`)"
        if attribute in FRESH_LIKE_METHODS and called:
            return f"`.{attribute}()` takes only its dtype and device"
        return None
    if not isinstance(parent, cst.Arg) or parent.keyword is not None:
        return None
    call = names.parent(parent)
    if not isinstance(call, cst.Call) or call.args[0] is not parent:
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in SHAPE_TEMPLATE_METHODS:
        return f"`.{func.attr.value}()` takes only its shape or dtype"
    qualified = names.qualified_name(func) or ""
    if qualified.startswith("torch.") and qualified[len("torch."):] in LIKE_FACTORIES:
        return f"`{qualified}` takes only its shape, dtype and device"
    return None


_DEPRECATED_INITS = frozenset({"uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                               "xavier_normal", "kaiming_uniform", "kaiming_normal",
                               "orthogonal", "sparse"})
"""``torch.nn.init``'s deprecated aliases of its in-place initialisers (``normal`` for
``normal_``), still in torch 2.13."""


def _mutating_argument(call: cst.Call, arg: cst.Arg) -> bool:
    if arg.keyword is not None:
        return arg.keyword.value == "out"
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _DEPRECATED_INITS and \
            "init" in (dotted_name(call.func) or "").split("."):
        # `nn.init.xavier_normal(w.data)`: the 0.3 spelling, still an in-place initialiser
        # (it calls `xavier_normal_`; measured on torch 2.13: it fills `w`, with a warning).
        positional = [a for a in call.args if a.keyword is None]
        return bool(positional) and positional[0] is arg
    if isinstance(call.func, cst.Attribute) and call.func.attr.value.endswith("_") \
            and not call.func.attr.value.startswith("__"):
        # `nn.init.normal_(w)`, `torch.nn.utils.clip_grad_norm_(...)`: the function writes
        # its first argument; `t.copy_(src)` (a method) writes its receiver, not `src`.
        positional = [a for a in call.args if a.keyword is None]
        dotted = dotted_name(call.func) or ""
        return bool(positional) and positional[0] is arg and (
            "init" in dotted.split(".") or "utils" in dotted.split("."))
    if isinstance(call.func, cst.Name) and call.func.value.endswith("_"):
        positional = [a for a in call.args if a.keyword is None]
        return bool(positional) and positional[0] is arg
    return False


def written_later(names: NameIndex, value: cst.BaseExpression) -> bool | None:
    """For ``w = p.data``: whether ``w`` is written in place later (None: cannot follow)."""
    parent = names.parent(value)
    if not (isinstance(parent, cst.Assign) and parent.value is value):
        return False
    if len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
        return None
    target = parent.targets[0].target
    scope = names.scope_of(target)
    if len(scope.bindings.get(target.value, [])) != 1:
        return None
    for read in names.loads_in(scope, target.value):
        use, _ = data_use(names, read)  # type: ignore[arg-type]
        if use != "read":
            return True
    return False


def name_written_in_place(names: NameIndex, name: cst.Name) -> bool:
    """Whether the variable ``name`` reads is written in place anywhere in its scope
    (``x.add_(...)``, ``x[i] = v``, ``x += d``, ``fill_(x)``), under any of its bindings."""
    found = names.lookup(name.value, names.scope_of(name))
    if found is None:
        return False
    scope, bindings = found
    if any(binding.kind == "augassign" for binding in bindings):
        return True
    return any(data_use(names, read)[0] == "inplace" for read in names.loads_in(scope, name.value))


# ------------------------------------------------------------ one-row batches
_ROW_REDUCTIONS = frozenset({"max", "min", "argmax", "argmin"})


def one_element_reason(names: NameIndex, expr: cst.BaseExpression) -> str | None:
    """Why ``expr`` holds exactly one element: the indices or values of a reduction over
    dim 1 (``q.max(1)[1]``, ``out.argmax(1)``) of a module output whose input is a batch
    of one (``x.unsqueeze(0)``, through ``Variable(...)`` and device moves). Before torch
    0.4 ``t.data[0]`` of such a tensor was a Python number (an action, a token); today it
    is a 0-dim tensor, and ``.item()`` is the number. The output's other dimensions are
    not seen (a sequence model's ``(1, T, C)`` output keeps ``T``), so what rests on this
    is an unsafe fix."""
    expr = _reaching_value(names, expr)
    reduced: cst.BaseExpression | None = None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(
            expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value,
                                                           cst.Integer):
        expr = _reaching_value(names, expr.value)
        if isinstance(expr, cst.Call) and _over_dim_one(names, expr, ("max", "min")):
            reduced = _reduced_operand(names, expr)
    elif isinstance(expr, cst.Call) and _over_dim_one(names, expr, ("argmax", "argmin")):
        reduced = _reduced_operand(names, expr)
    if reduced is None:
        return None
    output = _reaching_value(names, reduced)
    if not isinstance(output, cst.Call) or not output.args or output.args[0].keyword \
            is not None or output.args[0].star:
        return None
    if not _batch_of_one(names, output.args[0].value, 0):
        return None
    return "a reduction over dim 1 of a model output for a batch of one (`.unsqueeze(0)`)"


def _reaching_value(names: NameIndex, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` seen through ``.data``, device and dtype moves, and names whose reaching
    binding is one plain assignment."""
    for _ in range(_MAX_DEPTH):
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in _SAME_SHAPE and expr.func.attr.value != "type":
            expr = expr.func.value
        elif isinstance(expr, cst.Name):
            bindings = reaching_bindings(names, expr)
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
                return expr
            expr = bindings[0].value
        else:
            return expr
    return expr


def _over_dim_one(names: NameIndex, call: cst.Call, methods: tuple[str, ...]) -> bool:
    """``x.max(1)`` / ``torch.max(x, 1)`` / ``x.argmax(dim=1)``, without ``keepdim``."""
    qualified = names.qualified_name(call.func) or ""
    if isinstance(call.func, cst.Attribute) and not qualified.startswith("torch."):
        method, dims = call.func.attr.value, call.args
    elif qualified.startswith("torch.") and qualified.count(".") == 1:
        method, dims = qualified.split(".")[-1], call.args[1:]
    else:
        return False
    if method not in methods or method not in _ROW_REDUCTIONS or len(dims) != 1:
        return False
    dim = dims[0]
    return (dim.keyword is None or dim.keyword.value == "dim") and isinstance(
        dim.value, cst.Integer) and dim.value.value == "1"


def _reduced_operand(names: NameIndex, call: cst.Call) -> cst.BaseExpression | None:
    if isinstance(call.func, cst.Attribute) and not (
            names.qualified_name(call.func) or "").startswith("torch."):
        return call.func.value
    return call.args[0].value if call.args else None


def _batch_of_one(names: NameIndex, expr: cst.BaseExpression, depth: int) -> bool:
    """``expr`` is ``t.unsqueeze(0)`` (a batch of one), seen through ``Variable(...)``
    (the torch class or a file's own wrapper of it), device moves and names."""
    if depth > _MAX_DEPTH:
        return False
    expr = _reaching_value(names, expr)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value == "unsqueeze":
        return len(expr.args) == 1 and isinstance(expr.args[0].value, cst.Integer) and \
            expr.args[0].value.value == "0"
    wrapper = names.qualified_name(func) or (func.value if isinstance(func, cst.Name) else "")
    if wrapper.split(".")[-1] == "Variable" and expr.args and expr.args[0].keyword is None:
        return _batch_of_one(names, expr.args[0].value, depth + 1)
    return False


def _scalar_reason_with(names: NameIndex, receiver: cst.BaseExpression,
                        flags: tuple[Slot[bool], ...]) -> str | None:
    """:func:`scalar_reason` asked with the unsafe tier's relaxations ``flags`` switched on
    in the file's memo for that one question."""
    for flag in flags:
        names.memo[flag] = True
    try:
        return scalar_reason(names, receiver)
    finally:
        for flag in flags:
            names.memo.pop(flag)
