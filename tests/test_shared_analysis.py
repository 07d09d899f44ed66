"""One answer per concept: the decisions taken where two analyses used to disagree.

Each test pins a decision of issue 14 ("one home per concept"), through the
shared helper and through the rules that read it, so the rules cannot drift
apart again.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from support import findings, fixed_text

from torchfix_codemods.analysis.core.loops import innermost_loop
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.statements import statement_line
from torchfix_codemods.analysis.core.walk import names_in
from torchfix_codemods.analysis.facts.frameworks import imports_torch
from torchfix_codemods.analysis.facts.grad_mode import in_no_grad
from torchfix_codemods.analysis.facts.modules import module_evidence
from torchfix_codemods.analysis.facts.optimizers import optimizer_of_step, updates_parameters
from torchfix_codemods.analysis.facts.tensors import provenance
from torchfix_codemods.analysis.vocabulary.naming import named_like_model


def _index(source: str) -> tuple[cst.Module, NameIndex]:
    module = cst.parse_module(textwrap.dedent(source))
    return module, NameIndex.build(module)


def _calls(module: cst.Module, method: str) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
                found.append(node)

    module.visit(_Find())
    return found


# ------------------------------------------------------------------ grad mode
@pytest.mark.parametrize(("context", "off"), [
    ("torch.no_grad()", True),
    ("torch.inference_mode()", True),
    ("torch.autograd.inference_mode()", True),  # tensors.py used to miss this one
    ("torch.autograd.grad_mode.no_grad()", True),
    ("torch.enable_grad()", False),  # sets the mode, but to "on"
    ("torch.set_grad_enabled(False)", False),  # a runtime flag: not provably off
])
def test_grad_is_off_only_under_contexts_that_turn_it_off(context: str, off: bool) -> None:
    module, names = _index(f"""
        import torch
        with {context}:
            p.data.add_(1)
        """)
    [call] = _calls(module, "add_")
    assert in_no_grad(names, call) is off


@pytest.mark.parametrize(("header", "off"), [
    ("from utils.utils import *\n", True),  # `torch` from a star import nothing resolves
    ("", True),  # bound nowhere the file shows
    ("from utils.utils import *\nimport mylib as torch\n", False),  # a `torch` of its own
    ("from utils.utils import *\ntorch = make_backend()\n", False),
])
def test_torch_no_grad_of_a_torch_the_file_does_not_bind_is_torchs(header: str,
                                                                   off: bool) -> None:
    """DeNA/PyTorch_YOLOv3's cocoapi_evaluator.py reads `torch` through a star import the
    index does not follow: `with torch.no_grad():` there is still torch's own context."""
    module, names = _index(header + "with torch.no_grad():\n    p.data.add_(1)\n")
    [call] = _calls(module, "add_")
    assert in_no_grad(names, call) is off


def test_a_write_under_torch_autograd_inference_mode_is_known_to_run_with_grad_off() -> None:
    # Measured on torch 2.13: under inference_mode both `w.data.add_(1)` and `w.add_(1)` run on
    # a leaf that requires grad, so the `.data` write there is not a mistake (no finding), while
    # the same write with grad on gets the no_grad rewrite.
    plain = "import torch\nw = torch.randn(3, requires_grad=True)\nw.data.add_(1)\n"
    assert fixed_text(plain, ["TFC103"], unsafe=True) == plain.replace(
        "w.data.add_(1)\n", "with torch.no_grad():\n    w.add_(1)\n")
    source = ("import torch\nw = torch.randn(3, requires_grad=True)\n"
              "with torch.autograd.inference_mode():\n    w.data.add_(1)\n")
    assert findings(source, ["TFC103"]) == []


def test_an_evaluation_that_sets_its_own_grad_mode_gets_no_no_grad() -> None:
    """`enable_grad` is not "grad off" (above) but it is a decision TFC202 must not override."""
    source = ("import torch\ndef evaluate(model, x):\n    model.eval()\n"
              "    with torch.enable_grad():\n        return model(x)\n")
    assert [f for f in findings(source, ["TFC202"])] == []


# -------------------------------------------------------------- imports torch
@pytest.mark.parametrize(("imports", "torch"), [
    ("import torch", True),
    ("import torch.nn as nn", True),
    ("from torch import nn", True),
    ("def f():\n    import torch", True),
    ("from mylib import torch", False),
    ("from . import torch", False),
    ("import torchvision", False),
])
def test_imports_torch_means_the_real_torch_in_any_scope(imports: str, torch: bool) -> None:
    _, names = _index(imports + "\n")
    assert imports_torch(names) is torch


