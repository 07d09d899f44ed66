"""One file cannot cost the run: crashes, stalls, deep code, signals and closed pipes.

The pathological inputs are the ones the hostile sweep found (each measured in
the commit that added this file): 2,000 nested lists killed the process with a
segmentation fault; a 1,000-term chain lost that file's findings to a
RecursionError; a 100,000-term chain ran for minutes. Real processes and real
signals throughout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from torchfix_codemods import runner, workers
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import Overrides

ROOT = Path(__file__).resolve().parent.parent
HEAD = "import torch\ny = torch.load('a')\n"
OTHER = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
FIXED_OTHER = 'import torch\n\nwith torch.amp.autocast("cuda"):\n    pass\n'


def _cli(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **kwargs.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "torchfix_codemods", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=120, **kwargs)


def _tree(tmp_path: Path, bad: str, timeout: float | None = None, extra: str = "") -> Path:
    (tmp_path / "bad.py").write_text(bad)
    (tmp_path / "other.py").write_text(OTHER)
    table = "[tool.torchfix-codemods]\n"
    if timeout is not None:
        table += f"file-timeout = {timeout}\n"
    table += extra
    (tmp_path / "pyproject.toml").write_text(table)
    return tmp_path


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["fix"]])
def test_two_thousand_nested_lists_are_one_finding_not_a_segfault(tmp_path: Path,
                                                                  command: list[str]) -> None:
    # Before: exit -11 (SIGSEGV in LibCST's native parser), nothing reported or fixed.
    _tree(tmp_path, HEAD + "x = " + "[" * 2000 + "]" * 2000 + "\n")
    started = time.monotonic()
    done = _cli(*command, ".", cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    assert "bad.py:3:205: TFC000 file cannot be parsed: too many nested parentheses" in done.stdout
    if command == ["fix"]:
        assert (tmp_path / "other.py").read_text() == FIXED_OTHER
    else:
        assert "other.py:3:6: TFC401" in done.stdout


def test_a_thousand_term_chain_keeps_the_files_findings(tmp_path: Path) -> None:
    # Before: "internal error: RecursionError" and no finding of the file.
    _tree(tmp_path, HEAD + "x = " + " + ".join(["1"] * 1000) + "\n")
    done = _cli("check", "--no-cache", "--select", "TFC001", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "bad.py:2:5: TFC001" in done.stdout
    assert "error" not in done.stdout + done.stderr


def test_a_file_past_the_time_budget_is_left_untouched_and_the_rest_is_fixed(
        tmp_path: Path) -> None:
    # A 100,000-term chain: LibCST takes minutes (about 2 ms a term, measured). The nesting
    # budget would skip it at once (tests/test_budget.py): lifted, the time budget acts.
    _tree(tmp_path, HEAD + "x = " + " + ".join(["1"] * 100_000) + "\n", timeout=5,
          extra="max-nesting-depth = 1000000\n")
    before = (tmp_path / "bad.py").read_bytes()
    started = time.monotonic()
    done = _cli("fix", ".", cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(
        "bad.py:1:1: TFC000 too large or too deep to analyse: skipped "
        "(it took longer than file-timeout = 5 s of CPU time); file left untouched\n"), \
        done.stdout
    assert (tmp_path / "bad.py").read_bytes() == before
    assert (tmp_path / "other.py").read_text() == FIXED_OTHER


def _data_rows(size: int) -> str:
    """A generated data module of about ``size`` bytes (a table of tuples, one a line)."""
    rows, length, number = ["DATA = [\n"], 0, 0
    while length < size:
        row = f"    ({number}, {number * 0.37:.6f}, 's{number:08x}'),\n"
        rows.append(row)
        length += len(row)
        number += 1
    return "".join(rows) + "]\n"


def _one_line_list(size: int) -> str:
    return "x = [" + ", ".join(str(n) for n in range(size // 7)) + "]\n"


def _one_line_chain(size: int) -> str:
    return "x = " + " + ".join(f"a{n % 1000}" for n in range(size // 6)) + "\n"


@pytest.mark.parametrize(("extra", "skipped"), [
    pytest.param("", "too large to analyse: skipped (", id="size-budget"),
    pytest.param("max-file-size = 100000000\n", "too large or too deep to analyse: skipped (",
                 id="time-budget"),
])
@pytest.mark.parametrize(("shape", "command"), [
    pytest.param(_data_rows, ["check", "--no-cache"], id="generated-data-rows-check"),
    pytest.param(_one_line_list, ["fix"], id="one-line-list-fix"),
    pytest.param(_one_line_chain, ["fix"], id="one-line-chain-fix"),
])
def test_a_megabyte_of_generated_code_is_one_finding_and_the_rest_is_checked(
        tmp_path: Path, shape, command: list[str], extra: str, skipped: str) -> None:
    """The sweep's large inputs at 1 MB (5 MB and 20 MB generated files stalled `check` for
    more than 10 minutes, a 1 MB one-line expression `fix` for more than 5): whichever of the
    project summary or the analysis runs out of budget (or of stack), the file is one TFC000
    and the run goes on. The full sizes, measured with the default budget, are in the note
    of the commit that added this test. With the default ``max-file-size`` (1 MiB) the file
    is skipped before anything parses it; with the size budget lifted, the time budget (or
    the nesting budget, for the chain) ends it."""
    _tree(tmp_path, HEAD + shape(1 << 20), timeout=2, extra=extra)
    before = (tmp_path / "bad.py").read_bytes()
    started = time.monotonic()
    done = _cli(*command, ".", cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    accepted = [f"bad.py:1:1: TFC000 {skipped}"]
    if extra and shape is _one_line_chain:  # the nesting budget, unless time ran out first
        accepted.append("bad.py:1:1: TFC000 too deep to analyse: skipped (")
    assert done.stdout.startswith(tuple(accepted)), done.stdout
    assert "; file left untouched\n" in done.stdout
    assert "Traceback" not in done.stderr
    assert (tmp_path / "bad.py").read_bytes() == before
    if command == ["fix"]:
        assert (tmp_path / "other.py").read_text() == FIXED_OTHER
    else:
        assert "other.py:3:6: TFC401" in done.stdout


def _files(tmp_path: Path, count: int, size: int = 0) -> list[str]:
    paths = []
    for number in range(count):
        path = tmp_path / f"m{number:02}.py"
        path.write_text(OTHER + "#" * size + "\n")
        paths.append(str(path))
    return paths


def _run(paths: list[str], tmp_path: Path, mode: Mode = Mode.CHECK, **overrides):
    configuration = Configuration(Overrides(cache=False, **overrides), cwd=str(tmp_path))
    return run_paths(paths, configuration, mode, show_progress=False)


@pytest.mark.parametrize("count", [3, 12])  # one worker; a pool of them
def test_a_worker_that_dies_costs_its_file_alone(tmp_path: Path, monkeypatch,
                                                 count: int) -> None:
    paths = _files(tmp_path, count, size=8000)
    crash = paths[1]
    real = runner.compute

    def compute(path, *rest):
        if path == crash:
            # To this thread, as a real fault is: `os.kill` of the process may hand the signal
            # to the worker's main thread while this one goes on and sends a normal result.
            signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)
        return real(path, *rest)

    monkeypatch.setattr(runner, "compute", compute)
    results = _run(paths, tmp_path, Mode.FIX, jobs=2)
    assert [f.message for f in results[1].findings] == [
        "too large or too deep to analyse: skipped (the analysis crashed (SIGSEGV)); "
        "file left untouched"]
    assert Path(crash).read_text().startswith(OTHER)
    for path, result in zip(paths, results, strict=True):
        if path != crash:
            assert result.error is None and Path(path).read_text().startswith(FIXED_OTHER)


def test_the_time_budget_is_per_file(tmp_path: Path, monkeypatch) -> None:
    paths = _files(tmp_path, 3)
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\nfile-timeout = 1\n")
    real = runner.compute

    def compute(path, *rest):
        if path == paths[0]:
            time.sleep(60)
        return real(path, *rest)

    monkeypatch.setattr(runner, "compute", compute)
    started = time.monotonic()
    results = _run(paths, tmp_path)
    # A worker that spends no CPU yet does not finish is stopped at the wall-clock backstop.
    assert time.monotonic() - started < 20
    assert results[0].findings[0].message == (
        "too large or too deep to analyse: skipped (it did not finish in 10 times "
        "file-timeout = 1 s of wall-clock time); file left untouched")
    assert [f.code for f in results[1].findings] == [f.code for f in results[2].findings]
    assert results[1].findings


def test_the_time_budget_is_cpu_time(tmp_path: Path, monkeypatch) -> None:
    """A file that spends its budget in CPU is stopped there; one that only waits (as a file
    waits for a CPU on a loaded machine) for three times its budget is analysed as usual."""
    paths = _files(tmp_path, 3)
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\nfile-timeout = 1\n")
    real = runner.compute

    def compute(path, *rest):
        if path == paths[0]:
            while True:  # CPU, until the kernel's limit ends the worker
                pass
        if path == paths[1]:
            time.sleep(3)
        return real(path, *rest)

    monkeypatch.setattr(runner, "compute", compute)
    results = _run(paths, tmp_path)
    assert [f.message for f in results[0].findings] == [
        "too large or too deep to analyse: skipped (it took longer than file-timeout = 1 s "
        "of CPU time); file left untouched"]
    assert results[1].findings and "TFC000" not in [f.code for f in results[1].findings]
    assert [f.code for f in results[1].findings] == [f.code for f in results[2].findings]


def test_a_file_that_fails_without_tfc000_selected_is_an_error(tmp_path: Path,
                                                               monkeypatch) -> None:
    paths = _files(tmp_path, 2)
    monkeypatch.setattr(runner, "compute", lambda *args: os._exit(3))
    # Every selection keeps TFC000 unless it is ignored.
    results = _run(paths, tmp_path, select=("TFC1",), ignore=("TFC000",))
    assert results[0].error == ("too large or too deep to analyse: skipped (the analysis "
                                "process ended (exit code 3)); file left untouched")


def test_no_more_workers_than_files_or_cpus(tmp_path: Path, monkeypatch) -> None:
    # Before: `--jobs 1000` forked 1,000 processes for 40 files.
    paths = _files(tmp_path, 40, size=3000)
    live: list[int] = [0, 0]  # now, most at once
    start, stop = workers._start, workers._stop

    def counted_start(*args):
        live[0] += 1
        live[1] = max(live)
        return start(*args)

    def counted_stop(worker):
        live[0] -= 1
        return stop(worker)

    monkeypatch.setattr(workers, "_start", counted_start)
    monkeypatch.setattr(workers, "_stop", counted_stop)
    results = _run(paths, tmp_path, jobs=1000)
    assert all(result.findings for result in results)
    assert live[0] == 0
    assert 1 <= live[1] <= min(40, workers.cpu_count())


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(child) for child in text)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _slow_run(tmp_path: Path, *command: str) -> tuple[subprocess.Popen[str], set[int]]:
    """A run busy on a file that takes minutes, with its workers forked."""
    _tree(tmp_path, HEAD + "x = " + " + ".join(["1"] * 100_000) + "\n", timeout=120)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchfix_codemods", *command, "."], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = _children(process.pid)
        if children:
            time.sleep(1)  # the worker has its task
            return process, children
        time.sleep(0.1)
    process.kill()
    raise AssertionError("no worker started")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_do_not_outlive_a_killed_run(tmp_path: Path) -> None:
    process, children = _slow_run(tmp_path, "check", "--no-cache")
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while any(_alive(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(child) for child in children)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("command", [("check", "--no-cache"), ("fix",)])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path, command: tuple[str, ...]) -> None:
    process, children = _slow_run(tmp_path, *command)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err == "torchfix-codemods: interrupted\n"
    assert "Traceback" not in out
    assert not any(_alive(child) for child in children)


def test_a_closed_pipe_ends_the_run_quietly(tmp_path: Path) -> None:
    # Far more output than a pipe holds (64 KiB), so the run is still writing at the close.
    many = "import torch\n\n" + "with torch.cuda.amp.autocast():\n    pass\n" * 50
    for number in range(100):
        (tmp_path / f"m{number:03}.py").write_text(many)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchfix_codemods", "check", "--no-cache", "."], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline()  # `| head -1`
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=120)
    assert err == b""
    assert process.returncode == 141


@pytest.mark.parametrize(("command", "colour"), [
    (["fix", "--diff"], ""),
    (["fix", "--diff"], "1"),  # rich writes (FORCE_COLOR): rich itself exited 1
    (["check", "-j2", "--no-cache", "--show-fixes"], ""),  # `-j2`: typer parses it
])
def test_a_closed_pipe_ends_a_typer_command_quietly_with_141(tmp_path: Path, command: list[str],
                                                              colour: str) -> None:
    # Before: click (under typer) ended these with exit 1, the code of "findings remain".
    block = "with torch.cuda.amp.autocast():  # " + "x" * 4000 + "\n    pass\n"
    for number in range(10):  # about 800 KB of diff, far more than a pipe holds
        (tmp_path / f"m{number}.py").write_text("import torch\n\n" + block * 10)
    if command[0] == "check":  # check's lines are short: many more files
        for number in range(10, 400):
            (tmp_path / f"m{number}.py").write_text("import torch\n\n" + block * 2)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchfix_codemods", *command, "."], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FORCE_COLOR": colour})
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline()  # `| head -1`
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=300)
    assert err == b""
    assert process.returncode == 141


def test_an_ascii_only_output_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    done = _cli("explain", "TFC001", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    # Piped, `explain` prints its Markdown as written: the "·" of the fix line is escaped.
    assert "\\xb7" in done.stdout and done.stderr == ""


@pytest.mark.parametrize(("command", "named"), [
    (["check", "--no-cache"], "caf\\xe9.py:4:6: TFC401"),
    (["fix", "--diff"], "--- a/caf\\xe9.py"),
    (["check", "--no-cache", "--format", "sarif"], '"uri": "caf%C3%A9.py"'),
])
def test_findings_on_an_ascii_only_output_get_escapes_not_a_traceback(
        tmp_path: Path, command: list[str], named: str) -> None:
    # Before: UnicodeEncodeError traceback as soon as a path or a line was not ASCII.
    (tmp_path / "café.py").write_text("# réseau\n" + OTHER, encoding="utf-8")
    done = _cli(*command, ".", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert named in done.stdout, done.stdout


def test_a_pyproject_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.torchfix-codemods]\n# caf\xe9\n')
    (tmp_path / "a.py").write_text(OTHER)
    done = _cli("check", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"torchfix-codemods: error: {tmp_path / 'pyproject.toml'}: invalid "
                           "TOML: not UTF-8 text (b'\\xe9' at byte offset 30)\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_address_space_is_capped() -> None:
    code = ("from torchfix_codemods.workers import _limit_memory\n"
            "_limit_memory(512 << 20)\n"
            "try:\n    bytearray(1 << 30)\nexcept MemoryError:\n    print('capped')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.stdout == "capped\n", done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_file_that_needs_too_much_memory_costs_that_file_alone(tmp_path: Path,
                                                                 monkeypatch) -> None:
    # Before: about 1.2 GB per MB of source (a 20 MB file peaked at 15.8 GB).
    from torchfix_codemods import engine

    paths = _files(tmp_path, 3)
    real = engine.process

    def process(unit, *args, **kwargs):
        if unit.path == paths[0]:
            bytearray(2 << 30)
        return real(unit, *args, **kwargs)

    monkeypatch.setattr(engine, "process", process)
    monkeypatch.setattr(workers, "memory_budget", lambda count: 1 << 30)
    results = _run(paths, tmp_path)
    assert [f.message for f in results[0].findings] == [
        "too large or too deep to analyse: skipped (the analysis ran out of memory); "
        "file left untouched"]
    assert [f.code for f in results[1].findings] == ["TFC401"], results[1].findings
