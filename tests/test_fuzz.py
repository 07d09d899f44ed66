"""The engine's guarantees over programs nobody wrote: generated ones and mutated real files.

For every input, with every rule on and unsafe fixes allowed:

* the analysis never raises (a finding or a TFC000, never an exception);
* a fixed text compiles, reads no name that pyflakes (an oracle independent of the
  engine's own check) finds undefined and the original did not;
* fixing is idempotent: the fixed text fixes to itself;
* lines away from every applied finding and from the import block are kept;
* a ``check`` run gives the same findings with and without the cache.

Inputs: ``hypothesmith`` programs (valid Python from the grammar), and the
repository's examples and fixtures mutated by small edits (a torch call
inserted, an import renamed, a line deleted, random bytes). Profiles: ``ci``
(default, a few seconds per property) and ``long`` for local runs:
``TORCHFIX_FUZZ=long python -m pytest tests/test_fuzz.py`` (docs/fuzzing.md).
Every failure found is kept in tests/fuzz_cases/ and replayed by
:func:`test_kept_regressions`.
"""

from __future__ import annotations

import difflib
import os
import re
from functools import cache
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchfix_codemods.engine import process, read_unit
from torchfix_codemods.findings import Finding
from torchfix_codemods.options import FileOptions
from torchfix_codemods.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
KEPT = ROOT / "tests" / "fuzz_cases"

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck), database=None)
LONG_EXAMPLES = int(os.environ.get("TORCHFIX_FUZZ_EXAMPLES", "2000"))
"""Examples per property in the long profile (a tenth of them for the cache property):
smaller, with a fresh ``--hypothesis-seed`` each time, to take turns between properties."""
settings.register_profile("long", max_examples=LONG_EXAMPLES, deadline=None,
                          suppress_health_check=list(HealthCheck))
PROFILE = "long" if os.environ.get("TORCHFIX_FUZZ") == "long" else "ci"

WHOLE_FILE = frozenset({"TFC301", "TFC302"})
"""Rules whose fix edits beyond the statement of its finding on purpose: DataParallel -> DDP
adds helpers and puts every ``print`` under a rank-0 guard; TFC302 reports the DataLoader with
workers inside ``main()`` and guards the module-level ``main()`` call that runs it (a file
where one applies is checked for the rest only)."""
ALL = FileOptions(codes=tuple(sorted(rule.code for rule in all_rules())), unsafe_fixes=True)


@cache
def _corpus() -> list[str]:
    files = sorted((ROOT / "examples").glob("*.py")) + sorted(
        (ROOT / "tests" / "fixtures").rglob("*.py"))
    texts = []
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


