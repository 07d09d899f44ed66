"""Running statements with a model in eval mode and giving every submodule its mode back.

TFC201 wraps an inference function's body, TFC205 an inline validation block in
an epoch loop; both must leave the model as they found it, submodule by
submodule. ``model.train(was_training)`` would not do: it also un-freezes a
submodule the caller deliberately kept in eval (a frozen BatchNorm backbone).
The flags are remembered for every submodule and restored parent-first, so
each submodule ends with exactly the mode it had.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from torchfix_codemods.edits.statements import fresh_name, parse_statement


def in_eval_mode(model: str, body: Sequence[cst.BaseStatement], taken: Iterable[str], *,
                 guarded: bool) -> list[cst.BaseStatement]:
    """``body`` preceded by remembering every submodule's mode and ``model.eval()``, and
    followed by the restore; inside ``try``/``finally`` when ``guarded`` (a ``return``,
    ``break`` or exception leaving ``body`` must restore too). Loop and list names are
    chosen outside ``taken``."""
    taken = set(taken)
    modes = fresh_name("train_modes", taken)
    submodule = fresh_name("submodule", taken)
    mode = fresh_name("mode", taken)
    remember = parse_statement(
        f"{modes} = [({submodule}, {submodule}.training) for {submodule} in {model}.modules()]\n")
    evaluate = parse_statement(f"{model}.eval()\n")
    restore = parse_statement(f"for {submodule}, {mode} in {modes}:\n    {submodule}.train({mode})\n")
    if not guarded:
        return [remember, evaluate, *body, restore]
    guard = cst.Try(body=cst.IndentedBlock(body=list(body)),
                    finalbody=cst.Finally(body=cst.IndentedBlock(body=[restore])))
    return [remember, evaluate, guard]