# ------------------------------------------------------------------ optimizers
OPTIMIZERS = """
import torch
sgd = torch.optim.SGD(params, lr=0.1)
lr_opt_sched = torch.optim.lr_scheduler.StepLR(sgd, 1)
sgd.step()
lr_opt_sched.step()
optimizer.step()
scaler.step(self.opt)
optimizers[0].step()
"""


def test_one_answer_to_is_this_an_optimizer_step() -> None:
    module, names = _index(OPTIMIZERS)
    steps = _calls(module, "step")
    stepped = [optimizer_of_step(names, call) for call in steps]
    shown = [cst.Module([]).code_for_node(s) if s is not None else None for s in stepped]
    # A scheduler is never one; the subscript is an optimizer, but TFC503 needs a name to
    # write `X.zero_grad()` with.
    assert shown == ["sgd", None, "optimizer", "self.opt", None]
    assert [updates_parameters(names, call) for call in steps] == [True, False, True, True, True]


def test_an_evaluation_stepping_a_torch_optim_optimizer_is_training() -> None:
    """The inference analysis used to count only optimizer-*named* receivers."""
    source = ("import torch\ndef evaluate(model, x):\n    sgd = torch.optim.SGD(model.parameters())\n"
              "    y = model(x)\n    sgd.step()\n    return y\n")
    assert findings(source, ["TFC201", "TFC202"]) == []


# ------------------------------------------------------------ model-like names
@pytest.mark.parametrize(("name", "model"), [
    ("model", True), ("module", True), ("net", True), ("ema_model", True), ("resnet", True),
    ("bert", True), ("Discriminator", True), ("state", False), ("checkpoint", False),
    ("modules", False), ("torchvision", False),
])
def test_one_vocabulary_of_model_like_names(name: str, model: bool) -> None:
    assert named_like_model(name) is model


def test_a_module_named_module_is_a_model_for_load_and_for_eval() -> None:
    """TFC001 counted `module` as model-like and TFC201 did not; both do now."""
    load = findings("import torch\nmodule = torch.load('m.pt')\n", ["TFC001"])
    assert [f.fix for f in load] == [None]  # report only: it may be a whole pickled module
    evaluation = findings("import torch\nimport torch.nn as nn\n\n\ndef evaluate(module, x):\n"
                          "    with torch.no_grad():\n        return module(x)\n", ["TFC201"])
    assert [f.code for f in evaluation] == ["TFC201"] and evaluation[0].fix is not None


# -------------------------------------------------------------------- loops
def test_a_loop_outside_a_function_or_class_does_not_repeat_its_body() -> None:
    module, names = _index("""
        for epoch in range(3):
            class Config:
                total = loss.item()
            def step():
                total = loss.item()
            total = loss.item()
        """)
    first, second, third = _calls(module, "item")
    assert innermost_loop(names, first) is None
    assert innermost_loop(names, second) is None
    assert isinstance(innermost_loop(names, third), cst.For)


# ---------------------------------------------------------------- statements
def test_a_statement_can_be_inserted_only_next_to_a_line_of_a_block() -> None:
    module, names = _index("""
        loss.backward()
        if ready: loss.backward()
        for x in f(loss.backward()):
            pass
        hook = lambda: loss.backward()
        """)
    lines = [statement_line(names, call) for call in _calls(module, "backward")]
    assert lines[0] is module.body[0]
    assert lines[1:] == [None, None, None]


