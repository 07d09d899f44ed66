"""The inference-function analysis behind TFC201-TFC203, on the shapes real training code has.

Each case is modelled on public code (BERT-pytorch's trainer, pytorch/examples'
ImageNet ``validate`` with its nested ``run_validate``, saliency and
adversarial "evaluate" functions, Lightning modules, pytest tests).
"""

from __future__ import annotations

import dataclasses
import textwrap

import libcst as cst
import pytest
from support import findings, fixed_text, settings_for

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.inference import InferenceAnalysis, name_tokens
from torchfix_codemods.analysis.facts.modules import changes_with_mode, module_classes
from torchfix_codemods.analysis.project import NO_PROJECT, ClassFacts, NoProject
from torchfix_codemods.engine import process
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.validation import undefined_names


def _analysis(source: str, decorators: tuple[str, ...] = ()) -> InferenceAnalysis:
    module = cst.parse_module(textwrap.dedent(source))
    return InferenceAnalysis(NameIndex.build(module), decorators)


def _roots(source: str) -> dict[str, list[str]]:
    """Inference roots by name, each with the model expressions it would switch."""
    analysis = _analysis(source)
    return {root.facts.name: [m.code for m in root.models]
            for root in analysis.inference_functions()}


def _function(analysis: InferenceAnalysis, name: str):
    return next(f for f in analysis.functions.values() if f.name == name)


BERT_TRAINER = """
import torch

class BERTTrainer:
    def train(self, epoch):
        self.iteration(epoch, self.train_data)

    def test(self, epoch):
        self.iteration(epoch, self.test_data, train=False)

    def iteration(self, epoch, data_loader, train=True):
        for i, data in enumerate(data_loader):
            out = self.model.forward(data["input"])
            loss = self.criterion(out, data["label"])
            if train:
                self.optim_schedule.zero_grad()
                loss.backward()
                self.optim_schedule.step_and_update_lr()
"""


def test_test_that_delegates_to_iteration_train_false_is_inference() -> None:
    analysis = _analysis(BERT_TRAINER)
    iteration = _function(analysis, "iteration")
    assert analysis.differentiates(iteration)
    assert not analysis.differentiates(iteration, frozenset({"train"}))
    assert not analysis.differentiates(_function(analysis, "test"))
    assert analysis.differentiates(_function(analysis, "train"))
    assert _roots(BERT_TRAINER) == {"test": ["self.model"]}


def test_train_false_passed_by_position_and_through_a_variable() -> None:
    source = """
    import torch
    def run_epoch(model, loader, opt, training):
        for x in loader:
            loss = model(x).sum()
            if training:
                loss.backward()
                opt.step()
    def validate(model, loader):
        return run_epoch(model, loader, None, False)
    def evaluate(model, loader, training=False):
        return run_epoch(model, loader, None, training)
    """
    # `training` in evaluate is only a default, not known False at every call: not followed.
    assert _roots(source) == {"validate": ["model"]}


def test_a_differentiating_evaluate_is_never_inference() -> None:
    source = """
    import torch
    def evaluate_saliency(model, x):
        x.requires_grad_(True)
        model(x).sum().backward()
        return x.grad
    def evaluate(model, x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        (g,) = torch.autograd.grad(loss, x)
        return g
    def validate(model, x):
        return helper(model, x)
    def helper(model, x):
        out = model(x)
        out.sum().backward()
        return out
    """
    assert _roots(source) == {}


def test_pytest_tests_and_lightning_hooks_are_not_inference() -> None:
    source = """
    import torch
    import pytorch_lightning as pl
    def test_forward_shape():
        model = torch.nn.Linear(2, 2)
        assert model(torch.ones(1, 2)).shape == (1, 2)
    class TestModel:
        def test(self, model):
            return model(1)
    class Lit(pl.LightningModule):
        def validate(self, x):
            return self.model(x)
        def validation_step(self, batch, i):
            return self.model(batch)
    """
    assert _roots(source) == {}


