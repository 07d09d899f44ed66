"""The run's first pass: every file summarised, then combined into the project index.

Only runs where an active rule reads cross-file facts (``Rule.project_facts``,
listed in the catalog) pay for it. Each file's summary depends on its bytes
alone, so summaries are cached by content digest, in one file per tool version
beside the check cache: a warm run reads that file once and hashes each source
once; a cold run parses each file once more with the standard ``ast`` (a fraction
of the LibCST parse the rules need). Neither path imports LibCST.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from torchfix_codemods.analysis.project.index import ProjectIndex
from torchfix_codemods.analysis.project.summary import FileSummary, summarize
from torchfix_codemods.catalog import entries_by_code, reads_project
from torchfix_codemods.prefilter import FileFacts
from torchfix_codemods.settings import Settings

PAIRS_FACT = "checkpoint-pairs"
"""The fact of rules that rewrite a save in one file together with a load in another."""
SHARDS_FACT = "loader-shards"
"""The fact of rules that shard a loader in one file for a training loop in another."""
_MAX_ENTRIES = 20000
KnownFacts = tuple[int, int, FileFacts]
"""A text's length, its ``hash`` and its prefilter facts (``prefilter.KNOWN_FACTS``)."""


def index_needed(work: Iterable[tuple[str, Settings]]) -> bool:
    """Whether a rule active for any of these files reads the project index."""
    seen: set[frozenset[str]] = set()
    for _, settings in work:
        if settings.enabled in seen:
            continue
        seen.add(settings.enabled)
        if reads_project(settings.enabled):
            return True
    return False


def build_project(work: list[tuple[str, Settings]], run: Settings, jobs: int = 1,
                  contents: Mapping[str, tuple[bytes, str]] | None = None,
                  too_complex: dict[str, str] | None = None,
                  spent: dict[str, float] | None = None,
                  facts: dict[str, KnownFacts] | None = None) -> ProjectIndex:
    """Summarise every file of the run (from the cache where its content was seen) and
    combine the summaries. ``run``: the run-wide settings (where the cache lives);
    ``jobs``: processes for the files not in the cache, when there are enough of them;
    ``contents``: each path's bytes and their digest, as the runner read and hashed them
    once (a path missing from it is read here; one that cannot be read is left out);
    ``too_complex``: filled with the files whose summary crashed its worker or ran past
    ``run.file_timeout`` (path -> why), which the analysis would not finish either;
    ``spent``: filled with the seconds each file's summary took, out of its time budget;
    ``facts``: filled with the prefilter's facts of each file summarised here (not those
    from the cache), read from the same ``ast`` tree (see ``prefilter.KNOWN_FACTS``)."""
    store = SummaryStore(run) if run.cache else None
    summaries: dict[str, FileSummary] = {}
    missing: list[tuple[str, bytes, str]] = []
    for path, _ in work:
        known = contents.get(path) if contents is not None else None
        if known is not None:
            data, digest = known
        else:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            digest = hashlib.sha256(data).hexdigest()
        summary = store.get(digest, path) if store is not None else None
        if summary is None:
            missing.append((path, data, digest))
        else:
            summaries[path] = summary
    failed: dict[str, str] = {} if too_complex is None else too_complex
    summarized = _summarize_all(missing, jobs, run.file_timeout, failed,
                                {} if spent is None else spent, {} if facts is None else facts)
    for (path, _, digest), summary in zip(missing, summarized, strict=True):
        summaries[path] = summary
        if store is not None and path not in failed:
            store.put(digest, summary, path)
    if store is not None:
        store.save()
    return ProjectIndex.build(summaries, pairable=_policies(work, PAIRS_FACT),
                              shardable=_policies(work, SHARDS_FACT))


def _policies(work: list[tuple[str, Settings]], fact: str) -> dict[str, bool]:
    """The files where a rule reading ``fact`` runs, with their unsafe-fixes policy."""
    return {path: settings.unsafe_fixes for path, settings in work
            if _reads_fact(path, settings, fact)}


