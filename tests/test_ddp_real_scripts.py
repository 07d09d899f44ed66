"""TFC301 executed on reduced real DataParallel scripts (issue 24), one process per run.

Each script of tests/ddp_real/ is migrated by the CLI and run three ways through
tests/ddp_real/run_one.py: as written, migrated as plain ``python``, and migrated under
``torchrun --standalone --nproc_per_node=2`` (gloo, CPU). Unlike tests/test_ddp_shapes.py
(every shape in one process per mode), each run here is a process of its own, so the end of
the process is observed: an ``atexit`` hook of the harness, which runs after the script's
own, records whether a process group is still initialised.

- pickled_checkpoint.py pickles the wrapper (``torch.save({"net": net, ...})``): the migrated
  file must load in a process without a process group (this one) and hold the model itself.
  It also scales its batch by the GPU count; run with ``torch.cuda.device_count()`` reporting
  2, the scaled global batch is divided by the world size per process, so the weights match.
- early_exit.py ends with ``sys.exit(0)`` inside the epoch loop: no cleanup call at the end of
  the function is reached, the group must still be gone at exit.
- checkpoint_log.py saves in a helper that then copies the best checkpoint, appends to a CSV
  log in a ``with open(..., "a")`` block and writes a JSON summary: rank 0 writes the same
  files as the original, rank 1 none.
- conditional_module.py wraps under ``opt.isTrain and len(opt.gpu_ids) and not opt.fp16`` and
  uses ``model.module`` afterwards: it must still work as plain python.
- main_guard_yolo.py (pytorch-YOLOv4's train.py) wraps under a GPU count inside
  ``if __name__ == "__main__":`` and trains in a function that builds its own loaders, makes
  the checkpoint folder, saves per epoch and removes the oldest checkpoint (issue 24 item 2).
- mixup_csv_log.py (mixup-cifar10's train.py): module level, `os.mkdir` of its folders, a CSV
  header in a `with open(..., "w")` block and a row per epoch in a `with open(..., "a")` block,
  and `state = {"net": net, ...}; torch.save(state, ...)`, which pickles the wrapper.
- resnet_cifar_trainer.py (pytorch_resnet_cifar10's trainer.py): an unconditional wrap in
  `main()`, the loader passed to `train(...)` each epoch, a `save_checkpoint()` helper.
- classification_best_copy.py (pytorch-classification's cifar.py): the same loop shape with
  a helper that copies the best checkpoint right after saving it.
- mixup_progress_bar.py: mixup_csv_log.py with the original's progress bar, a helper of
  another module (mixup_utils.py, reduced from mixup-cifar10's utils.py) that writes to
  sys.stdout every batch: it runs on rank 0 only, rank 1 prints nothing.
- tensorboard_log.py (lunan0320/pytorch_distributed_training's data_parallel.py): module level,
  a TensorBoard `SummaryWriter` built before the loop and written every 10 steps; rank 1
  gets a writer that writes nothing, rank 0 writes the event file.
- soft_filter_pruning.py (he-y/soft-filter-pruning's pruning_cifar10_resnet.py, with its
  pruning_utils.py): a log opened outside a `with`, every message through `print_log(text,
  log)`, and `save_checkpoint({..., "state_dict": net, ...}, ...)`, a helper that pickles
  the wrapper through its parameter and copies the best checkpoint: both helpers run on
  rank 0 as a whole, and the checkpoint holds the model (issue 24 items 1 and 5).
- classification_logger.py (pytorch-classification's cifar.py with its log, helpers in
  classification_utils.py): `mkdir_p` of another module, and a `Logger` object of another
  module that keeps log.txt open: rank 1 gets an object that writes nothing (item 1).
The reductions, each with its repository, commit and path, are described in their docstrings.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from test_ddp_migration import _env, _run, _torchrun, _wait

REAL = Path(__file__).parent / "ddp_real"
SCRIPTS = ("pickled_checkpoint.py", "early_exit.py", "conditional_module.py",
           "checkpoint_log.py", "main_guard_yolo.py", "mixup_csv_log.py",
           "resnet_cifar_trainer.py", "classification_best_copy.py", "tensorboard_log.py",
           "mixup_progress_bar.py", "soft_filter_pruning.py", "classification_logger.py")
MODULES = ("mixup_utils.py", "pruning_utils.py", "classification_utils.py")
"""Modules the scripts import, migrated in the same run (the project index reads them)."""
FAKE_GPUS = {"pickled_checkpoint.py": "2"}
"""What ``torch.cuda.device_count()`` reports to a script (its batch scales with it)."""

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with the gloo backend is not available in this torch build",
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    root = tmp_path_factory.mktemp("ddp-real")
    original, migrated, out = root / "original", root / "migrated", root / "out"
    shutil.copytree(REAL, original)
    shutil.copytree(REAL, migrated)
    out.mkdir()
    fixed = subprocess.run(
        [sys.executable, "-m", "torchfix_codemods", "fix", "--select", "TFC301",
         "--unsafe-fixes", *(str(migrated / name) for name in (*SCRIPTS, *MODULES))],
        capture_output=True, text=True, env=_env(root, "cpu"), check=False)
    report = fixed.stdout + fixed.stderr
    assert fixed.returncode in (0, 1), report
    outputs = {}
    for name in SCRIPTS:
        # One script's three runs at a time: twelve processes at once on a small machine made
        # the runs wait on each other's CPU far longer than they compute.
        env = _env(root, "cpu", **({"TFC301_FAKE_GPUS": FAKE_GPUS[name]}
                                   if name in FAKE_GPUS else {}))
        procs = {}
        for label, folder, launch in (
                ("original", original, [str(original / "run_one.py")]),
                ("plain", migrated, [str(migrated / "run_one.py")]),
                ("torchrun", migrated, _torchrun(migrated / "run_one.py", 2))):
            procs[f"{name}.{label}"] = _run([*launch, str(folder / name), str(out), label],
                                            folder, env)
        outputs.update({key: _wait(proc) for key, proc in procs.items()})
    return out, outputs, report


def _weights(out: Path, name: str, run: str) -> dict[str, torch.Tensor]:
    path = out / f"{Path(name).stem}.{run}.pt"
    if name != "pickled_checkpoint.py":
        return torch.load(path, map_location="cpu", weights_only=True)
    # The whole model was pickled: loading it needs no process group (this process has none).
    assert not dist.is_initialized()
    net = torch.load(path, map_location="cpu", weights_only=False)["net"]
    if run == "original":
        assert isinstance(net, torch.nn.DataParallel)
        net = net.module
    assert type(net) is torch.nn.Sequential, (run, type(net))
    return net.state_dict()


def test_the_scripts_are_migrated_as_the_issue_asks(
        runs: tuple[Path, dict[str, str], str]) -> None:
    out, _, report = runs
    migrated = out.parent / "migrated"
    for name in SCRIPTS:
        assert "_ddp_wrap(" in (migrated / name).read_text(), (name, report)
    pickled = (migrated / "pickled_checkpoint.py").read_text()
    assert 'torch.save({"net": _ddp_unwrap(net), "epoch": epoch}' in pickled
    # The GPU-count scaling stays: the loader divides the scaled global batch per process.
    assert "    batch_size *= n_gpu\n" in pickled
    assert "batch_size=batch_size // _ddp_setup()[2]" in pickled
    conditional = (migrated / "conditional_module.py").read_text()
    assert ("    if opt.isTrain and (_ddp_setup()[2] > 1 or len(opt.gpu_ids)) and not opt.fp16:"
            in conditional)
    # The process group is joined at the top of the __main__ block, not on import.
    yolo = (migrated / "main_guard_yolo.py").read_text()
    assert 'if __name__ == "__main__":\n    _ddp_setup()  # TFC301: join' in yolo
    progress = (migrated / "mixup_progress_bar.py").read_text()
    assert progress.count("if _ddp_is_main():  # TFC301: rank 0 only\n"
                          "            progress_bar(batch_idx, len(trainloader),") == 1, progress
    assert (migrated / "mixup_utils.py").read_text() == (REAL / "mixup_utils.py").read_text()
    board = (migrated / "tensorboard_log.py").read_text()
    assert ("tb_writer = SummaryWriter('data-parallel-training') if _ddp_is_main() else "
            "_DDPNoWriter()") in board
    assert "\n_ddp_setup()\n" not in yolo
    assert "    if _ddp_setup()[2] > 1 or torch.cuda.device_count() > 1:" in yolo


def test_every_run_reaches_the_original_weights(
        runs: tuple[Path, dict[str, str], str]) -> None:
    out, outputs, _ = runs
    for name in SCRIPTS:
        reference = _weights(out, name, "original")
        for run in ("plain", "torchrun.rank0"):
            got = _weights(out, name, run)
            assert set(got) == set(reference), (name, run)
            for key, value in reference.items():
                torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6,
                                           msg=lambda m, n=name, r=run, k=key: f"{n} {r} {k}: {m}")
    # The scaled batch: 32 samples in batches of 8 * 2 "GPUs", 2 steps per epoch, and under
    # torchrun 2 steps of 8 per process; printed once, by rank 0.
    assert "epoch 2 steps 2" in outputs["pickled_checkpoint.py.original"]
    assert outputs["pickled_checkpoint.py.torchrun"].count("epoch 2 steps 2") == 1
    assert outputs["early_exit.py.torchrun"].count("reached epoch 2") == 1
    assert outputs["conditional_module.py.plain"].count("end of epoch 1 lr 0.05") == 1


def test_rank_one_writes_nothing_and_prints_nothing(
        runs: tuple[Path, dict[str, str], str]) -> None:
    out, _, _ = runs
    for name in SCRIPTS:
        stem = Path(name).stem
        assert (out / f"{stem}.torchrun.rank0.pt").exists(), name
        assert not (out / f"{stem}.torchrun.rank1.pt").exists(), name
        assert (out / f"{stem}.torchrun.rank1.stdout").read_text() == "", name
        assert list((out / f"{stem}.torchrun.rank1.files").iterdir()) == [], name
    # The helper's save and copy, the appended log and the summary: rank 0 writes what the
    # original wrote, once per epoch.
    original = out / "checkpoint_log.original.files"
    assert sorted(p.name for p in original.iterdir()) == [
        "checkpoint.pth.tar", "log.csv", "model_best.pth.tar", "summary.json"]
    for run in ("plain", "torchrun.rank0"):
        files = out / f"checkpoint_log.{run}.files"
        assert sorted(p.name for p in files.iterdir()) == sorted(
            p.name for p in original.iterdir()), run
        for name in ("log.csv", "summary.json"):
            assert (files / name).read_text() == (original / name).read_text(), (run, name)
    assert (original / "log.csv").read_text().splitlines() == ["0,done", "1,done", "2,done"]
    # The checkpoint folder, with the two newest checkpoints (the oldest is removed).
    yolo = out / "main_guard_yolo.original.files" / "checkpoints"
    assert sorted(p.name for p in yolo.iterdir()) == ["Yolov4_epoch2.pth", "Yolov4_epoch3.pth"]
    for run in ("plain", "torchrun.rank0"):
        files = out / f"main_guard_yolo.{run}.files" / "checkpoints"
        assert sorted(p.name for p in files.iterdir()) == sorted(p.name for p in yolo.iterdir())


def test_helpers_and_loggers_write_on_rank_zero_as_a_whole(
        runs: tuple[Path, dict[str, str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 items 1 and 5 on two more real scripts: a save helper and a log helper of the
    script guarded whole, a wrapper pickled through a helper's parameter, and a log object
    and a folder helper of another module."""
    out, _, _ = runs
    migrated = out.parent / "migrated"
    pruning = (migrated / "soft_filter_pruning.py").read_text()
    guard = "    if not _ddp_is_main():  # TFC301: rank 0 writes what this function writes\n" \
            "        return\n"
    assert "def print_log(print_string, log):\n" + guard in pruning
    assert "def save_checkpoint(state, is_best, save_path, filename):\n" + guard in pruning
    assert "            'state_dict': _ddp_unwrap(net),\n" in pruning
    monkeypatch.syspath_prepend(str(REAL))  # the checkpoint pickles a pruning_utils object
    for run in ("original", "plain", "torchrun.rank0"):
        files = out / f"soft_filter_pruning.{run}.files"
        assert _files(files) == ["checkpoint.pth.tar", "log_seed_5.txt", "model_best.pth.tar"]
        assert not dist.is_initialized()  # the checkpoint loads without a process group
        net = torch.load(files / "checkpoint.pth.tar", map_location="cpu",
                         weights_only=False)["state_dict"]
        if run == "original":
            assert isinstance(net, torch.nn.DataParallel)
            net = net.module
        assert type(net) is torch.nn.Sequential, (run, type(net))
        log = (files / "log_seed_5.txt").read_text()
        assert log.count("**Train**") == 3 and "save path : ./" in log, (run, log)
    logger = (migrated / "classification_logger.py").read_text()
    assert logger.count("title=title) if _ddp_is_main() else _DDPNoWriter()  # TFC301") == 1
    assert logger.count("resume=True) if _ddp_is_main() else _DDPNoWriter()  # TFC301") == 1
    assert ("        if _ddp_is_main():  # TFC301: rank 0 only\n"
            "            mkdir_p(args.checkpoint)\n") in logger
    assert (migrated / "classification_utils.py").read_text() == \
        (REAL / "classification_utils.py").read_text()
    original = (out / "classification_logger.original.files" / "checkpoint" / "log.txt"
                ).read_text().splitlines()
    assert original[0].split("\t")[:2] == ["Learning Rate", "Train Loss"] and len(original) == 4
    for run in ("plain", "torchrun.rank0"):
        files = out / f"classification_logger.{run}.files"
        assert _files(files) == ["checkpoint/checkpoint.pth.tar", "checkpoint/log.txt",
                                 "checkpoint/model_best.pth.tar"], run
        rows = (files / "checkpoint" / "log.txt").read_text().splitlines()
        assert rows[0] == original[0] and len(rows) == len(original), (run, rows)
        # The validation loss (every process validates on the whole set) is the original's;
        # the training columns are rank 0's shard under torchrun.
        for row, expected in zip(rows[1:], original[1:], strict=True):
            assert abs(float(row.split("\t")[2]) - float(expected.split("\t")[2])) < 1e-4


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_rank_zero_writes_the_files_the_original_writes(
        runs: tuple[Path, dict[str, str], str]) -> None:
    out, _, _ = runs
    for name in ("mixup_csv_log.py", "resnet_cifar_trainer.py", "classification_best_copy.py"):
        stem = Path(name).stem
        original = _files(out / f"{stem}.original.files")
        assert original, name
        for run in ("plain", "torchrun.rank0"):
            assert _files(out / f"{stem}.{run}.files") == original, (name, run)
    # TensorBoard's event file (its name holds the time, host and process id): one on rank 0,
    # as in the original run.
    for run in ("original", "plain", "torchrun.rank0"):
        events = _files(out / f"tensorboard_log.{run}.files")
        assert len(events) == 1 and events[0].startswith(
            "data-parallel-training/events.out.tfevents."), (run, events)
    # The CSV: a header and a row per epoch, written once.
    for run in ("original", "plain", "torchrun.rank0"):
        rows = (out / f"mixup_csv_log.{run}.files" / "results" / "log_Sequential_0_1.csv"
                ).read_text().splitlines()
        assert [row.split(",")[0] for row in rows] == ["epoch", "0", "1", "2"], run
        # The pickled model: no wrapper (this process has no process group to load one).
        assert not dist.is_initialized()
        state = torch.load(out / f"mixup_csv_log.{run}.files" / "checkpoint" / "ckpt.t70_1",
                           map_location="cpu", weights_only=False)
        assert type(state["net"]) is torch.nn.Sequential, (run, type(state["net"]))


def test_no_process_group_is_left_at_exit(runs: tuple[Path, dict[str, str], str]) -> None:
    out, _, _ = runs
    for name in SCRIPTS:
        stem = Path(name).stem
        for run in ("plain", "torchrun.rank0", "torchrun.rank1"):
            record = json.loads((out / f"{stem}.{run}.exit").read_text())
            assert record["initialized"] is False, (name, run)
            # The group is gone, not only unregistered: its threads ended in the exit hook.
            assert record["gloo_threads"] in (0, None), (name, run, record)