def test_helpers_map_the_model_back_to_the_callers_names() -> None:
    source = """
    import torch
    net = torch.nn.Linear(2, 2)
    def batch_logits(m, x):
        return m(x)
    def global_user(x):
        return net(x)
    def evaluate(classifier, loader):
        return [batch_logits(classifier, x) for x in loader]
    def evaluate_global(x):
        return global_user(x)
    def logits_of(model, x):
        return model(x)
    def evaluate_expression(models, x):
        return logits_of(models[0], x)
    """
    roots = _roots(source)
    assert roots["evaluate"] == ["classifier"]
    assert roots["evaluate_global"] == ["net"]
    assert roots["evaluate_expression"] == []  # cannot be named: eval fix becomes report-only


def test_pytorch_examples_validate_with_nested_run_validate() -> None:
    source = """
    import torch
    def validate(val_loader, model, criterion):
        def run_validate(loader):
            with torch.no_grad():
                for images, target in loader:
                    output = model(images)
                    loss = criterion(output, target)
        model.eval()
        run_validate(val_loader)
    """
    analysis = _analysis(source)
    (root,) = analysis.inference_functions()
    assert root.facts.name == "validate"
    assert [m.code for m in root.models] == ["model"]
    assert root.already_no_grad and root.already_eval
    assert findings(textwrap.dedent(source), ["TFC201", "TFC202"]) == []


def test_name_tokens() -> None:
    assert name_tokens("evalEpoch") == ["eval", "epoch"]
    assert name_tokens("run_validation") == ["run", "validation"]


def test_inference_decorators_from_settings_count_as_no_grad() -> None:
    source = textwrap.dedent("""
        import torch
        from mylib.utils import inference_only
        @inference_only
        def evaluate(model, x):
            model.eval()
            return model(x)
    """)
    assert [f.code for f in findings(source, ["TFC202"])] == ["TFC202"]
    settings = dataclasses.replace(settings_for(["TFC202"]),
                                   inference_decorators=("mylib.utils.inference_only",))
    result = process(SourceUnit.from_bytes("case.py", source.encode()), settings.options_for("case.py"),
                     apply_fixes=True)
    assert result.findings == [] and result.new_bytes is None


def test_no_grad_fix_adds_import_torch_and_no_undefined_name() -> None:
    source = "from torch import nn\nnet = nn.Linear(2, 2)\n\ndef predict(x):\n" \
             "    net.eval()\n    return net(x)\n"
    fixed = fixed_text(source, ["TFC202"], unsafe=True)
    assert "import torch\n" in fixed and "@torch.no_grad()\ndef predict" in fixed
    assert undefined_names(fixed) == set()
    compile(fixed, "fixed.py", "exec")


def test_no_fix_when_torch_is_bound_to_something_else() -> None:
    source = "from torch import nn\ntorch = None\nnet = nn.Linear(2, 2)\n\n" \
             "def evaluate(x):\n    net.eval()\n    return net(x)\n"
    found = findings(source, ["TFC202"])
    assert [f.code for f in found] == ["TFC202"] and found[0].fix is None
    assert fixed_text(source, ["TFC202"], unsafe=True) == source


def test_restore_names_do_not_collide_with_the_functions_own() -> None:
    source = textwrap.dedent("""
        import torch
        def validate(model, x, submodule, mode):
            train_modes = 1
            with torch.no_grad():
                return model(x) + submodule + mode + train_modes
        def fit(model, opt, x):
            model(x).backward()
            opt.step()
            validate(model, x, 1, 2)
    """)
    fixed = fixed_text(source, ["TFC201"], unsafe=True)
    assert "train_modes_2 = [(submodule_2, submodule_2.training) for submodule_2 in " \
           "model.modules()]" in fixed
    assert "for submodule_2, mode_2 in train_modes_2:\n            submodule_2.train(mode_2)" \
        in fixed


def test_eval_before_every_call_site_counts_as_eval() -> None:
    source = textwrap.dedent("""
        import torch
        from torch import nn
        def evaluate(model, x):
            with torch.no_grad():
                return model(x)
        model = nn.Linear(2, 2)
        model.eval()
        evaluate(model, 1)
    """)
    assert findings(source, ["TFC201"]) == []
    late = source.replace("model.eval()\nevaluate(model, 1)", "evaluate(model, 1)\nmodel.eval()")
    assert [f.code for f in findings(late, ["TFC201"])] == ["TFC201"]