# -------------------------------------------------------------- names in a tree
def test_names_in_sees_every_name_a_libcst_visitor_sees() -> None:
    module = cst.parse_module(textwrap.dedent("""
        @decorate(arg=value)
        def f(a: int, *rest, key=default, **extra) -> out:
            global g
            x: T = [y for y in ys if y]
            obj.attr.deep[index] += other(key=word)
            import pkg.mod as alias
            return lambda q: q + outer
        """))
    seen: list[str] = []

    class _All(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            seen.append(node.value)

    module.visit(_All())
    assert [name.value for name in names_in(module)] == seen


# ----------------------------------------------------- structured module facts
def test_module_evidence_is_structured_not_prose() -> None:
    module, names = _index("""
        import torch.nn as nn

        class FocalLoss(nn.Module):
            pass

        class LossNet(nn.Module):
            pass

        focal = FocalLoss()
        body = LossNet()
        criterion = nn.CrossEntropyLoss()
        """)
    evidence = {
        name.value: module_evidence(names, name)
        for statement in module.body[-3:]
        for name in [statement.body[0].targets[0].target]  # type: ignore[attr-defined]
    }
    assert evidence["focal"] is not None and evidence["focal"].is_loss
    assert evidence["criterion"] is not None and evidence["criterion"].is_loss
    # A class whose name merely contains "Loss" is not a loss (the prose search said it was).
    assert evidence["body"] is not None and not evidence["body"].is_loss


def test_an_lstm_reached_through_self_returns_a_tuple_not_a_tensor() -> None:
    source = textwrap.dedent("""
        import torch.nn as nn

        class Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(4, 4)

            def forward(self, x):
                out = self.rnn(x)
                return out.numpy()
        """)
    module, names = _index(source)
    [numpy] = _calls(module, "numpy")
    found = provenance(names, numpy.func.value)  # type: ignore[attr-defined]
    assert found.kind == "unknown" and "recurrent or attention module" in found.reason
    # So TFC101 offers no safe fix for it.
    assert all(f.fix is None or f.fix.safety.value != "safe"
               for f in findings(source, ["TFC101"]))


def test_a_literal_number_keeps_an_accumulator_what_it_was() -> None:
    source = textwrap.dedent("""
        import torch
        total = torch.zeros(())
        total += 1
        total_count = torch.zeros(()).item()
        total_count += 1
        """)
    module, names = _index(source)
    targets = [s.body[0].targets[0].target for s in module.body  # type: ignore[attr-defined]
               if isinstance(s.body[0], cst.Assign)]
    assert provenance(names, targets[0]).is_tensor
    assert not provenance(names, targets[1]).is_tensor


# ------------------------------------------------------------ edits: precedence
def test_a_computed_range_end_is_moved_by_one_step_with_the_right_precedence() -> None:
    """`n << 1 + 1` would shift by two; the end is parenthesised when it binds looser."""
    source = "import torch\nx = torch.range(0, n << 1)\ny = torch.range(0, 2 * n)\n"
    fixed = fixed_text(source, ["TFC406"], unsafe=True)
    assert "torch.arange(0, (n << 1) + 1, dtype=torch.get_default_dtype())" in fixed
    assert "torch.arange(0, 2 * n + 1, dtype=torch.get_default_dtype())" in fixed


_DARKNET = """
    import torch.nn as nn

    def create_modules(defs):
        module_list = nn.ModuleList()
        for d in defs:
            module_list.append(nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3)))
        return {}, module_list

    class Darknet(nn.Module):
        def __init__(self, defs):
            super().__init__()
            self.defs = defs
            self.hyperparams, self.module_list = create_modules(defs)

        def save(self, cutoff):
            for i, (module_def, module) in enumerate(zip(self.defs[:cutoff],
                                                         self.module_list[:cutoff])):
                probe = module[1]
    """


def _probe_evidence(source: str):
    module, names = _index(source)
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value == "probe":
                found.append(module_evidence(names, node.value))

    module.visit(Visit())
    return found[0]


def test_a_module_container_unpacked_from_a_builder_sliced_zipped_and_indexed() -> None:
    """PyTorch-YOLOv3: `self.hyperparams, self.module_list = create_modules(...)`, iterated
    as `enumerate(zip(defs[:cutoff], self.module_list[:cutoff]))`, each item indexed."""
    evidence = _probe_evidence(_DARKNET)
    assert evidence is not None
    assert "an item of a module container" in evidence.reason
    assert "returned by `create_modules()`" in evidence.reason


@pytest.mark.parametrize(("change", "by"), [
    # the builder's first element is not a module: position matters
    ("self.hyperparams, self.module_list = create_modules(defs)",
     "self.module_list, self.hyperparams = create_modules(defs)"),
    # one return that is not a tuple written out
    ("    return {}, module_list\n", "    if not defs:\n        return None\n"
     "    return {}, module_list\n"),
    # another write of the attribute that is neither plain nor unpacked
    ("    def save(self, cutoff):\n", "    def reset(self):\n"
     "        self.module_list += [nn.ReLU()]\n\n    def save(self, cutoff):\n"),
    # zip's other side, not the module list
    ("(module_def, module) in", "(module, module_def) in"),
    # a dict of modules yields keys, not modules
    ("module_list = nn.ModuleList()", "module_list = nn.ModuleDict()"),
])
def test_no_module_evidence_when_one_step_does_not_hold(change: str, by: str) -> None:
    source = textwrap.dedent(_DARKNET)
    assert change in source
    assert _probe_evidence(source.replace(change, by)) is None


def test_data_indexed_by_zero_with_unknown_dimensions_is_reported_without_a_fix() -> None:
    # On a 0-dim tensor `x.detach()[0]` raises like `x.data[0]` (IndexError on torch 2.13):
    # the rewrite would only pretend to fix the line.
    source = ("import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 2)\n"
              "def f(x):\n    out = model(x)\n    return out.data[0]\n")
    found = findings(source, ["TFC102"])
    assert len(found) == 1 and found[0].fix is None and ".item()" in found[0].message
    assert fixed_text(source, ["TFC102"], unsafe=True) == source
