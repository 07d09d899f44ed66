"""Every rule's code, name, default state and module, and how ``select``/``ignore`` pick them.

A table, not an import of the rules: settings are validated, rule selections
resolved and cache keys computed without loading LibCST or any rule module,
so a cache hit answers in a fraction of the time a parse takes. The registry
checks at load time that this table and the rule classes agree, so a new rule
cannot be forgotten here (the error names the line to add).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

SYNTAX_ERROR_CODE = "TFC000"
LEGACY_KEYWORD_CODE = "TFC004"
PARSE_CODES = frozenset({SYNTAX_ERROR_CODE, LEGACY_KEYWORD_CODE})
"""Findings the engine makes itself, around parsing: no rule visitor runs for them."""


@dataclass(frozen=True)
class RuleEntry:
    """What is known about a rule without importing it."""

    code: str
    name: str
    module: str
    """The module of ``torchfix_codemods.rules`` that defines it (or the package, for a rule
    split into modules: it lists the class in ``RULES``)."""
    default_enabled: bool = True
    project_facts: tuple[str, ...] = ()
    """Cross-file facts the rule reads (its ``Rule.project_facts``): a run where such a rule
    is active builds the project index, and that file's results depend on other files."""


_MODULES = ("module-classes",)
_CHECKPOINTS = ("module-classes", "checkpoints")
_PAIRS = ("module-classes", "checkpoints", "checkpoint-pairs")
_SHARDS = ("module-classes", "loader-shards")
_CALLERS = ("module-classes", "callers")

CATALOG: tuple[RuleEntry, ...] = (
    RuleEntry("TFC000", "syntax-error", "syntax"),
    RuleEntry("TFC001", "torch-load-without-weights-only", "serialization", project_facts=_CHECKPOINTS),
    RuleEntry("TFC002", "torch-load-without-map-location", "serialization", project_facts=_CHECKPOINTS),
    RuleEntry("TFC003", "save-whole-module", "serialization", project_facts=_PAIRS),
    RuleEntry("TFC004", "async-keyword-argument", "syntax"),
    RuleEntry("TFC101", "numpy-on-tensor", "numpy_conversion", project_facts=_MODULES),
    RuleEntry("TFC102", "data-read", "data_attribute", project_facts=_MODULES),
    RuleEntry("TFC103", "data-inplace", "data_attribute", project_facts=_MODULES),
    RuleEntry("TFC104", "data-assign", "data_attribute", project_facts=_MODULES),
    RuleEntry("TFC105", "index-zero-dim", "zero_dim_index", project_facts=("module-classes",)),
    RuleEntry("TFC106", "variable-wrapper", "variable_wrapper"),
    RuleEntry("TFC107", "accumulate-loss-tensor", "loss_accumulation", project_facts=_MODULES),
    RuleEntry("TFC108", "log-of-sum-of-exp", "logsumexp"),
    RuleEntry("TFC109", "view-on-non-contiguous", "view_on_non_contiguous"),
    RuleEntry("TFC110", "inplace-update-of-leaf", "inplace_leaf_update"),
    RuleEntry("TFC201", "missing-eval", "inference_mode", project_facts=_CALLERS),
    RuleEntry("TFC202", "missing-no-grad", "inference_mode", project_facts=_CALLERS),
    RuleEntry("TFC203", "eval-not-restored", "inference_mode", project_facts=_CALLERS),
    RuleEntry("TFC204", "direct-forward", "direct_forward", project_facts=_MODULES),
    RuleEntry("TFC205", "validation-without-eval", "inline_validation"),
    RuleEntry("TFC301", "data-parallel", "data_parallel", project_facts=_SHARDS),
    RuleEntry("TFC302", "dataloader-workers-without-main-guard", "dataloader_processes"),
    RuleEntry("TFC303", "cuda-in-dataloader-worker", "dataloader_processes"),
    RuleEntry("TFC304", "hard-coded-cuda", "cuda_notes", default_enabled=False),
    RuleEntry("TFC305", "empty-cache-in-loop", "cuda_notes", default_enabled=False),
    RuleEntry("TFC306", "pin-memory-missing", "pin_memory", default_enabled=False),
    RuleEntry("TFC307", "distributed-sampler-without-set-epoch", "distributed_training"),
    RuleEntry("TFC308", "every-rank-saves", "distributed_training"),
    RuleEntry("TFC309", "ddp-state-dict-with-module-prefix", "distributed_training"),
    RuleEntry("TFC401", "cuda-amp", "deprecated_amp"),
    RuleEntry("TFC402", "functional-aliases", "functional_aliases"),
    RuleEntry("TFC403", "legacy-reduction", "legacy_reduction"),
    RuleEntry("TFC404", "checkpoint-use-reentrant", "checkpoint_reentrant"),
    RuleEntry("TFC405", "weight-norm", "weight_norm", project_facts=("module-classes", "checkpoints")),
    RuleEntry("TFC406", "removed-or-deprecated-function", "removed_functions"),
    RuleEntry("TFC407", "requires-grad-typo", "requires_grad_typo"),
    RuleEntry("TFC408", "torchvision-pretrained", "torchvision_pretrained"),
    RuleEntry("TFC409", "torch-internals-and-hints", "internals_and_hints"),
    RuleEntry("TFC410", "dataloader-without-workers", "dataloader_workers", default_enabled=False),
    RuleEntry("TFC411", "private-pytree-registration", "pytree_registration"),
    RuleEntry("TFC412", "retain-variables", "legacy_keywords"),
    RuleEntry("TFC413", "number-first-overload", "number_first_overloads"),
    RuleEntry("TFC414", "scheduler-verbose", "scheduler_verbose"),
    RuleEntry("TFC501", "softmax-into-cross-entropy", "loss_inputs"),
    RuleEntry("TFC502", "sigmoid-into-bce", "loss_inputs"),
    RuleEntry("TFC503", "missing-zero-grad", "missing_zero_grad"),
    RuleEntry("TFC504", "zero-grad-set-to-none-false", "zero_grad_set_to_none"),
    RuleEntry("TFC505", "zero-grad-between-backward-and-step", "training_order"),
    RuleEntry("TFC506", "clip-before-backward", "training_order"),
    RuleEntry("TFC507", "scheduler-before-optimizer", "training_order"),
    RuleEntry("TFC508", "clip-scaled-gradients", "grad_scaler"),
    RuleEntry("TFC509", "step-around-scaler", "grad_scaler"),
    RuleEntry("TFC510", "missing-scaler-update", "grad_scaler"),
    RuleEntry("TFC511", "grad-scaler-with-bfloat16", "grad_scaler", default_enabled=False),
    RuleEntry("TFC512", "accumulation-without-loss-division", "gradient_accumulation"),
)


