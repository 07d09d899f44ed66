"""Which classes of torch (and of the libraries built on it) are modules, datasets, loaders.

One vocabulary, read by the per-file analysis (:mod:`~torchfix_codemods.analysis.facts.modules`,
on LibCST) and by the project index (:mod:`~torchfix_codemods.analysis.project.index`,
on the standard library's ``ast``, so that building the index imports no LibCST).
Everything here is a question about a *qualified name* (``torch.nn.Linear``), never
about syntax.
"""

from __future__ import annotations

import re

from torchfix_codemods.analysis.vocabulary.tensor_methods import DEVICE_METHODS, FLOAT_CASTS

NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
"""``torch.nn.Module`` itself, the base every module class derives from."""

NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer",
                         "UninitializedParameter", "UninitializedBuffer"})
"""Capitalised names under ``torch.nn`` that are not ``nn.Module`` classes."""

MODULE_BASES = frozenset({
    "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "pytorch_lightning.core.module.LightningModule", "lightning.LightningModule",
    "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel",
})
"""Module classes outside ``torch.nn`` that user classes commonly subclass."""

_NOT_MODEL_FACTORIES = frozenset({"get_weight", "get_model_weights", "get_model_builder",
                                  "list_models"})
DATASET_CLASSES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
    "torch.utils.data.TensorDataset", "torch.utils.data.dataset.Dataset",
    "torch.utils.data.dataset.IterableDataset", "torch.utils.data.dataset.TensorDataset",
})
MODE_DEPENDENT_LAYERS = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "RNN", "LSTM", "GRU",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "MultiheadAttention", "RReLU",
})
"""``torch.nn`` layers whose forward depends on ``training``: dropout (also inside recurrent,
transformer and attention layers), batch statistics (instance norm when it tracks running
statistics), RReLU's random slopes."""
RECURRENT_DROPOUT_POSITION = {"RNN": 6, "LSTM": 5, "GRU": 5}
"""Where ``dropout`` sits among the positional parameters of torch's recurrent layers: the
only thing they read ``training`` for (between stacked layers). Built without it, or with
``dropout=0``, their forward is the same in both modes (measured on torch 2.13:
docs/measurements/recurrent_modes.py)."""
MODE_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
MODE_FUNCTIONS = ("dropout", "batch_norm", "instance_norm", "rrelu")
"""``torch.nn.functional`` calls that take ``training=``/read batch statistics."""
CHAINABLE_METHODS = DEVICE_METHODS | FLOAT_CASTS | {"eval", "train", "requires_grad_", "to_empty"}
"""Methods that return the module they are called on."""

DATASET_WORKER_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
"""Methods of a dataset that a loader runs in its worker processes."""
DATALOADER_CLASSES = frozenset({"torch.utils.data.DataLoader",
                                "torch.utils.data.dataloader.DataLoader"})
DATA_PARALLEL_CLASSES = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})
DDP_CLASSES = frozenset({"torch.nn.parallel.DistributedDataParallel",
                         "torch.nn.parallel.distributed.DistributedDataParallel"})
PROCESS_GROUP_CALLS = ("torch.distributed.init_process_group", "torch.distributed.run")
"""A file that calls these already has a distributed path of its own (TFC301 leaves it)."""


def is_module_class(qualified: str) -> bool:
    """``torch.nn.Linear``, ``torchvision.models.ResNet``, ``lightning.LightningModule``..."""
    last = qualified.rsplit(".", 1)[-1]
    if not last[:1].isupper() or last in NOT_MODULES:
        return False
    if qualified.startswith("torch.nn.") and not qualified.startswith(
            ("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")):
        return True
    if qualified.startswith("torchvision.models."):
        return not last.endswith("Weights")  # `ResNet18_Weights` is an enum of weights
    return qualified in MODULE_BASES


def is_module_factory(qualified: str) -> bool:
    """``torchvision.models.resnet18``: a function that returns a freshly built model."""
    last = qualified.rsplit(".", 1)[-1]
    return qualified.startswith("torchvision.models.") and last[:1].islower() and \
        last not in _NOT_MODEL_FACTORIES


def is_dataset_class(qualified: str) -> bool:
    return qualified in DATASET_CLASSES or (
        qualified.startswith("torchvision.datasets.") and qualified.rsplit(".", 1)[-1][:1].isupper())


def is_dataloader_class(qualified: str) -> bool:
    return qualified in DATALOADER_CLASSES


RECURRENT_CLASSES = frozenset({"RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"})
"""``torch.nn`` recurrent layers, whose parameters are not named ``weight``/``bias``."""
_RECURRENT_PARAMETER = re.compile(r"(weight|bias)_(ih|hh)(_l\d+(_reverse)?)?|weight_hr_l\d+(_reverse)?")


def is_module_parameter(attr: str, built_from: str | None) -> bool:
    """``attr`` of a module built from ``built_from`` (qualified, or None when unknown) is one
    of its parameters: ``weight``/``bias`` of any layer, and ``bias_ih``, ``weight_hh_l0``,
    ``bias_ih_l1_reverse``... of a ``torch.nn`` recurrent layer (its ``named_parameters()``
    on torch 2.13: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` for a cell; with
    ``_l<k>`` and ``_reverse`` for the layers, ``weight_hr_l<k>`` with ``proj_size``)."""
    if attr in ("weight", "bias"):
        return True
    if built_from is None or not built_from.startswith("torch.nn.") or \
            built_from.rsplit(".", 1)[-1] not in RECURRENT_CLASSES:
        return False
    return _RECURRENT_PARAMETER.fullmatch(attr) is not None
RECURRENT_PARAMETER_PREFIX = re.compile(r"(weight|bias)_(ih|hh|hr)")
"""A quick test before asking what built the module (:func:`is_module_parameter`)."""
