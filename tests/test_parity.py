"""TorchFix parity: every line TorchFix 0.7.0 flags on our corpus, we flag, and our fixes hold.

TorchFix is not installed in CI, so its findings are committed in
``tests/parity/torchfix_findings.txt`` (produced by running TorchFix; the command
is in the file's header; ``python bench/parity.py record`` regenerates it). When
TorchFix is installed at ``/work/tfvenv`` the recording is also checked to be
current.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from torchfix_codemods.engine import process
from torchfix_codemods.options import FileOptions
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.validation import undefined_names

PARITY = Path(__file__).parent / "parity"
TABLE = tomllib.loads((PARITY / "torchfix_parity.toml").read_text(encoding="utf-8"))
"""TorchFix code -> our codes that flag the same lines, and the codes we do not cover."""
CORPUS = PARITY / "corpus"
RECORDING = PARITY / "torchfix_findings.txt"
TORCHFIX = Path("/work/tfvenv/bin/torchfix")
OURS = frozenset({"TFC001", *[f"TFC4{n:02d}" for n in range(1, 11)]})
FILES = sorted(CORPUS.glob("*.py"))


def _recorded() -> list[tuple[str, int, str]]:
    rows = []
    for text in RECORDING.read_text(encoding="utf-8").splitlines():
        if text and not text.startswith("#"):
            path, line, code = text.split(":")
            rows.append((path, int(line), code))
    return rows


def _findings(path: Path, *, unsafe: bool = False, fix: bool = False):
    unit = SourceUnit.from_bytes(path.name, path.read_bytes())
    return process(unit, FileOptions(codes=tuple(OURS), unsafe_fixes=unsafe), apply_fixes=fix)


def test_corpus_exercises_every_torchfix_code() -> None:
    recorded = {code for _, _, code in _recorded()}
    table = TABLE["codes"]
    not_covered = set(TABLE["not_covered"])
    assert recorded == set(table), f"corpus lacks {set(table) - recorded}"
    assert not recorded & not_covered


def test_every_torchfix_finding_is_ours_on_the_same_line() -> None:
    table = TABLE["codes"]
    ours: dict[str, dict[int, set[str]]] = {}
    for path in FILES:
        lines: dict[int, set[str]] = defaultdict(set)
        for finding in _findings(path).findings:
            lines[finding.line].add(finding.code)
        ours[path.name] = lines
    missing = [f"{path}:{line}:{code} (want one of {table[code]})"
               for path, line, code in _recorded()
               if not ours.get(path, {}).get(line, set()) & set(table[code])]
    assert not missing, "TorchFix findings we do not make:\n" + "\n".join(missing)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixed_corpus_compiles_and_reads_no_new_name(path: Path) -> None:
    before = path.read_text(encoding="utf-8")
    result = _findings(path, unsafe=True, fix=True)
    after = result.fixed if result.fixed is not None else before
    compile(after, path.name, "exec", dont_inherit=True)
    assert undefined_names(after) - undefined_names(before) == set()
    assert not any(f.fix is not None and f.fix.withheld for f in result.findings), \
        [f.fix for f in result.findings if f.fix is not None and f.fix.withheld]


def _fixed(name: str) -> str:
    result = _findings(CORPUS / name, unsafe=True, fix=True)
    assert result.fixed is not None
    return result.fixed


def test_torchfix_failures_come_out_right() -> None:
    linalg = _fixed("linalg.py")
    assert "torch.linalg.cholesky(X, upper=True)" in linalg  # TorchFix: cholesky(A).mH
    assert 'torch.linalg.qr(S, mode="reduced" if flag else "complete")' in linalg  # some dropped
    assert "torch.arange(0, n, dtype=torch.get_default_dtype())" in linalg  # dtype kept
    no_torch = _fixed("no_torch_name.py")
    assert no_torch.splitlines()[1] == "import torch"  # TorchFix wrote `torch.` with no import
    training = _fixed("training.py")
    assert "torch.load(path, **kw)" in training  # TorchFix appended a second weights_only
    assert "checkpoint(block, x, use_reentrant=False)" in training  # --unsafe-fixes: False
    amp = _fixed("amp_alias.py")
    assert 'T.amp.autocast("cuda", enabled=True, dtype=T.float16)' in amp
    code = amp.split('"""', 2)[2]  # after the docstring
    assert "torch" not in code.replace("import torch as T", "")


