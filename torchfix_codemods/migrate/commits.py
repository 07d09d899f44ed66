"""One commit per rule (or family, or all): which codes go together, and what the message says.

The message is for the reviewer: its subject names the code and what it did,
its body why (the rule's own documentation), the fix safety and the counts.
The counts are also written as git trailers, so a later run reads an existing
branch back (``git log``) without keeping any state of its own.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Iterable

from torchfix_codemods import __version__
from torchfix_codemods.findings import Finding
from torchfix_codemods.migrate.model import Change, CommitRecord
from torchfix_codemods.rules.registry import rule_by_code

TRAILER = "Torchfix-Codemods"
DDP_CODE = "TFC301"
_TRAILER_LINE = re.compile(rf"^{TRAILER}-(\w+): (.*)$", re.MULTILINE)
_CHANGE_LINE = re.compile(r"^- (\d+) x (.*) \((\w+), (\w+)\)$", re.MULTILINE)
WHAT_CHANGED = "What changed:"


def groups(codes: Iterable[str], commit_per: str) -> list[tuple[str, tuple[str, ...]]]:
    """(label, codes) for each commit to make, in a stable order."""
    ordered = sorted(set(codes))
    if commit_per == "all":
        return [("all", tuple(ordered))] if ordered else []
    if commit_per == "family":
        families: dict[str, list[str]] = {}
        for code in ordered:
            families.setdefault(_family(code), []).append(code)
        return [(label, tuple(members)) for label, members in families.items()]
    return [(code, (code,)) for code in ordered]


def _family(code: str) -> str:
    """``TFC101`` -> ``TFC1xx``: the hundreds a rule family shares."""
    return code[:-2] + "xx"


def counted(count: int, one: str, many: str) -> str:
    """``1 fix``, ``12 fixes``."""
    return f"{count} {one if count == 1 else many}"


def subject(label: str, codes: tuple[str, ...], applied: list[Finding], files: int) -> str:
    """One style for every commit: ``LABEL: WHAT (N fixes in M files)``."""
    counts = f"{counted(len(applied), 'fix', 'fixes')} in {counted(files, 'file', 'files')}"
    if len(codes) > 1:
        name = "torchfix-codemods" if label == "all" else label
        return f"{name}: {', '.join(codes)} ({counts})"
    code = codes[0]  # a family commit with one rule in it is named by that rule
    descriptions = {f.fix.description for f in applied if f.fix is not None}
    what = descriptions.pop() if len(descriptions) == 1 else rule_by_code(code).name
    return f"{code}: {what} ({counts})"


def why(code: str) -> str:
    """The "Why is this bad?" section of a rule's documentation, as one paragraph."""
    documentation = rule_by_code(code).documentation()
    match = re.search(r"^## Why is this bad\?\n(.*?)(?=^## |\Z)", documentation,
                      re.MULTILINE | re.DOTALL)
    text = match.group(1) if match else rule_by_code(code).message
    return " ".join(text.split())


def launched_scripts(applied: list[Finding]) -> tuple[str, ...]:
    """Files whose DataParallel wrap TFC301 migrated: its fix description carries the launch line."""
    return tuple(sorted({f.path for f in applied if f.code == DDP_CODE and f.fix is not None
                         and "torchrun" in f.fix.description}))


_MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)
SCRIPT, MODULE, TEST = "script", "module", "test"


def launch_kind(path: str, text: str) -> str:
    """What a migrated file is, for the torchrun advice: a test (pytest runs it as one
    process: no launch line), a script (it runs: ``torchrun`` it) or a module (imported by
    whatever script starts training: that script is the one to ``torchrun``)."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(part in ("tests", "test") for part in parts[:-1])):
        return TEST
    if name == "__main__.py" or (name.endswith(".py") and _MAIN_GUARD.search(text)):
        return SCRIPT
    return MODULE


def changes(applied: list[Finding]) -> tuple[Change, ...]:
    counts = Counter((f.code, f.fix.description, f.fix.safety.value)
                     for f in applied if f.fix is not None)
    return tuple(Change(count, description, code, level)
                 for (code, description, level), count in sorted(counts.items()))


def message(label: str, codes: tuple[str, ...], applied: list[Finding], files: int,
            launch: tuple[str, ...] = (), imported: tuple[str, ...] = ()) -> str:
    """Subject, why, what changed with which safety, and the trailers a later run reads.

    ``applied`` carries repository-relative paths; ``launch`` and ``imported``: the migrated
    scripts to start with torchrun, and the migrated modules the scripts that use them run.
    """
    safety = Counter(f.fix.safety.value for f in applied if f.fix is not None)
    paragraphs = [subject(label, codes, applied, files)]
    for code in codes:
        if any(f.code == code for f in applied):
            rule = rule_by_code(code)
            paragraphs.append(textwrap.fill(f"{code} {rule.name}: {why(code)}", width=72))
    # One line per change, never wrapped: a later run reads them back (``parse``).
    paragraphs.append(WHAT_CHANGED + "\n" + "\n".join(
        f"- {c.count} x {c.description} ({c.code}, {c.safety})" for c in changes(applied)))
    levels = ", ".join(f"{level} ({count})" for level, count in sorted(safety.items()))
    paragraphs.append(
        f"Fix safety: {levels}. Unsafe fixes change behaviour on purpose; see "
        f"`torchfix-codemods explain CODE`. Files: {files}.")
    paragraphs.append("\n".join([
        f"{TRAILER}-Rule: {' '.join(codes)}",
        f"{TRAILER}-Label: {label}",
        f"{TRAILER}-Fixes: {len(applied)}",
        f"{TRAILER}-Files: {files}",
        f"{TRAILER}-Safety: {' '.join(f'{k}={v}' for k, v in sorted(safety.items()))}",
        f"{TRAILER}-Version: {__version__}",
        *(f"{TRAILER}-Launch: {path}" for path in launch),
        *(f"{TRAILER}-Imported: {path}" for path in imported),
    ]))
    return "\n\n".join(paragraphs) + "\n"


def parse(sha: str, text: str) -> CommitRecord | None:
    """A commit this tool made, read back from its message; None for anyone else's."""
    found = _TRAILER_LINE.findall(text)
    trailers = dict(found)
    if "Rule" not in trailers:
        return None
    try:
        safety = {k: int(v) for k, v in (item.split("=", 1) for item in
                                          trailers.get("Safety", "").split())}
        codes = tuple(trailers["Rule"].split())
        return CommitRecord(sha, trailers.get("Label", codes[0] if codes else "?"), codes,
                            text.splitlines()[0] if text else "", int(trailers.get("Files", 0)),
                            int(trailers.get("Fixes", 0)), safety,
                            changes=tuple(Change(int(n), d, c, level) for n, d, c, level
                                          in _CHANGE_LINE.findall(text)),
                            launch=tuple(value for key, value in found if key == "Launch"),
                            imported=tuple(value for key, value in found if key == "Imported"),
                            new=False)
    except ValueError:
        return None