def test_model_built_inside_the_function_gets_no_eval_fix() -> None:
    source = textwrap.dedent("""
        import torch
        from torch import nn
        def predict(path, x):
            model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
            model.load_state_dict(torch.load(path))
            return model(x)
    """)
    (found,) = findings(source, ["TFC201"])
    assert found.fix is None and "assigned inside the function" in found.message


def test_result_fed_to_backward_is_not_inference() -> None:
    """A function whose result the caller differentiates is part of training: no finding
    (a no_grad there would silently stop training, an eval() change what is trained)."""
    source = textwrap.dedent("""
        import torch
        def predict(model, x):
            model.eval()
            return model(x)
        def adapt(model, opt, x):
            out = predict(model, x)
            out.sum().backward()
            opt.step()
    """)
    assert findings(source, ["TFC201", "TFC202"]) == []


# Reduced from DLR-RM/stable-baselines3@e05d2dbe6eda0acd0ef2e316e3e4065677add3eb
# stable_baselines3/ppo/ppo.py (train) and common/policies.py:719 (evaluate_actions): the
# loss is built from the outputs three assignments after the call.
PPO_SHAPE = """
import torch

def evaluate_actions(policy, obs, actions):
    distribution = policy(obs)
    return policy.value_net(obs), distribution.log_prob(actions), distribution.entropy()

def train(policy, optimizer, rollout):
    for data in rollout:
        values, log_prob, entropy = evaluate_actions(policy, data.obs, data.actions)
        ratio = torch.exp(log_prob - data.old_log_prob)
        policy_loss = -torch.min(ratio * data.adv, ratio.clamp(0.8, 1.2) * data.adv).mean()
        loss = policy_loss + 0.5 * (data.returns - values).pow(2).mean() - 0.01 * entropy.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_outputs_that_feed_the_loss_through_assignments_are_training() -> None:
    assert _roots(PPO_SHAPE) == {}
    assert findings(PPO_SHAPE, ["TFC201", "TFC202"]) == []


def test_eval_not_restored_sees_train_in_called_epoch_function() -> None:
    source = textwrap.dedent("""
        import torch
        def validate(model):
            model.eval()
        def train_epoch(model, opt):
            model.train()
            model(1).backward()
            opt.step()
        def fit(model, opt):
            for epoch in range(3):
                train_epoch(model, opt)
                validate(model)
    """)
    assert findings(source, ["TFC203"]) == []
    broken = source.replace("    model.train()\n", "")
    assert [f.code for f in findings(broken, ["TFC203"])] == ["TFC203"]


def test_direct_forward_exclusions_and_safety() -> None:
    recursion = "from torch import nn\nclass A(nn.Module):\n    def forward(self, x):\n" \
                "        return self.forward(x)\n"
    assert findings(recursion, ["TFC204"]) == []
    hooked = "from torch import nn\nm = nn.Linear(2, 2)\nm.register_forward_hook(print)\n" \
             "y = m.forward(1)\n"
    (found,) = findings(hooked, ["TFC204"])
    assert found.fix is not None and found.fix.safety.value == "unsafe"
    assert fixed_text(hooked, ["TFC204"]) == hooked
    assert fixed_text(hooked, ["TFC204"], unsafe=True).endswith("y = m(1)\n")


def test_a_called_callback_is_not_a_model() -> None:
    source = """
    import torch
    def apply(fn, batch):
        return fn(batch)
    def evaluate(metric_fn, loader):
        return [apply(metric_fn, b) for b in loader]
    def evaluate_model(model, loader):
        return [apply(model, b) for b in loader]
    """
    assert _roots(source) == {"evaluate_model": ["model"]}


def test_a_loss_module_is_not_the_model_to_switch() -> None:
    source = """
    import torch
    def evaluate(model, loader, device):
        loss_function = torch.nn.CrossEntropyLoss()
        ce = torch.nn.CrossEntropyLoss().to(device)
        total = 0.0
        for images, labels in loader:
            pred = model(images)
            total += loss_function(pred, labels).item() + ce(pred, labels).item()
        return total
    """
    assert _roots(source) == {"evaluate": ["model"]}


def test_a_loader_helper_that_calls_eval_counts_as_eval() -> None:
    source = textwrap.dedent("""
        import torch
        def load_model(path):
            model = torch.load(path, weights_only=False)
            model.eval()
            return model
        def predict(model, x):
            with torch.no_grad():
                return model(x)
        def main(path, x):
            model = load_model(path)
            print(predict(model, x))
    """)
    assert findings(source, ["TFC201"]) == []


def test_models_called_inside_lambdas_are_callbacks_not_inference() -> None:
    source = """
    import torch
    from torch import nn
    def bce_no_reduce_test():
        sigmoid = nn.Sigmoid()
        return dict(reference_fn=lambda i: sigmoid(i).log())
    """
    assert _roots(source) == {}


def test_a_bare_test_function_in_a_pytest_file_is_a_test() -> None:
    source = "import torch\ndef test(model, x):\n    model.eval()\n    return model(x)\n"
    assert [f.code for f in findings(source, ["TFC202"], path="mnist.py")] == ["TFC202"]
    assert findings(source, ["TFC202"], path="tests/test_model.py") == []
    assert findings(source, ["TFC202"], path="pkg/model_test.py") == []


SUPER_RESOLUTION_TEST = """
import torch
from model import Net