def test_non_literal_pretrained_keeps_the_file_s_findings() -> None:
    """TorchFix's TOR201 raised on this file and it reported nothing at all."""
    assert not [row for row in _recorded() if row[0] == "vision_non_literal.py"]
    codes = {f.code for f in _findings(CORPUS / "vision_non_literal.py").findings}
    assert {"TFC408", "TFC001"} <= codes
    assert not any(f.internal_error for f in _findings(CORPUS / "vision_non_literal.py").findings)


@pytest.mark.skipif(not TORCHFIX.exists(), reason="TorchFix is not installed at /work/tfvenv")
def test_recording_is_current() -> None:
    files = [p.name for p in FILES]
    done = subprocess.run([str(TORCHFIX), "--select", "ALL", *files], cwd=CORPUS,
                          capture_output=True, text=True, check=False)
    pattern = re.compile(r"^([^:\s]+\.py):(\d+):\d+: (TOR\d{3})")
    live = {(m[1], int(m[2]), m[3]) for m in map(pattern.match, done.stdout.splitlines()) if m}
    assert live == set(_recorded())


# --------------------------------------------------- the replacement table's facts
# The rules above are only as right as rules/data/replacements.toml: check each row
# against the installed torch (2.13) and against the handlers the rules define.


def _resolve(qualified: str) -> object:
    import importlib

    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(qualified)


def _rows():
    from torchfix_codemods.rules.tables import replacements

    return sorted(replacements().values(), key=lambda row: row.old)


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row.old)
def test_replacement_row_is_consistent(row) -> None:
    from torchfix_codemods.edits.call_mapping import CONVERTERS
    from torchfix_codemods.findings import Safety
    from torchfix_codemods.rules.registry import rule_by_code

    rule = rule_by_code(row.rule)
    assert row.note, "every row explains itself"
    if row.new is None:
        assert row.safety is Safety.NONE
        return
    assert row.safety is not Safety.NONE and row.min_torch is not None
    _resolve(row.new)  # the replacement exists in the installed torch
    if row.handler:
        assert row.handler in rule.handlers, f"{row.rule} has no handler {row.handler!r}"
    elif not row.mapping.passthrough:
        mapping = row.mapping
        names = set(mapping.params) | set(mapping.keywords)
        assert set(mapping.args) <= names and set(mapping.convert) <= names
        assert set(mapping.together) <= names
        assert set(mapping.convert.values()) <= set(CONVERTERS)
        assert set(mapping.params) <= set(mapping.args) | set(mapping.keywords), \
            "a parameter maps nowhere"


@pytest.mark.parametrize("row", [r for r in _rows() if not r.old.startswith("functorch")],
                         ids=lambda row: row.old)
def test_old_name_is_real(row) -> None:
    """Every old name still exists in torch 2.13; `removed` ones raise RuntimeError when called."""
    _resolve(row.old)


def test_target_torch_withholds_replacements_the_target_lacks() -> None:
    source = b"import torch\nscaler = torch.cuda.amp.GradScaler()\nL = torch.cholesky(A)\n"
    unit = SourceUnit.from_bytes("t.py", source)
    old = process(unit, FileOptions(codes=tuple(OURS), target_torch=(2, 2)), apply_fixes=True)
    assert old.fixed is not None and "torch.cuda.amp.GradScaler()" in old.fixed
    assert "torch.linalg.cholesky(A)" in old.fixed  # 1.10 <= 2.2: applied
    withheld = [f for f in old.findings if f.fix is not None and f.fix.withheld]
    assert [f.code for f in withheld] == ["TFC401"]
    new = process(unit, FileOptions(codes=tuple(OURS), target_torch=(2, 3)), apply_fixes=True)
    assert new.fixed is not None and 'torch.amp.GradScaler("cuda")' in new.fixed