POOL_MIN_FILES = 32
"""Below this many files to summarise, one worker process beats several (forking)."""


def _summarize_all(missing: list[tuple[str, bytes, str]], jobs: int, timeout: float,
                   failed: dict[str, str], spent: dict[str, float],
                   facts: dict[str, KnownFacts]) -> list[FileSummary]:
    """The summaries, each computed in a worker process under the per-file time budget
    (a 5 MB generated file took about a minute here): a file whose summary crashes or runs
    late gets an empty one and is recorded in ``failed``."""
    from torchfix_codemods.budget import over_time
    from torchfix_codemods.workers import Failure, can_fork, run_isolated

    if not missing:
        return []
    if not can_fork():  # pragma: no cover - Windows
        summaries = []
        for path, data, _ in missing:
            summary, spent[path], known = _summarize_item((path, data))
            if known is not None:  # the analysis, in this process, reads them as a worker would
                facts[path] = known
            summaries.append(summary)
        return summaries
    workers = jobs if len(missing) >= POOL_MIN_FILES else 1
    items = [(path, data) for path, data, _ in missing]
    found: dict[str, FileSummary] = {}
    for (path, _), outcome in run_isolated(items, _summarize_item, workers, timeout):
        if isinstance(outcome, Failure):
            failed[path] = (over_time(timeout, outcome.stalled) if outcome.timed_out
                            else outcome.detail)
            found[path] = FileSummary(parsed=False)
        else:
            found[path], spent[path], known = outcome
            if known is not None:
                facts[path] = known
    return [found[path] for path, _, _ in missing]


def _summarize_item(item: tuple[str, bytes]) -> tuple[FileSummary, float, KnownFacts | None]:
    """The summary, the CPU seconds it took (the file's analysis gets the rest of its budget) and
    the prefilter's facts of the file, read from the same ``ast`` tree."""
    import time

    from torchfix_codemods.isolation import call_deep

    started = time.process_time()
    summary, known = call_deep(lambda: _summarize_with_facts(*item))
    return summary, time.process_time() - started, known


def _summarize_with_facts(path: str, data: bytes) -> tuple[FileSummary, KnownFacts | None]:
    """:func:`summarize_bytes` and the prefilter's facts of the same text from one parse
    (None where the text cannot be parsed: the analysis finds out itself)."""
    from torchfix_codemods.notebooks import NotebookError
    from torchfix_codemods.prefilter import tree_facts
    from torchfix_codemods.source import UndecodableSource, load_source

    try:
        text = load_source(path, data).text
    except (NotebookError, UndecodableSource):
        return FileSummary(parsed=False), None
    parsed = parse_as_analysed(path, text)
    if parsed is None:
        return FileSummary(parsed=False), None
    text, tree = parsed
    try:
        summary = summarize(text, tree)
    except (RecursionError, MemoryError):  # deeper than the summary's walk: no facts from it
        return FileSummary(parsed=False), None
    return summary, (len(text), hash(text), tree_facts(tree))


