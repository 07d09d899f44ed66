"""Score torchfix-codemods against hand-labelled occurrences in public PyTorch repositories.

The ecosystem check, in the spirit of ruff's: every rule change is judged by
what it does to code no one here wrote. For each repository in ``repos.toml``
this script

1. materialises the checked subpaths at the pinned commit from a local git
   mirror (``<mirrors>/<owner>+<name>``) into a cache folder;
2. runs ``check --format json`` with every rule (off-by-default ones too) on
   the pristine copy, and ``fix --unsafe-fixes`` twice on a scratch copy;
3. scores the findings and applied fixes against ``labels.toml``, and checks
   what no label can: internal errors, files that stop compiling, undefined
   names the fix introduced (ruff F821/F822/F823, before vs after), and files
   the second ``fix`` still changes.

It exits 1 when a fix (any tier) lands on a ``must-not-touch`` or
``report-only`` occurrence, on a crash, a broken or non-idempotent file, or a
label whose line no longer hashes to what was labelled; 2 on bad usage or a
missing mirror. It is a script, not a test: CI has no mirrors. See README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from catalog import (
    LABELS_FILE,
    REPOS_FILE,
    REVIEWS,
    SETS,
    CatalogError,
    Hunk,
    HunkReview,
    Label,
    Repo,
    line_hash,
    load_labels,
    load_repos,
    load_set,
    parse_diff,
)

SOURCE_SUFFIXES = (".py", ".ipynb")
DEFAULT_MIRRORS = "/work/.mirror"
DEFAULT_CACHE = Path.home() / ".cache" / "torchfix-codemods" / "ecosystem"
UNDEFINED_NAME_CODES = "F821,F822,F823"


class UsageError(Exception):
    """Bad input to the script itself: one line, exit code 2."""


# --- materialising repositories -------------------------------------------------------------


def mirror_dir(mirrors: Path, repo: Repo) -> Path:
    """The bare git directory holding ``repo``: ``<slug>/repo`` (the fetch tool's layout) or ``<slug>``."""
    for candidate in (mirrors / repo.slug / "repo", mirrors / repo.slug / "repo" / ".git",
                      mirrors / repo.slug):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise UsageError(
        f"no git mirror of {repo.name} under {mirrors} (looked for {mirrors / repo.slug}); "
        f"create one with `git clone --mirror https://github.com/{repo.name} {mirrors / repo.slug}` "
        f"or point --mirrors / TORCHFIX_MIRRORS at the folder that has it")


def materialise(repo: Repo, mirrors: Path, cache: Path) -> tuple[Path, list[str]]:
    """The pristine checked files of ``repo`` at its commit; the paths the mirror lacks.

    Only ``.py`` and ``.ipynb`` files under the repo's subpaths are written: that is
    all the tool reads, and mirrors may lack large data files. A finished copy is
    marked and reused.
    """
    root = cache / repo.slug / repo.commit
    source = root / "src"
    marker = root / "complete.json"
    if marker.is_file():
        return source, json.loads(marker.read_text())["missing"]
    git_dir = mirror_dir(mirrors, repo)
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", repo.commit, "--", *repo.paths],
        capture_output=True)
    if listing.returncode != 0:
        raise UsageError(f"{git_dir} has no commit {repo.commit} for {repo.name}: fetch the mirror "
                         f"again or pin another commit in repos.toml "
                         f"({listing.stderr.decode(errors='replace').strip()})")
    blobs: list[tuple[str, str]] = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        path = name.decode("utf-8", errors="surrogateescape")
        if kind == b"blob" and mode != b"120000" and path.endswith(SOURCE_SUFFIXES):
            blobs.append((sha.decode(), path))
    if not blobs:
        raise UsageError(f"{repo.name} has no .py or .ipynb files under {', '.join(repo.paths)} "
                         f"at {repo.commit[:12]}")
    shutil.rmtree(root, ignore_errors=True)
    source.mkdir(parents=True)
    missing = _write_blobs(git_dir, blobs, source)
    marker.write_text(json.dumps({"repo": repo.name, "commit": repo.commit, "missing": missing}))
    return source, missing


