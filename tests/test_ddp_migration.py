"""TFC301 executed: the migrated script trains under torchrun and still runs as plain python.

A DataParallel training script (tests/fixtures/TFC301/train_dp.py) is migrated
by the engine and run three ways in fresh subprocesses: as written (one
process, DataParallel), migrated under ``torchrun --standalone
--nproc_per_node=2``, and migrated as plain ``python``. The fixture loads
without shuffling and has no BatchNorm, and DDP averages gradients across
ranks, so with the global batch kept all three end with the same weights.

With shuffling on (train_dp_shuffle.py), each rank's sample order must be
exactly DistributedSampler's shard of ``randperm(64)`` seeded with the epoch,
which only happens when ``sampler.set_epoch(epoch)`` runs every epoch.

On CPU the backend is gloo; where CUDA is present the same test runs with
nccl, one process per GPU (a second process on the same GPU is not allowed by
nccl), and compares against the original run on the GPU.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from support import findings, fixed_text

from torchfix_codemods.engine import process
from torchfix_codemods.findings import Safety
from torchfix_codemods.settings import Settings
from torchfix_codemods.source import SourceUnit

FIXTURES = Path(__file__).parent / "fixtures" / "TFC301"
OPTIONS = Settings(enabled=frozenset({"TFC301"}), unsafe_fixes=True).options_for("case.py")
TIMEOUT = 300  # generous: CI machines run other suites beside this one

needs_gloo = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with the gloo backend is not available in this torch build",
)


def _migrate(name: str, directory: Path) -> tuple[Path, Path, str]:
    """Copy the fixture and its migrated version into ``directory``; return both and the message."""
    source = FIXTURES / name
    result = process(SourceUnit.from_bytes(name, source.read_bytes()), OPTIONS, apply_fixes=True)
    assert result.fixed is not None, [f.message for f in result.findings]
    finding = next(f for f in result.findings if f.code == "TFC301")
    assert finding.fix is not None and finding.fix.applied and finding.fix.safety is Safety.UNSAFE
    original = directory / name
    original.write_bytes(source.read_bytes())
    migrated = directory / f"migrated_{name}"
    migrated.write_text(result.fixed)
    return original, migrated, finding.message + "\n" + finding.fix.description


def _migrate_across_files(directory: Path) -> Path:
    """train_dp_shuffle.py split in two: its shuffled loader built by ``make_loader()`` in
    another module, migrated by the CLI as one project (the sampler goes in that module)."""
    project = directory / "shuffle_project"
    project.mkdir()
    train = (FIXTURES / "train_dp_shuffle.py").read_text().replace(
        "from torch.utils.data import DataLoader, TensorDataset",
        "from torch.utils.data import TensorDataset\n\nfrom shuffle_data import make_loader",
    ).replace("loader = DataLoader(dataset, batch_size=16, shuffle=True)",
              "loader = make_loader(dataset)")
    (project / "train.py").write_text(train)
    (project / "shuffle_data.py").write_text(
        "from torch.utils.data import DataLoader\n\n\ndef make_loader(dataset):\n"
        "    return DataLoader(dataset, batch_size=16, shuffle=True)\n")
    fixed = subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--select", "TFC301",
                            "--unsafe-fixes", str(project)], capture_output=True, text=True,
                           env=_env(directory, "cpu"), check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "DistributedSampler(dataset, num_replicas=_ddp_world()[1], rank=_ddp_world()[0], " \
        "shuffle=True)" in (project / "shuffle_data.py").read_text()
    assert "loader.sampler.set_epoch(epoch)" in (project / "train.py").read_text()
    return project / "train.py"


def _env(directory: Path, device: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    # A session of its own, so a run that hangs is killed with every worker torchrun started.
    return subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait(proc: subprocess.Popen[str]) -> str:
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"{proc.args} ran past {TIMEOUT} s:\n{output}")
    assert proc.returncode == 0, f"{proc.args} failed:\n{output}"
    return output


def _torchrun(script: Path, nproc: int) -> list[str]:
    """``torchrun --standalone --nproc_per_node=N script`` (torchrun is this module)."""
    return ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            str(script)]


def _load(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)


def _devices() -> list[str]:
    devices = ["cpu"]
    if torch.cuda.is_available() and dist.is_nccl_available():
        devices.append("cuda")
    return devices


@dataclass
class _Runs:
    """The finished runs of one device: outputs by name, and where their files went."""

    directory: Path
    message: str
    outputs: dict[str, str]


def _start_all(directory: Path, device: str) -> _Runs:
    """Migrate both fixtures and run everything at once: the runs are independent."""
    original, migrated, message = _migrate("train_dp.py", directory)
    nproc = 2 if device == "cpu" else min(2, torch.cuda.device_count())

    def env(name: str) -> dict[str, str]:
        return _env(directory, device, TFC301_WEIGHTS=str(directory / f"{name}.pt"),
                    TFC301_ORDER=str(directory / f"{name}.order"))

    procs = {
        "original": _run([str(original)], directory, env("original")),
        "torchrun": _run(_torchrun(migrated, nproc), directory, env("torchrun")),
        "plain": _run([str(migrated)], directory, env("plain")),
    }
    if device == "cpu":
        _, shuffled, _ = _migrate("train_dp_shuffle.py", directory)
        procs["shuffle"] = _run(_torchrun(shuffled, 2), directory, env("shuffle"))
        across = _migrate_across_files(directory)
        procs["shuffle_project"] = _run(_torchrun(across, 2), across.parent,
                                        env("shuffle_project"))
    return _Runs(directory, message, {name: _wait(proc) for name, proc in procs.items()})


@pytest.fixture(scope="module", params=_devices())
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> _Runs:
    return _start_all(tmp_path_factory.mktemp(f"ddp-{request.param}"), request.param)


@needs_gloo
def test_message_and_fix_carry_the_launch_line_and_batch_note(runs: _Runs) -> None:
    assert "torchrun --nproc_per_node=N train_dp.py" in runs.message
    assert "batch_size" in runs.message and "per process" in runs.message


@needs_gloo
def test_migrated_script_matches_the_original_under_torchrun_and_plain_python(
        runs: _Runs) -> None:
    # Printing is guarded to rank 0: one line per epoch, not one per process.
    assert runs.outputs["torchrun"].count("epoch 2: loss") == 1, runs.outputs["torchrun"]
    reference = _load(runs.directory / "original.pt")
    assert set(reference) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    for run in ("torchrun", "plain"):
        got = _load(runs.directory / f"{run}.pt")
        assert set(got) == set(reference), run
        for key, value in reference.items():
            torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6,
                                       msg=lambda m, run=run, key=key: f"{run} {key}: {m}")
    # It trained: the loss at the end is well below the loss at the start.
    output = runs.outputs["original"]
    first = float(output.split("epoch 0: loss ")[1].split()[0])
    last = float(output.split("epoch 2: loss ")[1].split()[0])
    assert last < first / 2


@needs_gloo
def test_shuffled_loader_reshuffles_every_epoch_through_set_epoch(runs: _Runs) -> None:
    if "shuffle" not in runs.outputs:
        pytest.skip("the shuffle order is checked once, on CPU")
    # "shuffle_project": the same script with its loader built in another module, which
    # gets the sampler (rank and world size from torchrun's environment); set_epoch stays in
    # the training file.
    for name in ("shuffle", "shuffle_project"):
        assert runs.outputs[name].count("epoch 0: loss") == 1, runs.outputs[name]
        ranks = [json.loads((runs.directory / f"{name}.order.{rank}").read_text())
                 for rank in (0, 1)]
        for epoch in range(3):
            # DistributedSampler(shuffle=True, seed=0) after set_epoch(epoch).
            generator = torch.Generator()
            generator.manual_seed(epoch)
            permutation = torch.randperm(64, generator=generator).tolist()
            for rank, seen in enumerate(ranks):
                assert seen["order"][epoch] == permutation[rank::2], (name, rank, epoch)
        assert ranks[0]["order"][0] != ranks[0]["order"][1]
        for seen in ranks:
            assert seen["losses"][-1] < seen["losses"][0]
        assert set(_load(runs.directory / f"{name}.pt")) == {"weight", "bias"}


# ----------------------------------------------------------------- report-only and traps
@pytest.mark.parametrize("name", ["report_wraps_in_two_functions.py",
                                  "report_wrap_per_item_condition.py", "trap_already_ddp.py"])
def test_irregular_files_get_the_launch_line_and_no_rewrite(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    result = process(SourceUnit.from_bytes(name, data), OPTIONS, apply_fixes=True)
    assert result.new_bytes is None
    found = [f for f in result.findings if f.code == "TFC301"]
    assert found and all(f.fix is None for f in found)
    # trap_already_ddp.py only builds the model (no training, nothing run at module level):
    # a user launches the script that imports it.
    script = (f"<the training script that imports {name}>" if name == "trap_already_ddp.py"
              else name)
    for finding in found:
        assert f"torchrun --nproc_per_node=N {script}" in finding.message
        assert "per process" in finding.message
    if name.startswith("report_"):
        assert all("checklist" in f.message and "set_epoch" in f.message for f in found)


def test_a_migration_whose_data_side_cannot_be_placed_is_withheld() -> None:
    """Issue 21 item 5: the model side alone (wrap, guarded prints, no sampler) is a half-done
    migration: under torchrun every process would read the whole dataset and repeat the same
    work. The fix is withheld, nothing is edited, and the data side is reported with the edit
    it needs."""
    name = "loader_elsewhere_withheld.py"
    result = process(SourceUnit.from_bytes(name, (FIXTURES / name).read_bytes()), OPTIONS,
                     apply_fixes=True)
    assert result.new_bytes is None
    wrap, remaining = [f for f in result.findings if f.code == "TFC301"]
    assert wrap.fix is not None and not wrap.fix.applied
    assert wrap.fix.withheld is not None and "every process of a torchrun launch would train " \
        "on the whole dataset" in wrap.fix.withheld
    assert remaining.fix is None and remaining.line == wrap.line
    assert "data side not migrated (no DataLoader in this file), so the migration is withheld" \
        in remaining.message
    for edit in ("sampler=torch.utils.data.DistributedSampler(dataset", "set_epoch(epoch)"):
        assert edit in remaining.message, edit


def test_a_withheld_migration_leaves_the_isinstance_checks_and_writers_alone() -> None:
    """Nothing of a withheld migration is applied: an `isinstance(m, DataParallel)` check is
    reported, not widened (its widening goes with a migration), and the file's writers are not
    reported as writing on every process (the file does not run under DDP)."""
    body = ("def main(make, log):\n    model = nn.DataParallel(nn.Linear(2, 1))\n"
            "    writer = open(log, 'a')\n"
            "    assert isinstance(model, nn.DataParallel)\n"
            "    batches = make()\n    for epoch in range(3):\n        for x in batches:\n"
            "            model(x).sum().backward()\n")
    assert not _migrates(body)
    message = _message(body)
    assert "this file's DataParallel wrap, if any, is not migrated in this change" in message
    assert "writes on every process" not in message


def test_users_own_dataparallel_class_is_not_flagged() -> None:
    text = (FIXTURES / "trap_user_class.py").read_text()
    assert findings(text, ["TFC301"]) == []


PREFIX = "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n\n\n"


def _migrates(body: str) -> bool:
    text = PREFIX + body
    return fixed_text(text, ["TFC301"], unsafe=True) != text


def _message(body: str) -> str:
    return " ".join(f.message for f in findings(PREFIX + body, ["TFC301"]))


def test_a_flag_guard_keeps_its_other_statements_and_the_wrap_follows_the_world_size() -> None:
    """Issue 13 item 1: under torchrun on CPU the flag is off, yet every process must wrap
    (or the ranks train separate copies); the rest of the branch keeps its condition."""
    body = ("def main(ds, args):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.Linear(2, 2)\n    if args.multi_gpu:\n"
            "        print('using', torch.cuda.device_count(), 'GPUs')\n"
            "        model = nn.DataParallel(model, device_ids=[0, 1]).cuda()\n"
            "        torch.backends.cudnn.benchmark = True\n"
            "    for epoch in range(2):\n        for x in loader:\n            model(x)\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert ("    if args.multi_gpu:\n        if _ddp_is_main():  # TFC301: rank 0 only\n"
            "            print('using', torch.cuda.device_count(), 'GPUs')\n"
            "    if _ddp_setup()[2] > 1 or args.multi_gpu:  # TFC301: every process of a launch "
            "wraps, one process where it did (was: `if args.multi_gpu:`)\n"
            "        model = _ddp_wrap(model)\n"
            "    if args.multi_gpu:\n        torch.backends.cudnn.benchmark = True\n") in fixed


def test_an_else_branch_around_the_wrap_is_reported() -> None:
    body = ("def main(ds, args):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.Linear(2, 2)\n    if args.multi_gpu:\n"
            "        model = nn.DataParallel(model)\n    else:\n        model = model.cuda()\n"
            "    for epoch in range(2):\n        for x in loader:\n            model(x)\n")
    assert not _migrates(body)
    assert "the wrap is inside an `if` with an else branch (DDP must wrap" in _message(body)
    assert "of the file's" not in _message(body)  # the file's only wrap: no line to single out


def test_a_dtype_move_on_the_wrapper_is_not_dropped() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2)).to(torch.float64)\n"
            "    for epoch in range(2):\n        for x in loader:\n            model(x)\n")
    assert not _migrates(body)
    assert "larger expression" in _message(body)


def test_shuffled_loader_without_an_epoch_loop_is_reported() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for x in loader:\n"
            "        model(x)\n")
    # No sampler can be placed: the migration is withheld (the model side alone would have
    # every process repeat the same work); the data side is reported with the edit it needs.
    assert not _migrates(body)
    message = _message(body)
    assert "no single epoch loop over `loader`" in message and "set_epoch(epoch)" in message


def test_len_of_the_loader_inside_the_batch_loop_is_not_an_epoch_loop() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for epoch in range(3):\n"
            "        for i, x in enumerate(loader):\n            model(x)\n"
            "            print(i, len(loader))\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "    for epoch in range(3):\n        loader.sampler.set_epoch(epoch)\n" in fixed


def test_inline_dataset_is_named_once_and_a_helper_name_clash_is_reported() -> None:
    inline = ("def main(x, y):\n    loader = DataLoader(torch.utils.data.TensorDataset(x, y), "
              "batch_size=8)\n    model = nn.DataParallel(nn.Linear(2, 2))\n"
              "    for epoch in range(2):\n        for b in loader:\n            model(b)\n")
    fixed = fixed_text(PREFIX + inline, ["TFC301"], unsafe=True)
    assert ("    train_dataset = torch.utils.data.TensorDataset(x, y)\n"
            "    # TFC301: DDP's batch_size is per process: global batch // world size keeps the "
            "global batch\n    loader = DataLoader(train_dataset, batch_size=8 // _ddp_setup()[2], "
            "sampler=torch.utils.data.DistributedSampler(train_dataset, shuffle=False))\n") in fixed
    clash = ("def _ddp_setup():\n    pass\n\n\ndef main(ds):\n"
             "    loader = DataLoader(ds, batch_size=8)\n    model = nn.DataParallel(nn.Linear(2, 2))\n"
             "    for epoch in range(2):\n        for b in loader:\n            model(b)\n")
    assert not _migrates(clash)
    assert "_ddp_setup" in _message(clash)


def test_isinstance_inside_a_guarded_print_is_fixed_in_a_later_round() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for b in loader:\n            model(b)\n"
            "    print(isinstance(model, nn.DataParallel))\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert ("    if _ddp_is_main():  # TFC301: rank 0 only\n        print(isinstance(model, "
            "(nn.DataParallel, nn.parallel.DistributedDataParallel)))\n    _ddp_cleanup()\n") in fixed
    assert "nn.DataParallel(" not in fixed


def test_training_function_returning_the_model_is_reported() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for b in loader:\n            model(b)\n"
            "    return model\n")
    assert not _migrates(body)
    assert "returns a value" in _message(body)
    assert _migrates(body.replace("return model", "return 0"))


def test_reloading_a_saved_file_is_reported() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for b in loader:\n            model(b)\n"
            "        torch.save(model.module.state_dict(), 'best.pt')\n"
            "    model.module.load_state_dict(torch.load('best.pt'))\n")
    assert not _migrates(body)
    assert "barrier" in _message(body)


def test_a_refused_migration_leaves_the_file_alone() -> None:
    """Issue 15 item 1 (Lightning fabric dp.py): the wrap was reported without a rewrite, yet
    --unsafe-fixes widened the file's isinstance checks: an edit that migrates nothing."""
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    critic = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for b in loader:\n            model(b)\n"
            "    return isinstance(model, nn.DataParallel)\n")
    assert not _migrates(body)
    assert fixed_text(PREFIX + body, ["TFC301"], unsafe=True) == PREFIX + body
    codes = [f.code for f in findings(PREFIX + body, ["TFC301"])]
    assert codes == ["TFC301"] * 3  # both wraps and the check are still reported


