"""Qualified names of torch APIs, one set per concept: the one place a ``"torch.…"`` set lives.

The per-file facts (``facts/``), the rules and the ``ast`` project summary read these
names; a purpose-specific set is built here from the concept sets, never re-typed where it
is used. Plain data: no LibCST and nothing of the package, so both parsers can import it
(``tests/test_architecture.py`` checks that, and that no set of torch names is defined
outside this wing). Classes of modules, datasets and loaders are in :mod:`.torch_classes`.
"""

from __future__ import annotations

# ------------------------------------------------------------------ autograd and grad mode
DISABLES_GRAD = frozenset({
    "torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
    "torch.inference_mode", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.inference_mode",
})
"""Context managers and decorators under which autograd records nothing."""
ENABLES_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad",
                          "torch.autograd.grad_mode.enable_grad"})
_PUBLIC_SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                                      "torch.autograd.grad_mode.set_grad_enabled"})
SET_GRAD_ENABLED = _PUBLIC_SET_GRAD_ENABLED | {"torch._C._set_grad_enabled"}
SETS_GRAD_MODE = DISABLES_GRAD | ENABLES_GRAD | _PUBLIC_SET_GRAD_ENABLED
"""Everything that decides the grad mode of the code it wraps."""
AUTOGRAD_FUNCTION_CLASSES = frozenset({"torch.autograd.Function",
                                       "torch.autograd.function.Function"})
SETS_OWN_GRAD_MODE = frozenset({"torch.set_grad_enabled", "torch.enable_grad"})
"""Calls by which a function decides its own grad mode (TFC202 leaves such a function
alone); the spellings as TFC202 has always matched them."""
AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})
AUTOGRAD_GRAD = frozenset({"torch.autograd.grad"})
AUTOGRAD_CALLS = AUTOGRAD_BACKWARD | AUTOGRAD_GRAD
"""``torch.autograd``'s own entry points into a backward pass."""
DIFFERENTIATING_FUNCTIONS = AUTOGRAD_CALLS | frozenset({
    "torch.autograd.functional.jacobian",
    "torch.autograd.functional.hessian", "torch.func.grad", "torch.func.vjp", "torch.func.jacrev",
})
"""Functions that differentiate what they are given."""

# ------------------------------------------------------------------ tensors
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
VARIABLE_CLASSES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
TENSOR_ANNOTATIONS = PARAMETER_CLASSES | {"torch.Tensor", "torch.FloatTensor"}
"""Annotations that say a name holds a tensor."""
TENSOR_CLASSES = TENSOR_ANNOTATIONS | VARIABLE_CLASSES
LEGACY_TENSOR_DTYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}
"""Legacy tensor types and the dtype each one means."""
TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.",
                     "torch.special.", "torch.nn.init.", "torch.sparse.")
"""Namespaces whose functions return one tensor, except :data:`NOT_TENSOR_FUNCTIONS`."""
NOT_TENSOR_FUNCTIONS = frozenset({
    "torch.linalg.eigh", "torch.linalg.eig", "torch.linalg.svd", "torch.linalg.qr",
    "torch.linalg.slogdet", "torch.linalg.lstsq", "torch.linalg.lu", "torch.linalg.lu_factor",
    "torch.linalg.inv_ex", "torch.linalg.cholesky_ex", "torch.linalg.ldl_factor",
    "torch.nn.functional.multi_head_attention_forward", "torch.nn.init.calculate_gain",
    "torch.nn.init._calculate_fan_in_and_fan_out",
})
NOT_TENSOR_PACKAGES = {
    "numpy": "numpy", "pandas": "pandas", "argparse": "argparse", "scipy": "scipy",
    "PIL": "PIL", "cv2": "OpenCV", "sklearn": "scikit-learn", "torchvision.datasets": "a "
    "torchvision dataset", "torchtext.datasets": "a torchtext dataset",
    "torch.utils.data": "torch.utils.data (a dataset or loader)", "datasets": "a "
    "Hugging Face dataset", "math": "math", "random": "random", "json": "json",
    "collections": "collections", "pathlib": "pathlib", "os": "os",
}
"""Packages whose calls return no tensor, with the words a reason uses for them."""
PACKED_SEQUENCE = frozenset({"torch.nn.utils.rnn.pack_padded_sequence",
                             "torch.nn.utils.rnn.pack_sequence",
                             "torch.nn.utils.rnn.PackedSequence"})
SHAPE_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones",
                             "torch.empty", "torch.full"})
"""Factories whose positional arguments are the shape."""
DATA_CONVERSIONS = frozenset({"torch.as_tensor", "torch.asarray"})
FILLED_FACTORIES = frozenset({"torch.zeros", "torch.ones"})
"""Factories of a filled tensor whose only argument may be its size: ``torch.zeros(1)``."""
LITERAL_TENSOR_FUNCTIONS = frozenset({"torch.tensor", "torch.as_tensor"})
"""Functions building a tensor from a (nested) list literal: ``torch.tensor([0.])``."""
"""A tensor of existing data: a tensor argument keeps its device, dtype and grad."""
CONCATENATIONS = frozenset({"torch.cat", "torch.stack", "torch.concat", "torch.vstack",
                            "torch.hstack", "torch.concatenate"})