model = Net(upscale_factor=3)


def test(loader):
    with torch.no_grad():
        for batch in loader:
            print(model(batch[0]).mean().item())
"""


class _ModelsFile(NoProject):
    """A project index that has read ``model.py`` (its ``Net`` has no mode-dependent layer)."""

    def __init__(self, changes_with_mode: bool | None) -> None:
        self.changes_with_mode = changes_with_mode

    def module_name(self, path: str) -> str | None:
        return None

    def class_facts(self, qualified: str) -> ClassFacts | None:
        if qualified != "model.Net":
            return None
        return ClassFacts(qualified, "model.py", True, changes_with_mode=self.changes_with_mode)


def _codes(source: str, project: object = NO_PROJECT) -> list[str]:
    unit = SourceUnit("main.py", textwrap.dedent(source))
    options = settings_for(["TFC201"]).options_for("main.py")
    return [f.code for f in process(unit, options, apply_fixes=False, project=project).findings]


def test_a_model_from_another_file_is_judged_by_the_project_index() -> None:
    """pytorch/examples super_resolution/main.py:63: whether eval() matters is a fact about
    a class in model.py. Unknown (no index, or the index cannot tell) keeps the finding."""
    assert _codes(SUPER_RESOLUTION_TEST) == ["TFC201"]
    assert _codes(SUPER_RESOLUTION_TEST, _ModelsFile(None)) == ["TFC201"]
    assert _codes(SUPER_RESOLUTION_TEST, _ModelsFile(True)) == ["TFC201"]
    assert _codes(SUPER_RESOLUTION_TEST, _ModelsFile(False)) == []


@pytest.mark.parametrize(("body", "expected"), [
    ("self.conv = nn.Conv2d(1, 4, 3); self.act = nn.ReLU()", False),
    ("self.conv = nn.Conv2d(1, 4, 3); self.drop = nn.Dropout(0.1)", True),
    ("self.body = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))", True),
    ("self.body = nn.Sequential(nn.Linear(2, 2), nn.GELU())", False),
    ("self.blocks = nn.ModuleList([Block() for _ in range(2)])", None),
    ("self.block = Block()", False),
    ("self.block = Noisy()", True),
    ("self.encoder = encoder", None),
    ("self.scale = 2.0; self.name = 'net'", False),
    # a recurrent layer reads `training` only for the dropout between stacked layers
    # (docs/measurements/recurrent_modes.py): without one, eval() changes nothing
    ("self.rnn = nn.LSTM(4, 4)", False),
    ("self.rnn = nn.GRU(4, 4, num_layers=2, dropout=0.0)", False),
    ("self.rnn = nn.LSTM(4, 4, 2, dropout=0.3)", True),
    ("self.rnn = nn.RNN(4, 4, 2, 'tanh', True, False, 0.5)", True),
    ("self.rnn = nn.LSTM(4, 4, **options)", True),
    # a tuple target without `self.` assigns no submodule; with one, which value is unclear
    ("self.rnn = nn.LSTM(4, 4); outputs, _ = self.rnn(x)", False),
    ("self.rnn = nn.LSTM(4, 4); (self.h, c), o = self.rnn(x)", None),
    ("self.backbone = timm.create_model('resnet18')", None),
    ("self.fc = nn.utils.weight_norm(nn.Linear(2, 2))", False),
])
def test_changes_with_mode(body: str, expected: bool | None) -> None:
    source = textwrap.dedent(f"""
        import timm
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

        class Noisy(nn.Module):
            def forward(self, x):
                return x + self.training

        class Net(nn.Module):
            def __init__(self, encoder=None):
                super().__init__()
                {body}
    """)
    names = NameIndex.build(cst.parse_module(source))
    assert changes_with_mode(names, module_classes(names)["Net"]) is expected


def test_functional_dropout_and_unknown_bases_count() -> None:
    source = textwrap.dedent("""
        import torch.nn as nn
        import torch.nn.functional as F
        from elsewhere import Base

        class Functional(nn.Module):
            def forward(self, x):
                return F.dropout(x, 0.1, self.training)

        class Derived(Base):
            def __init__(self):
                self.fc = nn.Linear(2, 2)
    """)
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    assert changes_with_mode(names, classes["Functional"]) is True
    assert changes_with_mode(names, classes["Derived"]) is None


_SMOKE = """
import torch
import torchvision
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.drop = nn.Dropout()

    def forward(self, x):
        return self.drop(self.fc(x))


