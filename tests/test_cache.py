"""The check cache: same answers as a fresh run, invalidated by content and settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from torchfix_codemods import cache
from torchfix_codemods import runner as runner_module
from torchfix_codemods.cli import app
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import Overrides

runner = CliRunner()
SOURCE = "import torch\nstate = torch.load('m.pt')\n"


def _check(project: Path, *args: str) -> dict:
    result = runner.invoke(app, ["check", "--format", "json", "--config",
                                 str(project / "pyproject.toml"), *args, str(project)])
    return json.loads(result.output)


def test_cached_run_equals_fresh_run_and_follows_edits(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    module = tmp_path / "m.py"
    module.write_text(SOURCE)
    fresh = _check(tmp_path, "--no-cache")
    first = _check(tmp_path)
    assert (tmp_path / ".torchfix_cache").is_dir()
    second = _check(tmp_path)
    assert fresh["findings"] == first["findings"] == second["findings"]
    module.write_text(SOURCE.replace("'m.pt')", "'m.pt', weights_only=True)"))
    edited = _check(tmp_path)
    assert [f["code"] for f in edited["findings"]] == ["TFC002"]
    narrowed = _check(tmp_path, "--select", "TFC001")
    assert narrowed["findings"] == []


def test_cache_directory_ignores_itself_for_git(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    _check(tmp_path)
    assert (tmp_path / ".torchfix_cache" / ".gitignore").read_text().strip().endswith("*")


def test_a_hit_is_reported_under_the_path_given_now(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)

    def paths_reported(argument: str) -> set[str]:
        result = runner.invoke(app, ["check", "--format", "json", argument])
        return {finding["path"] for finding in json.loads(result.output)["findings"]}

    assert paths_reported("pkg") == {os.path.join("pkg", "m.py")}
    assert paths_reported(str(tmp_path / "pkg")) == {str(tmp_path / "pkg" / "m.py")}
    assert paths_reported("pkg") == {os.path.join("pkg", "m.py")}


def _result_indexes(project: Path) -> list[Path]:
    return list((project / ".torchfix_cache").rglob("results-*.json"))


def test_one_index_file_per_options_and_deleted_files_leave_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(SOURCE)
    _check(tmp_path)
    indexes = _result_indexes(tmp_path)
    assert len(indexes) == 1
    assert len(json.loads(indexes[0].read_text())["files"]) == 3
    (tmp_path / "b.py").unlink()
    (tmp_path / "c.py").write_text(SOURCE + "x = 1\n")  # a miss: the index is rewritten
    _check(tmp_path)
    assert sorted(Path(p).name for p in json.loads(indexes[0].read_text())["files"]) == [
        "a.py", "c.py"]
    _check(tmp_path, "--select", "TFC001")
    assert len(_result_indexes(tmp_path)) == 2


def _configuration(project: Path, *select: str) -> Configuration:
    return Configuration(Overrides(select=select or None), cwd=str(project))


def test_a_change_in_the_tool_invalidates_every_entry(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    configuration = _configuration(tmp_path, "TFC001")
    run_paths([str(tmp_path / "m.py")], configuration, Mode.CHECK)
    analysed: list[str] = []
    real = runner_module._compute  # the files sent to the workers, from this process
    monkeypatch.setattr(runner_module, "_compute", lambda tasks, *rest: analysed.extend(
        task.path for task in tasks) or real(tasks, *rest))
    run_paths([str(tmp_path / "m.py")], configuration, Mode.CHECK)
    assert analysed == []
    monkeypatch.setattr(cache, "tool_fingerprint", lambda: "a rule changed")
    again = run_paths([str(tmp_path / "m.py")], configuration, Mode.CHECK)
    assert analysed == [str(tmp_path / "m.py")]
    assert [f.code for f in again[0].findings] == ["TFC001"]


def test_a_corrupt_index_means_misses_not_errors(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    fresh = _check(tmp_path, "--no-cache")
    _check(tmp_path)
    for index in (tmp_path / ".torchfix_cache").rglob("*.json"):
        index.write_text('{"tool": "')
    assert _check(tmp_path)["findings"] == fresh["findings"]
    assert _check(tmp_path)["findings"] == fresh["findings"]


def test_each_file_is_read_once_on_a_miss(tmp_path: Path, monkeypatch) -> None:
    """One read and one hash per file: the project index and the engine get the bytes the
    runner read (issue 14 item 5)."""
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    source = tmp_path / "m.py"
    source.write_text(SOURCE)
    configuration = _configuration(tmp_path, "TFC001", "TFC002", "TFC003")
    opened: list[str] = []
    hashed: list[bytes] = []
    real_open = open
    real_digest = cache.content_digest

    def counting_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(source):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    real_os_open = os.open

    def counting_os_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(source):
            opened.append(str(file))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    monkeypatch.setattr("os.open", counting_os_open)
    monkeypatch.setattr(cache, "content_digest", lambda data: hashed.append(data) or real_digest(data))
    results = run_paths([str(source)], configuration, Mode.CHECK)
    assert sorted(f.code for f in results[0].findings) == ["TFC001", "TFC002"]
    assert opened == [str(source)]
    assert hashed == [SOURCE.encode()]


# --- The cache does not grow without bound (issue 28.20) ---

DAY = 24 * 60 * 60


def _age(path: Path, days: float) -> None:
    import time

    when = time.time() - days * DAY
    os.utime(path, (when, when))


def test_a_run_prunes_indexes_no_run_used_for_a_month(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    _check(tmp_path)
    current = _result_indexes(tmp_path)
    assert len(current) == 1
    version = current[0].parent
    # Every other rule selection leaves an index of its own; an old tool version a folder.
    _check(tmp_path, "--select", "TFC001")
    other = next(p for p in _result_indexes(tmp_path) if p != current[0])
    _age(other, cache.MAX_AGE_DAYS + 1)
    recent = version / "results-recently-used.json"
    recent.write_text("{}")
    _age(recent, cache.MAX_AGE_DAYS - 1)
    old_version = version.parent / "0.0.1"
    old_version.mkdir()
    (old_version / "results-old.json").write_text("{}")
    _age(old_version / "results-old.json", 90)
    killed = version / ".torchfix-killed.tmp"
    killed.write_text("")
    _age(killed, 1)
    (tmp_path / "m.py").write_text(SOURCE + "x = 1\n")  # a change, so the run writes
    _check(tmp_path)
    assert current[0].exists() and recent.exists()
    assert not other.exists() and not killed.exists()
    assert not old_version.exists()


def test_prune_keeps_the_cache_under_its_size_least_recently_used_first(tmp_path: Path) -> None:
    version = tmp_path / ".torchfix_cache" / "1.0"
    version.mkdir(parents=True)
    paths = []
    for days, name in ((5, "oldest"), (3, "older"), (1, "newer"), (10, "this-run")):
        path = version / f"results-{name}.json"
        path.write_bytes(b"x" * 1000)
        _age(path, days)
        paths.append(path)
    oldest, older, newer, this_run = paths
    removed = cache.prune(tmp_path / ".torchfix_cache", keep={this_run}, max_bytes=1500)
    assert removed == [oldest, older]
    assert newer.exists() and this_run.exists()


def _cache_bytes(project: Path) -> int:
    return sum(p.stat().st_size for p in (project / ".torchfix_cache").rglob("*") if p.is_file())


def test_edited_runs_do_not_grow_the_cache(tmp_path: Path) -> None:
    # Before: every edit added a project summary that no run would read again (190 KB to
    # 5.8 MB over 50 edited runs); the index in use is never pruned, so nothing bounded it.
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    names = [f"m{number}.py" for number in range(3)]
    for name in names:
        (tmp_path / name).write_text(f"# {name}\n{SOURCE}model = torch.nn.DataParallel(model)\n")
    _check(tmp_path)
    [summaries] = (tmp_path / ".torchfix_cache").rglob("summaries-*.json")
    first = _cache_bytes(tmp_path)
    for run in range(20):
        for name in names:
            with open(tmp_path / name, "a") as handle:
                handle.write(f"x_{run} = {run}\n")
        _check(tmp_path)
    stored = json.loads(summaries.read_text())
    assert len(stored["entries"]) == len(names)
    assert sorted(stored["paths"]) == [str(tmp_path / name) for name in names]
    assert _cache_bytes(tmp_path) < 1.5 * first
    # A deleted file's summary goes at the next write.
    (tmp_path / names[0]).unlink()
    (tmp_path / names[1]).write_text(SOURCE + "y = 1\n")
    _check(tmp_path)
    assert len(json.loads(summaries.read_text())["entries"]) == 2


def test_a_read_marks_an_index_as_used(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    (tmp_path / "m.py").write_text(SOURCE)
    _check(tmp_path)
    (index,) = _result_indexes(tmp_path)
    _age(index, cache.MAX_AGE_DAYS + 5)
    _check(tmp_path)  # answered from the cache: nothing written, the index read
    import time

    assert time.time() - index.stat().st_mtime < DAY