"""Functions that join a sequence of tensors into one."""
DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type",
                                    "torch.device"})
"""What changes the device factories allocate on (``torch.device`` as a context manager)."""

# ------------------------------------------------------------------ layout and rank
REORDERING_FUNCTIONS = frozenset({"torch.permute", "torch.transpose", "torch.t", "torch.swapaxes",
                                  "torch.swapdims", "torch.movedim", "torch.moveaxis"})
RANK_KEEPING_FUNCTIONS = frozenset({
    "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
    "torch.nn.functional.dropout", "torch.nn.functional.relu", "torch.nn.functional.gelu",
    "torch.nn.functional.silu", "torch.softmax", "torch.log_softmax", "torch.sigmoid",
    "torch.tanh", "torch.relu", "torch.exp", "torch.abs", "torch.dropout",
})

# ------------------------------------------------------------------ modules
MODULE_WRAPPERS = frozenset({
    "torch.nn.utils.weight_norm", "torch.nn.utils.spectral_norm",
    "torch.nn.utils.parametrizations.weight_norm", "torch.nn.utils.parametrizations.spectral_norm",
    "torch.nn.utils.parametrizations.orthogonal", "torch.nn.utils.parametrize.register_parametrization",
})
"""Functions that return the module they are given, reparametrized."""
TUPLE_OUTPUT_MODULES = frozenset({"torch.nn.RNN", "torch.nn.LSTM", "torch.nn.GRU",
                                  "torch.nn.MultiheadAttention",
                                  "torch.nn.AdaptiveLogSoftmaxWithLoss"})
ITERABLE_MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential"})
"""Containers whose iteration yields their submodules (a ``ModuleDict`` yields keys)."""
COMPILERS = ("torch.jit", "torch.compile")
"""Prefixes of the decorators that script or compile a function (TorchScript, dynamo)."""
TRACERS = frozenset({"torch.jit.trace", "torch.jit.trace_module"})
"""A traced module replays the operations recorded in the mode it was traced in: ``eval()``
changes nothing (measured on torch 2.13: a Dropout traced in train mode still drops after
``.eval()``; a scripted one does not)."""

# ------------------------------------------------------------------ losses
_F = "torch.nn.functional."
SOFTMAX_FUNCTIONS = {"torch.softmax": "torch.log_softmax", _F + "softmax": _F + "log_softmax",
                     "torch.special.softmax": "torch.special.log_softmax"}
"""Softmax functions and the log-softmax that replaces each."""
SOFTMAX_MODULES = {"torch.nn.Softmax": "torch.nn.LogSoftmax",
                   "torch.nn.modules.activation.Softmax": "torch.nn.LogSoftmax"}
CE_FUNCTIONS = frozenset({_F + "cross_entropy"})
CE_MODULES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"})
NLL_FUNCTIONS = frozenset({_F + "nll_loss"})
NLL_MODULES = frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"})
LOG_FUNCTIONS = frozenset({"torch.log"})
SIGMOID_FUNCTIONS = frozenset({"torch.sigmoid", _F + "sigmoid", "torch.special.expit"})
SIGMOID_MODULES = frozenset({"torch.nn.Sigmoid", "torch.nn.modules.activation.Sigmoid"})
BCE_FUNCTION = _F + "binary_cross_entropy"
BCE_MODULES = frozenset({"torch.nn.BCELoss", "torch.nn.modules.loss.BCELoss"})

# ------------------------------------------------------------------ training
CLIP_FUNCTIONS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_norm",
})
"""torch's gradient clipping functions (``clip_grad_norm`` is the deprecated spelling)."""
CHECKPOINTS = frozenset({"torch.utils.checkpoint.checkpoint",
                         "torch.utils.checkpoint.checkpoint_sequential"})
"""Activation checkpointing (``use_reentrant``), not ``torch.save`` checkpoints."""
GRAD_SCALERS = frozenset({
    "torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
})
AUTOCASTS = frozenset({
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "torch.amp.autocast_mode.autocast",
})

# ------------------------------------------------------------------ devices and processes
def names_cuda_device(text: str) -> bool:
    """``"cuda"``, ``"cuda:0"``: a device string naming a CUDA device (``"cpu"``, ``"mps"``
    and ``"cudagraph"`` do not)."""
    return text == "cuda" or text.startswith("cuda:")


CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count",
                          "torch.cuda.is_initialized"})
