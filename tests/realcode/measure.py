"""Precision and recall of TFC101-TFC107 on `.data` and `.numpy()` taken from real code.

Each file in ``snippets/`` is a reduced excerpt of one public repository file
(its URL and commit in the header): the imports and the lines that bind each
receiver are kept as they are, everything else is dropped. Every line holding
a ``.data`` attribute or a ``.numpy()`` call ends in ``# expect: fix, leave``,
one hand-written label per occurrence, in column order:

* ``fix``: a torch tensor where the modern spelling is right (``.detach()``,
  ``.detach().cpu().numpy()``, a write under ``no_grad``, ``.item()``);
* ``leave``: anything that must not be rewritten (``torch.utils.data``, a
  dataset, argparse, numpy, a chain already detached by ``.data``).

Run ``python tests/realcode/measure.py`` for the table; the test suite checks
the headline (no safe fix on code labelled ``leave``).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchfix_codemods.engine import process
from torchfix_codemods.findings import Finding, Safety
from torchfix_codemods.options import FileOptions
from torchfix_codemods.source import SourceUnit

SNIPPETS = Path(__file__).parent / "snippets"
CODES = frozenset(f"TFC10{i}" for i in range(1, 8))
_LABELS = re.compile(r"#\s*expect:\s*([a-z ,]+)$")
OUTCOMES = ("safe", "unsafe", "report", "none")


@dataclass(frozen=True)
class Occurrence:
    path: str
    line: int
    column: int
    kind: str  # "data" or "numpy"
    label: str  # "fix" or "leave"
    outcome: str  # one of OUTCOMES


class _Find(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, int, int, int, int]] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "data":
            start, end = self._span(node.attr)
            self.found.append(("data", *start, *end))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "numpy":
            start, _ = self._span(node.func.attr)
            _, end = self._span(node)
            self.found.append(("numpy", *start, *end))

    def _span(self, node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]]:
        where = self.get_metadata(PositionProvider, node)
        return (where.start.line, where.start.column + 1), (where.end.line, where.end.column + 1)


def _outcome(kind: str, end: tuple[int, int], findings: list[Finding]) -> str:
    """How the rules treated the occurrence ending at ``end`` (its ``.data`` or ``numpy()``)."""
    wanted = {"numpy": ("TFC101",), "data": ("TFC102", "TFC103", "TFC104", "TFC105")}[kind]
    best = "none"
    for finding in findings:
        if finding.code not in wanted:
            continue
        finding_end = (finding.end_line, finding.end_column)
        matches = finding_end == end
        if finding.code == "TFC105":  # reported on `loss.data[0]`: ends just after `[0]`
            matches = finding.end_line == end[0] and 0 < finding.end_column - end[1] <= 4
        if finding.code == "TFC103":
            matches = (finding.end_line, finding.end_column) == end
        if not matches:
            continue
        if finding.fix is None or finding.fix.safety is Safety.NONE:
            rank = "report"
        else:
            rank = "safe" if finding.fix.safety is Safety.SAFE else "unsafe"
        if OUTCOMES.index(rank) < OUTCOMES.index(best):
            best = rank
    return best


def occurrences(path: Path) -> list[Occurrence]:
    text = path.read_text(encoding="utf-8")
    module = cst.parse_module(text)
    finder = _Find()
    MetadataWrapper(module).visit(finder)
    options = FileOptions(codes=tuple(CODES), unsafe_fixes=True)
    result = process(SourceUnit.from_bytes(str(path), text.encode()), options, apply_fixes=False)
    lines = text.splitlines()
    by_line: dict[int, list[tuple[str, int, int, int]]] = {}
    for kind, line, column, end_line, end_column in finder.found:
        by_line.setdefault(line, []).append((kind, column, end_line, end_column))
    found: list[Occurrence] = []
    for line, items in sorted(by_line.items()):
        labels = _labels_for(lines, line)
        items.sort(key=lambda item: item[1])
        if len(labels) != len(items):
            raise ValueError(f"{path.name}:{line}: {len(items)} occurrences, labels {labels}")
        for (kind, column, end_line, end_column), label in zip(items, labels, strict=True):
            found.append(Occurrence(path.name, line, column, kind, label,
                                    _outcome(kind, (end_line, end_column), result.findings)))
    return found


def _labels_for(lines: list[str], line: int) -> list[str]:
    match = _LABELS.search(lines[line - 1])
    if match is None:
        raise ValueError(f"line {line} has `.data`/`.numpy()` but no `# expect:` label")
    labels = [label.strip() for label in match.group(1).split(",")]
    if any(label not in ("fix", "leave") for label in labels):
        raise ValueError(f"line {line}: labels must be fix or leave, not {labels}")
    return labels


def measure() -> list[Occurrence]:
    return [item for path in sorted(SNIPPETS.glob("*.py")) for item in occurrences(path)]


def repositories() -> set[str]:
    found = set()
    for path in SNIPPETS.glob("*.py"):
        header = path.read_text(encoding="utf-8").splitlines()[0]
        match = re.search(r"github\.com/([^/]+/[^/]+)/blob/", header)
        if match:
            found.add(match.group(1))
    return found


def table(items: list[Occurrence]) -> str:
    rows = [f"{len(items)} occurrences from {len(repositories())} repositories "
            f"({sum(i.kind == 'data' for i in items)} `.data`, "
            f"{sum(i.kind == 'numpy' for i in items)} `.numpy()`)", ""]
    rows.append(f"{'kind':6} {'label':6} " + " ".join(f"{o:>7}" for o in OUTCOMES) + "   total")
    for kind in ("data", "numpy"):
        for label in ("fix", "leave"):
            counts = Counter(i.outcome for i in items if i.kind == kind and i.label == label)
            total = sum(counts.values())
            rows.append(f"{kind:6} {label:6} " + " ".join(f"{counts[o]:>7}" for o in OUTCOMES)
                        + f"   {total:>5}")
    leave = [i for i in items if i.label == "leave"]
    fix = [i for i in items if i.label == "fix"]
    wrong = [i for i in leave if i.outcome == "safe"]
    rows.append("")
    rows.append(f"safe fixes on code that must be left alone: {len(wrong)} of {len(leave)}")
    for label, name in (("safe", "safe fix"), ("unsafe", "unsafe fix"), ("report", "report only"),
                        ("none", "missed")):
        count = sum(i.outcome == label for i in fix)
        share = 100.0 * count / len(fix) if fix else 0.0
        rows.append(f"real mistakes with a {name:11}: {count:>4} of {len(fix)} ({share:.0f}%)")
    for item in wrong:
        rows.append(f"  WRONG: {item.path}:{item.line}:{item.column} {item.kind}")
    return "\n".join(rows)


if __name__ == "__main__":
    measured = measure()
    print(table(measured))
    sys.exit(1 if any(i.label == "leave" and i.outcome == "safe" for i in measured) else 0)
