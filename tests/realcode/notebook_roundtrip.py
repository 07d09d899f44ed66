"""Round-trip every notebook of the real-code check through ``fix`` and count what changed.

For each repository of ``tests/realcode/*/repos*.toml`` whose local git mirror
is at hand, the notebooks of its checked paths at its pinned commit are written
to a scratch folder and fixed there with every rule and unsafe fixes
(``fix --unsafe-fixes --select ALL``, one run per repository). Then, notebook by
notebook:

* the JSON documents before and after are equal except for the ``source`` of the
  fixed cells;
* every byte outside those ``source`` values is the file's own: each unfixed cell
  is byte-identical, and so is the JSON around the cells (indentation, escapes,
  line endings, key order, the final newline);
* inside a fixed cell, a line the fix did not change keeps its JSON spelling.

Prints one line per repository and the totals; exits 1 when any check fails. A
script, not a test: CI has no mirrors (``tests/test_notebooks.py`` holds in-repo
notebooks of the same layouts). Never commits or prints third-party code.

    python tests/realcode/notebook_roundtrip.py [--mirrors /work/.mirror] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE / "ecosystem"))
sys.path.insert(0, str(ROOT))

from catalog import CatalogError, Repo, load_repos  # noqa: E402

from torchfix_codemods.notebook_json import (  # noqa: E402
    _end_of,
    _items,
    _members,
    _skip,
    _Unscannable,
    source_spans,
)


def repositories() -> list[Repo]:
    found: dict[str, Repo] = {}
    for path in sorted(HERE.glob("*/repos*.toml")):
        try:
            found.update(load_repos(path))
        except CatalogError as error:
            raise SystemExit(f"{path}: {error}") from None
    return [found[name] for name in sorted(found)]


def git_dir(mirrors: Path, repo: Repo) -> Path | None:
    for candidate in (mirrors / repo.slug / "repo", mirrors / repo.slug / "repo" / ".git",
                      mirrors / repo.slug):
        if (candidate / "HEAD").is_file() or (candidate / "objects").is_dir():
            return candidate
    return None


def notebooks_of(repo: Repo, git: Path, into: Path) -> list[str]:
    """Write the repository's notebooks (at its commit, under its paths) into ``into``."""
    listed = subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "-z", repo.commit, "--",
                             *repo.paths], capture_output=True, check=False)
    if listed.returncode != 0:
        return []
    written = []
    for entry in listed.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        if not path.endswith(".ipynb") or meta.split()[1] != b"blob":
            continue
        blob = subprocess.run(["git", f"--git-dir={git}", "cat-file", "blob", meta.split()[2]],
                              capture_output=True, check=False)
        if blob.returncode != 0:
            continue  # the mirror lacks it (a large file)
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
        written.append(path)
    return written


def cell_spans(raw: str) -> list[tuple[int, int]]:
    """(start, end) of each cell object of the ``cells`` list."""
    for key, start in _members(raw, _skip(raw, 0)):
        if key == "cells":
            return [(item, _end_of(raw, item)) for item in _items(raw, start)]
    return []


def line_tokens(raw: str, start: int) -> list[str]:
    """The JSON spelling of each line of the source list at ``start`` (empty for a string)."""
    if raw[start] != "[":
        return []
    return [raw[item:_end_of(raw, item)] for item in _items(raw, start)]


