"""Which rule changed which lines, so a reviewer of ``fix --diff`` can tell safe from unsafe.

The engine applies every selected fix to a file together. When a file's fixes
come from one rule code, every hunk is that code's. When they come from
several, each code is applied alone to the original text and the old lines
its fixes touch are recorded; the diff renderer then labels each hunk with
the codes whose edits overlap it. Edits that only exist when two rules act
together (rare: a fix on the result of another fix) overlap neither code's
lone edits and are labelled with every code applied to the file.

The extra engine runs happen only in ``--diff`` mode and only for files with
fixes from two or more codes.
"""

from __future__ import annotations

import dataclasses

from torchfix_codemods.engine import process
from torchfix_codemods.model import FileResult
from torchfix_codemods.settings import Settings
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.textdiff import Block, change_blocks


def applied_codes(result: FileResult) -> list[str]:
    """The codes whose fixes a (dry-)run applied to this file, sorted."""
    return sorted({f.code for f in result.findings if f.fix is not None and f.fix.applied})


def edits_by_code(unit: SourceUnit, settings: Settings,
                  result: FileResult) -> dict[str, list[Block]] | None:
    """For each applied code, the original lines its fixes touch when applied alone.

    None when one code (or none) changed the file: every hunk is then that code's.
    """
    codes = applied_codes(result)
    if len(codes) < 2:
        return None
    edits: dict[str, list[Block]] = {}
    for code in codes:
        alone = process(unit, dataclasses.replace(settings, enabled=frozenset({code})),
                        apply_fixes=True)
        edits[code] = change_blocks(unit.text, alone.fixed) if alone.changed else []
    return edits