TORCH_LINES = [
    "y = torch.load(x)",
    "y = x.numpy()",
    "y = x.data",
    "y = torch.load(x, map_location='cpu')",
    "model = torch.nn.DataParallel(model)",
    "with torch.cuda.amp.autocast():\n    pass",
    "torch.save(model.state_dict(), path)",
    "y = x.cpu().numpy()",
    "loss = torch.nn.functional.cross_entropy(torch.softmax(out, 1), t)",
    "import torch",
    "from torch import load",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A real file with one to three small edits."""
    text = draw(st.sampled_from(_corpus()))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines(keepends=True) or [""]
        at = draw(st.integers(0, len(lines)))
        kind = draw(st.sampled_from(["insert", "rename", "delete", "bytes"]))
        if kind == "insert":
            where = lines[at] if at < len(lines) else ""
            indent = where[: len(where) - len(where.lstrip(" \t"))]
            block = draw(st.sampled_from(TORCH_LINES)).replace("\n", "\n" + indent)
            lines.insert(at, indent + block + "\n")
        elif kind == "rename":
            old = draw(st.sampled_from(["import torch\n", "import torch.nn as nn\n",
                                        "from torch import nn\n"]))
            new = draw(st.sampled_from(["import torch as T\n", "import torch.nn\n",
                                        "from torch import nn as tnn\n", "import numpy\n"]))
            lines = "".join(lines).replace(old, new, 1).splitlines(keepends=True)
        elif kind == "delete" and lines and at < len(lines):
            del lines[at]
        else:
            noise = draw(st.text(max_size=8))
            position = draw(st.integers(0, len("".join(lines))))
            joined = "".join(lines)
            lines = [joined[:position] + noise + joined[position:]]
        text = "".join(lines)
    return text


def _undefined(text: str) -> set[str]:
    """Names pyflakes reports undefined in ``text`` (an oracle apart from the engine's)."""
    import ast

    from pyflakes import checker, messages

    tree = ast.parse(text)
    found = checker.Checker(tree, filename="fuzz.py")
    return {str(m.message_args[0]) for m in found.messages
            if isinstance(m, messages.UndefinedName)}


def _fix(text: str) -> tuple[str | None, list[Finding]]:
    unit = read_unit("fuzz.py", text.encode("utf-8", "surrogatepass"))
    if isinstance(unit, Finding):
        return None, [unit]
    result = process(unit, ALL, apply_fixes=True)
    return result.fixed, result.findings


def _as_parsed(text: str) -> str | None:
    """``text`` as the engine reads it: itself when it parses, else with torch 0.3's
    ``async=`` keyword renamed ``non_blocking=`` (TFC004 repairs a file that no longer
    parses for that alone, on tokens; a regular expression is enough for an oracle), or
    None when it does not parse either way."""
    import ast

    for candidate in (text, re.sub(r"\basync(?=\s*=(?!=))", "non_blocking", text)):
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        return candidate
    return None


def check_guarantees(text: str) -> None:
    """Every property of this file on one text; raises AssertionError naming the broken one."""
    fixed, findings = _fix(text)
    if fixed is None:
        return
    compile(fixed, "fuzz.py", "exec", dont_inherit=True)
    again, _ = _fix(fixed)
    assert again is None or again == fixed, "fixing is not idempotent"
    before = _as_parsed(text)
    assert before is not None, "a text that does not parse was fixed"
    assert _undefined(fixed) <= _undefined(before), "the fix added an undefined name"
    _assert_kept_outside_edits(before, fixed, findings)


def _imported_names(text: str) -> set[str]:
    import ast

    return {(alias.asname or alias.name).split(".")[0] for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}


def _assert_kept_outside_edits(before: str, after: str, findings: list[Finding]) -> None:
    """Every original line that changed lies in a top-level statement holding an applied
    finding (a fix may move a sibling statement: ``zero_grad()`` after ``step()``), or is an
    import, blank or comment line (imports are added and removed), or uses a name an import
    bound before the fix and none binds after it (a fix that renames an import renames its
    uses: TFC411's ``_register_pytree_node`` -> ``register_pytree_node``)."""
    import ast

    renamed = _imported_names(before) - _imported_names(after)
    uses_renamed = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(renamed))) + r")\b"
                              ) if renamed else None

    statements = [(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]),
                   node.end_lineno or node.lineno) for node in ast.parse(before).body]
    edited: set[int] = set()
    for finding in findings:
        if finding.fix is not None and finding.fix.applied:
            if finding.code in WHOLE_FILE:
                return
            for first, last in statements:
                if first <= finding.end_line and finding.line <= last:
                    edited.update(range(first, last + 1))
    # Python's line breaks, not str.splitlines' (which also breaks at a form feed).
    old = re.split(r"\r\n|\r|\n", before)
    matcher = difflib.SequenceMatcher(a=old, b=re.split(r"\r\n|\r|\n", after),
                                      autojunk=False)
    for tag, start, end, _, _ in matcher.get_opcodes():
        # A changed block that overlaps an edit is that edit's: TFC110 puts the updates that
        # follow its finding's line under the same `with torch.no_grad():`.
        if tag in ("replace", "delete") and edited.isdisjoint(range(start + 1, end + 1)):
            for number in range(start + 1, end + 1):
                line = old[number - 1].strip()
                if number in edited or not line or line.startswith(("import ", "from ", "#")):
                    continue
                if uses_renamed is not None and uses_renamed.search(line):
                    continue
                raise AssertionError(f"line {number} changed outside every edit: {line!r}")


@settings(settings.get_profile(PROFILE))
@given(hypothesmith.from_grammar())
def test_generated_programs(text: str) -> None:
    check_guarantees(text)


@settings(settings.get_profile(PROFILE))
@given(hypothesmith.from_node())
def test_generated_syntax_trees(text: str) -> None:
    check_guarantees(text)


@settings(settings.get_profile(PROFILE))
@given(mutated())
def test_mutated_real_files(text: str) -> None:
    check_guarantees(text)


@settings(settings.get_profile(PROFILE))
@given(st.binary(max_size=300) | mutated().map(lambda text: text.encode("utf-8", "replace")))
def test_check_never_raises_on_any_bytes(data: bytes) -> None:
    unit = read_unit("fuzz.py", data)
    if not isinstance(unit, Finding):
        process(unit, ALL, apply_fixes=False)


@settings(settings.get_profile(PROFILE),
          max_examples=5 if PROFILE == "ci" else max(1, LONG_EXAMPLES // 10))
@given(st.lists(mutated(), min_size=1, max_size=3))
def test_cache_and_no_cache_agree(tmp_path_factory: pytest.TempPathFactory,
                                  texts: list[str]) -> None:
    from torchfix_codemods.configuration import Configuration
    from torchfix_codemods.runner import Mode, run_paths
    from torchfix_codemods.settings import Overrides

    root = tmp_path_factory.mktemp("fuzz")
    (root / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    paths = []
    for number, text in enumerate(texts):
        path = root / f"m{number}.py"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        paths.append(str(path))
    outcomes = []
    for cached in (False, True, True):  # without; with, cold; with, warm
        configuration = Configuration(Overrides(cache=cached), cwd=str(root))
        results = run_paths(paths, configuration, Mode.CHECK, show_progress=False)
        outcomes.append([(r.error, [repr(f) for f in r.findings]) for r in results])
    assert outcomes[0] == outcomes[1] == outcomes[2]


def _kept() -> list[Path]:
    return sorted(KEPT.glob("*.py.txt")) if KEPT.is_dir() else []


@pytest.mark.parametrize("case", _kept(), ids=lambda path: path.name)
def test_kept_regressions(case: Path) -> None:
    check_guarantees(case.read_text(encoding="utf-8"))
