"""TFC301 executed on several shapes of DataParallel script (issue 13 item 4).

The scripts of tests/ddp_shapes/ (a tutorial-style module-level script with a GPU-count
guard, pytorch-cifar's device-string guard and ``train(epoch)``, a flag guard with an aliased
import, ``device_ids`` and ``.cuda()`` on the wrapper and an inline dataset, factory
functions for the model, the wrap and the loader, a multi-file project whose loader is
built by a function of another module, and a BERT-pytorch-shaped project whose entry script
hands its loader to a trainer class that wraps the model, sharded in the entry script) are
migrated by the CLI as one project, then run three ways: as written, migrated under ``torchrun
--standalone --nproc_per_node=2`` (gloo, CPU), and migrated as plain ``python``. Each of the
three is one process (or one launch) running every script in turn
(tests/ddp_shapes/run_all.py), so torch starts three times, not fifteen.

No shuffling and no BatchNorm: with the global batch kept (the sampler halves each
process's batch; in the multi-file project the sampler is added in the module that builds the
loader and set_epoch in train.py), DDP's averaged gradient equals the one-process gradient, so
every run ends with the original's weights. The
multi-file project is also run with one side migrated and the other as written (a user who
excludes or reverts one file): same weights. The shuffled shard check lives in
test_ddp_migration.py (train_dp_shuffle.py, in one file and split across two).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from test_ddp_migration import _env, _run, _torchrun, _wait

SHAPES = Path(__file__).parent / "ddp_shapes"
SCRIPTS = ("tutorial_guard.py", "cifar_device_guard.py", "flag_alias_inline.py",
           "factory_functions.py", "project/train.py", "trainer_project/main.py",
           "gan_two_models.py", "models_in_a_loop.py")
WRAPPED_IN = {"trainer_project/main.py": "trainer_project/ddp_shape_trainer.py"}
"""Where a script's DataParallel wrap is, when not in the script itself."""
HALF_MIGRATED = {
    # folder: (project, its migrated files, entry script, also launched with torchrun)
    "project_half_train": ("project", ("train.py",), "train.py", True),
    "project_half_data": ("project", ("ddp_shape_data.py",), "train.py", False),
    "trainer_half_trainer": ("trainer_project", ("ddp_shape_trainer.py",), "main.py", True),
    "trainer_half_entry": ("trainer_project", ("main.py",), "main.py", False),
}
"""The multi-file projects with only these of their files migrated (the others as written): a
user who excludes or reverts one side. Each file's edit must be right on its own. A script
whose model side is not migrated is not a torchrun script: those run as plain python only."""

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with the gloo backend is not available in this torch build",
)


def _weights(path: Path) -> dict[str, torch.Tensor]:
    state = torch.load(path, map_location="cpu", weights_only=True)
    # A wrap under a guard that was off in the one-process run: DDP's `module.` prefix is
    # the one DataParallel gave on several GPUs; the weights are what is compared.
    return {key.removeprefix("module."): value for key, value in state.items()}


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    root = tmp_path_factory.mktemp("ddp-shapes")
    original, migrated, out = root / "original", root / "migrated", root / "out"
    shutil.copytree(SHAPES, original)
    shutil.copytree(SHAPES, migrated)
    out.mkdir()
    fixed = subprocess.run(
        [sys.executable, "-m", "torchfix_codemods", "fix", "--select", "TFC301",
         "--unsafe-fixes", str(migrated)],
        capture_output=True, text=True, env=_env(root, "cpu"), check=False)
    report = fixed.stdout + fixed.stderr
    assert fixed.returncode in (0, 1), report
    for folder, (project, taken, _, _) in HALF_MIGRATED.items():
        shutil.copytree(original / project, migrated / folder)
        for name in taken:
            shutil.copy(migrated / project / name, migrated / folder / name)

    def scripts(folder: Path) -> list[str]:
        return [str(folder / name) for name in SCRIPTS]

    halves = [str(migrated / folder / entry) for folder, (_, _, entry, _) in HALF_MIGRATED.items()]
    launched = [str(migrated / folder / entry)
                for folder, (_, _, entry, torchrun) in HALF_MIGRATED.items() if torchrun]
    runner = "run_all.py"
    procs = {
        "original": _run([str(original / runner), str(out), "original", *scripts(original)],
                         original, _env(root, "cpu")),
        "plain": _run([str(migrated / runner), str(out), "plain", *scripts(migrated), *halves],
                      migrated, _env(root, "cpu")),
        # The original train.py is not a torchrun script: only the migrated one is launched.
        "torchrun": _run([*_torchrun(migrated / runner, 2), str(out), "torchrun",
                          *scripts(migrated), *launched], migrated, _env(root, "cpu")),
    }
    outputs = {name: _wait(proc) for name, proc in procs.items()}
    return out, outputs, report


def test_every_shape_is_migrated(shapes: tuple[Path, dict[str, str], str]) -> None:
    out, _, report = shapes
    migrated = out.parent / "migrated"
    for name in SCRIPTS:
        text = (migrated / WRAPPED_IN.get(name, name)).read_text()
        assert "DataParallel(" not in text.replace("DistributedDataParallel(", ""), name
        assert "_ddp_wrap(" in text, name
    # The multi-file project's loader gets its sampler in the module that builds it (the
    # project index pairs the two files), set_epoch where the epochs run. The BERT-shaped
    # project's loader reaches the wrap through a constructor: the entry script, which builds
    # it and runs the epochs, gets the sampler and set_epoch; the trainer the model side.
    assert "data side not migrated" not in report, report
    entry = (migrated / "trainer_project" / "main.py").read_text()
    assert "sampler=torch.utils.data.DistributedSampler(dataset, num_replicas=" in entry
    assert "        train_data_loader.sampler.set_epoch(epoch)" in entry
    data = (migrated / "project" / "ddp_shape_data.py").read_text()
    assert "DistributedSampler(train_dataset, num_replicas=_ddp_world()[1]" in data
    assert "batch_size=10 // _ddp_world()[1]" in data
    train = (migrated / "project" / "train.py").read_text()
    assert "if isinstance(loader.sampler, torch.utils.data.DistributedSampler):" in train
    assert "loader.sampler.set_epoch(epoch)" in train


def test_every_shape_reaches_the_original_weights(
        shapes: tuple[Path, dict[str, str], str]) -> None:
    out, outputs, _ = shapes
    for name in SCRIPTS:
        stem = f"{Path(name).parent.name or '*'}.{Path(name).stem}"
        reference = _weights(next(out.glob(f"{stem.replace('*.', '*')}.original.pt")))
        for run in ("plain", "torchrun.rank0"):
            got = _weights(next(out.glob(f"{stem.replace('*.', '*')}.{run}.pt")))
            assert set(got) == set(reference), (name, run)
            for key, value in reference.items():
                torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6,
                                           msg=lambda m, n=name, r=run, k=key: f"{n} {r} {k}: {m}")
        # Rank 0 saves; rank 1 does not write.
        assert not list(out.glob(f"{stem.replace('*.', '*')}.torchrun.rank1.pt")), name
    # One side of a multi-file project migrated, the other as written: the same weights.
    for folder, (project, _, entry, torchrun) in HALF_MIGRATED.items():
        stem = Path(entry).stem
        reference = _weights(out / f"{project}.{stem}.original.pt")
        for run in ["plain", *(["torchrun.rank0"] if torchrun else [])]:
            got = _weights(out / f"{folder}.{stem}.{run}.pt")
            for key, value in reference.items():
                torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6,
                                           msg=lambda m, r=f"{folder} {run}", k=key:
                                           f"{r} {k}: {m}")