def _write_blobs(git_dir: Path, blobs: list[tuple[str, str]], into: Path) -> list[str]:
    """Write each blob's content under ``into``; return the paths whose blob the mirror lacks."""
    request = "".join(f"{sha}\n" for sha, _ in blobs).encode()
    process = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                             input=request, capture_output=True, check=True)
    out = process.stdout
    offset = 0
    missing = []
    for _, path in blobs:
        end = out.index(b"\n", offset)
        header = out[offset:end].split()
        offset = end + 1
        if header[-1] == b"missing":
            missing.append(path)
            continue
        size = int(header[2])
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[offset:offset + size])
        offset += size + 1
    return missing


# --- reading sources back ----------------------------------------------------------------------


def code_lines(path: Path, cell: int | None) -> list[str] | None:
    """The lines of a ``.py`` file, or of notebook cell ``cell`` (1-based, all cells counted)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if cell is None:
        return data.decode("utf-8", errors="replace").splitlines()
    try:
        cells = json.loads(data)["cells"]
        source = cells[cell - 1]["source"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return ("".join(source) if isinstance(source, list) else source).splitlines()


def compiles(path: Path) -> bool:
    """Whether the file compiles; for a notebook, its code cells (IPython magics blanked) joined."""
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(data)["cells"]
        except (ValueError, KeyError, TypeError):
            return False
        parts = []
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            if source.lstrip().startswith("%%"):
                continue
            parts.append("\n".join("pass" if _is_magic(line) else line
                                   for line in source.splitlines()))
        data = "\n".join(parts).encode()
    try:
        compile(data, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _is_magic(line: str) -> bool:
    stripped = line.lstrip()
    indent = line[:len(line) - len(stripped)]
    return bool(stripped) and (stripped[0] in "%!" or stripped.endswith("?")) and not indent.strip()


# --- running the tool ---------------------------------------------------------------------------


@dataclass
class ToolRun:
    findings: list[dict]
    errors: list[dict]
    returncode: int
    stderr: str
    seconds: float


def run_tool(tool: Sequence[str], command: str, cwd: Path, paths: Sequence[str],
             codes: Sequence[str], jobs: int, extra: Sequence[str] = ()) -> ToolRun:
    args = [*tool, command, "--format", "json", "--select", ",".join(codes), "--jobs", str(jobs),
            *extra, "--", *paths]
    if command == "check":
        args.insert(len(tool) + 1, "--no-cache")
    started = time.perf_counter()
    process = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    try:
        document = json.loads(process.stdout)
    except json.JSONDecodeError:
        document = {"findings": [], "errors": []}
    for finding in document["findings"]:
        finding["path"] = _normalise(finding["path"])
    for error in document["errors"]:
        error["path"] = _normalise(error["path"])
    return ToolRun(document["findings"], document["errors"], process.returncode, process.stderr,
                   seconds)


def _normalise(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in SOURCE_SUFFIXES}


def undefined_names(ruff: Sequence[str], root: Path, files: Sequence[str]) -> Counter[tuple[str, str]]:
    """(file, message) of every undefined-name diagnostic ruff gives for ``files`` under ``root``."""
    if not files:
        return Counter()
    process = subprocess.run(
        [*ruff, "check", "--isolated", "--no-cache", "--exit-zero", "--select", UNDEFINED_NAME_CODES,
         "--output-format", "json", "--", *files], cwd=root, capture_output=True, text=True)
    if process.returncode != 0:
        raise UsageError(f"ruff failed on {root}: {process.stderr.strip()[:300]}")
    found: Counter[tuple[str, str]] = Counter()
    for item in json.loads(process.stdout or "[]"):
        found[(str(Path(item["filename"]).resolve().relative_to(root.resolve())), item["message"])] += 1
    return found


# --- scoring ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    label: Label
    found: bool = False
    fixed: str | None = None
    """Tier of the applied fix (``safe`` / ``unsafe``), or ``None``."""


@dataclass
class RepoResult:
    repo: Repo
    files: int = 0
    missing: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    unlabelled: list[tuple[dict, str]] = field(default_factory=list)
    unlabelled_fixed: int = 0
    crashes: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    new_undefined: list[str] = field(default_factory=list)
    """Names a fix made undefined: read in a changed file where nothing binds them, which the
    original did not read undefined (the engine's guarantee, checked independently)."""
    more_undefined_reads: list[str] = field(default_factory=list)
    """Extra reads of a name the original already reads undefined (a snippet's `optimizer`
    given a `zero_grad()`): reported, not a failure; the original fails there already."""
    non_idempotent: list[str] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)
    changed: int = 0
    seconds: float = 0.0
    hunks: list[Hunk] | None = None
    """The hunks of ``fix --unsafe-fixes --diff`` (held-out set only: it has a hunk review)."""