def compare(before: bytes, after: bytes, tally: Counter[str], problems: list[str],
            name: str) -> None:
    tally["notebooks"] += 1
    raw, new = before.decode("utf-8"), after.decode("utf-8")
    document = json.loads(raw)
    cells = document.get("cells", [])
    tally["cells"] += len(cells)
    if before == after:
        tally["unchanged notebooks"] += 1
        tally["unfixed cells"] += len(cells)
        tally["unfixed cells byte-identical"] += len(cells)
        return
    fixed_document = json.loads(new)
    fixed = {index for index, (old, now) in enumerate(zip(cells, fixed_document["cells"],
                                                          strict=True))
             if old.get("source") != now.get("source")}
    expected = json.loads(raw)
    for index in fixed:
        expected["cells"][index]["source"] = fixed_document["cells"][index]["source"]
    if fixed_document != expected:
        problems.append(f"{name}: more than the fixed cells' sources changed")
    try:
        old_cells, new_cells = cell_spans(raw), cell_spans(new)
        old_sources, new_sources = source_spans(raw), source_spans(new)
    except (_Unscannable, ValueError):
        problems.append(f"{name}: the fixed notebook cannot be scanned")
        return
    tally["changed notebooks"] += 1
    tally["fixed cells"] += len(fixed)
    for index, ((start, end), (new_start, new_end)) in enumerate(zip(old_cells, new_cells,
                                                                    strict=True)):
        if index in fixed:
            old_lines = line_tokens(raw, old_sources[index][0])
            new_lines = line_tokens(new, new_sources[index][0])
            kept = Counter(old_lines)
            for token in new_lines:
                if kept[token] > 0:
                    kept[token] -= 1
                    tally["fixed-cell lines kept byte-identical"] += 1
                else:
                    value = json.loads(token)
                    if value in [json.loads(t) for t in old_lines]:
                        problems.append(f"{name}: cell {index}: an unchanged line was "
                                        f"re-encoded ({token[:60]!r})")
                    tally["fixed-cell lines rewritten"] += 1
            continue
        tally["unfixed cells"] += 1
        if raw[start:end] == new[new_start:new_end]:
            tally["unfixed cells byte-identical"] += 1
        else:
            problems.append(f"{name}: unfixed cell {index} is not byte-identical")
    # The JSON between and around the cells: the document's own bytes too.
    gaps_old = _gaps(raw, old_cells)
    gaps_new = _gaps(new, new_cells)
    if gaps_old != gaps_new:
        problems.append(f"{name}: bytes outside the cells changed")


def _gaps(raw: str, spans: list[tuple[int, int]]) -> list[str]:
    pieces, position = [], 0
    for start, end in spans:
        pieces.append(raw[position:start])
        position = end
    pieces.append(raw[position:])
    return pieces


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path,
                        default=Path(os.environ.get("TORCHFIX_MIRRORS", "/work/.mirror")))
    parser.add_argument("--scratch", type=Path, default=None)
    args = parser.parse_args()
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="notebook-roundtrip-"))
    totals: Counter[str] = Counter()
    problems: list[str] = []
    absent = []
    for repo in repositories():
        git = git_dir(args.mirrors, repo)
        if git is None:
            absent.append(repo.name)
            continue
        into = scratch / repo.slug
        paths = notebooks_of(repo, git, into)
        if not paths:
            continue
        originals = {path: (into / path).read_bytes() for path in paths}
        done = subprocess.run(
            [sys.executable, "-m", "torchfix_codemods", "fix", "--unsafe-fixes", "--select",
             "ALL", "--jobs", "2", "--", *paths], cwd=into, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        if done.returncode not in (0, 1) or "Traceback" in done.stderr:
            problems.append(f"{repo.name}: fix exited {done.returncode}: {done.stderr[-300:]}")
        tally: Counter[str] = Counter()
        for path in paths:
            before, after = originals[path], (into / path).read_bytes()
            try:
                json.loads(before.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                tally["not JSON (left alone)"] += 1
                if before != after:
                    problems.append(f"{repo.name}/{path}: not JSON, yet rewritten")
                continue
            if not isinstance(json.loads(before), dict) or "cells" not in json.loads(before):
                tally["not nbformat 4 (left alone)"] += 1
                if before != after:
                    problems.append(f"{repo.name}/{path}: not nbformat 4, yet rewritten")
                continue
            compare(before, after, tally, problems, f"{repo.name}/{path}")
        totals.update(tally)
        print(f"{repo.name}: {tally['notebooks']} notebooks, {tally['changed notebooks']} "
              f"fixed, {tally['fixed cells']} fixed cells, {tally['unfixed cells']} unfixed "
              f"cells ({tally['unfixed cells byte-identical']} byte-identical)"
              + "".join(f", {key}: {tally[key]}" for key in
                        ("not JSON (left alone)", "not nbformat 4 (left alone)") if tally[key]))
    print()
    for key in ("notebooks", "changed notebooks", "unchanged notebooks", "cells",
                "fixed cells", "unfixed cells", "unfixed cells byte-identical",
                "fixed-cell lines kept byte-identical", "fixed-cell lines rewritten",
                "not JSON (left alone)", "not nbformat 4 (left alone)"):
        print(f"{key}: {totals[key]}")
    if absent:
        print(f"no mirror ({len(absent)}): {', '.join(absent)}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