def build():
    return Net()


def test():
    net = Net()
    print(net(torch.randn(2, 2)).size())
"""


@pytest.mark.parametrize(("change", "by"), [
    # weights loaded: an evaluation of a trained model
    ("    net = Net()\n",
     "    net = Net()\n    net.load_state_dict(torch.load('n.pt', weights_only=True))\n"),
    # a builder of this file that loads weights
    ("    return Net()\n", "    model = Net()\n    model.load_state_dict(torch.load('n.pt'))\n"
     "    return model\n"),
    # a library factory may load pretrained weights
    ("    net = Net()\n", "    net = torchvision.models.resnet18(weights='DEFAULT')\n"),
    # a model that comes from outside the function
    ("def test():\n    net = Net()\n", "net = Net()\n\n\ndef test():\n"),
])
def test_only_a_freshly_built_model_makes_a_smoke_test(change: str, by: str) -> None:
    """`def test(): net = Net(); print(net(x).size())` is a shape check (no finding); the
    same function with weights loaded, a library factory or a model from outside is not."""
    assert [f.code for f in findings(_SMOKE, ["TFC201", "TFC202"])] == []
    built = _SMOKE.replace("    net = Net()\n", "    net = build()\n") if "return Net()" in change \
        else _SMOKE
    assert change in built
    codes = {f.code for f in findings(built.replace(change, by), ["TFC201", "TFC202"])}
    assert "TFC202" in codes


def test_a_caller_whose_only_model_work_is_a_fixed_evaluator_is_not_reported() -> None:
    # issue 21 (noise): `report_test` only calls `test`, which the same fix decorates (or
    # which is decorated already): both were reported, and `fix` could decorate both.
    from pathlib import Path

    source = (Path(__file__).parent / "fixtures" / "TFC202" /
              "caller_of_a_fixed_evaluator.py").read_text()
    assert [(f.code, f.line) for f in findings(source, ["TFC202"])] == [("TFC202", 14)]
    assert fixed_text(source, ["TFC202"]).count("@torch.no_grad()") == 1
    decorated = source.replace("def test(test_loader):",
                               "@torch.no_grad()\ndef test(test_loader):")
    assert findings(decorated, ["TFC202"]) == []
    # Model work of its own keeps the caller a root: it is reported with the evaluator.
    own_work = source.replace("    accuracy = test(test_loader)[1]",
                              "    model(next(iter(test_loader))[0])\n"
                              "    accuracy = test(test_loader)[1]")
    assert [f.line for f in findings(own_work, ["TFC202"])] == [14, 26]
