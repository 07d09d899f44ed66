"""What a name says, without LibCST: shared by the inference analysis, the prefilter and the
project summary, which must agree on it."""

from __future__ import annotations

import re

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def name_tokens(name: str) -> list[str]:
    """``evalEpoch``/``eval_epoch`` -> ``["eval", "epoch"]``."""
    spaced = _CAMEL.sub(r"\1_\2", name)
    return [token for token in spaced.lower().split("_") if token]


TRAINING_TOKENS = frozenset({"train", "training", "fit", "step", "update", "optimize", "backward",
                             "hook", "forward", "loss", "grad", "attack", "adversarial",
                             "saliency", "adapt"})


METRIC_TOKENS = frozenset({"loss"})
"""Training tokens that, beside an evaluation token, name what is measured: ``evaluate_loss``,
``compute_val_loss`` report a loss on held-out data, they do not train on it."""


def named_for_training(name: str) -> bool:
    """The name says training (``train_epoch``, ``compute_loss``, ``saliency``), unless its only
    training word is a measured quantity beside an evaluation word (``evaluate_loss``)."""
    tokens = name_tokens(name)
    training = {token for token in tokens if token in TRAINING_TOKENS}
    if not training:
        return False
    return not (training <= METRIC_TOKENS and not EVAL_TOKENS.isdisjoint(tokens))


def never_a_root(name: str) -> bool:
    """Whether a function of this name is never an inference root, whatever its tokens: a
    pytest test, a hook (``on_*``, ``forward``, ``__call__``), or named for training."""
    if name.startswith(("test_", "Test", "on_")) or name in ("forward", "__call__"):
        return True
    return named_for_training(name)


EVAL_TOKENS = frozenset({"evaluate", "evaluation", "eval", "validate", "validation", "val",
                         "valid", "test", "testing"})
"""Names whose result is a metric: a caller never differentiates it."""
PREDICT_TOKENS = frozenset({"predict", "prediction", "infer", "inference", "score", "scoring"})
"""Names that may be library APIs whose result other files could differentiate."""
EVALUATION_WORDS = ("test", "val", "eval")
"""Substrings that mark a name as evaluation's (``val_loader``, ``test_dataloader=``)."""


def named_for_evaluation(name: str) -> bool:
    """``test_dataloader``, ``val_loader``, ``evalset``: not the data a trainer trains on."""
    lowered = name.lower()
    return any(word in lowered for word in EVALUATION_WORDS)


_MODEL_NAME = re.compile(
    r"^(model|module|net|network|classifier|encoder|decoder|generator|discriminator|backbone|"
    r"policy|critic|actor|student|teacher|bert|gpt|transformer|.*model|.*net)$",
    re.IGNORECASE,
)


_FACTORY_NAME = re.compile(
    r"^_*(get|make|build|create|load|construct|instantiate|setup|prepare)_", re.IGNORECASE)
"""A verb first: ``get_dummy_model``, ``build_model``, ``load_model`` name what makes or
fetches a model (a factory, a pytest fixture handing one out), not the model."""


def named_like_model(name: str) -> bool:
    """``model``, ``net``, ``encoder``, ``resnet``, ``ema_model``...: what code names its models.

    A name is weak evidence: it may withhold a fix (a loaded ``model`` could be a
    whole pickled module) or justify an *unsafe* one, never a safe one. A name that starts
    with a verb (``get_model``, ``build_net``) is a function's: calling it makes a model.
    """
    return bool(_MODEL_NAME.match(name)) and not _FACTORY_NAME.match(name)
