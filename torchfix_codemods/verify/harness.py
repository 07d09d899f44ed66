"""Verify one executable fixture: run input and fix in fresh processes, judge by contract.

The order is fixed: ``prepare`` (if any) in its own process and directory;
its files are copied into the input's and the fix's own working directories;
then input and fix run concurrently, each in a process of its own (launch.py) with the same
seeds. The contract decides what their results must show:

* ``same``: both return, and the results are bitwise equal (compare.py);
* ``fixes-crash``: the input raises EXPECTED_ERROR, the fix returns (and
  equals ``reference`` when the fixture has one);
* ``intended``: the fix equals ``reference`` (computed in the fix's process),
  and the input does not (otherwise the fixture shows no intended change).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchfix_codemods.verify.compare import compare
from torchfix_codemods.verify.fixtures import (
    Fixture,
    FixtureError,
    ProjectFixture,
    is_project_dir,
    load_fixture,
    load_project,
)
from torchfix_codemods.verify.runner import DEFAULT_TIMEOUT, CallResult, ChildResult, run_child
from torchfix_codemods.verify.spec import ExecSpec, read_spec

if TYPE_CHECKING:
    from torchfix_codemods.findings import FileResult
    from torchfix_codemods.settings import Settings


@dataclass(frozen=True)
class VerifyOutcome:
    """The verdict on one case. ``detail`` says why it failed (or what passed)."""

    path: Path
    ok: bool
    contract: str | None = None
    device: str | None = None
    detail: str = ""
    changed: bool = False
    seconds: float = 0.0

    def line(self) -> str:
        """The one line ``verify`` prints for this case."""
        if self.ok:
            return f"PASS {self.path} [{self.contract} on {self.device}]"
        return f"FAIL {self.path}: {self.detail}"


class _Failed(Exception):
    """Ends a verification early with a reason; becomes a failed outcome."""


def verify_case(
    case_path: Path | str,
    fixed_text: str | None = None,
    settings: Settings | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> VerifyOutcome:
    """Execute a case and the fixed version of it, and judge them by the case's contract.

    ``fixed_text`` defaults to what the engine's ``fix`` makes of the case with
    ``settings`` (default: the fixture's own, see ``fixture_settings``).
    """
    path = Path(case_path)
    started = time.monotonic()
    state = {"contract": None, "device": None, "changed": False}
    try:
        if is_project_dir(path):
            detail = _verify_project(load_project(path), settings, timeout, state)
        else:
            detail = _verify(path, fixed_text, settings, timeout, state)
        ok = True
    except (_Failed, FixtureError) as failure:
        detail, ok = str(failure), False
    return VerifyOutcome(path, ok, state["contract"], state["device"], detail,
                         bool(state["changed"]), time.monotonic() - started)


def _verify(path: Path, fixed_text: str | None, settings: Settings | None, timeout: float,
            state: dict[str, object]) -> str:
    fixture = load_fixture(path)
    original = fixture.read_text()
    spec = read_spec(original, str(path))
    if fixed_text is None:
        fixed_text = _engine_fix(fixture, original, settings)
    state["changed"] = fixed_text != original
    with tempfile.TemporaryDirectory(prefix="tfc-verify-") as temporary:
        work = Path(temporary)
        meta = work / "meta"
        meta.mkdir()
        (meta / "before.py").write_text(original, encoding="utf-8")
        (meta / "after.py").write_text(fixed_text, encoding="utf-8")
        dirs = {name: work / name for name in ("prepare", "before", "after")}
        for directory in dirs.values():
            directory.mkdir()
        if spec.has_prepare:
            prepared = run_child("prepare", meta / "before.py", path, ["prepare"],
                                 dirs["prepare"], meta, timeout=timeout)
            _require_returned(prepared, "prepare", "prepare")
            for name in ("before", "after"):
                shutil.copytree(dirs["prepare"], dirs[name], dirs_exist_ok=True)
        after_calls = ["run"] + (["reference"] if spec.has_reference else [])
        with ThreadPoolExecutor(max_workers=2) as pool:
            before_job = pool.submit(run_child, "before", meta / "before.py", path, ["run"],
                                     dirs["before"], meta, hide_cuda=spec.run_without_cuda,
                                     timeout=timeout)
            after_job = pool.submit(run_child, "after", meta / "after.py", path, after_calls,
                                    dirs["after"], meta, hide_cuda=spec.run_without_cuda,
                                    display=f"{path} (fixed)", timeout=timeout)
            before, after = before_job.result(), after_job.result()
    return _judge(spec, before, after, state)


def fix_project(fixture: ProjectFixture, settings: Settings | None = None,
                texts: dict[Path, bytes] | None = None) -> dict[Path, FileResult]:
    """Fix every file of a project in one run, as the CLI would (one project index over
    all of them). ``texts``: the files' bytes, default: as they are on disk."""
    from torchfix_codemods.engine import process
    from torchfix_codemods.indexing import project_of_bytes
    from torchfix_codemods.source import SourceUnit

    settings = settings or fixture.settings()
    data = texts if texts is not None else {path: path.read_bytes() for path in fixture.files}
    index = project_of_bytes({str(path): content for path, content in data.items()})
    return {path: process(SourceUnit.from_bytes(str(path), content),
                          settings.options_for(str(path)), apply_fixes=True,
                          project=index.view(str(path)))
            for path, content in data.items()}


def _verify_project(fixture: ProjectFixture, settings: Settings | None, timeout: float,
                    state: dict[str, object]) -> str:
    """Run the project's ``case.py`` beside the original files, then beside the fixed ones."""
    text = fixture.entry.read_text(encoding="utf-8")
    spec = read_spec(text, str(fixture.entry))
    if spec.has_prepare:
        raise _Failed(f"{fixture.entry}: projects do not support `prepare`; write files in `run`")
    try:
        results = fix_project(fixture, settings)
    except Exception as error:  # noqa: BLE001 - an engine crash is this case's failure
        raise _Failed(f"the engine failed on the project ({type(error).__name__}: {error})") \
            from None
    state["changed"] = any(result.fixed is not None for result in results.values())
    with tempfile.TemporaryDirectory(prefix="tfc-verify-") as temporary:
        work = Path(temporary)
        meta = work / "meta"
        meta.mkdir()
        for name in ("before", "after"):
            for path, result in results.items():
                target = work / name / path.relative_to(fixture.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                fixed = result.fixed if name == "after" else None
                target.write_bytes(path.read_bytes() if fixed is None else
                                   (result.new_bytes or fixed.encode("utf-8")))
        calls = {"before": ["run"], "after": ["run"] + (["reference"] if spec.has_reference
                                                        else [])}
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = {name: pool.submit(
                run_child, name, work / name / fixture.entry.name,
                work / name / fixture.entry.name, calls[name], work / name, meta,
                hide_cuda=spec.run_without_cuda, timeout=timeout,
                display=f"{fixture.entry}" + (" (fixed)" if name == "after" else ""))
                for name in ("before", "after")}
            before, after = jobs["before"].result(), jobs["after"].result()
    return _judge(spec, before, after, state)


def _engine_fix(fixture: Fixture, original: str, settings: Settings | None) -> str:
    # The engine (and with it every rule) is loaded only when a case must be fixed.
    from torchfix_codemods.engine import process
    from torchfix_codemods.indexing import project_of_bytes
    from torchfix_codemods.source import SourceUnit

    settings = settings or fixture.settings()
    data = fixture.path.read_bytes()
    path = str(fixture.path)
    try:
        result = process(SourceUnit.from_bytes(path, data), settings.options_for(path),
                         apply_fixes=True, project=project_of_bytes({path: data}).view(path))
    except Exception as error:  # noqa: BLE001 - an engine crash is this case's failure
        raise _Failed(f"the engine failed on the case ({type(error).__name__}: {error})") from None
    fixed = result.fixed if result.fixed is not None else original
    if fixed == original and fixture.expected_path is not None:
        reasons = sorted({f"{f.code}: {f.fix.withheld}" for f in result.findings
                          if f.fix is not None and f.fix.withheld})
        why = f" (withheld: {'; '.join(reasons)})" if reasons else ""
        raise _Failed(f"fix changed nothing, but {fixture.expected_path.name} expects a "
                      f"rewrite{why}")
    return fixed


def _problem(child: ChildResult) -> str | None:
    """Why a child produced nothing to judge, with the end of its stderr."""
    if child.problem is None and child.import_error is None:
        return None
    if child.problem is not None:
        what = child.problem
    else:
        assert child.import_error is not None
        what = f"executing the module raised {child.import_error.short()}"
    tail = "\n".join(child.stderr.strip().splitlines()[-15:])
    if child.import_error is not None and child.import_error.traceback:
        tail = child.import_error.traceback.strip()
    return f"{child.label}: {what}" + (f"\n{_indent(tail)}" if tail else "")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _call(child: ChildResult, name: str) -> CallResult:
    problem = _problem(child)
    if problem is not None:
        raise _Failed(problem)
    call = child.calls.get(name)
    if call is None:  # pragma: no cover - the child always answers every call
        raise _Failed(f"{child.label}: `{name}` was not run")
    if call.harness and call.error is not None:
        raise _Failed(f"{child.label}: {call.error.message}")
    return call


def _require_returned(child: ChildResult, name: str, role: str) -> CallResult:
    call = _call(child, name)
    if not call.ok:
        assert call.error is not None
        raise _Failed(f"{role}: `{name}` raised {call.error.short()}\n"
                      f"{_indent(call.error.traceback.strip())}")
    return call


def _judge(spec: ExecSpec, before: ChildResult, after: ChildResult,
           state: dict[str, object]) -> str:
    before_run, after_run = _call(before, "run"), _call(after, "run")
    if before.device != after.device:
        raise _Failed(f"the runs chose different devices (before {before.device}, "
                      f"after {after.device})")
    device_type = after.device_type or "cpu"
    state["device"] = after.device
    contract = spec.contract_for(device_type)
    state["contract"] = contract
    if contract == "same":
        _require_returned(before, "run", "before (input)")
        _require_returned(after, "run", "after (fixed)")
        _no_differences(compare(before_run.value, after_run.value), "after differs from before")
        return "before and after are equal"
    if contract == "fixes-crash":
        expected = spec.expected_error_for(device_type)
        assert expected is not None  # read_spec insists
        if before_run.ok:
            raise _Failed(f"before (input) returned, but the contract says it raises {expected}")
        assert before_run.error is not None
        if not expected.matches(before_run.error.classes, before_run.error.message):
            raise _Failed(f"before (input) raised {before_run.error.short()}, "
                          f"expected {expected}")
        _require_returned(after, "run", "after (fixed) still crashes")
        if spec.has_reference:
            reference = _require_returned(after, "reference", "reference")
            _no_differences(compare(reference.value, after_run.value,
                                    labels=("reference", "after")),
                            "after differs from reference")
        return f"before raised {expected}; after returned"
    # intended
    _require_returned(after, "run", "after (fixed)")
    reference = _require_returned(after, "reference", "reference")
    _no_differences(compare(reference.value, after_run.value, labels=("reference", "after")),
                    "after differs from reference")
    if before_run.ok and not compare(reference.value, before_run.value):
        raise _Failed("before (input) already equals reference: the fixture shows no "
                      "intended change")
    return "after equals reference; before does not"


def _no_differences(differences: list[str], headline: str) -> None:
    if differences:
        first, rest = differences[0], differences[1:]
        more = f"\n{_indent(chr(10).join(rest))}" if rest else ""
        raise _Failed(f"{headline}: {first}{more}")
