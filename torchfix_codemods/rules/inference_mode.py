"""TFC201-TFC203: train/eval mode and gradient tracking in inference code.

Which functions count as inference, which model they run and who calls them
is decided once per file by :mod:`torchfix_codemods.analysis.facts.inference`; the
rules here turn those facts into findings and fixes.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.names import dotted_name
from torchfix_codemods.analysis.core.syntax import split_docstring
from torchfix_codemods.analysis.core.walk import names_in, walk_local
from torchfix_codemods.analysis.facts.grad_mode import in_no_grad
from torchfix_codemods.analysis.facts.inference import (
    FAST_PATH_MARKERS,
    FunctionFacts,
    InferenceAnalysis,
    InferenceFunction,
    ScriptRegion,
)
from torchfix_codemods.analysis.facts.modules import mode_changes_output, pickled_model
from torchfix_codemods.analysis.vocabulary.naming import EVAL_TOKENS, PREDICT_TOKENS
from torchfix_codemods.analysis.vocabulary.tensor_methods import DEVICE_METHODS, FLOAT_CASTS
from torchfix_codemods.analysis.vocabulary.torch_api import COMPILERS
from torchfix_codemods.edits.modes import in_eval_mode
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import insert_before, parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_MODE_TRIGGERS = ("eval", "valid", "test", "predict", "infer", "score", "Eval", "Valid", "Test",
                  "Predict", "Infer", "Score", "load", "pretrained")
_INFERENCE_NEEDS = Needs.any_of(*(f"root:{token}" for token in EVAL_TOKENS | PREDICT_TOKENS),
                                "load", "load_state_dict", "from_pretrained")
"""An inference root is a function named by these tokens (``InferenceAnalysis.kind_of``); an
evaluation script's top level loads weights (``torch.load``, ``load_state_dict``,
``from_pretrained``, a model's own ``load_weights``) or switches its model to eval
(``InferenceAnalysis.script_region``)."""
_NO_GRAD_NEEDS = Needs.any_of(*(f"root:{token}" for token in EVAL_TOKENS | PREDICT_TOKENS),
                              "load", "load_state_dict", "from_pretrained", ".eval", ".train",
                              ".item", ".tolist", ".numpy", ".join")
"""TFC202 also recognises inference by behaviour (``InferenceAnalysis.behaviour_roots``): a
model switched with ``.eval()`` (or by every caller, also with ``.train(False)``) and then
run, or a function that hands out only Python values (``.item()``, ``.tolist()``,
``.numpy()``, a joined string)."""


def _analysis(rule: Rule) -> InferenceAnalysis:
    return InferenceAnalysis.of(rule.names, rule.context.options.inference_decorators,
                                rule.context.path)


class MissingEval(Rule):
    """## What it does
    Finds inference functions (named like `evaluate`, `validate`, `test`,
    `predict`, `infer`, `score`, or an evaluation script's top level) that run
    a model without switching it to eval mode, and adds `model.eval()`.

    A function is inference when it never differentiates (no `.backward()`,
    `torch.autograd.grad`, optimizer step, `requires_grad_`) on any path it
    takes through this file; a helper shared with training and called with
    `train=False` is followed with that value, so code under `if train:` does
    not count. A pytest `test_*` function is not inference, nor is a
    function defined inside a test (a closure handed to a process launcher),
    nor a helper named "test" that only tests call (`reproducibility_test`, run
    by pytest files alone), nor a `@pytest.fixture` (pytest hands its result to
    tests that may differentiate it), nor a helper called by a test that trains
    (calls `.backward()` or steps an optimizer: `eval()` there would change what
    the test trains), nor a smoke test
    that builds its model right there from a class (random initial weights,
    nothing loaded) and runs it to check shapes (`def test(): net = VGG('VGG11');
    print(net(torch.randn(2, 3, 32, 32)).size())` in every model file of
    kuangliu/pytorch-cifar); a model loaded with weights, from a library
    factory (which may load pretrained ones) or from outside the function is.
    A whole model unpickled by `torch.load` (`model = torch.load(path)["model"]`)
    is left alone: it keeps the train/eval mode it was saved in, and neither
    that mode nor its class is visible in the file (TFC202 still adds
    `no_grad`, which changes no value).

    ## Why is this bad?
    In train mode Dropout drops activations at random and BatchNorm normalises
    with the batch's statistics and updates its running statistics: metrics are
    noisy, predictions depend on the batch, and evaluating silently changes the
    model.

    ## Example
    ```python
    def evaluate(model, loader):
        with torch.no_grad():
            return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)
    ```

    ## Use instead
    ```python
    def evaluate(model, loader):
        train_modes = [(submodule, submodule.training) for submodule in model.modules()]
        model.eval()
        try:
            with torch.no_grad():
                return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)
        finally:
            for submodule, mode in train_modes:
                submodule.train(mode)
    ```

    The restore idiom: remember every submodule's `training` flag, switch to
    eval, and put each flag back in a `finally` (so early returns and
    exceptions restore it too). `model.train(was_training)` would not do: it
    also un-freezes a submodule the caller deliberately kept in eval (a frozen
    BatchNorm backbone). The flags are restored parent-first, so each
    submodule ends with exactly the mode it had. In an evaluation script with
    no training anywhere in the file, a plain `model.eval()` is added.

    Not inference, so never reported: a method of the model itself (of an
    `nn.Module` subclass, or one its class's `forward` calls), or a function a
    model's `forward` runs, whose mode is its caller's to set; a function
    whose result a caller's loss is built from and differentiated
    (stable-baselines3's `evaluate_actions` in PPO), also where the caller
    returns that loss to a caller of its own that differentiates it (an A2C
    agent's `compute_loss`, then `update`). Nothing is reported
    either when `eval()` would change nothing: the model's class is visible
    and builds no Dropout, BatchNorm, InstanceNorm, transformer, attention or
    RReLU layer, no recurrent layer with a `dropout` (an `nn.LSTM`/`GRU`/`RNN`
    reads `training` only for it: measured on torch 2.13, train and eval
    outputs are equal without it, differ with `dropout=0.5` and three layers),
    and never reads `.training` (pytorch/examples' super-resolution `Net`),
    or it was made by `torch.jit.trace`, which replays the mode it was
    traced in (measured on torch 2.13: a traced Dropout still drops after
    `.eval()`). Nor when eval mode is already set on
    every path to the function: it calls `.eval()` itself or through a helper;
    every caller switches the model before the call (`model.eval()` earlier,
    `cv2_demo(net.eval(), ...)` in the call itself, or a caller that neither
    trains nor switches modes and is itself only called in eval mode); the
    last module-level call before it that decides a mode leaves eval on (a
    notebook's `evaluate(test_loader, model)` cell before the prediction
    helper); or it is a method whose models the class's `__init__` switches to
    eval and no method switches back.

    ## Fix safety
    Unsafe: eval mode changes outputs on purpose (no dropout, running
    BatchNorm statistics). Report only when the model cannot be named in the
    function (it is reached through an expression the tool cannot re-express),
    when several models are called, when a one-line body would have to be
    restructured. Nothing is reported for torchvision-style detection models
    whose losses are read (`loss_dict = model(images, targets)` only works in
    train mode).

    ## References
    - [`torch.nn.Module.eval`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    - [Autograd mechanics: evaluation mode (`nn.Module.eval()`)](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TFC201"
    name = "missing-eval"
    project_facts = ("module-classes", "callers")
    message = "inference runs the model in train mode: call `model.eval()` first"
    _specific = "inference runs `{model}` in train mode: call `{model}.eval()` first"
    safety = Safety.UNSAFE
    triggers = _MODE_TRIGGERS
    needs = _INFERENCE_NEEDS
    valid = (
        "import torch\ndef evaluate(model, x):\n    model.eval()\n    with torch.no_grad():\n"
        "        return model(x)\n",
        "import torch\ndef evaluate(model, x, opt):\n    loss = model(x).sum()\n"
        "    loss.backward()\n    return loss\n",
        "import torch\ndef test_model_output(model, x):\n    assert model(x).shape == (1,)\n",
        "import torch\ndef train_epoch(model, x):\n    return model(x)\n",
        "from torch import nn\nnet = nn.Linear(2, 2)\ndef predict(x):\n    return net(x)\n",
    )
    invalid = (
        Example(
            "import torch\n\n\ndef evaluate(model, x):\n    \"\"\"Score a batch.\"\"\"\n"
            "    with torch.no_grad():\n        return model(x)\n",
            "import torch\n\n\ndef evaluate(model, x):\n    \"\"\"Score a batch.\"\"\"\n"
            "    train_modes = [(submodule, submodule.training) for submodule in model.modules()]\n"
            "    model.eval()\n    try:\n        with torch.no_grad():\n"
            "            return model(x)\n    finally:\n        for submodule, mode in train_modes:\n"
            "            submodule.train(mode)\n",
            unsafe=True,
        ),
        Example(
            "from torch import nn\nnet = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))\n\n\n"
            "def predict(x):\n    # forward only\n    return net(x)\n\n\nprint(predict(1))\n",
            "from torch import nn\nnet = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))\n\n\n"
            "def predict(x):\n    net.eval()\n    # forward only\n    return net(x)\n\n\n"
            "print(predict(1))\n",
            unsafe=True,
        ),
        Example("import torch\ndef evaluate(model, x): return model(x)\n"),
        Example(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.LSTM(2, 2, num_layers=2, dropout=0.1)\n"
            "    model.load_state_dict(torch.load('m.pt'))\n"
            "    with torch.no_grad():\n        print(model(torch.ones(1, 2)))\n",
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.LSTM(2, 2, num_layers=2, dropout=0.1)\n"
            "    model.load_state_dict(torch.load('m.pt'))\n"
            "    model.eval()\n    with torch.no_grad():\n        print(model(torch.ones(1, 2)))\n",
            unsafe=True,
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        analysis = _analysis(self)
        for root in analysis.inference_functions():
            if not root.already_eval:
                self._check(analysis, root)
        region = analysis.script_region(include_no_grad=True)
        if region is not None and not self._script_evaluates(analysis, region):
            self._check_script(region)

    def _check(self, analysis: InferenceAnalysis, root: InferenceFunction) -> None:
        if root.models and all(m.mode_matters is False for m in root.models):
            return  # eval() would change nothing this model computes
        if root.passed_a_function:
            return  # a caller runs it on a `lambda`: there is no mode to switch
        node = root.facts.node
        shown = root.models[0].code if len(root.models) == 1 else "the model"
        message = self._specific.format(model=shown)
        why = None
        if not root.models:
            why = "the model it calls cannot be named in this function"
        elif len(root.models) > 1:
            why = "it calls several models (" + ", ".join(m.code for m in root.models) + ")"
        elif root.models[0].reads_losses:
            return  # detection models return the losses read here only in train mode
        elif pickled_model(self.names, root.models[0].call.func):
            return  # a whole unpickled model keeps the mode it was saved in: not visible
        elif not isinstance(node.body, cst.IndentedBlock):
            why = "its one-line body would have to be restructured"
        elif self._bound_locally(node, root.models[0].code):
            why = "the model is assigned inside the function; call `.eval()` after it is built"
        if why is not None:
            self.report(node.name, f"{message} (no fix: {why})")
            return
        model = root.models[0].code
        plain = not analysis.file_differentiates() and bool(root.callers)
        new_body = self._plain_body(node, model) if plain else self._restoring_body(
            root.facts, model)
        description = (f"add `{model}.eval()`" if plain else
                       f"add `{model}.eval()` and restore every submodule's mode afterwards")
        self.report(node.name, message,
                    fix=Fix(Safety.UNSAFE, description, [(node.body, new_body)]),
                    reason=root.models[0].evidence)

    def _bound_locally(self, node: cst.FunctionDef, model: str) -> bool:
        """Is the model's root name assigned in the function (so not usable at its start)?"""
        root = model.split(".")[0]
        scope = self.names.scope_of(node.body)
        return any(b.kind != "param" for b in scope.bindings.get(root, ()))

    @staticmethod
    def _plain_body(node: cst.FunctionDef, model: str) -> cst.BaseSuite:
        body = node.body
        assert isinstance(body, cst.IndentedBlock)
        docs, rest = split_docstring(body.body)
        return body.with_changes(body=[*docs, parse_statement(f"{model}.eval()\n"), *rest])

    @staticmethod
    def _restoring_body(facts: FunctionFacts, model: str) -> cst.BaseSuite:
        node = facts.node
        body = node.body
        assert isinstance(body, cst.IndentedBlock)
        taken = {name.value for name in names_in(node)} | set(facts.names_used)
        docs, rest = split_docstring(body.body)
        return body.with_changes(body=[*docs, *in_eval_mode(model, rest, taken, guarded=True)])

    def _script_evaluates(self, analysis: InferenceAnalysis, region: ScriptRegion) -> bool:
        for site in analysis.module_sites:
            func = site.node.func  # type: ignore[attr-defined]
            if isinstance(func, cst.Attribute) and func.attr.value in ("eval", "train") and \
                    dotted_name(func.value) == region.model_code:
                return True
        return False

    def _check_script(self, region: ScriptRegion) -> None:
        if mode_changes_output(self.names, region.model_calls[0].func) is False:
            return
        if pickled_model(self.names, region.model_calls[0].func):
            return  # unpickled whole: the mode it was saved in is not visible here
        first = region.statements[0]
        evaluate = parse_statement(f"{region.model_code}.eval()\n")
        fix = Fix(Safety.UNSAFE, f"add `{region.model_code}.eval()` before the model is run",
                  [(first, insert_before(first, evaluate))])
        self.report(region.model_calls[0], self._specific.format(model=region.model_code), fix=fix,
                    reason="a script that loads weights and runs the model without training")


class MissingNoGrad(Rule):
    """## What it does
    Finds inference functions (see TFC201) and evaluation-script code that run
    a model with gradient tracking on, and decorates the function with
    `@torch.no_grad()` (or wraps the script's model calls in
    `with torch.no_grad():`).

    ## Why is this bad?
    With gradients on, every forward keeps its activations alive for a
    backward pass that never comes: evaluation uses several times the memory
    it needs (out-of-memory at batch sizes training handles), runs slower, and
    returned tensors drag their whole graph along.

    ## Example
    ```python
    def evaluate(model, loader):
        model.eval()
        return [model(x) for x in loader]
    ```

    ## Use instead
    ```python
    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        return [model(x) for x in loader]
    ```

    Not reported on a method of the model itself (of an `nn.Module`
    subclass, or one its `forward` calls) nor on a function a model's `forward`
    runs (a descriptor switched to eval and run on patches inside
    `PatchDescriptor.forward`): whether it runs under `no_grad` is
    its caller's decision, and the same method may feed a loss elsewhere
    (stable-baselines3's `evaluate_actions`, differentiated by PPO and A2C),
    where `@torch.no_grad()` would silently stop training. Nor where anything
    on the function's path differentiates (saliency maps, adversarial attacks,
    test-time adaptation: those are not inference), nor where a caller's
    differentiated loss is built from its result, directly or through
    assignments, or through a return to a caller that differentiates it
    (up to three calls up). Nor on a module-level function whose every call in the file
    is made with autograd off and which is never passed around (udacity's
    `fc_model.validation`, called only from `train` inside
    `with torch.no_grad():`): there is no graph to stop. Nor on a function
    whose only model work is a call of a function that already runs without
    autograd or that the same fix decorates.

    A function no name marks as inference (`detect`, `generate`, a script's
    `main`, a model's own method) is recognised by what it does: it switches a
    model to eval mode with `.eval()` (a method of the model: `self.eval()`),
    then runs that model (calls it, or its `forward`, `sample`, `generate`,
    `encode`, `decode`, `predict`, or a method of the model's own class that
    runs its layers, such as a beam search `model.translate(src)`), has no
    decorator that may set the grad mode itself, and neither it nor a caller
    differentiates or steps an optimizer with the result; one that a training
    function calls (a teacher in distillation) is left alone. So is a function
    that every caller in the file runs right after switching the models it
    runs to eval (`encoder.eval()` or `model.train(False)`, the latest mode
    call on that model before the call). `evaluate_loss` and its kin (an
    evaluation word beside "loss") are named inference: the loss is measured.
    A script's `main`, called only by module-level code, is reported at its
    first model call; any other function at its name. The top level of
    an evaluation script counts when it loads weights (`torch.load`,
    `load_state_dict`, `from_pretrained`, a model's own `load_weights`) or
    switches the model to eval itself, calls the model, and the file never
    differentiates: its model calls go under `with torch.no_grad():`.

    ## Fix safety
    Values are identical under `no_grad`; only `requires_grad`/`grad_fn` of
    the results change. Safe for metric-like names
    (`evaluate`, `validate`, `test`, ...), whose results are metrics. Unsafe
    for API-like names (`predict`, `infer`, `score`) and for functions
    recognised by behaviour: code in another file may differentiate their
    result; unsafe too in files that use `nn.Transformer*`
    or `nn.MultiheadAttention`, whose eval + no_grad fast path returns zeros at
    padded positions. `torch.no_grad` is preferred over
    `torch.inference_mode`: tensors made in inference mode can never enter
    autograd later (caches, lazily built parameters). A function already
    under `no_grad`, `inference_mode`, `set_grad_enabled` or one of the
    `inference-decorators` from the settings is left alone. `import torch`
    is added when the file has no usable `torch` name.

    ## References
    - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [Autograd mechanics: locally disabling gradient computation](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    - [`torch.autograd.grad_mode.inference_mode`](https://docs.pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html)
    """

    code = "TFC202"
    name = "missing-no-grad"
    project_facts = ("module-classes", "callers")
    message = "inference runs the model with gradient tracking: wrap it in `torch.no_grad()`"
    safety = Safety.SAFE
    triggers = _MODE_TRIGGERS
    needs = _NO_GRAD_NEEDS
    valid = (
        "import torch\n@torch.no_grad()\ndef evaluate(model, x):\n    model.eval()\n"
        "    return model(x)\n",
        "import torch\ndef evaluate(model, x):\n    model.eval()\n"
        "    with torch.inference_mode():\n        return model(x)\n",
        "import torch\ndef evaluate(model, x):\n    x.requires_grad_(True)\n"
        "    model(x).sum().backward()\n    return x.grad\n",
        "import torch\nclass Trainer:\n    def iteration(self, x, train=True):\n"
        "        loss = self.model(x)\n        loss.backward()\n"
        "    def test(self, x):\n        return self.iteration(x)\n",
    )
    invalid = (
        Example(
            "import torch\n\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
            "import torch\n\n\n@torch.no_grad()\ndef evaluate(model, x):\n    model.eval()\n"
            "    return model(x)\n",
        ),
        Example(
            "from torch import nn\n\nnet = nn.Linear(2, 2)\n\n\ndef validate(x):\n"
            "    net.eval()\n    return net(x)\n",
            "from torch import nn\nimport torch\n\nnet = nn.Linear(2, 2)\n\n\n@torch.no_grad()\n"
            "def validate(x):\n    net.eval()\n    return net(x)\n",
        ),
        Example(
            "import torch\nclass Trainer:\n    def iteration(self, x, train=True):\n"
            "        loss = self.model(x)\n        if train:\n            loss.backward()\n"
            "        return loss\n\n    def test(self, x):\n        self.model.eval()\n"
            "        return self.iteration(x, train=False)\n",
            "import torch\nclass Trainer:\n    def iteration(self, x, train=True):\n"
            "        loss = self.model(x)\n        if train:\n            loss.backward()\n"
            "        return loss\n\n    @torch.no_grad()\n    def test(self, x):\n"
            "        self.model.eval()\n        return self.iteration(x, train=False)\n",
        ),
        Example(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.Linear(2, 2)\n    model.load_state_dict(torch.load('m.pt'))\n"
            "    model.eval()\n    # score\n    out = model(torch.ones(1, 2))\n"
            "    print(out, model(out))\n    print('done')\n",
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.Linear(2, 2)\n    model.load_state_dict(torch.load('m.pt'))\n"
            "    model.eval()\n    # score\n    with torch.no_grad():\n"
            "        out = model(torch.ones(1, 2))\n        print(out, model(out))\n"
            "    print('done')\n",
        ),
        Example(
            "import torch\n\n\ndef predict(model, x):\n    model.eval()\n    return model(x)\n",
            "import torch\n\n\n@torch.no_grad()\ndef predict(model, x):\n    model.eval()\n"
            "    return model(x)\n",
            unsafe=True,
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        analysis = _analysis(self)
        behaviour = analysis.behaviour_roots()
        for root in analysis.no_grad_roots():
            self._check(root, analysis.entry_point_call(root) if root in behaviour else None)
        region = analysis.script_region()
        if region is not None:
            self._check_script(region)

    def _check(self, root: InferenceFunction, at: cst.CSTNode | None = None) -> None:
        """Report ``root`` at its name, or at ``at``: the first model call of a script's
        entry point (``main(args)`` run by the ``__main__`` guard reads as script code)."""
        node = root.facts.node
        where: cst.CSTNode = at if at is not None else node.name
        compiled = [d for d in node.decorators
                    if (self.qualified_name(_decorator_target(d)) or "").startswith(
                        COMPILERS)]
        if compiled:
            self.report(where, self.message + " (no fix: the function is scripted or "
                        "compiled; put `with torch.no_grad():` around the call instead)")
            return
        try:
            reference = self.context.imports.reference("torch.no_grad", at=node)
        except ImportUnavailable as error:
            self.report(where, f"{self.message} (no fix: {error})")
            return
        decorator = cst.Decorator(decorator=cst.Call(func=reference.expression))
        new = node.with_changes(decorators=[*node.decorators, decorator])
        safety = Safety.SAFE if root.kind == "eval" else Safety.UNSAFE
        reason = ("its result is a metric" if root.kind == "eval" else
                  "a caller in another file may differentiate what it returns")
        if safety is Safety.SAFE and any(marker in self.context.source
                                         for marker in FAST_PATH_MARKERS):
            safety = Safety.UNSAFE
            reason = ("under eval + no_grad, nn.Transformer/MultiheadAttention take a fast path "
                      "that zeroes padded positions")
        fix = Fix(safety, f"decorate `{node.name.value}` with `@{reference.code}()`",
                  [(node, new)], imports=(reference.needs,) if reference.needs else ())
        self.report(where, self.message, fix=fix, reason=reason)

    def _check_script(self, region: ScriptRegion) -> None:
        first = region.statements[0]
        try:
            reference = self.context.imports.reference("torch.no_grad", at=first)
        except ImportUnavailable as error:
            self.report(region.model_calls[0], f"{self.message} (no fix: {error})")
            return
        inner = [first.with_changes(leading_lines=()), *region.statements[1:]]
        block = cst.With(
            items=[cst.WithItem(item=cst.Call(func=reference.expression))],
            body=cst.IndentedBlock(body=inner),
            leading_lines=getattr(first, "leading_lines", ()),
        )
        replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]] = [
            (first, block)]
        replacements += [(s, cst.RemovalSentinel.REMOVE) for s in region.statements[1:]]
        fast_path = any(marker in self.context.source for marker in FAST_PATH_MARKERS)
        fix = Fix(Safety.UNSAFE if fast_path else Safety.SAFE,
                  f"run the model under `with {reference.code}():`",
                  replacements,  # type: ignore[arg-type]
                  imports=(reference.needs,) if reference.needs else ())
        self.report(region.model_calls[0], self.message, fix=fix,
                    reason="a script that loads weights (or switches its model to eval) "
                           "and never differentiates")


class EvalNotRestored(Rule):
    """## What it does
    Finds a switch to eval mode that happens inside a training loop (directly,
    or in a function the loop calls, like a per-epoch `validate()`) when
    nothing in that loop switches the model back with `.train()`.

    ## Why is this bad?
    After the first validation, every later epoch trains in eval mode:
    Dropout is off and BatchNorm stops updating its running statistics. The
    run still converges, just to a worse model, and nothing fails.

    ## Example
    ```python
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            ...
            loss.backward()
            optimizer.step()
        validate(model)   # calls model.eval()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            ...
        validate(model)
    ```
    or restore the caller's mode inside `validate` (the idiom of TFC201).

    Only a model the loop may be training counts: an EMA or teacher copy that
    the loop never runs with gradients on, never passes to a call and whose
    `.parameters()` it never reads (`self.ema.ema_model.eval()` before sampling
    under `no_grad`, while the loss comes from `self.model`) is left alone.

    ## Fix safety
    Report only: where the `.train()` belongs (top of the epoch loop, or a
    restore inside the validation function) is a choice about the program's
    structure.

    ## References
    - [`torch.nn.Module.train`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train)
    - [Autograd mechanics: evaluation mode (`nn.Module.eval()`)](https://docs.pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TFC203"
    name = "eval-not-restored"
    project_facts = ("module-classes", "callers")
    message = "`.eval()` inside a training loop is never undone: later iterations train in eval mode"
    safety = Safety.NONE
    triggers = (".eval()",)
    needs = Needs.any_of(".eval")
    valid = (
        "import torch\ndef fit(model, opt, loader):\n    for epoch in range(3):\n"
        "        model.train()\n        for x in loader:\n            model(x).sum().backward()\n"
        "            opt.step()\n        model.eval()\n",
        "import torch\ndef validate(model):\n    model.eval()\n    model(1)\n    model.train()\n"
        "def fit(model, opt):\n    for epoch in range(3):\n        model(1).backward()\n"
        "        opt.step()\n        validate(model)\n",
        "import torch\ndef fit(model, ema, opt, loader):\n    for x in loader:\n"
        "        model(x).sum().backward()\n        opt.step()\n        ema.update()\n"
        "        ema.ema_model.eval()\n        with torch.no_grad():\n"
        "            ema.ema_model.sample(4)\n",
    )
    invalid = (
        Example(
            "import torch\ndef fit(model, opt, loader):\n    model.train()\n"
            "    for epoch in range(3):\n        for x in loader:\n"
            "            model(x).sum().backward()\n            opt.step()\n        model.eval()\n"
        ),
        Example(
            "import torch\ndef validate(model):\n    model.eval()\n    return model(1)\n"
            "def fit(model, opt):\n    for epoch in range(3):\n        model(1).backward()\n"
            "        opt.step()\n        validate(model)\n"
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        analysis = _analysis(self)
        reported: set[int] = set()
        for facts in analysis.functions.values():
            if not analysis.differentiates(facts):
                continue
            for eval_call in facts.eval_calls:
                loop = self._outer_loop(eval_call, facts)
                if loop is not None and not self._trains_in(facts, loop, eval_call) and \
                        self._may_be_trained(loop, _receiver(eval_call)):
                    self._report_once(eval_call, reported)
            for site in facts.calls:
                call = site.node
                assert isinstance(call, cst.Call)
                callee = analysis.resolve(call, facts)
                if callee is None or analysis.differentiates(callee) or not callee.eval_calls:
                    continue
                if callee.train_calls:
                    continue
                loop = self._outer_loop(call, facts)
                if loop is not None and not self._trains_in(facts, loop, call):
                    for eval_call in callee.eval_calls:
                        model = _receiver(eval_call)
                        if model is not None:
                            model = analysis.caller_terms(model, call, callee, facts)
                        if self._may_be_trained(loop, model):
                            self._report_once(eval_call, reported,
                                              f" (`{callee.name}` is called from the training "
                                              f"loop in `{facts.name}`)")

    def _report_once(self, node: cst.Call, reported: set[int], extra: str = "") -> None:
        if id(node) not in reported:
            reported.add(id(node))
            self.report(node, self.message + extra)

    def _outer_loop(self, node: cst.CSTNode, facts: FunctionFacts) -> cst.CSTNode | None:
        """The outermost loop of ``facts`` around ``node`` that also contains a backward."""
        outer = None
        for ancestor in self.names.ancestors(node):
            if ancestor is facts.node:
                break
            if isinstance(ancestor, (cst.For, cst.While)):
                outer = ancestor
        if outer is None:
            return None
        analysis = _analysis(self)
        if any(self._inside(site.node, outer) for site in facts.differentiations):
            return outer
        for site in facts.calls:
            callee = analysis.resolve(site.node, facts)  # type: ignore[arg-type]
            if callee is not None and self._inside(site.node, outer) and \
                    analysis.differentiates(callee):
                return outer
        return None

    def _inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return any(a is container for a in self.names.ancestors(node))

    def _may_be_trained(self, loop: cst.CSTNode, model: str | None) -> bool:
        """Could the model switched to eval be one the loop trains? Not an EMA or teacher
        copy that the loop never runs with gradients on, never hands to a call and whose
        parameters it never reads (denoising-diffusion-pytorch samples from
        ``self.ema.ema_model`` while training ``self.model``). Unknown: yes."""
        if model is None:
            return True
        for node in walk_local(loop):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _NOT_A_FORWARD:
                continue
            called = dotted_name(InferenceAnalysis.model_of(node))
            if called is not None and _overlaps(called, model) and \
                    not in_no_grad(self.names, node):
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _PARAMETER_READS and \
                    _overlaps(dotted_name(func.value) or "", model):
                return True
            if any(_overlaps(dotted_name(arg.value) or "", model) for arg in node.args):
                return True
        return False

    def _trains_in(self, facts: FunctionFacts, loop: cst.CSTNode, at: cst.CSTNode) -> bool:
        """A ``.train()`` in the loop, directly or in a function the loop calls."""
        if any(self._inside(call, loop) for call in facts.train_calls):
            return True
        analysis = _analysis(self)
        for site in facts.calls:
            if not self._inside(site.node, loop):
                continue
            callee = analysis.resolve(site.node, facts)  # type: ignore[arg-type]
            if callee is not None and callee.train_calls:
                return True
        return False


_PARAMETER_READS = frozenset({"parameters", "named_parameters"})
_NOT_A_FORWARD = DEVICE_METHODS | FLOAT_CASTS | {
    "eval", "train", "requires_grad_", "zero_grad", "state_dict", "load_state_dict", "modules",
    "children", "named_modules", "named_children", "buffers", "named_buffers", "apply",
}
"""``nn.Module`` methods that move, switch or read a module without running its forward."""


def _receiver(call: cst.Call) -> str | None:
    """``self.ema.ema_model`` for ``self.ema.ema_model.eval()``; None when not a dotted name."""
    func = call.func
    return dotted_name(func.value) if isinstance(func, cst.Attribute) else None


def _overlaps(code: str, model: str) -> bool:
    """``code`` is ``model``, a part of it (``model.encoder``) or holds it (``self`` for
    ``self.model``): running or passing one runs or passes the other."""
    if not code:
        return False
    return code == model or code.startswith(model + ".") or model.startswith(code + ".")


def _decorator_target(decorator: cst.Decorator) -> cst.BaseExpression:
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


RULES = [MissingEval, MissingNoGrad, EvalNotRestored]
