"""TFC205: validation written inline in the epoch loop, run with the model in train mode.

Which ``with torch.no_grad():`` blocks are validation inside a training loop is
decided by :func:`torchfix_codemods.analysis.facts.training.inline_validations`; the
eval-and-restore statements are :func:`torchfix_codemods.edits.modes.in_eval_mode`,
the idiom TFC201 uses for whole functions.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.statements import block_of, written_names
from torchfix_codemods.analysis.core.syntax import code_of
from torchfix_codemods.analysis.core.walk import children, names_in
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.inference import InferenceAnalysis
from torchfix_codemods.analysis.facts.training import InlineValidation, inline_validations
from torchfix_codemods.edits.modes import in_eval_mode
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class ValidationWithoutEval(Rule):
    """## What it does
    Finds validation written inline in a training loop, a
    `with torch.no_grad():` block that loops over a validation or test loader
    and calls the model, with no `model.eval()` before it in the iteration. The
    fix switches the model to eval mode before the block and gives every
    submodule its previous mode back after it.

    ## Why is this bad?
    `no_grad()` turns off gradient tracking, not training behaviour: Dropout
    still drops activations at random, and BatchNorm still normalises with
    each validation batch's statistics and updates its running statistics
    from validation data. The metrics are noisy and pessimistic, and
    validating changes the model. Measured on torch 2.13: two validation
    passes over the same batch under `no_grad()` in train mode gave different
    outputs, and BatchNorm's `running_mean` changed during them.

    ## Example
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
        with torch.no_grad():
            for x, y in val_loader:
                val_loss += criterion(model(x), y).item()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
        train_modes = [(submodule, submodule.training) for submodule in model.modules()]
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                val_loss += criterion(model(x), y).item()
        for submodule, mode in train_modes:
            submodule.train(mode)
    ```

    ## Fix safety
    Unsafe: eval mode changes the validation outputs on purpose (measured on
    torch 2.13: after the fix the validation outputs equal those of an
    eval-mode pass, and Dropout is active and a frozen BatchNorm frozen again
    for the next epoch). The restore
    keeps the next epoch training as before, including submodules the code
    froze in eval (`model.train()` would un-freeze them). When the block can
    be left early (`return`, `break`, `continue`, `raise`, `yield`), the
    restore runs in a `finally`. Report only when the block calls several
    models, or when the model's name is assigned inside the block. Not a
    finding: `model.eval()` (or `model.train(False)`, or `model.train(flag)`)
    earlier in the iteration, validation in a function of its own (TFC201), a
    `no_grad()` block that does not loop over a validation or test loader
    (target networks, EMA updates, sampling), and a loop that does not train.

    ## References
    - [`torch.nn.Module.eval`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [Autograd mechanics: evaluation mode (`nn.Module.eval()`)](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TFC205"
    name = "validation-without-eval"
    message = "validation runs the model in train mode: call `model.eval()` before it"
    _specific = ("validation under `{context}` runs `{model}` in train mode (dropout on, "
                 "BatchNorm updating): call `{model}.eval()` before it")
    _several = ("validation under `{context}` runs {models} in train mode (dropout on, "
                "BatchNorm updating): call `.eval()` on each before it")
    safety = Safety.UNSAFE
    triggers = ("no_grad", "inference_mode")
    needs = Needs.any_of(fragments=("no_grad", "inference_mode"))
    valid = (
        "import torch\nmodel = torch.nn.Linear(2, 2)\nfor epoch in range(3):\n    model.train()\n"
        "    for x in train_loader:\n"
        "        model(x).sum().backward()\n        opt.step()\n    model.eval()\n"
        "    with torch.no_grad():\n        for x in val_loader:\n            model(x)\n",
        "import torch\nmodel = torch.nn.Linear(2, 2)\nfor epoch in range(3):\n    for x in train_loader:\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "    with torch.no_grad():\n        for p, q in zip(ema.parameters(), model.parameters()):\n"
        "            p.mul_(0.9).add_(q)\n",
    )
    invalid = (
        Example(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nfor epoch in range(3):\n    model.train()\n"
        "    for x in train_loader:\n"
            "        model(x).sum().backward()\n        opt.step()\n"
            "    with torch.no_grad():\n        for x in val_loader:\n            model(x)\n",
            "import torch\nmodel = torch.nn.Linear(2, 2)\nfor epoch in range(3):\n    model.train()\n"
        "    for x in train_loader:\n"
            "        model(x).sum().backward()\n        opt.step()\n"
            "    train_modes = [(submodule, submodule.training) for submodule in model.modules()]\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n        for x in val_loader:\n            model(x)\n"
            "    for submodule, mode in train_modes:\n        submodule.train(mode)\n",
            unsafe=True,
        ),
        Example(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nencoder = torch.nn.Linear(2, 2)\n"
            "for epoch in range(3):\n    for x in train_loader:\n"
            "        model(x).sum().backward()\n        opt.step()\n"
            "    with torch.no_grad():\n        for x in val_loader:\n"
            "            print(model(x), encoder(x))\n"
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        if not imports_torch(self.names):
            return
        analysis = InferenceAnalysis.of(self.names, self.context.options.inference_decorators,
                                        self.context.path)
        for validation in inline_validations(self.names, analysis):
            if not validation.evaluated:
                self._check(validation)

    def _check(self, validation: InlineValidation) -> None:
        block = validation.block
        anchor = block.items[0].item
        context = code_of(anchor)
        models = list(validation.models)
        if len(models) > 1:
            listed = ", ".join(f"`{model}`" for model in models)
            self.report(anchor, self._several.format(context=context, models=listed) +
                        " (no fix: it calls several models)")
            return
        model = models[0]
        message = self._specific.format(context=context, model=model)
        if model.split(".")[0] in written_names(block) or block_of(self.names, block) is None:
            self.report(anchor, f"{message} (no fix: `{model}` is assigned inside the block)")
            return
        scope = self.names.enclosing(block, cst.FunctionDef) or self.context.module
        taken = {name.value for name in names_in(scope)}
        lines = block.leading_lines
        statements = in_eval_mode(model, [block.with_changes(leading_lines=())], taken,
                                  guarded=_leaves_early(block))
        statements[0] = statements[0].with_changes(leading_lines=lines)
        fix = Fix(Safety.UNSAFE, f"call `{model}.eval()` before the block and restore every "
                  "submodule's mode after it", [(block, cst.FlattenSentinel(statements))])
        self.report(anchor, message, fix=fix, reason=validation.models[model])


def _leaves_early(block: cst.With) -> bool:
    """Can the block be left other than by its end: ``return``, ``raise``, ``yield``, or a
    ``break``/``continue`` of a loop around it?"""
    return _leaves(block.body, in_loop=False)


def _leaves(node: cst.CSTNode, *, in_loop: bool) -> bool:
    if isinstance(node, (cst.Return, cst.Raise, cst.Yield)):
        return True
    if isinstance(node, (cst.Break, cst.Continue)):
        return not in_loop
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    if isinstance(node, (cst.For, cst.While)):
        # `break` in the body ends this loop; in its `else:` it ends the loop around it.
        return any(_leaves(child, in_loop=in_loop or child is node.body)
                   for child in children(node))
    return any(_leaves(child, in_loop=in_loop) for child in children(node))


RULES = [ValidationWithoutEval]