"""``torch.cuda`` functions that do not initialise CUDA."""
ACCELERATOR_QUERIES = CUDA_QUERIES | {
    "torch.backends.mps.is_available", "torch.mps.is_available", "torch.accelerator.is_available",
    "torch.accelerator.current_accelerator", "torch.xpu.is_available",
}
"""Calls a file asks before it falls back to the CPU."""
DISTRIBUTED_SAMPLERS = frozenset({"torch.utils.data.distributed.DistributedSampler",
                                  "torch.utils.data.DistributedSampler"})
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group",
                                "torch.distributed.distributed_c10d.init_process_group"})

# ------------------------------------------------------------------ releases
NEWER_API = (
    "torch.amp.", "torch.autocast", "torch.func.", "torch.vmap", "torch.compile",
    "torch.compiler.", "torch.export.", "torch.inference_mode", "torch.nn.utils.parametrize",
    "torch.nn.utils.parametrizations.", "torch.serialization.add_safe_globals",
    "torch.serialization.safe_globals", "torch.linalg.", "torch.fft.", "torch.nn.attention.",
    "torch.nn.functional.scaled_dot_product_attention", "torch.accelerator.",
    "torch.set_default_device", "torch.get_default_device", "torch.backends.mps.",
    "torch.library.custom_op", "torch.library.register_fake", "torch.float8_",
    "torch.distributed.checkpoint.", "torch.distributed.tensor.",
    "torch.set_float32_matmul_precision", "torchvision.transforms.v2", "torchvision.tv_tensors",
    "torchvision.models.get_weight",
)
"""Qualified-name prefixes of torch APIs that older releases lack: a ``try`` that uses one
and an ``except`` that catches its absence form a compatibility fallback."""
NEWER_KEYWORDS = {
    "weights_only": ("torch.load",), "mmap": ("torch.load",),
    "use_reentrant": ("torch.utils.checkpoint.",), "weights": ("torchvision.models.",),
}
"""Keywords older releases of a function reject with ``TypeError``, by function prefix."""

# Distributed training: what a migration to one process per device must keep on rank 0.
RANK_ZERO = frozenset({
    "torch.save", "os.mkdir", "os.makedirs", "os.remove", "os.rename", "os.replace",
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "shutil.rmtree",
    "matplotlib.pyplot.savefig", "json.dump", "pickle.dump", "yaml.dump", "yaml.safe_dump",
    "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt",
    "torchvision.utils.save_image",
})
"""Calls that run on rank 0 only once migrated: two processes writing one file (or making
one directory after both saw it missing) race, and a copy of a file rank 0 is still writing
crashes (``torch.save(state, path)`` then ``shutil.copyfile(path, best)``). A matplotlib
figure's own ``fig.savefig(path)`` is recognised by its method name."""
EVERY_RANK_WRITERS = frozenset({
    "torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter", "logging.FileHandler", "logging.handlers.RotatingFileHandler",
})
"""Objects that write files for as long as they live: guarding the line that makes one is not
enough (every later use would need the guard too); TFC301 gives the other processes one that
writes nowhere where it can, and reports the rest."""
SUMMARY_WRITERS = frozenset({
    "torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter",
})
"""TensorBoard writers: they make a folder and an event file when built, and no argument makes
them write nowhere."""


LIBRARIES_THAT_PLACE_NOTHING = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "numpy", "scipy", "pandas", "sklearn",
    "matplotlib", "seaborn", "PIL", "cv2", "gym", "gymnasium", "tqdm", "h5py", "yaml",
})
"""Top-level packages whose objects stay on the CPU unless the program moves them: torch makes
tensors and parameters on the CPU by default, torchvision/torchaudio/torchtext build their
models and transforms there, and the others make no torch objects at all. A program importing
only these and the standard library, and naming no device, keeps everything on the CPU."""

LR_SCHEDULER_POSITIONALS = {
    "LRScheduler": 2, "_LRScheduler": 2, "LambdaLR": 3, "MultiplicativeLR": 3, "StepLR": 4,
    "MultiStepLR": 4, "ConstantLR": 4, "LinearLR": 5, "ExponentialLR": 3, "SequentialLR": 4,
    "PolynomialLR": 4, "CosineAnnealingLR": 4, "CosineAnnealingWarmRestarts": 5,
    "CyclicLR": 14, "OneCycleLR": 15, "ReduceLROnPlateau": 9,
}
"""The ``torch.optim.lr_scheduler`` classes that took ``verbose`` (removed: measured on torch
2.13, ``StepLR(opt, 1, verbose=True)`` raises ``TypeError``), with the number of parameters
their constructor takes positionally today, the optimizer included. ``verbose`` was the
last one, after these (``ReduceLROnPlateau``'s fifth, after ``patience``, before 2.2)."""
LR_SCHEDULER_CLASSES = frozenset(f"torch.optim.lr_scheduler.{name}"
                                 for name in LR_SCHEDULER_POSITIONALS)

MAXIMUM_FUNCTIONS = frozenset({"torch.max", "torch.amax"})
"""Reductions to the maximum along a dimension (``torch.max(y, dim)`` also returns indices)."""
