"""Facts about the mixed-precision and distributed-training rules (TFC307-TFC309, TFC508-TFC512)
that single fixtures cannot state: how they meet the other rules' output."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import findings

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