def covers(finding: dict, label: Label) -> bool:
    """A finding answers a label when code and cell match and its span holds the labelled line."""
    return (finding["code"] == label.code and finding["path"] == label.path
            and finding.get("cell") == label.cell
            and finding["line"] <= label.line <= finding["end_line"])


def score_repo(repo: Repo, labels: list[Label], source: Path, scratch: Path, tool: Sequence[str],
               ruff: Sequence[str], codes: Sequence[str], jobs: int,
               diff: bool = False) -> RepoResult:
    result = RepoResult(repo)
    result.files = len(tree_hashes(source))
    for label in labels:
        lines = code_lines(source / label.path, label.cell)
        if lines is None or label.line > len(lines):
            result.drifted.append(f"{label.where()} {label.code}: no such line")
        elif line_hash(lines[label.line - 1]) != label.text_hash:
            result.drifted.append(f"{label.where()} {label.code}: line now reads "
                                  f"{lines[label.line - 1].strip()[:80]!r}")

    check = run_tool(tool, "check", source, repo.paths, codes, jobs)
    _collect_crashes(result, check, "check")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(source, scratch)
    fix = run_tool(tool, "fix", scratch, repo.paths, codes, jobs, ["--unsafe-fixes"])
    _collect_crashes(result, fix, "fix")
    before = tree_hashes(source)
    after_first = tree_hashes(scratch)
    changed = sorted(p for p, digest in after_first.items() if before.get(p) != digest)
    result.changed = len(changed)
    result.broken = [p for p in changed if compiles(source / p) and not compiles(scratch / p)]
    undefined_before = undefined_names(ruff, source, changed)
    introduced = undefined_names(ruff, scratch, changed) - undefined_before
    result.new_undefined = [f"{path}: {message}" for (path, message) in sorted(introduced)
                            if (path, message) not in undefined_before]
    result.more_undefined_reads = [f"{path}: {message}" for (path, message) in sorted(introduced)
                                   if (path, message) in undefined_before]
    again = run_tool(tool, "fix", scratch, repo.paths, codes, jobs, ["--unsafe-fixes"])
    _collect_crashes(result, again, "second fix")
    after_second = tree_hashes(scratch)
    result.non_idempotent = sorted(p for p in after_first if after_second.get(p) != after_first[p])
    result.seconds = check.seconds + fix.seconds + again.seconds
    if diff:
        result.hunks, seconds = diff_hunks(tool, source, repo.paths, codes, jobs)
        result.seconds += seconds

    applied = [f for f in fix.findings if f["fix"] and f["fix"]["applied"]]
    for label in labels:
        outcome = Outcome(label)
        outcome.found = any(covers(f, label) for f in check.findings)
        tiers = {f["fix"]["safety"] for f in applied if covers(f, label)}
        outcome.fixed = "safe" if "safe" in tiers else ("unsafe" if tiers else None)
        result.outcomes.append(outcome)
    for finding in check.findings:
        if finding["code"] == "TFC000" or finding.get("reason") == "internal-error":
            continue
        if not any(covers(finding, label) for label in labels):
            lines = code_lines(source / finding["path"], finding.get("cell")) or []
            text = lines[finding["line"] - 1].strip() if finding["line"] <= len(lines) else ""
            result.unlabelled.append((finding, text))
    result.unlabelled_fixed = sum(1 for f in applied if not any(covers(f, label) for label in labels))
    return result


def diff_hunks(tool: Sequence[str], source: Path, paths: Sequence[str], codes: Sequence[str],
               jobs: int) -> tuple[list[Hunk], float]:
    """The hunks ``fix --unsafe-fixes --diff`` shows on the pristine copy (it writes nothing)."""
    args = [*tool, "fix", "--unsafe-fixes", "--diff", "--select", ",".join(codes), "--jobs",
            str(jobs), "--", *paths]
    started = time.perf_counter()
    process = subprocess.run(args, cwd=source, capture_output=True, text=True)
    return parse_diff(process.stdout), time.perf_counter() - started