ENGINE_FACTS: tuple[str, ...] = ("version-flags", "imported-names")
"""Cross-file facts the engine's own policies read, whatever rules are selected: a finding
or fix inside ``if LEGACY:``, where ``LEGACY`` is another file's torch-version flag, is
left alone for every rule (compatibility guards); an import another file reads from this
one is never removed as unused. Were the index built only for rules that
declare a fact, ``--select TFC401`` would rewrite such a branch that the default selection
leaves alone: results must not depend on the selection."""


def reads_project(codes: Iterable[str]) -> bool:
    """Whether a run of these rules reads the project index: a rule that declares facts
    does, and while the engine's own policies read any (:data:`ENGINE_FACTS`), every rule but
    TFC000 (whose findings no policy filters) does."""
    table = entries_by_code()
    return any(code in table and (bool(table[code].project_facts) or (
        bool(ENGINE_FACTS) and code != SYNTAX_ERROR_CODE)) for code in codes)


class UnknownRuleCode(ValueError):
    """A code or prefix that matches no rule."""


@cache
def entries_by_code() -> dict[str, RuleEntry]:
    return {entry.code: entry for entry in CATALOG}


def entry(code: str) -> RuleEntry:
    try:
        return entries_by_code()[code]
    except KeyError:
        raise UnknownRuleCode(code) from None


def select(selector: str) -> list[RuleEntry]:
    """Rules a code or prefix selects (``TFC1``, ``TFC101``, ``ALL``).

    A prefix selects only rules that are on by default; naming a rule's full
    code selects it even when it is off by default, and ``ALL`` selects every
    rule, as in ruff.
    """
    selector = selector.strip().upper()
    if selector == "ALL":
        return list(CATALOG)
    if selector in entries_by_code():
        return [entries_by_code()[selector]]
    found = [e for e in CATALOG if e.code.startswith(selector)]
    if not found:
        raise UnknownRuleCode(selector)
    return [e for e in found if e.default_enabled]


def covered(selector: str) -> list[RuleEntry]:
    """Every rule under a code or prefix, on by default or not (what ``ignore`` removes)."""
    selector = selector.strip().upper()
    if selector == "ALL":
        return list(CATALOG)
    found = [e for e in CATALOG if e.code.startswith(selector)]
    if not found:
        raise UnknownRuleCode(selector)
    return found


def resolve_selection(
    selected: Iterable[str] | None, extend_select: Iterable[str], ignore: Iterable[str]
) -> frozenset[str]:
    """ruff's order: ``select`` (or the defaults), plus ``extend-select``, minus ``ignore``.

    Every selection keeps TFC000 unless it is ignored: a file that does not parse is
    checked by none of the selected rules, and saying so is not the selection's choice.
    """
    if selected is None:
        chosen = {e.code for e in CATALOG if e.default_enabled}
    else:
        chosen = {e.code for selector in selected for e in select(selector)}
        chosen.add(SYNTAX_ERROR_CODE)
    for selector in extend_select:
        chosen.update(e.code for e in select(selector))
    for selector in ignore:
        chosen.difference_update(e.code for e in covered(selector))
    return frozenset(chosen)