def test_the_check_is_widened_with_the_migration_of_its_file() -> None:
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for b in loader:\n            model(b)\n"
            "    ok = isinstance(model, nn.DataParallel)\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel))" in fixed


# ----------------------------------------------------------------- issue 24
def test_a_pickled_wrapper_is_saved_unwrapped_only_where_it_is_the_wrapped_name() -> None:
    """A pickled DistributedDataParallel loads only where a process group exists (measured,
    torch 2.13); the executed proof is tests/test_ddp_real_scripts.py."""
    body = ("def save(net, path):\n    torch.save(net, path)\n\n\n"
            "def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    net = nn.Linear(2, 2)\n    net = nn.DataParallel(net)\n"
            "    for epoch in range(2):\n        for x in loader:\n            net(x)\n"
            "    torch.save(net, 'whole.pt')\n"
            "    torch.save([{'model': net, 'opt': None}], 'list.pt')\n"
            "    torch.save(net.state_dict(), 'state.pt')\n    save(net, 'other.pt')\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "        torch.save(_ddp_unwrap(net), 'whole.pt')\n" in fixed
    assert "        torch.save([{'model': _ddp_unwrap(net), 'opt': None}], 'list.pt')\n" in fixed
    assert "        torch.save(net.state_dict(), 'state.pt')\n" in fixed
    # The wrapper handed whole to a helper that pickles its parameter (issue 24 item 5): the
    # helper saves `_ddp_unwrap(net)` (the same object for anything else its other callers
    # pass) and runs on rank 0 as a whole (item 1).
    assert ("def save(net, path):\n"
            "    if not _ddp_is_main():  # TFC301: rank 0 writes what this function writes\n"
            "        return\n    torch.save(_ddp_unwrap(net), path)\n") in fixed
    assert "def _ddp_unwrap(module):\n" in fixed
    # The helper is written only where a save needs it.
    plain = fixed_text(PREFIX + body.replace("    torch.save(net, 'whole.pt')\n", "").replace(
        "    torch.save([{'model': net, 'opt': None}], 'list.pt')\n", "").replace(
        "    save(net, 'other.pt')\n", ""), ["TFC301"], unsafe=True)
    assert "_ddp_unwrap" not in plain and "_ddp_wrap(net)" in plain


def test_a_wrapper_pickled_through_a_helpers_parameter_is_saved_unwrapped() -> None:
    """Issue 24 item 5, he-y/soft-filter-pruning's shape: `save_checkpoint({"state_dict": net,
    ...}, is_best, path)` with `torch.save(state, filename)` inside pickled the wrapper through
    the helper's parameter (executed: tests/test_ddp_real_scripts.py, soft_filter_pruning.py).
    Traps: a parameter named like the wrapper but given another model, a literal whose
    parameter the helper also reads for something else, and a helper that rebinds it."""
    body = ("def save_checkpoint(state, is_best, filename):\n"
            "    torch.save(state, filename)\n    if is_best:\n"
            "        shutil.copyfile(filename, 'best.pt')\n\n\n"
            "def save_named(net, path):\n    torch.save(net, path)\n\n\n"
            "def save_and_read(state, path):\n    torch.save(state, path)\n"
            "    print(state['net'].module)\n\n\n"
            "def save_rebound(state, path):\n    state = dict(state)\n"
            "    torch.save(state, path)\n\n\n"
            "def main(ds, other):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    net = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for x in loader:\n            net(x)\n"
            "        save_checkpoint({'epoch': epoch, 'state_dict': net}, True, 'c.pt')\n"
            "    save_named(other, 'o.pt')\n"
            "    save_and_read({'net': net}, 'r.pt')\n"
            "    save_rebound({'net': net}, 'b.pt')\n")
    text = "import shutil\n" + PREFIX + body
    fixed = fixed_text(text, ["TFC301"], unsafe=True)
    assert ("        save_checkpoint({'epoch': epoch, 'state_dict': _ddp_unwrap(net)}, True, "
            "'c.pt')\n") in fixed, fixed
    assert "def save_named(net, path):\n" in fixed
    assert "    torch.save(net, path)\n" in fixed  # given `other`, not the wrapper
    assert "    save_and_read({'net': net}, 'r.pt')\n" in fixed
    assert "    save_rebound({'net': net}, 'b.pt')\n" in fixed


def test_a_helper_that_writes_files_runs_on_rank_zero_as_a_whole() -> None:
    """Issue 24 item 1: "a guarded torch.save followed by an unguarded shutil.copyfile in the
    same helper: guard the helper, not the one call". A function of the file that only prints
    and writes files (the project index's `outputs`) returns at its top on the other ranks,
    so what no vocabulary names (a `np.save`, `log.write` on a file it is given) is skipped
    with the rest. Traps: a helper that returns a value, changes what it is given, writes a
    path of each rank's own, or calls something unknown keeps its per-call guards."""
    body = ("def save_checkpoint(state, is_best, filename):\n"
            "    \"\"\"Saves a checkpoint.\"\"\"\n"
            "    directory = os.path.dirname(filename)\n"
            "    torch.save(state, filename)\n    if is_best:\n"
            "        shutil.copyfile(filename, os.path.join(directory, 'best.pt'))\n\n\n"
            "def print_log(text, log):\n    print(text)\n    log.write(text + '\\n')\n"
            "    log.flush()\n\n\n"
            "def save_path(state, filename):\n    torch.save(state, filename)\n"
            "    return filename\n\n\n"
            "def save_counted(state, stats):\n    stats['saves'] = 1\n"
            "    torch.save(state, 'c.pt')\n\n\n"
            "def save_own(state, rank):\n    torch.save(state, f'c.{rank}.pt')\n\n\n"
            "def save_moved(state, model):\n    model.cpu()\n"
            "    torch.save(state, 'e.pt')\n\n\n"
            "def main(ds, log):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    net = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for x in loader:\n"
            "            net(x).sum().backward()\n        print_log('epoch', log)\n"
            "        save_checkpoint(net.state_dict(), True, 'c.pt')\n")
    text = "import os\nimport shutil\n" + PREFIX + body
    fixed = fixed_text(text, ["TFC301"], unsafe=True)
    guard = "    if not _ddp_is_main():  # TFC301: rank 0 writes what this function writes\n" \
            "        return\n"
    assert ("def save_checkpoint(state, is_best, filename):\n"
            "    \"\"\"Saves a checkpoint.\"\"\"\n" + guard +
            "    directory = os.path.dirname(filename)\n    torch.save(state, filename)\n"
            "    if is_best:\n"
            "        shutil.copyfile(filename, os.path.join(directory, 'best.pt'))\n") in fixed
    assert "def print_log(text, log):\n" + guard + "    print(text)\n" in fixed
    assert fixed.count(guard) == 2, fixed
    for name in ("save_path", "save_counted", "save_own", "save_moved"):
        assert f"def {name}(" in fixed
    assert ("def save_path(state, filename):\n    if _ddp_is_main():  # TFC301: rank 0 only\n"
            "        torch.save(state, filename)\n    return filename\n") in fixed
    assert "def save_own(state, rank):\n    torch.save(state, f'c.{rank}.pt')\n" in fixed


def test_a_pickled_wrapper_in_a_dict_bound_to_a_name_is_saved_unwrapped() -> None:
    """mixup-cifar10's `checkpoint()`: `state = {'net': net, ...}` then `torch.save(state, p)`
    (executed: tests/test_ddp_real_scripts.py, mixup_csv_log.py). Trap: a name that one of
    two branches binds to the dict is not followed (the other branch may save something
    else), and neither is a dict whose `net` is another function's parameter."""
    body = ("def main(ds, flag):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    net = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for x in loader:\n            net(x)\n"
            "    state = {'net': net, 'epoch': 2}\n    torch.save(state, 'ckpt.pt')\n"
            "    if flag:\n        other = {'net': net}\n    else:\n        other = None\n"
            "    torch.save(other, 'other.pt')\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "    state = {'net': _ddp_unwrap(net), 'epoch': 2}\n" in fixed
    assert "        other = {'net': net}\n" in fixed


@pytest.mark.parametrize(("condition", "expected"), [
    ("torch.cuda.device_count() > 1", "_ddp_setup()[2] > 1 or torch.cuda.device_count() > 1"),
    ("args.train and torch.cuda.is_available()",
     "args.train and (_ddp_setup()[2] > 1 or torch.cuda.is_available())"),
    # A flag named for parallelism is about devices: a launch wraps whatever it says.
    ("args.data_parallel and args.train", "(_ddp_setup()[2] > 1 or args.data_parallel) and args.train"),
    ("opt.isTrain and len(opt.gpu_ids) and not opt.fp16",
     "opt.isTrain and (_ddp_setup()[2] > 1 or len(opt.gpu_ids)) and not opt.fp16"),
    # Nothing names a device: the whole condition is kept beside the world size.
    ("args.wrap or args.force", "_ddp_setup()[2] > 1 or (args.wrap or args.force)"),
    ("args.wrap", "_ddp_setup()[2] > 1 or args.wrap"),
])
def test_a_conditional_wrap_keeps_the_users_conditions(condition: str, expected: str) -> None:
    """Issue 24 item 2: every process of a launch wraps; one process wraps where the original
    did (so `.module` stays valid); conditions not about devices hold under a launch too."""
    body = ("def main(ds, args, opt):\n    loader = DataLoader(ds, batch_size=8)\n"
            f"    model = nn.Linear(2, 2)\n    if {condition}:\n"
            "        model = nn.DataParallel(model)\n"
            "    for epoch in range(2):\n        for x in loader:\n            model(x)\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert f"    if {expected}:  # TFC301: every process of a launch wraps" in fixed, fixed


def test_gpu_count_batch_scaling_is_named_while_the_batch_is_not_divided() -> None:
    """Issue 24 item 7: the scaled batch is the global one; the migrated loader divides it by
    the world size (executed in test_ddp_real_scripts.py). Where the data side is not
    migrated, each process would put the whole scaled batch on its one GPU: said so."""
    body = ("n_gpu = torch.cuda.device_count()\nbatch_size = 8\nif n_gpu > 1:\n"
            "    batch_size *= n_gpu\nsteps = 2\nsteps *= 2\n\n\n"
            "def main(batches):\n    model = nn.DataParallel(nn.Linear(2, 1))\n"
            "    for epoch in range(3):\n        for x in batches:\n"
            "            model(x).sum().backward()\n")
    message = _message(body)
    assert "line 9 multiplies the batch size by the GPU count" in message, message
    assert "line 11" not in message
    assert "GPU count" not in _message(body.replace("batch_size *= n_gpu", "batch_size *= 2"))


def test_a_refusal_names_the_wrap_it_refuses_among_several() -> None:
    """Issue 24 item 8: the training wrap was fine; a test's wrap inside a loop and an `if`
    with an else branch refused the file, and the message must say which wrap and why."""
    body = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for x in loader:\n"
            "            model(x).sum().backward()\n\n\n"
            "def test_forward():\n    for n in (1, 2):\n        if n > 1:\n"
            "            model = nn.DataParallel(nn.Linear(2, 2))\n        else:\n"
            "            model = nn.Linear(2, 2)\n        model(torch.zeros(1, 2))\n")
    assert not _migrates(body)
    message = _message(body)
    assert ("of the file's 2 wraps, the one at line 17 in `test_forward()`: the wrap is inside "
            "an `if` with an else branch in a `for` loop") in message, message
    assert "while loop" not in message
    body = body.replace("    for n in (1, 2):\n        if n > 1:\n", "    n = 2\n"
                        "    while n:\n        n -= 1\n        if n:\n")
    assert "the one at line 19 in `test_forward()`: the wrap is inside an `if` with an else " \
        "branch in a `while` loop" in _message(body)


def test_a_module_that_only_builds_the_model_names_the_script_that_imports_it() -> None:
    """Issue 24 item 8: `torchrun ... models.py` launched a module that trains nothing and
    runs nothing; the line names the script that imports it instead."""
    body = ("class Net(nn.Module):\n    pass\n\n\ndef build(gpus):\n    model = Net()\n"
            "    if len(gpus) > 1:\n        model = nn.DataParallel(model, device_ids=gpus)\n"
            "    return model\n")
    launch = "torchrun --nproc_per_node=N <the training script that imports case.py>"
    assert launch in _message(body)
    # Its training loader is another file's: the migration is withheld (issue 21 item 5).
    assert not _migrates(body)
    # Run as a script (a __main__ block), or training here: the file itself is launched.
    for script in (body + "\n\nif __name__ == '__main__':\n    build([0, 1])\n",
                   body + "\n\ndef step(model, x):\n    model(x).sum().backward()\n"):
        assert "torchrun --nproc_per_node=N case.py" in _message(script)
        assert "imports case.py" not in _message(script)


ONE_FORWARD = ("def main(ds):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
               "    net = nn.DataParallel(GAN())\n    for epoch in range(2):\n"
               "        for z, real in loader:\n            loss_G, loss_D = net(z, real)\n"
               "            loss_G.backward(retain_graph=True); opt_G.step()\n"
               "            loss_D.backward()\n            opt_D.step()\n")


@pytest.mark.parametrize("loop", [
    # The second backward in a branch that follows the first (whenever it runs, two passes).
    "            loss_G, loss_D = net(z, real)\n            loss_G.backward(retain_graph=True)\n"
    "            if epoch >= 1:\n                loss_D.backward()\n",
    # Under a `with` block (autocast, a profiler): it runs once, in order.
    "            with torch.autograd.profiler.record_function('step'):\n"
    "                loss_G, loss_D = net(z, real)\n"
    "                loss_G.backward(retain_graph=True)\n            loss_D.backward()\n",
])
def test_a_second_backward_in_a_nested_block_is_seen(loop: str) -> None:
    """Issue 24 item 3: the second backward was looked for in the block of the first only."""
    body = ONE_FORWARD.split("            loss_G, loss_D = net(z, real)\n")[0] + loop
    assert not _migrates(body)
    assert "calls backward a second time after one forward" in _message(body)


def test_two_backward_passes_after_one_forward_are_reported_not_migrated() -> None:
    """Issue 24 item 3: DDP all-reduces the first backward after a forward only. Measured on
    torch 2.13 (tests/ddp_real/measure_two_backward.py, gloo, 2 processes, 5 steps): the
    discriminator ends 0.27 away from the one-process weights, the generator 0.03, no error;
    the same with G and D each in a DDP of its own; 7e-9 with gradients averaged by hand."""
    assert not _migrates(ONE_FORWARD)
    message = _message(ONE_FORWARD)
    assert "no automatic rewrite: line 13 calls backward a second time after one forward of " \
        "the wrapped model (the first at line 12)" in message, message
    # What to do, as measured there: a DDP per part ends as far off (0.27), averaging by hand
    # before each step reaches the one-process weights.
    assert "A DDP per submodule of `net` does not help" in message, message
    assert "run a forward per backward" in message
    assert "`torch.distributed.all_reduce(p.grad); p.grad /= world_size`" in message


@pytest.mark.parametrize("loop", [
    # A forward per backward (DCGAN: the discriminator on real, then on fake).
    "            loss_G, _ = net(z, real)\n            loss_G.backward()\n"
    "            _, loss_D = net(z, real)\n            loss_D.backward()\n",
    # Exclusive branches: one backward per step.
    "            loss_G, loss_D = net(z, real)\n            if epoch % 2:\n"
    "                loss_G.backward()\n            else:\n                loss_D.backward()\n",
    # A helper given the model may run its forward between the two.
    "            loss_G, _ = net(z, real)\n            loss_G.backward()\n"
    "            loss_D = discriminator_loss(net, z, real)\n            loss_D.backward()\n",
])
def test_a_forward_per_backward_is_migrated(loop: str) -> None:
    body = ONE_FORWARD.split("            loss_G, loss_D = net(z, real)\n")[0] + loop
    assert _migrates(body), _message(body)


def test_a_validation_loader_is_not_taken_for_the_training_one_and_stays_reported() -> None:
    """Issue 24 item 4 (pix2pixHD's shape): training batches from a loader class of another
    file, and one `val_loader` here. It was sharded as the training loader (batch 1 // world
    size), and the migrated file then passed `check` although its data side was not done."""
    body = ("from data.data_loader import CreateDataLoader\n\n\n"
            "def main(opt, val_set):\n    data_loader = CreateDataLoader(opt)\n"
            "    dataset = data_loader.load_data()\n"
            "    val_loader = DataLoader(val_set, batch_size=1)\n"
            "    model = nn.DataParallel(nn.Linear(2, 1))\n    for epoch in range(3):\n"
            "        for i, data in enumerate(dataset):\n            model(data).sum().backward()\n"
            "        with torch.no_grad():\n            for x in val_loader:\n"
            "                model(x)\n")
    # The training batches come from elsewhere: the migration is withheld, the file unchanged.
    assert not _migrates(body)
    for text in (PREFIX + body,):
        message = " ".join(f.message for f in findings(text, ["TFC301"]))
        assert "this file's DataLoaders, `val_loader` (line " in message, message
        assert "the loader behind `dataset`, which the epoch loop reads (line " in message
        assert "`dataset = data_loader.load_data()`" in message
        assert "the training DataLoader (" not in message


def test_check_on_a_migrated_file_still_runs_the_rule() -> None:
    """The prefilter skipped a migrated file (no identifier `DataParallel` left), so its data
    side report vanished under `check`."""
    body = ("def main(ds, make):\n    model = nn.DataParallel(nn.Linear(2, 1))\n"
            "    batches = DataLoader(ds, batch_size=8)\n    for epoch in range(3):\n"
            "        for x in batches:\n            model(x).sum().backward()\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "_ddp_wrap(" in fixed and "DataParallel(nn" not in fixed
    # A file whose data side an earlier run left (a model-side-only migration of an earlier
    # version): its loader is another file's now, and no set_epoch is called.
    earlier = re.sub(r"    # TFC301: DDP's batch_size.*\n    batches = DataLoader\(.*\)\n",
                     "    batches = make()\n", fixed)
    earlier = earlier.replace("        batches.sampler.set_epoch(epoch)\n", "")
    assert "batches = make()" in earlier and "set_epoch" not in earlier
    assert "data side not migrated" in " ".join(f.message for f in findings(earlier, ["TFC301"]))


def test_a_block_that_writes_a_file_runs_on_rank_zero_as_a_whole() -> None:
    """Issue 24 item 1: every rank appended to one log, and rank 1 copied a checkpoint rank 0
    was still writing (executed: tests/test_ddp_real_scripts.py, checkpoint_log.py)."""
    body = ("import csv\nimport shutil\n\n\ndef main(ds):\n"
            "    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for epoch in range(2):\n"
            "        for x in loader:\n            model(x).sum().backward()\n"
            "        with open('log.csv', 'a') as f:\n            csv.writer(f).writerow([epoch])\n"
            "            print('logged', file=f)\n"
            "        shutil.copyfile('a.pt', 'best.pt')\n"
            "    with open('kept.txt', 'w') as g:\n        count = g.write('x')\n"
            "    print(count)\n"
            "    with open('read.txt') as h:\n        h.read()\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert ("        if _ddp_is_main():  # TFC301: rank 0 only\n"
            "            with open('log.csv', 'a') as f:\n"
            "                csv.writer(f).writerow([epoch])\n"
            "                print('logged', file=f)\n") in fixed
    assert ("        if _ddp_is_main():  # TFC301: rank 0 only\n"
            "            shutil.copyfile('a.pt', 'best.pt')\n") in fixed
    # `count` is read after the block: rank 1 needs it, so the block is not skipped there;
    # it writes to os.devnull instead.
    assert ("    with open('kept.txt' if _ddp_is_main() else os.devnull, 'w') as g:\n"
            "        count = g.write('x')\n") in fixed
    # Reading is not writing.
    assert "    with open('read.txt') as h:\n        h.read()\n" in fixed


def test_a_file_of_each_ranks_own_is_written_by_every_rank() -> None:
    body = ("import json\n\n\ndef main(ds, rank):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for epoch in range(2):\n"
            "        for x in loader:\n            model(x).sum().backward()\n"
            "    with open(f'order.{rank}', 'w') as out:\n        json.dump([1], out)\n"
            "    torch.save(model.state_dict(), f'shard_rank{rank}.pt')\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "    with open(f'order.{rank}', 'w') as out:\n        json.dump([1], out)\n" in fixed
    assert "    torch.save(model.state_dict(), f'shard_rank{rank}.pt')\n" in fixed


def test_writers_that_live_on_every_rank_write_on_rank_zero_only() -> None:
    """Issue 24 item 1: a SummaryWriter, a logging FileHandler or a file opened outside a
    `with` kept writing on every process. The other processes now get os.devnull (a real
    file object, so every later use works) or, for a writer used only through method calls,
    an object whose methods do nothing (executed: tests/test_ddp_real_scripts.py,
    tensorboard_log.py)."""
    body = ("import logging\nfrom torch.utils.tensorboard import SummaryWriter\n\n\n"
            "def main(ds, rank):\n    loader = DataLoader(ds, batch_size=8)\n"
            "    writer = SummaryWriter('runs')\n    log = open('log.txt', 'a')\n"
            "    handler = logging.FileHandler('train.log')\n"
            "    own = open(f'log.{rank}', 'a')\n    if rank == 0:\n"
            "        board = SummaryWriter('board')\n"
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for epoch in range(2):\n"
            "        for x in loader:\n            model(x).sum().backward()\n"
            "        writer.add_scalar('loss', 1.0, epoch)\n        log.write('x')\n"
            "    writer.close()\n")
    text = PREFIX + body
    fixed = fixed_text(text, ["TFC301"], unsafe=True)
    assert "_ddp_wrap(" in fixed
    assert ("    writer = SummaryWriter('runs') if _ddp_is_main() else _DDPNoWriter()  # TFC301: "
            "rank 0 writes the logs, the other processes nothing\n") in fixed
    assert "class _DDPNoWriter:\n" in fixed
    assert "    log = open('log.txt' if _ddp_is_main() else os.devnull, 'a')  # TFC301" in fixed
    assert ("    handler = logging.FileHandler('train.log' if _ddp_is_main() else os.devnull)"
            in fixed)
    # A path of each rank's own, and a writer under a rank condition, stay as they are.
    assert "    own = open(f'log.{rank}', 'a')\n" in fixed
    assert "        board = SummaryWriter('board')\n" in fixed
    for source in (text, fixed):
        assert not [f for f in findings(source, ["TFC301"]) if "writes on every process" in f.message]
    # Without a migration of the file, nothing is said about its writers.
    unmigrated = text.replace("nn.DataParallel(nn.Linear(2, 2))", "nn.Linear(2, 2)")
    assert findings(unmigrated, ["TFC301"]) == []


@pytest.mark.parametrize(("writer", "use"), [
    # Read as a value: a no-op object would give a function where a path is expected.
    ("    writer = SummaryWriter('runs')\n", "        print(writer.log_dir)\n"),
    ("    writer = SummaryWriter('runs')\n", "        log_to(writer)\n"),
    # Mode x fails on os.devnull (it exists); a mode not written out is not known to write.
    ("    log = open('log.txt', 'x')\n", "        log.write('x')\n"),
    # Read back by the file: the other processes would read rank 0's file while it is written.
    ("    log = open('log.txt', 'w')\n", "        print(open('log.txt').read())\n"),
])
def test_writers_the_rewrite_cannot_keep_stay_reported(writer: str, use: str) -> None:
    body = ("from torch.utils.tensorboard import SummaryWriter\n\n\n"
            "def main(ds):\n    loader = DataLoader(ds, batch_size=8)\n" + writer +
            "    model = nn.DataParallel(nn.Linear(2, 2))\n    for epoch in range(2):\n"
            "        for x in loader:\n            model(x).sum().backward()\n" + use)
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert "_ddp_wrap(" in fixed
    assert writer in fixed, fixed
    found = [f for f in findings(fixed, ["TFC301"]) if "writes on every process" in f.message]
    assert len(found) == 1, found


MAIN_BLOCK = ("if __name__ == '__main__':\n    ds = torch.utils.data.TensorDataset(torch.ones(8, 2))\n"
              "    loader = DataLoader(ds, batch_size=4, shuffle=True)\n"
              "    model = nn.Linear(2, 2)\n"
              "    if torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)\n"
              "    for epoch in range(2):\n        for (x,) in loader:\n"
              "            model(x).sum().backward()\n    print('done')\n")


def test_a_wrap_in_the_main_block_is_migrated_there() -> None:
    """Issue 24 item 2: a conditional wrap inside `if __name__ == "__main__":` was reported (a
    wrap "in an `if` in an `if`"). The block runs in every process, like module level; the
    process group is joined at its top and left at its end, not when the file is imported
    (executed: tests/test_ddp_real_scripts.py, main_guard_yolo.py)."""
    fixed = fixed_text(PREFIX + MAIN_BLOCK, ["TFC301"], unsafe=True)
    assert ("if __name__ == '__main__':\n"
            "    _ddp_setup()  # TFC301: join the process group before anything uses a device\n"
            ) in fixed
    assert "\n_ddp_setup()\n" not in fixed  # nothing runs on import
    assert "    if _ddp_setup()[2] > 1 or torch.cuda.device_count() > 1:  # TFC301" in fixed
    assert "        loader.sampler.set_epoch(epoch)\n" in fixed
    assert fixed.endswith("    if _ddp_is_main():  # TFC301: rank 0 only\n"
                          "        print('done')\n    _ddp_cleanup()\n")
    # Unconditional, the wrap is not put under a condition of its own.
    plain = MAIN_BLOCK.replace("    if torch.cuda.device_count() > 1:\n        model = ",
                               "    model = ")
    fixed = fixed_text(PREFIX + plain, ["TFC301"], unsafe=True)
    assert "    model = _ddp_wrap(model)  # TFC301: launch with" in fixed
    assert "__name__ == '__main__':  # TFC301" not in fixed and "or __name__" not in fixed


def test_a_main_block_wrap_whose_epochs_run_outside_it_is_reported() -> None:
    """The process group is left at the end of the block: epochs run after it (at module level)
    would run without one. Trap: left as written."""
    body = ("if __name__ == '__main__':\n    model = nn.DataParallel(nn.Linear(2, 2))\n"
            "loader = DataLoader(torch.utils.data.TensorDataset(torch.ones(8, 2)), batch_size=4)\n"
            "for epoch in range(2):\n    for (x,) in loader:\n        model(x).sum().backward()\n")
    assert not _migrates(body)
    assert "the epoch loop is not" in _message(body)


def test_a_log_file_configured_by_basic_config_is_rank_zeros() -> None:
    """`logging.basicConfig(filename=...)` made every process append to one log file. Traps:
    a configuration without a file, and a file named for the rank, stay on every process."""
    body = ("import logging\n\n\ndef main(ds, rank):\n"
            "    logging.basicConfig(filename='train.log', level=logging.INFO)\n"
            "    logging.basicConfig(level=logging.INFO)\n"
            "    logging.basicConfig(filename=f'train.{rank}.log')\n"
            "    loader = DataLoader(ds, batch_size=8)\n"
            "    net = nn.DataParallel(nn.Linear(2, 2))\n"
            "    for epoch in range(2):\n        for x in loader:\n            net(x)\n")
    fixed = fixed_text(PREFIX + body, ["TFC301"], unsafe=True)
    assert ("    if _ddp_is_main():  # TFC301: rank 0 only\n"
            "        logging.basicConfig(filename='train.log', level=logging.INFO)\n"
            "    logging.basicConfig(level=logging.INFO)\n"
            "    logging.basicConfig(filename=f'train.{rank}.log')\n") in fixed
