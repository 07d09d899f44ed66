"""TFC301's data side across files (issue 13 item 2): the project index pairs a DataParallel
training file with the function of another file that builds its DataLoader.

When the index can prove the pairing (one loader function, called once in the run, a loader
that can take a sampler, both files fixed with the same policy), the building file gets the
DistributedSampler and the training file gets ``set_epoch``; otherwise the training file's
migration is withheld (a model side alone has every process repeat the same work), the
data side is reported with the file, line and edit, and the building file is left alone.
tests/fixtures/TFC301/project_loader_function holds the expected output of the paired case;
tests/test_ddp_shapes.py executes a paired project.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchfix_codemods.analysis.project.summary import summarize
from torchfix_codemods.cli import app
from torchfix_codemods.indexing import project_of_bytes

runner = CliRunner()

DATA = '''\
from torch.utils.data import DataLoader, TensorDataset


def make_loader(inputs, targets):
    dataset = TensorDataset(inputs, targets)
    return DataLoader(dataset, batch_size=16, shuffle=True)
'''
TRAIN = '''\
import torch
from torch import nn

from data import make_loader


def main(inputs, targets):
    model = nn.DataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = make_loader(inputs, targets)
    for epoch in range(5):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
'''
EVALUATE = '''\
import torch

from data import make_loader


def evaluate(model, inputs, targets):
    with torch.no_grad():
        return sum(float(model(x).sum()) for x, _ in make_loader(inputs, targets))
'''


def _write(project: Path, files: dict[str, str]) -> None:
    (project / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    for name, text in files.items():
        (project / name).write_text(text)


def _fix(project: Path, *args: str) -> str:
    result = runner.invoke(app, ["fix", "--unsafe-fixes", "--select", "TFC301", "--config",
                                 str(project / "pyproject.toml"), *args, str(project)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def _findings(project: Path, *args: str) -> list[dict]:
    result = runner.invoke(app, ["check", "--format", "json", "--no-cache", "--select", "TFC301",
                                 "--config", str(project / "pyproject.toml"), *args,
                                 str(project)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)["findings"]


def _data_side(project: Path) -> list[str]:
    return [f["message"] for f in _findings(project) if "data side not migrated" in f["message"]]


def test_the_paired_files_are_both_edited(tmp_path: Path) -> None:
    _write(tmp_path, {"data.py": DATA, "train.py": TRAIN})
    findings = _findings(tmp_path)
    assert sorted(Path(f["path"]).name for f in findings) == ["data.py", "train.py"]
    data_finding = next(f for f in findings if f["path"].endswith("data.py"))
    assert data_finding["line"] == 6 and "train.py" in data_finding["message"]
    _fix(tmp_path)
    data = (tmp_path / "data.py").read_text()
    assert "sampler=torch.utils.data.DistributedSampler(dataset, num_replicas=_ddp_world()[1], " \
           "rank=_ddp_world()[0], shuffle=True)" in data
    train = (tmp_path / "train.py").read_text()
    assert "if isinstance(train_loader.sampler, torch.utils.data.DistributedSampler):" in train
    assert "data side" not in _fix(tmp_path)  # nothing left, and a second fix changes nothing
    assert (tmp_path / "data.py").read_text() == data
    assert (tmp_path / "train.py").read_text() == train


def test_a_loader_function_other_files_call_is_reported_not_sharded(tmp_path: Path) -> None:
    # Sharding make_loader() would shard evaluate.py's data too (each rank would evaluate a
    # part and report it as the whole).
    _write(tmp_path, {"data.py": DATA, "train.py": TRAIN, "evaluate.py": EVALUATE})
    [message] = _data_side(tmp_path)
    assert "`make_loader()` in" in message and "data.py (its DataLoader, line 6)" in message
    assert "called 2 times in the run" in message
    _fix(tmp_path)
    assert (tmp_path / "data.py").read_text() == DATA
    assert (tmp_path / "evaluate.py").read_text() == EVALUATE
    # No sampler can be placed: the training file's migration is withheld too.
    assert (tmp_path / "train.py").read_text() == TRAIN


def test_a_loader_function_called_twice_in_the_training_file_is_reported(tmp_path: Path) -> None:
    twice = TRAIN.replace("    for epoch", "    test_loader = make_loader(inputs, targets)\n"
                                         "    for epoch")
    _write(tmp_path, {"data.py": DATA, "train.py": twice})
    [message] = _data_side(tmp_path)
    assert "called 2 times" in message


def test_a_loader_with_star_kwargs_is_reported(tmp_path: Path) -> None:
    data = DATA.replace("def make_loader(inputs, targets):", "def make_loader(inputs, targets, "
                        "**options):").replace("shuffle=True)", "**options)")
    _write(tmp_path, {"data.py": data, "train.py": TRAIN})
    [message] = _data_side(tmp_path)
    assert "its arguments come from *args/**kwargs" in message and "line 6" in message
    _fix(tmp_path)
    assert (tmp_path / "data.py").read_text() == data


def test_a_loader_with_a_sampler_of_its_own_is_reported(tmp_path: Path) -> None:
    data = DATA.replace("shuffle=True)", "sampler=torch.utils.data.RandomSampler(dataset))")
    data = "import torch\n" + data
    _write(tmp_path, {"data.py": data, "train.py": TRAIN})
    [message] = _data_side(tmp_path)
    assert "it already has a sampler" in message


def test_an_excluded_data_file_is_not_edited_and_the_data_side_is_reported(
        tmp_path: Path) -> None:
    _write(tmp_path, {"data.py": DATA, "train.py": TRAIN})
    findings = _findings(tmp_path, "--exclude", "data.py")
    assert [Path(f["path"]).name for f in findings] == ["train.py", "train.py"]
    assert any("data side not migrated" in f["message"] and "`data.make_loader()` returns"
               in f["message"] and "train_loader.sampler.set_epoch" in f["message"]
               for f in findings)
    _fix(tmp_path, "--exclude", "data.py")
    assert (tmp_path / "data.py").read_text() == DATA
    assert (tmp_path / "train.py").read_text() == TRAIN  # withheld: no sampler can be placed


def test_the_data_file_alone_is_not_edited(tmp_path: Path) -> None:
    # Run on data.py only: no training file in the run asks for its loader.
    _write(tmp_path, {"data.py": DATA, "train.py": TRAIN})
    result = runner.invoke(app, ["fix", "--unsafe-fixes", "--select", "TFC301", "--config",
                                 str(tmp_path / "pyproject.toml"), str(tmp_path / "data.py")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "data.py").read_text() == DATA


def test_the_index_needs_the_same_fix_policy_on_both_files(tmp_path: Path) -> None:
    from torchfix_codemods.analysis.project.index import ProjectIndex

    paths = {name: str(tmp_path / name) for name in ("data.py", "train.py")}
    summaries = {paths["data.py"]: summarize(DATA), paths["train.py"]: summarize(TRAIN)}
    same = ProjectIndex.build(summaries, shardable={p: True for p in paths.values()})
    assert [s.function for s in same.view(paths["data.py"]).training_loaders()] == ["make_loader"]
    mixed = ProjectIndex.build(summaries, shardable={paths["data.py"]: False,
                                                     paths["train.py"]: True})
    assert mixed.view(paths["data.py"]).training_loaders() == ()
    shard = mixed.view(paths["train.py"]).loader_shard("data.make_loader")
    assert shard is not None and "same fix policy" in (shard.problem or "")
    alone = ProjectIndex.build(summaries, shardable={paths["train.py"]: True})
    assert alone.view(paths["data.py"]).training_loaders() == ()


def test_only_the_file_that_builds_the_loader_is_given_work_by_the_index(
        tmp_path: Path) -> None:
    """Every other file of the run keeps the prefilter's answer (no DataParallel in it:
    TFC301 does not run there)."""
    files = {str(tmp_path / "data.py"): DATA.encode(), str(tmp_path / "train.py"): TRAIN.encode(),
             str(tmp_path / "other.py"): b"from data import make_loader\nprint(1)\n"}
    index = project_of_bytes(files)
    assert index.view(str(tmp_path / "other.py")).training_loaders() == ()
    assert index.view(str(tmp_path / "train.py")).training_loaders() == ()
    assert [s.training_path for s in index.view(str(tmp_path / "data.py")).training_loaders()] \
        == [str(tmp_path / "train.py")]


def test_summaries_record_what_the_pairing_needs() -> None:
    data = summarize(DATA)
    assert data.loader_functions["make_loader"].line == 6
    assert data.loader_functions["make_loader"].problem is None
    train = summarize(TRAIN)
    use = train.data_parallel
    assert use is not None and use.wraps == 1 and use.trains and not use.distributed
    assert [(c.callee, c.target, c.function) for c in use.loader_calls] == [
        ("data.make_loader", "train_loader", "main")]
    assert train.callees["data.make_loader"] == 1
    # A file without "DataParallel" or "DataLoader" in its text pays nothing for them.
    plain = summarize("import torch\n\ndef f():\n    return torch.zeros(2)\n")
    assert plain.data_parallel is None and plain.loader_functions == {}


@pytest.mark.parametrize(("change", "problem"), [
    (("    model = nn.DataParallel(nn.Linear(4, 1))\n",
      "    for _ in range(1):\n        model = nn.DataParallel(nn.Linear(4, 1))\n"),
     "not a plain assignment outside loops"),
    (("    optimizer = torch", "    _ddp_state = None\n    optimizer = torch"), "`_ddp_*` names"),
    (("            optimizer.step()\n",
      "            optimizer.step()\n    torch.save(model, 'm.pt')\n    model = torch.load('m.pt')\n"),
     "loads with torch.load after it saves"),
])
def test_a_training_file_the_rule_would_not_migrate_leaves_the_loader_alone(
        tmp_path: Path, change: tuple[str, str], problem: str) -> None:
    """The loader's file is edited only when the training file's migration goes through:
    a sampler without the other side's set_epoch would repeat one shuffle every epoch."""
    train = TRAIN.replace(*change)
    assert train != TRAIN
    _write(tmp_path, {"data.py": DATA, "train.py": train})
    assert not [f for f in _findings(tmp_path) if f["path"].endswith("data.py")]
    _fix(tmp_path)
    assert (tmp_path / "data.py").read_text() == DATA
    index = project_of_bytes({str(tmp_path / "data.py"): DATA.encode(),
                              str(tmp_path / "train.py"): train.encode()})
    shard = index.view(str(tmp_path / "train.py")).loader_shard("data.make_loader")
    assert shard is not None and problem in (shard.problem or "")


