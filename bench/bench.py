"""Time torchfix-codemods against TorchFix on the same files, in one run.

Both tools run as subprocesses over the same directory, so start-up, import
and process-pool costs are part of what is measured, as a user would see them.
For each run we record wall time and CPU time (user + system of the process
and every child it waited for, from ``getrusage(RUSAGE_CHILDREN)`` deltas),
and print files per second and TorchFix/ours ratios. Timings are reported,
never asserted: they depend on the machine.

Configurations, each repeated ``--repeat`` times (best wall time kept):

* ours:            ``python -m torchfix_codemods check --format json DIR``
* ours --jobs 1:   the same, one process
* torchfix:        ``torchfix --select ALL DIR`` (all of its rules)
* torchfix -j 1:   the same, one process

A linter's exit status 1 means "findings", which is expected here; only other
statuses count as failures. TorchFix is found via ``--torchfix CMD``, else
``torchfix`` on PATH, else an importable ``torchfix`` package; without it only
our figures are printed.

Usage::

    python bench/bench.py --files 500                      # temp corpus, then delete it
    python bench/bench.py /tmp/tfc-corpus --torchfix /work/tfvenv/bin/torchfix
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corpus import make_corpus  # noqa: E402  (sibling script, not a package)

OK_EXIT_CODES = (0, 1)
TORCHFIX_LINE = re.compile(r"^\S.*:\d+:\d+: TOR\d{3}\b", re.MULTILINE)
TORCHFIX_CHECKED = re.compile(r"Finished checking (\d+) files")


@dataclass
class Run:
    """One timed invocation of a tool."""

    wall_s: float
    cpu_s: float
    exit_code: int
    findings: int | None
    files_seen: int | None
    stderr_tail: str


@dataclass
class Result:
    """The best of ``--repeat`` runs of one configuration."""

    label: str
    command: list[str]
    runs: list[Run] = field(default_factory=list)

    @property
    def best(self) -> Run:
        return min(self.runs, key=lambda r: r.wall_s)

    @property
    def ok(self) -> bool:
        return all(r.exit_code in OK_EXIT_CODES for r in self.runs)


def children_cpu_seconds() -> float:
    """User + system CPU of all waited-for descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(cmd: list[str], timeout: float, env: dict[str, str],
              cwd: Path) -> tuple[Run, str]:
    """Run ``cmd`` to completion and measure it; returns the run and its stdout.

    The command gets its own session so that on timeout its whole process
    group (TorchFix's pool workers, ours) is killed, not only the parent.
    It runs in a neutral ``cwd``: ``python -m`` puts the working directory
    first on sys.path, and a checkout there would shadow ``--snapshot``;
    a project's pyproject.toml there could also change our settings.
    """
    cpu0 = children_cpu_seconds()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
        start_new_session=True, text=True, errors="replace",
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[bench] killed after {timeout:.0f}s"
        proc.returncode = -signal.SIGKILL
    wall = time.perf_counter() - t0
    cpu = children_cpu_seconds() - cpu0
    run = Run(wall_s=wall, cpu_s=cpu, exit_code=proc.returncode, findings=None,
              files_seen=None, stderr_tail=err[-2000:])
    return run, out


def parse_ours(run: Run, stdout: str) -> None:
    """Fill findings and files from our ``--format json`` report."""
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        return
    if isinstance(report, dict):
        findings = report.get("findings")
        run.findings = len(findings) if isinstance(findings, list) else None
        summary = report.get("summary")
        if isinstance(summary, dict) and isinstance(summary.get("files"), int):
            run.files_seen = summary["files"]
    elif isinstance(report, list):
        run.findings = len(report)


def parse_torchfix(run: Run, stdout: str) -> None:
    """Count TorchFix's ``path:line:col: TORnnn`` lines and its checked-files note."""
    run.findings = len(TORCHFIX_LINE.findall(stdout))
    m = TORCHFIX_CHECKED.search(run.stderr_tail)
    if m:
        run.files_seen = int(m.group(1))


def find_torchfix(explicit: str | None) -> list[str] | None:
    """The TorchFix command: ``--torchfix``, else PATH, else ``python -m torchfix``."""
    if explicit:
        cmd = shlex.split(explicit)
        if not (shutil.which(cmd[0]) or Path(cmd[0]).is_file()):
            raise SystemExit(f"--torchfix: {cmd[0]} not found")
        return cmd
    on_path = shutil.which("torchfix")
    if on_path:
        return [on_path]
    if importlib.util.find_spec("torchfix") is not None:
        return [sys.executable, "-m", "torchfix"]
    return None


