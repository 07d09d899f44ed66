"""TorchFix parity: every line TorchFix flags on our corpora, we flag, and our fixes hold.

TorchFix is not installed in CI, so its findings are committed: 0.7.0's on
``tests/parity/corpus`` in ``torchfix_findings.txt`` (``python bench/parity.py record``
regenerates it; when the environment variable ``TORCHFIX`` names a TorchFix 0.7.0
executable, the recording is also checked to be current: install it in its own
virtualenv, ``python3 -m venv tfvenv && tfvenv/bin/pip install torchfix==0.7.0``, then
``TORCHFIX=tfvenv/bin/torchfix``), and main's (past 0.7.0) on ``tests/parity/corpus_main`` in
``torchfix_main_findings.txt``. TorchFix main's own fixtures are not committed: their
expectations (file, line, code) are, in ``torchfix_main_fixtures.txt``, and are
checked against the fixtures themselves when a mirror of TorchFix is present.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
from collections import defaultdict
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from torchfix_codemods.catalog import CATALOG
from torchfix_codemods.engine import process
from torchfix_codemods.options import FileOptions
from torchfix_codemods.source import SourceUnit
from torchfix_codemods.validation import undefined_names

PARITY = Path(__file__).parent / "parity"
TABLE = tomllib.loads((PARITY / "torchfix_parity.toml").read_text(encoding="utf-8"))
"""TorchFix code -> our codes that flag the same lines, and the codes we do not cover."""
CORPUS = PARITY / "corpus"
RECORDING = PARITY / "torchfix_findings.txt"
CORPUS_MAIN = PARITY / "corpus_main"
RECORDING_MAIN = PARITY / "torchfix_main_findings.txt"
FIXTURES_MAIN = PARITY / "torchfix_main_fixtures.txt"
TORCHFIX = os.environ.get("TORCHFIX", "")
TORCHFIX_MIRROR = Path(os.environ.get("TORCHFIX_MIRROR", "/work/.mirror/pytorch-labs+torchfix/repo"))
OURS = frozenset({"TFC001", *[f"TFC4{n:02d}" for n in range(1, 12)]})
ALL_CODES = tuple(entry.code for entry in CATALOG)
"""`--select ALL` as TorchFix means it: every rule, the ones off by default too (spelled out
until the catalog's ALL selects those)."""
FILES = sorted(CORPUS.glob("*.py"))
FILES_MAIN = sorted(CORPUS_MAIN.glob("*.py"))


def _recorded(recording: Path = RECORDING) -> list[tuple[str, int, str]]:
    rows = []
    for text in recording.read_text(encoding="utf-8").splitlines():
        if text and not text.startswith(("#", "codemod ")):
            path, line, code = text.split(":")
            rows.append((path, int(line), code))
    return rows


def _findings(path: Path, *, unsafe: bool = False, fix: bool = False,
              codes: tuple[str, ...] = tuple(OURS)):
    unit = SourceUnit.from_bytes(path.name, path.read_bytes())
    return process(unit, FileOptions(codes=codes, unsafe_fixes=unsafe), apply_fixes=fix)


def test_corpus_exercises_every_torchfix_code() -> None:
    recorded = {code for _, _, code in _recorded() + _recorded(RECORDING_MAIN)}
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


@pytest.mark.skipif(not TORCHFIX, reason="set TORCHFIX to a TorchFix 0.7.0 executable to check "
                    "the recording against it (see this module's docstring)")
def test_recording_is_current() -> None:
    if not Path(TORCHFIX).is_file():
        pytest.fail(f"TORCHFIX={TORCHFIX!r} is not a file")
    files = [p.name for p in FILES]
    done = subprocess.run([TORCHFIX, "--select", "ALL", *files], cwd=CORPUS,
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
    """Every old name still exists in torch 2.13; `removed` ones raise RuntimeError when called,
    except the names the legacy inventory measured as gone altogether (`torch.gels`, removed in
    1.2): those must still be gone, or the inventory is stale."""
    import json

    from torchfix_codemods.rules.tables import DATA

    inventory = json.loads((DATA / "legacy_inventory.json").read_text(encoding="utf-8"))
    measured = inventory["entries"].get(row.old, {}).get("measured", {})
    if measured.get("error") == "AttributeError":
        assert row.removed
        with pytest.raises(AttributeError):
            _resolve(row.old)
        return
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


# --------------------------------------------------------------- TorchFix main (past 0.7.0)
def _lines_flagged(path: Path, codes: tuple[str, ...] = ALL_CODES) -> dict[int, set[str]]:
    lines: dict[int, set[str]] = defaultdict(set)
    for finding in _findings(path, codes=codes).findings:
        lines[finding.line].add(finding.code)
    return lines


def test_every_torchfix_main_finding_is_ours_with_every_rule_selected() -> None:
    table = TABLE["codes"]
    ours = {path.name: _lines_flagged(path) for path in FILES_MAIN}
    missing = [f"{path}:{line}:{code} (want one of {table[code]})"
               for path, line, code in _recorded(RECORDING_MAIN)
               if not ours.get(path, {}).get(line, set()) & set(table[code])]
    assert not missing, "TorchFix main findings we do not make:\n" + "\n".join(missing)


@pytest.mark.parametrize("path", FILES_MAIN, ids=lambda p: p.name)
def test_fixed_main_corpus_compiles_and_reads_no_new_name(path: Path) -> None:
    before = path.read_text(encoding="utf-8")
    result = _findings(path, unsafe=True, fix=True, codes=ALL_CODES)
    assert result.fixed is not None, "nothing fixed"
    compile(result.fixed, path.name, "exec", dont_inherit=True)
    assert undefined_names(result.fixed) - undefined_names(before) == set()


def test_main_corpus_fixes_what_torchfix_main_fixes() -> None:
    """TOR108 becomes logsumexp only where `dim` is given; TOR402 drops the argument;
    the private registration becomes the public one, import and call alike."""
    logsumexp = _findings(CORPUS_MAIN / "logsumexp.py", unsafe=True, fix=True,
                          codes=("TFC108",)).fixed
    assert logsumexp is not None
    assert "torch.logsumexp(scores, dim=-1, keepdim=True)" in logsumexp
    assert "torch.logsumexp(1.0 - scores, dim=(0, 1))" in logsumexp
    assert logsumexp.count("torch.log(torch.sum(torch.exp(scores)") == 5  # no dim, or not the shape
    zero_grad = _findings(CORPUS_MAIN / "zero_grad.py", unsafe=True, fix=True,
                          codes=("TFC504",)).fixed
    assert zero_grad is not None and "set_to_none=False" not in zero_grad
    pytree = _findings(CORPUS_MAIN / "pytree.py", unsafe=True, fix=True, codes=("TFC411",)).fixed
    assert pytree is not None
    assert "from torch.utils._pytree import register_pytree_node\n" in pytree
    assert "\nregister_pytree_node(Point," in pytree


def _main_fixture_rows() -> tuple[list[tuple[str, int, str]], list[str]]:
    rows = _recorded(FIXTURES_MAIN)
    codemods = [text.split(" ", 1)[1] for text in
                FIXTURES_MAIN.read_text(encoding="utf-8").splitlines()
                if text.startswith("codemod ")]
    return rows, codemods


def _main_commit() -> str:
    header = FIXTURES_MAIN.read_text(encoding="utf-8").splitlines()[0]
    return re.search(r"@ ([0-9a-f]{40})", header)[1]  # type: ignore[index]


@pytest.fixture(scope="module")
def torchfix_main(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TorchFix main's tests/fixtures at the recorded commit, from a local mirror."""
    if not TORCHFIX_MIRROR.exists():
        pytest.skip(f"no mirror of TorchFix at {TORCHFIX_MIRROR} (set TORCHFIX_MIRROR)")
    done = subprocess.run(["git", f"--git-dir={TORCHFIX_MIRROR}", "archive", _main_commit(),
                           "tests/fixtures"], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"the mirror lacks commit {_main_commit()}")
    root = tmp_path_factory.mktemp("torchfix-main")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(root, filter="data")
    return root / "tests" / "fixtures"


def test_main_fixture_expectations_are_recorded_as_torchfix_states_them(
        torchfix_main: Path) -> None:
    rows, codemods = _main_fixture_rows()
    stated = set()
    for expected in torchfix_main.glob("*/checker/*.txt"):
        source = expected.with_suffix(".py").relative_to(torchfix_main).as_posix()
        for text in expected.read_text(encoding="utf-8").splitlines():
            if text.strip():
                stated.add((source, int(text.split(":")[0]), text.split()[1]))
    assert set(rows) == stated
    assert sorted(codemods) == sorted(
        p.relative_to(torchfix_main).as_posix() for p in torchfix_main.glob("*/codemod/*.in.py"))


def test_every_line_torchfix_main_fixtures_expect_is_flagged(torchfix_main: Path) -> None:
    table = TABLE["codes"]
    rows, _ = _main_fixture_rows()
    flagged = {path: _lines_flagged(torchfix_main / path) for path in {r[0] for r in rows}}
    missing = [f"{path}:{line}:{code}" for path, line, code in rows
               if code not in TABLE["not_covered"] and
               not flagged[path].get(line, set()) & set(table[code])]
    assert not missing, "TorchFix main expects these flagged:\n" + "\n".join(missing)


def test_torchfix_main_codemod_inputs_are_fixed_into_code_that_compiles(
        torchfix_main: Path) -> None:
    _, codemods = _main_fixture_rows()
    for name in codemods:
        path = torchfix_main / name
        before = path.read_text(encoding="utf-8")
        result = _findings(path, unsafe=True, fix=True, codes=ALL_CODES)
        after = result.fixed if result.fixed is not None else before
        compile(after, name, "exec", dont_inherit=True)
        assert undefined_names(after) - undefined_names(before) == set(), name
        assert not any(f.fix is not None and f.fix.withheld for f in result.findings), name
