"""TFC301: ``nn.DataParallel`` -> ``DistributedDataParallel``, a migration rather than a swap.

One rule in four modules, each with one job:

- :mod:`.detection`: the rule class: what a file wraps, trains, loads and writes, and the
  findings it gets (reports, and the migration as the fix where it applies);
- :mod:`.migration`: the rewrite of one file, one named step per place it touches;
- :mod:`.templates`: the helper code a migrated file gets, as text, with the launch line and
  the checklist;
- :mod:`.shapes`: the vocabulary and the syntax shapes both detection and migration read.
"""

from __future__ import annotations

from torchfix_codemods.rules.data_parallel.detection import DataParallelToDDP

RULES = [DataParallelToDDP]