def tool_version(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    try:
        proc = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60,
                              env=env, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (proc.stdout or proc.stderr).strip().splitlines()[-1] if proc.returncode == 0 else "?"


def ours_extra_flags(ours: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """Flags that make our runs cold, when this version of the CLI has them.

    Timing a warm cache against TorchFix (which has none) would not be a
    comparison; a cache-off flag is used if ``check --help`` lists one.
    """
    try:
        help_text = subprocess.run([*ours, "check", "--help"], capture_output=True,
                                   text=True, timeout=60, env=env, cwd=cwd).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--no-cache"] if "--no-cache" in help_text else []


def load_average() -> str:
    """1-minute load average: other work on the machine skews every figure."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


def count_py_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*.py") if p.is_file())


def snapshot_package(dest: Path) -> Path:
    """Copy the importable torchfix_codemods package into ``dest``; return the copy's root.

    With ``--snapshot``, our runs import this frozen copy (via PYTHONPATH), so
    edits landing in the working tree during a long benchmark cannot make the
    parallel and serial runs measure different code.
    """
    spec = importlib.util.find_spec("torchfix_codemods")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("--snapshot: torchfix_codemods is not importable from this Python")
    source = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(source, dest / "torchfix_codemods",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def bench(args: argparse.Namespace, corpus: Path) -> list[Result]:
    """Run every configuration ``args.repeat`` times over ``corpus``."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="tfc-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        ours = shlex.split(args.ours) if args.ours else [sys.executable, "-m", "torchfix_codemods"]
        ours_env = dict(os.environ, NO_COLOR="1")
        if args.snapshot:
            frozen = snapshot_package(scratch / "snapshot")
            ours_env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(frozen), os.environ.get("PYTHONPATH", "")) if p)
        torchfix = None if args.no_torchfix else find_torchfix(args.torchfix)
        tf_env = dict(os.environ, NO_COLOR="1")

        ours_cmd = [*ours, "check", "--format", "json", *ours_extra_flags(ours, ours_env, scratch),
                    *shlex.split(args.ours_args)]
        configs: list[tuple[str, list[str], dict[str, str]]] = [
            ("ours", [*ours_cmd, str(corpus)], ours_env),
        ]
        if not args.no_serial:
            configs.append(("ours --jobs 1", [*ours_cmd, "--jobs", "1", str(corpus)], ours_env))
        if torchfix:
            tf_cmd = [*torchfix, "--select", args.torchfix_select]
            configs.append(("torchfix", [*tf_cmd, str(corpus)], tf_env))
            if not args.no_serial:
                configs.append(("torchfix -j 1", [*tf_cmd, "--jobs", "1", str(corpus)], tf_env))

        print(f"ours:     {' '.join(ours)} ({tool_version(ours, ours_env, scratch)})"
              + (f", frozen copy at {scratch / 'snapshot'}" if args.snapshot else ""))
        if torchfix:
            print(f"torchfix: {' '.join(torchfix)} "
                  f"(TorchFix {tool_version(torchfix, tf_env, scratch)})")
        else:
            print("torchfix: not found (pass --torchfix CMD); timing ours only")
        print(f"machine:  {platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}, load average {load_average()} at start")

        if not args.no_warmup:
            warm_up(configs, corpus, scratch, args.timeout)
        for label, cmd, base_env in configs:
            result = Result(label=label, command=cmd)
            for rep in range(args.repeat):
                # a fresh cache home per run: a cache under XDG_CACHE_HOME stays cold
                env = dict(base_env, XDG_CACHE_HOME=str(scratch / "cache" / f"{label}-{rep}"))
                print(f"  running {label} ({rep + 1}/{args.repeat}) ...", file=sys.stderr,
                      flush=True)
                run, stdout = timed_run(cmd, args.timeout, env, scratch)
                (parse_ours if label.startswith("ours") else parse_torchfix)(run, stdout)
                result.runs.append(run)
                if run.exit_code not in OK_EXIT_CODES:
                    print(f"  {label} exited {run.exit_code}:\n{run.stderr_tail}", file=sys.stderr)
            results.append(result)
    return results


def warm_up(configs: list[tuple[str, list[str], dict[str, str]]], corpus: Path, scratch: Path,
            timeout: float) -> None:
    """Run each tool once, untimed, on one file of the corpus.

    The first run after an install compiles .pyc files and reads the
    libraries from disk; without this, whichever tool runs first pays for it.
    """
    sample = next(iter(sorted(corpus.rglob("*.py"))))
    seen: set[str] = set()
    for label, cmd, base_env in configs:
        tool = label.split()[0]
        if tool in seen:
            continue
        seen.add(tool)
        print(f"  warming up {tool} ...", file=sys.stderr, flush=True)
        env = dict(base_env, XDG_CACHE_HOME=str(scratch / "cache" / f"warmup-{tool}"))
        timed_run([*cmd[:-1], str(sample)], timeout, env, scratch)


