"""Facts about the mixed-precision and distributed-training rules (TFC307-TFC309, TFC508-TFC512)
that single fixtures cannot state: how they meet the other rules' output."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist
from support import findings, fixed_text
from test_ddp_migration import _env, _run, _torchrun, _wait

FIXTURES = Path(__file__).parent / "fixtures"
MIGRATED = sorted((FIXTURES / "TFC301").rglob("*.expected.py"))


@pytest.mark.parametrize("path", MIGRATED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_set_epoch_rule_is_quiet_on_the_data_parallel_migration(path: Path) -> None:
    """TFC301 writes `sampler.set_epoch(epoch)` (or `loader.sampler.set_epoch`) into the epoch
    loop it migrates; TFC307 must not ask for it again."""
    assert findings(path.read_text(encoding="utf-8"), ["TFC307"], path=str(path)) == []


def test_migration_fixtures_build_distributed_samplers() -> None:
    """The test above means something only if the migrated files have samplers and epochs."""
    texts = [p.read_text(encoding="utf-8") for p in MIGRATED]
    assert sum("DistributedSampler(" in t and "set_epoch(" in t for t in texts) >= 2


@pytest.mark.parametrize("path", MIGRATED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_save_rules_are_quiet_on_the_data_parallel_migration(path: Path) -> None:
    """TFC301's migration saves `model.module.state_dict()` on rank 0 only; TFC308 must accept
    its guard and TFC309 its unwrapping."""
    assert findings(path.read_text(encoding="utf-8"), ["TFC308", "TFC309"], path=str(path)) == []


_EVERY_RANK_SAVES = '''\
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

_save = torch.save


def _logged_save(obj, f):
    # which ranks write: one marker file per writing rank
    open(f"wrote_{os.environ['RANK']}", "w").close()
    _save(obj, f)


torch.save = _logged_save


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Linear(3, 2))
    torch.save(model.state_dict(), "model.pt")
    plain = nn.Linear(3, 2)
    plain.load_state_dict(torch.load("model.pt"))
    dist.destroy_process_group()


main()
'''


@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                    reason="torch.distributed with the gloo backend is not available")
def test_rank_zero_save_and_unwrapped_state_dict_under_torchrun(tmp_path: Path) -> None:
    """TFC308 and TFC309 together, run the way users run DDP: two gloo processes under
    torchrun. As written, both ranks write the file and the plain model cannot load it; fixed,
    only rank 0 writes, rank 1 waits at the barrier, and both load the plain model."""
    fixed = fixed_text(_EVERY_RANK_SAVES, ["TFC308", "TFC309"], unsafe=True)
    assert "dist.get_rank() == 0" in fixed and "dist.barrier()" in fixed
    assert "model.module.state_dict()" in fixed
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, text in ((before, _EVERY_RANK_SAVES), (after, fixed)):
        folder.mkdir()
        (folder / "script.py").write_text(text, encoding="utf-8")
    original = _run(_torchrun(before / "script.py", 2), before, _env(before, "cpu"))
    output, _ = original.communicate(timeout=300)
    assert original.returncode != 0
    assert "Error(s) in loading state_dict for Linear" in output
    assert sorted(p.name for p in before.glob("wrote_*")) == ["wrote_0", "wrote_1"]
    _wait(_run(_torchrun(after / "script.py", 2), after, _env(after, "cpu")))
    assert sorted(p.name for p in after.glob("wrote_*")) == ["wrote_0"]
