"""Unqualified names of torch's tensor functions and methods, one set per concept.

``torch.zeros`` and ``x.float()`` are named here by their last part: the analyses check
the qualifier (``torch.``, a tensor receiver) themselves. Purpose-specific sets are built
from the concept sets below, so that a method added to a concept reaches every question
that asks about the concept. Plain data, no LibCST (the ``ast`` project summary reads it
too).
"""

from __future__ import annotations

# ------------------------------------------------------------------ factories
LEGACY_CONSTRUCTORS = frozenset({"Tensor", "FloatTensor", "DoubleTensor", "HalfTensor",
                                 "LongTensor", "IntTensor", "ShortTensor", "ByteTensor",
                                 "CharTensor", "BoolTensor"})
"""``torch.FloatTensor(...)`` and its kin: typed constructors from before ``torch.tensor``."""
LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
                            "randn_like", "randint_like"})
"""Factories of a tensor shaped like their argument, on its device (and of its dtype unless
``dtype=`` is given); measured on torch 2.13 with a ``meta`` tensor, whose device each keeps."""
FACTORY_FUNCTIONS = LIKE_FACTORIES | {
    "tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
    "arange", "range", "linspace", "logspace", "eye",
}
TENSOR_FACTORIES = FACTORY_FUNCTIONS | LEGACY_CONSTRUCTORS
"""``torch.*`` calls that return a fresh tensor in new memory, a leaf without grad unless
asked (``requires_grad=True``; measured on torch 2.13 for ``range``, ``ShortTensor`` and
``CharTensor`` too)."""
FACTORY_INTEGER_RESULT = {
    "zeros": "no", "ones": "no", "empty": "no", "rand": "no", "randn": "no", "linspace": "no",
    "logspace": "no", "eye": "no", "full": "unknown", "tensor": "unknown", "randint": "yes",
    "randperm": "yes", "arange": "unknown", "range": "no", "Tensor": "no", "FloatTensor": "no",
    "DoubleTensor": "no", "HalfTensor": "no", "LongTensor": "yes", "IntTensor": "yes",
    "ShortTensor": "yes", "ByteTensor": "yes", "CharTensor": "yes", "BoolTensor": "yes",
    "zeros_like": "like", "ones_like": "like", "empty_like": "like", "full_like": "like",
    "rand_like": "no", "randn_like": "no", "randint_like": "like",
}
"""Each factory's result without a ``dtype=``: integer (yes), floating (no), decided by the
data (unknown), or the argument's dtype (like)."""
assert set(FACTORY_INTEGER_RESULT) == TENSOR_FACTORIES, "one answer per factory"
DATA_SHARING_FACTORIES = frozenset({"from_numpy", "as_tensor"})
"""Tensors made from existing data, which may share its memory."""
NEW_OBJECT_FACTORIES = TENSOR_FACTORIES | {"from_numpy"}
"""``torch.*`` calls that return a new tensor object without history on every call (a
leaf nothing else holds): ``requires_grad_()`` on the result changes no other tensor.
``from_numpy`` shares the array's memory but is a new tensor each time; ``as_tensor`` is not
one (it returns its argument itself when that is already a tensor of the dtype and device)."""

# ------------------------------------------------------------------ metadata
METADATA_READS = frozenset({"size", "shape", "numel", "nelement", "dim", "ndimension", "dtype",
                            "device", "is_cuda", "element_size"})
"""Attributes and methods that give a tensor's metadata as a Python value (``type()`` without
an argument too; with one it is a cast)."""
NUMBER_METHODS = frozenset({"item", "size", "dim", "numel"})
"""Tensor methods whose result is a Python number (or a ``torch.Size``), never a tensor."""
FRESH_LIKE_METHODS = frozenset({"new", "new_zeros", "new_ones", "new_empty", "new_full",
                                "new_tensor"})
"""``t.new_zeros(...)`` and its kin: a fresh tensor with ``t``'s dtype and device only."""
SHAPE_TEMPLATE_METHODS = frozenset({"view_as", "reshape_as", "expand_as", "type_as",
                                    "resize_as_"})
"""``y.view_as(t)`` and its kin read only the argument's shape or dtype (``resize_as_``:
an optimizer's fresh state buffer taking its parameter's shape).

Measured on torch 2.13 (``docs/measurements/metadata_reads.py``): for a ``t`` that requires
grad, none of these, nor the ``_like`` factories or the ``new_*`` methods, lets a gradient reach
``t``, and each gives the same shape, dtype, device and ``requires_grad`` through ``t`` as
through ``t.detach()``; the metadata reads are equal on both and are not tensors."""

# ------------------------------------------------------------------ conversions
DEVICE_METHODS = frozenset({"to", "cuda", "cpu"})
FLOAT_CASTS = frozenset({"float", "double", "half", "bfloat16"})
"""Floating-point casts; ``nn.Module`` has the same four methods."""
COMPLEX_CASTS = frozenset({"cfloat", "cdouble"})
INTEGER_CASTS = frozenset({"long", "int", "short", "byte", "char", "bool"})
CAST_METHODS = FLOAT_CASTS | COMPLEX_CASTS | INTEGER_CASTS
CONVERSIONS = DEVICE_METHODS | CAST_METHODS | {"type"}
"""Methods that return the receiver's values converted: same shape, no grad where the
receiver has none (measured on torch 2.13 for every cast, ``cpu`` and ``type``; the integer
casts drop grad even from a receiver that requires it, ``cfloat``/``bfloat16`` keep it)."""
COPIES = frozenset({"clone", "contiguous", "detach"})
"""Methods that return the receiver's values, copied or detached: same shape and dtype."""