def _fmt(value: int | None) -> str:
    return "-" if value is None else str(value)


def report(results: list[Result], files: int, corpus: Path) -> None:
    """Print the table and the TorchFix/ours ratios."""
    print(f"\ncorpus: {corpus} ({files} .py files); load average {load_average()} at end")
    header = (f"{'tool':<16}{'wall s':>9}{'CPU s':>9}{'files/s':>10}{'CPU ms/file':>13}"
              f"{'exit':>6}{'findings':>10}{'files seen':>12}")
    print(header)
    print("-" * len(header))
    for r in results:
        b = r.best
        print(f"{r.label:<16}{b.wall_s:>9.2f}{b.cpu_s:>9.2f}{files / b.wall_s:>10.1f}"
              f"{1000 * b.cpu_s / files:>13.1f}{b.exit_code:>6}{_fmt(b.findings):>10}"
              f"{_fmt(b.files_seen):>12}")
    by_label = {r.label: r.best for r in results}
    pairs = [("ours", "torchfix"), ("ours --jobs 1", "torchfix -j 1")]
    lines = []
    for ours, theirs in pairs:
        if ours in by_label and theirs in by_label:
            o, t = by_label[ours], by_label[theirs]
            lines.append(f"  {theirs} / {ours}: wall {t.wall_s / o.wall_s:.1f}x, "
                         f"CPU {t.cpu_s / max(o.cpu_s, 1e-9):.1f}x")
    if lines:
        print("\nratios (TorchFix time / ours; higher means ours is faster):")
        print("\n".join(lines))
    for tool in ("ours", "torchfix"):
        counts = {r.label: run.findings for r in results if r.label.split()[0] == tool
                  for run in r.runs}
        if len(set(counts.values())) > 1:
            hint = ("did the code change during the run (see --snapshot)?" if tool == "ours"
                    else "its parallel workers print concurrently, so a line can be garbled")
            print(f"\nwarning: {tool} runs disagree on the number of findings {counts}; {hint}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", type=Path,
                        help="directory to lint; default: a temporary corpus of --files files")
    parser.add_argument("--files", type=int, default=500,
                        help="size of the generated corpus when DIR is not given (default 500)")
    parser.add_argument("--examples-share", type=float, default=0.5,
                        help="fraction of generated files copied from examples/ (default 0.5)")
    parser.add_argument("--keep", action="store_true", help="keep the generated corpus")
    parser.add_argument("--torchfix", metavar="CMD",
                        help="TorchFix command, e.g. /work/tfvenv/bin/torchfix")
    parser.add_argument("--no-torchfix", action="store_true", help="time ours only")
    parser.add_argument("--torchfix-select", default="ALL",
                        help="TorchFix --select value (default ALL: every rule it has)")
    parser.add_argument("--ours", metavar="CMD",
                        help="our command (default: this Python -m torchfix_codemods)")
    parser.add_argument("--snapshot", action="store_true",
                        help="run ours from a frozen copy of the package (a tree being edited "
                             "cannot change mid-benchmark)")
    parser.add_argument("--ours-args", default="", help="extra arguments for our check")
    parser.add_argument("--no-serial", action="store_true",
                        help="skip the single-process (--jobs 1) runs")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed one-file run of each tool")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (best kept)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    generated: Path | None = None
    if args.dir is None:
        generated = Path(tempfile.mkdtemp(prefix="tfc-corpus-"))
        corpus = generated / "corpus"
        make_corpus(corpus, args.files, examples_share=args.examples_share)
    else:
        corpus = args.dir.resolve()
        if not corpus.is_dir():
            parser.error(f"{corpus} is not a directory")
    try:
        files = count_py_files(corpus)
        if files == 0:
            parser.error(f"no .py files under {corpus}")
        results = bench(args, corpus)
        report(results, files, corpus)
        if args.json:
            args.json.write_text(json.dumps({
                "corpus": str(corpus), "files": files, "cpus": os.cpu_count(),
                "results": [{"label": r.label, "command": r.command,
                             "runs": [asdict(run) for run in r.runs]} for r in results],
            }, indent=2))
    finally:
        if generated is not None:
            if args.keep:
                print(f"corpus kept at {corpus}", file=sys.stderr)
            else:
                shutil.rmtree(generated, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 2


if __name__ == "__main__":
    sys.exit(main())
