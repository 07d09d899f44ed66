"""TorchFix parity, measured: every line TorchFix flags, we flag; our fixes compile, theirs?

    python bench/parity.py record   # re-run TorchFix, rewrite tests/parity/torchfix_findings.txt
    python bench/parity.py record-main --torchfix PATH  # TorchFix main on tests/parity/corpus_main
    python bench/parity.py compare  # our findings vs the recording, line by line
    python bench/parity.py fixes    # fix the corpus with both tools; which results compile

TorchFix lives in its own virtualenv (its libcst pin must not touch ours):
``python3 -m venv tfvenv && tfvenv/bin/pip install torchfix==0.7.0``; pass
``--torchfix PATH`` or set ``TORCHFIX`` (default: ``torchfix`` on PATH). CI has no
TorchFix: tests/test_parity.py checks the committed recording instead.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchfix_codemods.engine import process  # noqa: E402
from torchfix_codemods.options import FileOptions  # noqa: E402
from torchfix_codemods.source import SourceUnit  # noqa: E402
from torchfix_codemods.validation import undefined_names  # noqa: E402

CORPUS = ROOT / "tests" / "parity" / "corpus"
TABLE = ROOT / "tests" / "parity" / "torchfix_parity.toml"
RECORDING = ROOT / "tests" / "parity" / "torchfix_findings.txt"
DEFAULT_TORCHFIX = os.environ.get("TORCHFIX", "torchfix")
LINE = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+):(?P<col>\d+): (?P<code>TOR\d{3})")
OUR_CODES = frozenset({"TFC001", *[f"TFC4{n:02d}" for n in range(1, 12)]})
CORPUS_MAIN = ROOT / "tests" / "parity" / "corpus_main"
RECORDING_MAIN = ROOT / "tests" / "parity" / "torchfix_main_findings.txt"


def run_torchfix(torchfix: str, paths: list[Path], fix: bool = False) -> str:
    command = [torchfix, "--select", "ALL", *(["--fix"] if fix else []), *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=CORPUS, check=False)
    return done.stdout + done.stderr


def record(torchfix: str) -> list[str]:
    """TorchFix's findings on the corpus as sorted ``file:line:TORcode`` lines."""
    files = sorted(p.name for p in CORPUS.glob("*.py"))
    output = run_torchfix(torchfix, [Path(f) for f in files])
    found = sorted({f"{m['path']}:{m['line']}:{m['code']}"
                    for m in map(LINE.match, output.splitlines()) if m},
                   key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s.split(":")[2]))
    header = [
        "# TorchFix 0.7.0 findings on tests/parity/corpus, one `file:line:TORcode` per line.",
        "# Produced by: cd tests/parity/corpus && torchfix --select ALL *.py",
        "# (regenerate with `python bench/parity.py record`; TOR901 is not covered, see",
        "# docs/torchfix-parity.md). Files TorchFix crashed on have no lines here.",
    ]
    RECORDING.write_text("\n".join(header + found) + "\n", encoding="utf-8")
    return found


def record_main(torchfix: str) -> list[str]:
    """TorchFix main's findings on ``corpus_main`` (TorchFix installed from its main branch)."""
    files = sorted(p.name for p in CORPUS_MAIN.glob("*.py"))
    done = subprocess.run([torchfix, "--select", "ALL", *files], capture_output=True, text=True,
                          cwd=CORPUS_MAIN, check=False)
    found = sorted({f"{m['path']}:{m['line']}:{m['code']}"
                    for m in map(LINE.match, done.stdout.splitlines()) if m},
                   key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s.split(":")[2]))
    kept = [line for line in RECORDING_MAIN.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")]
    RECORDING_MAIN.write_text("\n".join(kept + found) + "\n", encoding="utf-8")
    return found


def recorded() -> list[tuple[str, int, str]]:
    rows = []
    for text in RECORDING.read_text(encoding="utf-8").splitlines():
        if text and not text.startswith("#"):
            path, line, code = text.split(":")
            rows.append((path, int(line), code))
    return rows


def our_findings(unsafe: bool = False) -> dict[str, dict[int, set[str]]]:
    options = FileOptions(codes=tuple(OUR_CODES), unsafe_fixes=unsafe)
    result: dict[str, dict[int, set[str]]] = {}
    for path in sorted(CORPUS.glob("*.py")):
        unit = SourceUnit.from_bytes(path.name, path.read_bytes())
        lines: dict[int, set[str]] = defaultdict(set)
        for finding in process(unit, options, apply_fixes=False).findings:
            lines[finding.line].add(finding.code)
        result[path.name] = lines
    return result


def parity_codes() -> dict[str, list[str]]:
    """TorchFix code -> our rule codes that flag the same lines (``torchfix_parity.toml``)."""
    return {code: list(ours) for code, ours in tomllib.loads(
        TABLE.read_text(encoding="utf-8"))["codes"].items()}


def compare() -> int:
    mapping = parity_codes()
    ours = our_findings()
    missing = []
    for path, line, code in recorded():
        if not ours.get(path, {}).get(line, set()) & set(mapping[code]):
            missing.append(f"{path}:{line}:{code}")
    total = len(recorded())
    ours_total = sum(len(codes) for lines in ours.values() for codes in lines.values())
    print(f"TorchFix findings recorded: {total}; matched by ours on the same line: "
          f"{total - len(missing)}; our (line, code) pairs on the corpus: {ours_total}")
    for item in missing:
        print(f"  MISSING {item}")
    return 1 if missing else 0


def _check(before: str, after: str) -> str:
    try:
        compile(after, "<fixed>", "exec")
    except SyntaxError as error:
        return f"does not compile ({error.msg})"
    added = undefined_names(after) - undefined_names(before)
    return f"reads undefined {sorted(added)}" if added else "ok"


def fixes(torchfix: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        theirs, mine = Path(tmp, "torchfix"), Path(tmp, "ours")
        shutil.copytree(CORPUS, theirs)
        shutil.copytree(CORPUS, mine)
        subprocess.run([torchfix, "--select", "ALL", "--fix", "."], cwd=theirs,
                       capture_output=True, check=False)
        subprocess.run([sys.executable, "-m", "torchfix_codemods", "fix", "--unsafe-fixes",
                        "--select", ",".join(sorted(OUR_CODES)), "."], cwd=mine,
                       capture_output=True, check=False)
        bad = 0
        print(f"{'file':28} {'TorchFix --fix':40} {'torchfix-codemods fix --unsafe-fixes'}")
        for path in sorted(CORPUS.glob("*.py")):
            before = path.read_text(encoding="utf-8")
            a = (theirs / path.name).read_text(encoding="utf-8")
            b = (mine / path.name).read_text(encoding="utf-8")
            verdict_a = _check(before, a) + ("" if a != before else " (unchanged)")
            verdict_b = _check(before, b) + ("" if b != before else " (unchanged)")
            bad += not verdict_b.startswith("ok")
            print(f"{path.name:28} {verdict_a:40} {verdict_b}")
        return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "record-main", "compare", "fixes"))
    parser.add_argument("--torchfix", default=DEFAULT_TORCHFIX)
    args = parser.parse_args()
    if args.action == "record":
        for row in record(args.torchfix):
            print(row)
        return 0
    if args.action == "record-main":
        for row in record_main(args.torchfix):
            print(row)
        return 0
    if args.action == "compare":
        return compare()
    return fixes(args.torchfix)


if __name__ == "__main__":
    sys.exit(main())