def _collect_crashes(result: RepoResult, run: ToolRun, what: str) -> None:
    if run.returncode not in (0, 1) or "Traceback" in run.stderr:
        tail = run.stderr.strip().splitlines()[-1:] or [f"exit code {run.returncode}"]
        result.crashes.append(f"{what}: exit {run.returncode}: {tail[0][:200]}")
    for finding in run.findings:
        if finding.get("reason") == "internal-error":
            result.crashes.append(f"{what}: {finding['path']}:{finding['line']} {finding['message']}")
    for error in run.errors:
        result.crashes.append(f"{what}: {error['path']}: {error['message']}")


# --- reporting ----------------------------------------------------------------------------------


def _count(outcomes: Iterable[Outcome]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for o in outcomes:
        v = o.label.verdict
        counts[v] += 1
        counts[f"{v}:found"] += o.found
        if o.fixed:
            counts[f"{v}:fixed"] += 1
            counts[f"{v}:{o.fixed}"] += 1
    return dict(counts)


def render(results: list[RepoResult], tool_desc: str,
           reviews: Sequence[HunkReview] | None = None) -> str:
    out = [f"tool: {tool_desc}", ""]
    out.append(f"{'repository':42} {'files':>5} {'changed':>7} {'labels':>6} {'unlabelled':>10} {'sec':>6}")
    for r in results:
        out.append(f"{r.repo.name:42} {r.files:5} {r.changed:7} {len(r.outcomes):6} "
                   f"{len(r.unlabelled):10} {r.seconds:6.1f}")
    out.append("")
    outcomes = [o for r in results for o in r.outcomes]
    unlabelled_by_code = Counter(f["code"] for r in results for f, _ in r.unlabelled)
    codes = sorted({o.label.code for o in outcomes} | set(unlabelled_by_code))
    header = (f"{'code':7} | {'must-fix':>8} {'found':>5} {'safe':>4} {'unsafe':>6} | "
              f"{'report-only':>11} {'found':>5} {'FIXED':>5} | {'must-not-touch':>14} "
              f"{'flagged':>7} {'FIXED':>5} | {'unlabelled':>10}")
    out += [header, "-" * len(header)]
    rows = [(code, [o for o in outcomes if o.label.code == code], unlabelled_by_code[code])
            for code in codes]
    rows.append(("all", outcomes, sum(unlabelled_by_code.values())))
    for code, items, unlabelled in rows:
        c = _count(items)
        if code == "all":
            out.append("-" * len(header))
        out.append(
            f"{code:7} | {c.get('must-fix', 0):8} {c.get('must-fix:found', 0):5} "
            f"{c.get('must-fix:safe', 0):4} {c.get('must-fix:unsafe', 0):6} | "
            f"{c.get('report-only', 0):11} {c.get('report-only:found', 0):5} "
            f"{c.get('report-only:fixed', 0):5} | {c.get('must-not-touch', 0):14} "
            f"{c.get('must-not-touch:found', 0):7} {c.get('must-not-touch:fixed', 0):5} | {unlabelled:10}")
    total = _count(outcomes)
    wanted = total.get("must-fix", 0) + total.get("report-only", 0)
    found = total.get("must-fix:found", 0) + total.get("report-only:found", 0)
    out.append("")
    out.append(f"recall: {found} of {wanted} real mistakes reported"
               f" ({100 * found / wanted:.0f}%)" if wanted else "recall: no real mistakes labelled")
    must_fix = total.get("must-fix", 0)
    if must_fix:
        out.append(f"must-fix fixed: {total.get('must-fix:fixed', 0)} of {must_fix} "
                   f"(safe {total.get('must-fix:safe', 0)}, unsafe {total.get('must-fix:unsafe', 0)})")
    out.append(f"fixes on must-not-touch: {total.get('must-not-touch:fixed', 0)}; on report-only: "
               f"{total.get('report-only:fixed', 0)}; findings on must-not-touch: "
               f"{total.get('must-not-touch:found', 0)}")
    missing = [f"{r.repo.name}: {path}" for r in results for path in r.missing]
    if missing:
        out.append(f"files the mirrors lack (not checked): {len(missing)}")
        out += [f"  {item}" for item in missing]
    for title, attribute in (("crashes", "crashes"), ("files that stop compiling", "broken"),
                             ("new undefined names", "new_undefined"),
                             ("more reads of names the original already reads undefined "
                              "(not a failure)", "more_undefined_reads"),
                             ("non-idempotent files", "non_idempotent"),
                             ("drifted labels", "drifted")):
        items = [f"{r.repo.name}: {item}" for r in results for item in getattr(r, attribute)]
        out.append(f"{title}: {len(items)}")
        out += [f"  {item}" for item in items]
    failures = _label_failures(outcomes)
    out.append(f"wrong fixes and noise on labelled lines: {len(failures)}")
    out += [f"  {line}" for line in failures]
    out += _review_summary(outcomes)
    if reviews is not None:
        out += hunk_review_report(results, reviews)
    misses = [o for o in outcomes if o.label.verdict != "must-not-touch" and not o.found]
    out.append(f"missed real mistakes: {len(misses)}")
    out += [f"  {o.label.where()} {o.label.code} ({o.label.verdict}): {o.label.reason}" for o in misses]
    out.append(f"unlabelled findings: {sum(len(r.unlabelled) for r in results)} "
               f"(of which fixed by fix --unsafe-fixes: {sum(r.unlabelled_fixed for r in results)})")
    for r in results:
        for finding, text in sorted(r.unlabelled, key=lambda i: (i[0]["path"], i[0].get("cell") or 0,
                                                                 i[0]["line"])):
            cell = f":cell {finding['cell']}" if finding.get("cell") else ""
            safety = (finding["fix"] or {}).get("safety", "report")
            out.append(f"  {r.repo.name} {finding['path']}{cell}:{finding['line']} {finding['code']} "
                       f"[{safety}] {text[:90]}")
    return "\n".join(out)


def _review_summary(outcomes: Iterable[Outcome]) -> list[str]:
    """Issue 16's hunk-by-hunk review: how the judged occurrences fare with this tool."""
    reviewed = [o for o in outcomes if o.label.review]
    if not reviewed:
        return []
    lines = ["hunk review (fix --unsafe-fixes --diff, judged occurrence by occurrence):"]
    for review in REVIEWS:
        items = [o for o in reviewed if o.label.review == review]
        fixed = sum(1 for o in items if o.fixed)
        lines.append(f"  judged {review:8} {len(items):3}   still changed by this tool: {fixed}")
    return lines


def match_reviews(results: Sequence[RepoResult], reviews: Sequence[HunkReview]
                  ) -> tuple[list[tuple[str, Hunk, HunkReview | None]], list[HunkReview]]:
    """Each produced hunk with its review (``None``: new or changed since the last review),
    and the reviewed hunks this tool no longer produces."""
    by_key = {review.key: review for review in reviews}
    produced: list[tuple[str, Hunk, HunkReview | None]] = []
    matched: set[tuple[str, str, int, str]] = set()
    scored = {r.repo.name for r in results if r.hunks is not None}
    for r in results:
        for hunk in r.hunks or []:
            review = by_key.get((r.repo.name, *hunk.key_tail))
            if review is not None:
                matched.add(review.key)
            produced.append((r.repo.name, hunk, review))
    gone = [review for review in reviews if review.repo in scored and review.key not in matched]
    return produced, gone


def hunk_review_report(results: Sequence[RepoResult], reviews: Sequence[HunkReview]) -> list[str]:
    """The review tally of this run's ``--diff`` hunks, and what changed since the review."""
    produced, gone = match_reviews(results, reviews)
    tally = Counter(review.verdict if review else "unjudged" for _, _, review in produced)
    lines = [f"hunk review (fix --unsafe-fixes --diff): {len(produced)} hunks: "
             + ", ".join(f"{key} {tally[key]}" for key in (*REVIEWS, "unjudged"))]
    wrong = [(repo, hunk, review) for repo, hunk, review in produced
             if review and review.verdict == "wrong"]
    lines.append(f"hunks judged wrong still produced: {len(wrong)}")
    lines += [f"  {review.where()} {','.join(hunk.codes)} [{hunk.text_hash}]: {review.reason}"
              for _, hunk, review in wrong]
    new = [(repo, hunk) for repo, hunk, review in produced if review is None]
    lines.append(f"hunks new or changed since the last review (unjudged): {len(new)}")
    for repo, hunk in new:
        cell = f" cell {hunk.cell}" if hunk.cell is not None else ""
        lines.append(f"  {repo} {hunk.path}:{hunk.line}{cell} {','.join(hunk.codes) or '-'} "
                     f"hash {hunk.text_hash}")
    lines.append(f"reviewed hunks no longer produced: {len(gone)}")
    lines += [f"  {review.where()} {','.join(review.codes)} ({review.verdict}) [{review.text_hash}]"
              for review in gone]
    return lines


def _label_failures(outcomes: Iterable[Outcome]) -> list[str]:
    lines = []
    for o in outcomes:
        label = o.label
        if label.verdict == "must-fix":
            continue
        if o.fixed:
            lines.append(f"FIXED ({o.fixed}) {label.verdict}: {label.where()} {label.code}: {label.reason}")
        elif o.found and label.verdict == "must-not-touch":
            lines.append(f"flagged must-not-touch: {label.where()} {label.code}: {label.reason}")
    return lines


def failed(results: list[RepoResult], reviews: Sequence[HunkReview] = ()) -> bool:
    produced, _ = match_reviews(results, reviews)
    if any(review and review.verdict == "wrong" for _, _, review in produced):
        return True
    for r in results:
        if r.crashes or r.broken or r.new_undefined or r.non_idempotent or r.drifted:
            return True
        if any(o.fixed and o.label.verdict != "must-fix" for o in r.outcomes):
            return True
    return False


def as_json(results: list[RepoResult], reviews: Sequence[HunkReview] | None = None) -> dict:
    document = {
        "repos": [{
            "name": r.repo.name, "commit": r.repo.commit, "files": r.files, "changed": r.changed,
            "missing": r.missing, "crashes": r.crashes, "broken": r.broken,
            "new_undefined": r.new_undefined, "more_undefined_reads": r.more_undefined_reads,
            "non_idempotent": r.non_idempotent,
            "drifted": r.drifted, "seconds": round(r.seconds, 2),
            "labels": [{"path": o.label.path, "cell": o.label.cell, "line": o.label.line,
                        "code": o.label.code, "verdict": o.label.verdict, "found": o.found,
                        "fixed": o.fixed} for o in r.outcomes],
            "unlabelled": [{**f, "text": text} for f, text in r.unlabelled],
        } for r in results],
        "totals": _count(o for r in results for o in r.outcomes),
        "failed": failed(results, reviews or ()),
    }
    if reviews is not None:  # the held-out set's hunk review
        produced, gone = match_reviews(results, reviews)
        document["hunks"] = [{"repo": repo, "path": hunk.path, "line": hunk.line, "cell": hunk.cell,
                              "codes": list(hunk.codes), "hash": hunk.text_hash,
                              "review": review.verdict if review else None}
                             for repo, hunk, review in produced]
        document["reviewed_hunks_gone"] = [{"repo": r.repo, "path": r.path, "line": r.line,
                                            "hash": r.text_hash, "verdict": r.verdict} for r in gone]
    return document


# --- command line -------------------------------------------------------------------------------


def all_codes() -> list[str]:
    """Every rule code of the tool being scored, off-by-default ones included."""
    from torchfix_codemods.rules.registry import all_rules

    return [rule.code for rule in all_rules()]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="score.py", description=__doc__.split("\n\n")[0],
        epilog="`score.py [--mirrors M] [--cache C] show REPO PATH LINE [--cell N]` prints a line and its "
               "label hash, for writing labels.")
    parser.add_argument("--mirrors", type=Path,
                        default=Path(os.environ.get("TORCHFIX_MIRRORS", DEFAULT_MIRRORS)),
                        help="folder of bare git mirrors named owner+name "
                             "(env TORCHFIX_MIRRORS; default %(default)s)")
    parser.add_argument("--cache", type=Path,
                        default=Path(os.environ.get("TORCHFIX_REALCODE_CACHE", DEFAULT_CACHE)),
                        help="where repositories are materialised "
                             "(env TORCHFIX_REALCODE_CACHE; default %(default)s)")
    parser.add_argument("--repo", action="append", default=[],
                        help="score only this owner/name (repeatable)")
    parser.add_argument("--tool", default=f"{shlex.quote(sys.executable)} -m torchfix_codemods",
                        help="command that runs the tool (default: this Python's torchfix_codemods)")
    parser.add_argument("--ruff", default=f"{shlex.quote(sys.executable)} -m ruff",
                        help="command that runs ruff, for the undefined-name check")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the tool")
    parser.add_argument("--json", type=Path, help="also write the full results here as JSON")
    parser.add_argument("--set", choices=SETS, default="dev", dest="label_set",
                        help="dev: repos.toml and labels.toml (tuned on); heldout..heldout6: the test "
                             "sets in turn, each now looked at "
                             "(each a folder of repos-*.toml, labels-*.toml and the hunk review "
                             "review-*.toml). Default %(default)s")
    parser.add_argument("--heldout-dir", type=Path, default=None,
                        help="folder of the held-out set's files (default: the set's own folder)")
    parser.add_argument("--repos-file", type=Path, default=REPOS_FILE,
                        help="the dev set's repositories (the held-out set may share none); "
                             "default: %(default)s")
    parser.add_argument("--labels-file", type=Path, default=LABELS_FILE, help="default: %(default)s")
    return parser.parse_args(argv)