def test_a_loader_read_by_two_loops_is_not_paired(tmp_path: Path) -> None:
    """No single epoch loop (a warm-up pass over the loader, then the epochs): the training
    file's data side is reported, so the loader's file must not get a sampler either."""
    train = TRAIN.replace("    for epoch in range(5):",
                          "    for x, _ in train_loader:\n        model(x)\n"
                          "    for epoch in range(5):")
    _write(tmp_path, {"data.py": DATA, "train.py": train})
    assert summarize(train).data_parallel.loader_calls == []  # type: ignore[union-attr]
    _fix(tmp_path)
    assert (tmp_path / "data.py").read_text() == DATA
    assert "set_epoch" not in (tmp_path / "train.py").read_text()


# ---------------------------------------------- a loader handed to a trainer class (BERT-pytorch)
ENTRY = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer


def main(inputs, targets):
    dataset = TensorDataset(inputs, targets)
    train_loader = DataLoader(dataset, batch_size=16, shuffle=True)
    trainer = Trainer(torch.nn.Linear(4, 1), train_dataloader=train_loader)
    for epoch in range(5):
        trainer.train(epoch)
'''
TRAINER = '''\
import torch
from torch import nn


class Trainer:
    def __init__(self, model, train_dataloader):
        self.model = nn.DataParallel(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.data = train_dataloader

    def train(self, epoch):
        for x, y in self.data:
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()
'''


def test_a_loader_handed_to_a_trainer_is_sharded_where_it_is_built(tmp_path: Path) -> None:
    _write(tmp_path, {"main.py": ENTRY, "trainer.py": TRAINER})
    assert not _data_side(tmp_path)
    _fix(tmp_path)
    entry = (tmp_path / "main.py").read_text()
    assert "train_loader = DataLoader(dataset, batch_size=16 // _ddp_world()[1], " \
        "sampler=torch.utils.data.DistributedSampler(dataset, num_replicas=_ddp_world()[1], " \
        "rank=_ddp_world()[0], shuffle=True))" in entry
    assert "    for epoch in range(5):\n        train_loader.sampler.set_epoch(epoch)  # TFC301: " \
        "trainer.py wraps the model\n        trainer.train(epoch)\n" in entry
    trainer = (tmp_path / "trainer.py").read_text()
    assert "self.model = _ddp_wrap(model)  # TFC301: launch with torchrun --nproc_per_node=N " \
        "main.py" in trainer
    assert "set_epoch" not in trainer and "DistributedSampler" not in trainer
    assert "data side" not in _fix(tmp_path)
    assert (tmp_path / "main.py").read_text() == entry


@pytest.mark.parametrize(("change", "problem"), [
    (("        trainer.train(epoch)\n", "        trainer.train(epoch)\n    print(len(train_loader))\n"),
     "`train_loader` is read elsewhere too"),
    (("        trainer.train(epoch)\n", "        trainer.train(0)\n"),
     "no single epoch loop calls a method of `trainer` with the epoch"),
    (("    for epoch", "    other = Trainer(torch.nn.Linear(4, 1), train_dataloader=None)\n    for epoch"),
     "`Trainer` is built 2 times in the run"),
])
def test_a_loader_handed_to_a_trainer_that_cannot_be_paired_is_reported(
        tmp_path: Path, change: tuple[str, str], problem: str) -> None:
    entry = ENTRY.replace(*change)
    assert entry != ENTRY
    _write(tmp_path, {"main.py": entry, "trainer.py": TRAINER})
    [message] = _data_side(tmp_path)
    assert "the DataLoader passed as `train_dataloader=` of `Trainer(...)` in" in message
    assert f"(not edited: {problem}" in message
    _fix(tmp_path)
    assert (tmp_path / "main.py").read_text() == entry
    # No sampler can be placed: the trainer's model side alone is withheld.
    assert (tmp_path / "trainer.py").read_text() == TRAINER


def test_a_loader_handed_as_the_evaluation_loader_is_not_the_training_one(tmp_path: Path) -> None:
    entry = ENTRY.replace("train_dataloader=", "test_dataloader=")
    trainer = TRAINER.replace("train_dataloader", "test_dataloader")
    _write(tmp_path, {"main.py": entry, "trainer.py": trainer})
    [message] = _data_side(tmp_path)
    assert "the training DataLoader (not in this file)" in message
    _fix(tmp_path)
    assert (tmp_path / "main.py").read_text() == entry


PRINTING_UTILS = """import sys
import time

begin = time.time()


def progress_bar(current, total, msg=None):
    cur_len = int(30 * current / total)
    text = "[" + "=" * cur_len + "." * (30 - cur_len) + "]"
    if msg:
        text = text + " | " + msg
    sys.stdout.write(text)
    print(" %d/%d " % (current + 1, total))


def count_and_print(stats, x):
    stats["n"] = stats.get("n", 0) + 1
    print(x)
"""

PRINTING_TRAIN = """import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from utils import count_and_print, progress_bar


def main():
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=16, shuffle=False)
    model = nn.DataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = {}
    for epoch in range(2):
        for i, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            progress_bar(i, len(loader), "loss %.3f" % loss.item())
            count_and_print(stats, i)


if __name__ == "__main__":
    main()
"""


def test_a_helper_of_another_module_that_only_prints_runs_on_rank_zero(tmp_path: Path) -> None:
    """Issue 24 item 1: prints made by helpers of other modules ran on every rank (a progress
    bar printed once per process). The project index knows which functions only print; a
    helper that also changes what the caller sees (a dict it is given) runs everywhere."""
    _write(tmp_path, {"utils.py": PRINTING_UTILS, "train.py": PRINTING_TRAIN})
    assert summarize(PRINTING_UTILS).facts["only-prints"] == ["progress_bar"]
    _fix(tmp_path)
    fixed = (tmp_path / "train.py").read_text()
    assert ("            if _ddp_is_main():  # TFC301: rank 0 only\n"
            "                progress_bar(i, len(loader), \"loss %.3f\" % loss.item())\n") in fixed
    assert "            count_and_print(stats, i)\n" in fixed
    assert (tmp_path / "utils.py").read_text() == PRINTING_UTILS
    # Run alone (no index knows utils.py), the call is not known to print: left as it was.
    alone = tmp_path / "alone"
    alone.mkdir()
    _write(alone, {"train.py": PRINTING_TRAIN})
    _fix(alone)
    assert "            progress_bar(i, len(loader)" in (alone / "train.py").read_text()
    assert "if _ddp_is_main():  # TFC301: rank 0 only\n                progress_bar" not in (
        alone / "train.py").read_text()


@pytest.mark.parametrize("body", [
    "    print(x, file=log)\n",  # a file, not the console
    "    global seen\n    seen = x\n    print(x)\n",  # state the caller may read
    "    log.append(x)\n    print(x)\n",  # a call that is not text
    "    x.shown = True\n    print(x)\n",  # an attribute of what it is given
])
def test_a_helper_that_does_more_than_print_is_not_only_printing(body: str) -> None:
    text = "log = []\n\n\ndef show(x):\n" + body
    assert summarize(text).facts["only-prints"] == []


PROGRESS_BAR = """import sys
import time

last_time = time.time()
begin_time = last_time


def progress_bar(current, total, msg=None):
    global last_time, begin_time
    if current == 0:
        begin_time = time.time()
    sys.stdout.write(" [" + "=" * int(30 * current / total) + "]")
    cur_time = time.time()
    step_time = cur_time - last_time
    last_time = cur_time
    parts = []
    parts.append("  Step: %s" % format_time(step_time))
    parts.append(" | Tot: %s" % format_time(cur_time - begin_time))
    if msg:
        parts.append(" | " + msg)
    sys.stdout.write("".join(parts))
    sys.stdout.write("\\r" if current < total - 1 else "\\n")
    sys.stdout.flush()


def format_time(seconds):
    minutes = int(seconds / 60)
    return "%dm%ds" % (minutes, int(seconds - minutes * 60))
"""


def test_a_progress_bar_with_globals_of_its_own_only_prints() -> None:
    """The pytorch-cifar lineage's progress bar (mixup-cifar10's utils.py has it): it writes
    through sys.stdout, keeps its timing in globals only it uses, and formats with a helper
    that only computes text. With a function that reads one of its globals for something
    else, it no longer counts: skipping it on rank 1 could change what that one sees."""
    assert summarize(PROGRESS_BAR).facts["only-prints"] == ["progress_bar"]
    shared = PROGRESS_BAR + "\n\ndef elapsed(log):\n    log.append(last_time)\n"
    assert summarize(shared).facts["only-prints"] == []


LOGGING_UTILS = """import errno
import os
import matplotlib.pyplot as plt
import numpy as np
import torch


def savefig(fname, dpi=None):
    dpi = 150 if dpi == None else dpi
    plt.savefig(fname, dpi=dpi)


def mkdir_p(path):
    try:
        os.makedirs(path)
    except OSError as exc:
        if exc.errno == errno.EEXIST and os.path.isdir(path):
            pass
        else:
            raise


def save_model(model, optimizer, opt, epoch, save_file):
    print('==> Saving...')
    state = {'opt': opt, 'model': model.state_dict(), 'epoch': epoch}
    torch.save(state, save_file)
    del state


def moved_save(model, path):
    torch.save(model.cpu().state_dict(), path)


def seeded_save(state, path):
    np.random.seed(0)
    torch.save(state, path)


class Logger(object):
    def __init__(self, fpath, title=None):
        self.title = '' if title == None else title
        self.file = open(fpath, 'w')
        self.numbers = {}

    def set_names(self, names):
        self.names = names
        for name in names:
            self.file.write(name + '\\t')
            self.numbers[name] = []
        self.file.write('\\n')
        self.file.flush()

    def append(self, numbers):
        for index, num in enumerate(numbers):
            self.file.write("{0:.6f}".format(num))
            self.numbers[self.names[index]].append(num)
        self.file.write('\\n')

    def plot(self):
        for name in self.names:
            plt.plot(np.arange(len(self.numbers[name])), np.asarray(self.numbers[name]))
        plt.grid(True)

    def close(self):
        if self.file is not None:
            self.file.close()


class Recorder(object):
    def __init__(self, model):
        self.model = model

    def update(self, path):
        self.model.eval()
        open(path, 'w').write('x')


class Meter(object):
    def __init__(self):
        self.sum = 0

    def update(self, val):
        self.sum += val
"""

LOGGING_TRAIN = """import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from utils import Logger, Recorder, mkdir_p, save_model, savefig


def main():
    mkdir_p('checkpoint')
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=16, shuffle=False)
    model = nn.DataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    logger = Logger('checkpoint/log.txt', title='run')
    logger.set_names(['loss'])
    recorder = Recorder(model)
    for epoch in range(2):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        logger.append([loss.item()])
        recorder.update('checkpoint/recorded.txt')
        save_model(model, opt, None, epoch, 'checkpoint/last.pth')
    logger.close()
    logger.plot()
    savefig('checkpoint/log.eps')


if __name__ == "__main__":
    main()
"""


def test_what_only_writes_files_is_known_across_files() -> None:
    """Issue 24 item 1: helpers of other modules that write files (pytorch-classification's
    `mkdir_p` and `savefig`, SupContrast's `save_model`) and a class whose objects only write
    their log (its `Logger`). Traps: a helper that moves the model (`model.cpu()`) or draws
    from numpy's random state, a class whose method changes the model it holds, and a class
    that writes nothing."""
    facts = summarize(LOGGING_UTILS).facts["outputs"]
    assert facts["functions"] == ["mkdir_p", "save_model", "savefig"]
    assert facts["silent"] == ["mkdir_p", "save_model", "savefig"]
    assert facts["classes"] == ["Logger"]


def test_helpers_and_loggers_of_another_module_write_on_rank_zero(tmp_path: Path) -> None:
    """Issue 24 item 1 (executed: tests/test_ddp_real_scripts.py, classification_logger.py):
    the calls of another module's helpers that only write files go under the rank-0 guard,
    and an object of its `Logger` is a no-op object on the other ranks; the module itself is
    not edited. Run alone (no index knows utils.py), nothing is known: left as it was, and
    the `Recorder`, whose method changes the model, stays on every rank either way."""
    _write(tmp_path, {"utils.py": LOGGING_UTILS, "train.py": LOGGING_TRAIN})
    _fix(tmp_path)
    fixed = (tmp_path / "train.py").read_text()
    guard = "if _ddp_is_main():  # TFC301: rank 0 only\n"
    assert "    " + guard + "        mkdir_p('checkpoint')\n" in fixed
    assert "        " + guard + "            save_model(model, opt, None, epoch, " in fixed
    assert "    " + guard + "        savefig('checkpoint/log.eps')\n" in fixed
    assert ("    logger = Logger('checkpoint/log.txt', title='run') if _ddp_is_main() else "
            "_DDPNoWriter()  # TFC301") in fixed
    assert "    logger.set_names(['loss'])\n" in fixed
    assert "    recorder = Recorder(model)\n" in fixed
    assert "        recorder.update('checkpoint/recorded.txt')\n" in fixed
    assert (tmp_path / "utils.py").read_text() == LOGGING_UTILS
    alone = tmp_path / "alone"
    alone.mkdir()
    _write(alone, {"train.py": LOGGING_TRAIN})
    _fix(alone)
    text = (alone / "train.py").read_text()
    assert "_ddp_wrap(" in text and "_DDPNoWriter" not in text
    assert "    mkdir_p('checkpoint')\n" in text