NON_BLOCKING_METHODS = frozenset({"cuda", "to", "type", "copy_"})
"""The tensor methods that took ``async=`` in torch 0.3/0.4 and take ``non_blocking=`` now
(``Tensor.cuda``, ``.to``, ``.type``, ``.copy_``; measured on torch 2.13)."""

# ------------------------------------------------------------------ views
SWAPPING_METHODS = frozenset({"transpose", "swapaxes", "swapdims"})
"""Methods that swap two dimensions: one operation under three names."""
REORDERING_METHODS = SWAPPING_METHODS | {"permute", "t", "movedim", "moveaxis", "expand",
                                         "expand_as"}
"""Tensor methods whose result has reordered or zero strides (not contiguous in general)."""
VIEW_METHODS = REORDERING_METHODS | {
    "view", "view_as", "reshape", "squeeze", "unsqueeze", "narrow", "select", "flatten",
    "unfold", "diagonal", "as_strided", "unflatten",
}
"""Methods whose result may share the receiver's memory (``reshape`` and ``flatten`` do
whenever they can). Measured on torch 2.13: ``swapaxes``, ``swapdims``, ``moveaxis`` and
``as_strided`` return a view (``_base`` is the receiver) with its dtype and device."""
SHAPE_ONLY_METHODS = frozenset({"view", "view_as", "reshape", "unsqueeze", "expand",
                                "expand_as", "detach"})
"""Methods that lay a tensor's values out for broadcasting without changing or reordering
them (``m.view(-1, 1)`` of a per-row maximum)."""

# ------------------------------------------------- torch 0.3's number-first overloads
NUMBER_FIRST_METHODS: dict[str, tuple[int, str]] = {
    "add": (2, "alpha"), "add_": (2, "alpha"), "sub": (2, "alpha"), "sub_": (2, "alpha"),
    "addcmul": (3, "value"), "addcmul_": (3, "value"),
    "addcdiv": (3, "value"), "addcdiv_": (3, "value"),
}
"""Tensor methods with a deprecated overload whose first positional argument is the number
(``x.add_(-lr, grad)``): how many positional arguments that overload takes, and the keyword
the number has been since torch 0.4. With that many positional arguments no other overload
matches (``alpha``/``value`` are keyword-only): measured on torch 2.13, ``x.add_(y, 0.5)``
raises ``TypeError``."""
NUMBER_FIRST_MATRIX_METHODS = frozenset({
    "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_", "addbmm", "addbmm_",
    "baddbmm", "baddbmm_",
})
"""Tensor methods whose deprecated overloads put ``beta`` (and ``alpha``) first, before the
two tensors: ``dist.addmm_(1, -2, x, y.t())`` is ``dist.addmm_(x, y.t(), beta=1, alpha=-2)``.
Measured on torch 2.13 (docs/measurements/number_first_matrix_overloads.txt): each form with
three or four positional arguments warns "This overload of addmm_ is deprecated" and is
bitwise equal to the keyword form, and with the numbers last (``x.addmm_(a, b, 1, -2)``)
every one raises ``TypeError``: ``beta``/``alpha`` are keyword-only, so with that many
positional arguments only the deprecated overload matches."""
NUMBER_FIRST_FUNCTIONS: dict[str, tuple[int, str]] = {
    "torch.add": (3, "alpha"), "torch.sub": (3, "alpha"),
    "torch.addcmul": (4, "value"), "torch.addcdiv": (4, "value"),
}
"""The same overloads of the torch functions (the input tensor first): ``torch.add(x, a, y)``."""

# ------------------------------------------------------------------ reductions
WHOLE_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "amax", "amin", "std",
                              "var", "logsumexp", "dot", "all", "any"})
"""Reductions that, called with no argument, reduce a whole tensor to a 0-dim one (and a numpy
array to a numpy scalar: ``[0]`` raises on both; docs/measurements/zero_dim_values.txt)."""
TENSOR_ONLY_METHODS = frozenset({"detach", "cpu", "cuda", "float", "long", "double", "half"})
"""Methods a torch tensor has and a numpy array or a DataFrame has not (measured for numpy:
docs/measurements/zero_dim_values.txt): ``mask.float().sum()`` is a tensor's sum."""
ELEMENTWISE_UNARY = frozenset({"exp", "log", "sqrt", "abs", "neg", "sigmoid", "tanh", "relu",
                               "reciprocal", "square", "exp_", "log_", "sqrt_", "abs_", "neg_",
                               "sigmoid_", "tanh_", "relu_", "reciprocal_", "square_"})
"""Elementwise methods of one tensor: the result has the receiver's shape (a 0-dim loss's
``.exp()`` is 0-dim; measured in docs/measurements/zero_dim_values.txt)."""
ELEMENTWISE_ARITHMETIC = frozenset({"mul", "div", "add", "sub", "pow", "clamp", "mul_", "div_",
                                    "add_", "sub_", "pow_", "clamp_"})
"""Elementwise arithmetic methods: the receiver's shape with a number for argument, and always
for the in-place ones (``_``), which cannot broadcast the receiver to a bigger shape (measured:
a 0-dim ``add_`` of a 3-vector raises)."""