def show(argv: Sequence[str], options: argparse.Namespace) -> int:
    parser = argparse.ArgumentParser(prog="score.py show")
    parser.add_argument("repo")
    parser.add_argument("path")
    parser.add_argument("line", type=int)
    parser.add_argument("--cell", type=int)
    args = parser.parse_args(argv)
    repos = load_selected(options, all_codes()).repos
    if args.repo not in repos:
        raise UsageError(f"{args.repo} is not in the {options.label_set} set's repos files")
    source, _ = materialise(repos[args.repo], options.mirrors, options.cache)
    lines = code_lines(source / args.path, args.cell)
    if lines is None or not 1 <= args.line <= len(lines):
        raise UsageError(f"{args.path} has no line {args.line}")
    text = lines[args.line - 1]
    print(f"{line_hash(text)}  {text}")
    return 0


@dataclass
class Selected:
    repos: dict[str, Repo]
    labels: list[Label]
    reviews: list[HunkReview] | None
    """``None`` for the dev set: its review lives in labels.toml's ``review`` fields."""


def load_selected(options: argparse.Namespace, codes: Sequence[str]) -> Selected:
    if options.label_set != "dev":
        chosen = load_set(options.label_set, codes, folder=options.heldout_dir,
                          dev_repos_file=options.repos_file)
        return Selected(chosen.repos, chosen.labels, chosen.reviews)
    repos = load_repos(options.repos_file)
    return Selected(repos, load_labels(repos, codes, options.labels_file), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if "show" in argv:
            at = argv.index("show")
            return show(argv[at + 1:], parse_args(argv[:at]))
        options = parse_args(argv)
        codes = all_codes()
        selected = load_selected(options, codes)
        repos, labels, reviews = selected.repos, selected.labels, selected.reviews
        unknown = [name for name in options.repo if name not in repos]
        if unknown:
            raise UsageError(f"{unknown[0]} is not in the {options.label_set} set's repos files")
        chosen = [repos[name] for name in (options.repo or repos)]
        tool = shlex.split(options.tool)
        ruff = shlex.split(options.ruff)
        ruff_checked = False
        by_repo: dict[str, list[Label]] = defaultdict(list)
        for label in labels:
            by_repo[label.repo].append(label)
        results = []
        for repo in chosen:
            print(f"scoring {repo.name} @ {repo.commit[:12]} ...", file=sys.stderr)
            source, missing = materialise(repo, options.mirrors, options.cache)
            if not ruff_checked:  # after the mirror: a missing mirror is the first thing to say
                try:
                    works = subprocess.run([*ruff, "--version"], capture_output=True).returncode == 0
                except OSError:
                    works = False
                if not works:
                    raise UsageError(f"cannot run ruff as `{options.ruff}` "
                                     "(pip install ruff, or pass --ruff)")
                ruff_checked = True
            # one scratch copy per scoring process: two scorers sharing a cache never fix
            # the same copy at once (that read as crashes and non-idempotent files)
            scratch = options.cache / repo.slug / repo.commit / f"scratch-{os.getpid()}"
            try:
                result = score_repo(repo, by_repo[repo.name], source, scratch, tool, ruff, codes,
                                    options.jobs, diff=reviews is not None)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            result.missing = missing
            results.append(result)
        # from the cache folder, as the tool runs do: a -c or -m run puts its cwd on sys.path first
        description = subprocess.run(
            [*tool, "--version"], capture_output=True, text=True, cwd=options.cache).stdout.strip()
        where = subprocess.run(
            [sys.executable, "-c", "import torchfix_codemods, os; "
             "print(os.path.dirname(torchfix_codemods.__file__))"],
            capture_output=True, text=True, cwd=options.cache).stdout.strip()
        print(render(results, f"{description} from {where}", reviews))
        if options.json:
            options.json.write_text(json.dumps(as_json(results, reviews), indent=1))
        return 1 if failed(results, reviews or ()) else 0
    except (UsageError, CatalogError) as error:
        print(f"score.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