def parse_as_analysed(path: str, text: str) -> tuple[str, ast.Module] | None:
    """The text the engine analyses for this file and its ``ast`` tree; None when even
    that does not parse.

    A file of torch 0.3 code with ``x.cuda(async=True)`` is a ``SyntaxError`` today, but
    the engine analyses it repaired (``async=`` read as ``non_blocking=``, TFC004), and
    ``fix`` writes the repair. The index reads the same repaired text, so what it knows
    of the file (what its ``torch.save`` calls write, which helpers it defines) is the
    same before and after that fix: otherwise a second ``fix`` would find what the first
    could not (a load in another file given ``weights_only=True`` only once the saving
    file had been repaired), and ``fix`` would not be idempotent."""
    from torchfix_codemods.legacy_syntax import repair

    try:
        return text, ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    repaired = repair(text, path)
    if repaired is None:
        return None
    try:
        return repaired.text, ast.parse(repaired.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def project_of_bytes(files: Mapping[str, bytes]) -> ProjectIndex:
    """The index of these files alone, as a run over exactly them builds it (no cache):
    for tests and for executing fixtures, which analyse units outside a run."""
    return ProjectIndex.build({path: summarize_bytes(path, data) for path, data in files.items()})


def summarize_bytes(path: str, data: bytes) -> FileSummary:
    """The summary of a file's bytes (a notebook's code cells joined); empty when unreadable."""
    from torchfix_codemods.notebooks import NotebookError
    from torchfix_codemods.source import UndecodableSource, load_source

    try:
        text = load_source(path, data).text
    except (NotebookError, UndecodableSource):
        return FileSummary(parsed=False)
    parsed = parse_as_analysed(path, text)
    if parsed is None:
        return FileSummary(parsed=False)
    try:
        return summarize(*parsed)
    except (RecursionError, MemoryError):  # deeper than the summary's walk: no facts from it
        return FileSummary(parsed=False)


def _reads_fact(path: str, settings: Settings, fact: str) -> bool:
    table = entries_by_code()
    codes = settings.options_for(path).codes
    return any(fact in table[code].project_facts for code in codes if code in table)


class SummaryStore:
    """Summaries by content digest: one JSON file read once and written once per run.

    Beside the summaries, the file keeps which digest each path had when it was last
    summarised or looked up. A summary no path has any more (the file was edited since,
    or deleted) is dropped when the file is written, so the store holds about one summary
    per file of the project however often the files change (it grew by every edit: 190 KB
    to 5.8 MB over 50 edited runs)."""

    def __init__(self, settings: Settings) -> None:
        from torchfix_codemods.cache import cache_root, tool_fingerprint

        self.path = cache_root(settings) / f"summaries-{tool_fingerprint()[:16]}.json"
        self._entries: dict[str, dict] | None = None
        self._paths: dict[str, str] = {}
        self._used: set[str] = set()
        self._new = False

    def _load(self) -> dict[str, dict]:
        if self._entries is None:
            try:
                loaded = json.loads(self.path.read_text(encoding="utf-8"))
                entries = loaded.get("entries") if isinstance(loaded, dict) else None
                paths = loaded.get("paths") if isinstance(loaded, dict) else None
                self._entries = entries if isinstance(entries, dict) else {}
                self._paths = paths if isinstance(paths, dict) else {}
                if self._entries:
                    from torchfix_codemods.cache import mark_used

                    mark_used(self.path)
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    def get(self, digest: str, path: str | None = None) -> FileSummary | None:
        raw = self._load().get(digest)
        if raw is None:
            return None
        try:
            summary = FileSummary.from_json(raw)
        except (KeyError, TypeError, ValueError):
            return None
        self._used.add(digest)
        if path is not None:
            self._at(path, digest)
        return summary

    def put(self, digest: str, summary: FileSummary, path: str | None = None) -> None:
        self._load()[digest] = summary.to_json()
        self._used.add(digest)
        if path is not None:
            self._at(path, digest)
        self._new = True

    def _at(self, path: str, digest: str) -> None:
        key = os.path.abspath(path)
        if self._paths.get(key) != digest:
            self._paths[key] = digest
            self._new = True

    def save(self) -> None:
        """Best effort, like the check cache: a read-only tree only means no cache."""
        if not self._new:
            return
        entries = self._load()
        # A path that no longer exists has no summary to keep; a summary no path has is one
        # of a text that was edited away.
        paths = {path: digest for path, digest in self._paths.items() if os.path.exists(path)}
        kept = set(paths.values()) | self._used
        entries = {digest: entry for digest, entry in entries.items() if digest in kept}
        if len(entries) > _MAX_ENTRIES:
            entries = {digest: entries[digest] for digest in self._used}
            paths = {path: digest for path, digest in paths.items() if digest in entries}
        from torchfix_codemods.cache import ignore_for_git, prune
        from torchfix_codemods.writing import replace_file

        directory: Path = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            ignore_for_git(directory.parent)
            replace_file(str(self.path), json.dumps({"paths": paths, "entries": entries})
                         .encode("utf-8"), durable=False)
        except OSError:
            return
        prune(directory.parent, keep={self.path})
