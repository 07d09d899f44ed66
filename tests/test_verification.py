"""Verification by execution: every executable fixture, the comparator and the contracts.

The contract tests use small synthetic cases with an explicit fixed text, so
they do not depend on any rule; most of them do not mention torch, so their
subprocesses start in a fraction of a second (the child imports torch only
when the fixture mentions it).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from torchfix_codemods.verify import (
    FixtureError,
    compare,
    executable_fixtures,
    fixture_settings,
    parse_fixture_args,
    read_spec,
    run_verify,
    verify_case,
)
from torchfix_codemods.verify.command import default_jobs
from torchfix_codemods.verify.harness import VerifyOutcome
from torchfix_codemods.verify.runner import run_child

ROOT = Path(__file__).parent / "fixtures"
EXECUTABLE = [fixture.path for fixture in executable_fixtures(ROOT)]
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


# --- every executable fixture under tests/fixtures --------------------------------------------

@pytest.fixture(scope="module")
def fixture_outcomes(request: pytest.FixtureRequest) -> Iterator[dict[Path, Future[VerifyOutcome]]]:
    """Start every selected case at once (each runs two interpreters side by side)."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_executable_fixture"]
    pool = ThreadPoolExecutor(max_workers=default_jobs())
    futures = {case: pool.submit(verify_case, case) for case in selected}
    yield futures
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("case", EXECUTABLE, ids=lambda path: str(path.relative_to(ROOT)))
def test_executable_fixture(case: Path, fixture_outcomes: dict[Path, Future[VerifyOutcome]]):
    outcome = fixture_outcomes[case].result()
    assert outcome.ok, outcome.line()
    if case.name.startswith("trap_"):
        assert not outcome.changed, f"{case.name}: a trap must stay unchanged"
    else:
        assert outcome.changed, f"{case.name}: the fix changed nothing, so nothing was verified"


def test_there_are_executable_fixtures_for_the_serialization_rules() -> None:
    codes = {path.parent.name for path in EXECUTABLE}
    assert {"TFC001", "TFC002"} <= codes


# --- the comparator ----------------------------------------------------------------------------

def test_equal_results_compare_equal() -> None:
    value = {"w": torch.randn(3, 2), "n": 3, "x": 0.5, "s": "a", "none": None,
             "nested": [torch.arange(3), (np.ones(2, dtype=np.float32), math.nan)],
             "nan": torch.tensor([math.nan, 1.0])}
    clone = {"w": value["w"].clone(), "n": 3, "x": 0.5, "s": "a", "none": None,
             "nested": [torch.arange(3), (np.ones(2, dtype=np.float32), math.nan)],
             "nan": torch.tensor([math.nan, 1.0])}
    assert compare(value, clone) == []


def test_dtype_change_is_detected() -> None:
    a = {"weight": torch.ones(3)}
    assert compare(a, {"weight": torch.ones(3, dtype=torch.float64)}) == [
        "result['weight']: dtype differs (before torch.float32, after torch.float64)"]


def test_device_change_is_detected() -> None:
    # "meta" is a real second device on every build; CUDA gets its own test below.
    (difference,) = compare([torch.ones(2)], [torch.ones(2, device="meta")])
    assert difference == "result[0]: device differs (before cpu, after meta)"


@pytest.mark.cuda
@cuda_only
def test_cuda_device_change_is_detected() -> None:
    (difference,) = compare(torch.ones(2), torch.ones(2, device="cuda"))
    assert difference.startswith("result: device differs (before cpu, after cuda:0)")


def test_one_ulp_is_detected() -> None:
    before = torch.tensor([1.0, 2.0])
    after = before.clone()
    after[1] = torch.nextafter(after[1], torch.tensor(3.0))
    (difference,) = compare({"t": before}, {"t": after})
    assert difference.startswith("result['t']: values differ (max abs diff 2.38e-07, 1 of 2")
    assert compare(1.0, math.nextafter(1.0, 2.0))[0].startswith("result: values differ")


def test_missing_and_extra_keys_are_detected() -> None:
    before = {"weight": torch.ones(1), "bias": torch.ones(1)}
    assert compare(before, {"weight": torch.ones(1)}) == [
        "result: key 'bias' missing (after lacks it)"]
    assert compare({"weight": torch.ones(1)}, before) == [
        "result: key 'bias' missing (before lacks it)"]


def test_bitwise_details() -> None:
    assert compare(torch.tensor([0.0]), torch.tensor([-0.0])) == [
        "result: values differ in the sign of zero (1 of 1 elements)"]
    assert compare(torch.tensor([math.nan]), torch.tensor([1.0]))[0].startswith(
        "result: NaN positions differ")
    assert compare(0.0, -0.0) != []
    assert compare(math.nan, math.nan) == []
    assert compare(1, 1.0) == ["result: type differs (before int, after float)"]
    assert compare(True, 1) == ["result: type differs (before bool, after int)"]


def test_grad_shape_and_container_differences() -> None:
    leaf = torch.ones(2).requires_grad_()
    assert compare(torch.ones(2), leaf) == [
        "result: requires_grad differs (before False, after True)"]
    assert compare(torch.ones(2), torch.ones(3)) == ["result: shape differs (before (2,), after (3,))"]
    assert compare(OrderedDict(a=1), {"a": 1})[0].startswith("result: type differs")
    assert compare({"a": 1, "b": 2}, {"b": 2, "a": 1})[0].startswith("result: key order differs")
    assert compare([1, 2], [1, 2, 3]) == ["result: length differs (before 2, after 3)"]
    assert compare((1, [2, "x"]), (1, [2, "y"])) == [
        "result[1][1]: value differs (before 'x', after 'y')"]
    assert compare(torch.tensor([1, 2]), torch.tensor([1, 5])) == [
        "result: values differ (max abs diff 3, 1 of 2 elements)"]


def test_numpy_arrays() -> None:
    a = np.arange(4, dtype=np.float32)
    assert compare(a, a.astype(np.float64)) == [
        "result: dtype differs (before float32, after float64)"]
    b = a.copy()
    b[3] += 1e-3
    assert compare(a, b)[0].startswith("result: values differ (max abs diff 0.001")
    assert compare(np.float32(1), np.float64(1))[0].startswith("result: type differs")
    assert compare(np.array(["a"]), np.array(["a"])) == []


# --- contracts, with synthetic cases ----------------------------------------------------------

def write_case(directory: Path, text: str, name: str = "case.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


CRASH = """
    CONTRACT = "fixes-crash"
    EXPECTED_ERROR = "ZeroDivisionError: division by zero"

    def run(device):
        return 1 / 0

    if __name__ == "__main__":
        raise SystemExit("the harness must not run this block")
"""


def test_fixes_crash_passes_when_the_fix_returns(tmp_path: Path) -> None:
    case = write_case(tmp_path, CRASH)
    outcome = verify_case(case, fixed_text=case.read_text().replace("1 / 0", "1 / 2"))
    assert outcome.ok, outcome.detail
    assert (outcome.contract, outcome.device) == ("fixes-crash", "cpu")
    assert outcome.line() == f"PASS {case} [fixes-crash on cpu]"


def test_fix_that_does_not_fix_the_crash_fails(tmp_path: Path) -> None:
    case = write_case(tmp_path, CRASH)
    outcome = verify_case(case, fixed_text=case.read_text().replace("1 / 0", "(1 / 0) + 0"))
    assert not outcome.ok
    assert outcome.detail.startswith("after (fixed) still crashes: `run` raised ZeroDivisionError")
    assert f"{case} (fixed)" in outcome.detail  # the traceback names the fixed case


def test_input_must_raise_the_documented_error(tmp_path: Path) -> None:
    case = write_case(tmp_path, CRASH.replace("1 / 0", "[][0]"))
    outcome = verify_case(case, fixed_text=case.read_text().replace("[][0]", "1"))
    assert not outcome.ok
    assert outcome.detail.startswith("before (input) raised IndexError: list index out of range, "
                                     "expected ZeroDivisionError: division by zero")
    returns = write_case(tmp_path, CRASH.replace("1 / 0", "1"), "returns.py")
    outcome = verify_case(returns, fixed_text=returns.read_text())
    assert "before (input) returned" in outcome.detail


SAME = """
    import random

    def run(device):
        return {"values": [1.5, 2.5], "draw": random.random(), "device": str(device)}
"""


def test_same_passes_and_both_runs_are_seeded(tmp_path: Path) -> None:
    case = write_case(tmp_path, SAME)
    outcome = verify_case(case, fixed_text=case.read_text() + "\n# a comment\n")
    assert outcome.ok, outcome.detail
    assert outcome.contract == "same"


def test_same_fails_when_the_fix_changes_a_value(tmp_path: Path) -> None:
    case = write_case(tmp_path, SAME)
    outcome = verify_case(case, fixed_text=case.read_text().replace("2.5", "2.5000001"))
    assert not outcome.ok
    assert outcome.detail.startswith("after differs from before: result['values'][1]: values "
                                     "differ (before 2.5, after 2.5000001")


def test_same_fails_when_the_fix_breaks_the_module(tmp_path: Path) -> None:
    case = write_case(tmp_path, SAME)
    outcome = verify_case(case, fixed_text="import no_such_module_anywhere\n" + case.read_text())
    assert not outcome.ok
    assert outcome.detail.startswith("after: executing the module raised ModuleNotFoundError")


INTENDED = """
    CONTRACT = "intended"

    def run(device):
        return sorted([3, 1, 2])[::-1]

    def reference(device):
        return [1, 2, 3]
"""


def test_intended_compares_the_fix_with_reference(tmp_path: Path) -> None:
    case = write_case(tmp_path, INTENDED)
    good = verify_case(case, fixed_text=case.read_text().replace("[::-1]", ""))
    assert good.ok, good.detail
    bad = verify_case(case, fixed_text=case.read_text().replace("[::-1]", "[1:]"))
    assert bad.detail.startswith("after differs from reference: result: length differs "
                                 "(reference 3, after 2)")
    unchanged = write_case(tmp_path, INTENDED.replace("[::-1]", ""), "unchanged.py")
    same = verify_case(unchanged, fixed_text=unchanged.read_text())
    assert "already equals reference" in same.detail


def test_prepare_files_reach_each_run_separately_and_cuda_can_be_hidden(tmp_path: Path) -> None:
    parent_value = os.environ.get("CUDA_VISIBLE_DEVICES")
    case = write_case(tmp_path, f"""
        import os

        RUN_WITHOUT_CUDA = True

        def prepare(device):
            with open("data.txt", "w") as handle:
                handle.write("prepared")
            # prepare keeps the parent's GPUs
            assert os.environ.get("CUDA_VISIBLE_DEVICES") == {parent_value!r}

        def run(device):
            with open("data.txt") as handle:
                assert handle.read() == "prepared"  # the other run's write never shows here
            with open("data.txt", "a") as handle:
                handle.write("!")
            assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""
            return os.listdir(".")
    """)
    outcome = verify_case(case, fixed_text=case.read_text())
    assert outcome.ok, outcome.detail


def test_per_device_contract_and_missing_entry(tmp_path: Path) -> None:
    case = write_case(tmp_path, """
        CONTRACT = {"cpu": "fixes-crash", "cuda": "same", "mps": "same"}
        EXPECTED_ERROR = {"cpu": "KeyError", "cuda": "KeyError", "mps": "KeyError"}

        def run(device):
            return {}["missing"]
    """)
    outcome = verify_case(case, fixed_text=case.read_text().replace('{}["missing"]', "0"))
    assert outcome.ok, outcome.detail
    missing = write_case(tmp_path, 'CONTRACT = {"tpu": "same"}\ndef run(device):\n    return 1\n',
                         "missing.py")
    assert "CONTRACT has no entry for device type 'cpu'" in verify_case(
        missing, fixed_text=missing.read_text()).detail


def test_a_result_the_parent_cannot_load_is_reported(tmp_path: Path) -> None:
    case = write_case(tmp_path, """
        class Box:
            pass

        def run(device):
            return {"box": Box()}
    """)
    outcome = verify_case(case, fixed_text=case.read_text())
    assert not outcome.ok
    assert "the fixture's own class Box at result['box']" in outcome.detail


def test_each_run_is_timed_out(tmp_path: Path) -> None:
    case = write_case(tmp_path, "import time\n\ndef run(device):\n    time.sleep(60)\n")
    outcome = verify_case(case, fixed_text=case.read_text(), timeout=1)
    assert not outcome.ok
    assert outcome.detail.startswith("before: timed out after 1 s")
    assert outcome.seconds < 30


def test_tensor_results_travel_and_are_compared_bitwise(tmp_path: Path) -> None:
    case = write_case(tmp_path, """
        import torch

        def run(device):
            x = torch.randn(4, device=device, requires_grad=True)
            return {"y": x * 2, "n": torch.arange(3)}
    """)
    fixed = case.read_text().replace("x * 2", "x * 2 + 1e-7")
    outcome = verify_case(case, fixed_text=fixed)
    assert not outcome.ok
    assert outcome.detail.startswith("after differs from before: result['y']: values differ "
                                     "(max abs diff")


def test_a_forked_run_sees_what_a_fresh_interpreter_sees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork server (Linux default) against plain ``sys.executable`` runs."""
    case = write_case(tmp_path, """
        import os, random, sys
        import torch

        def run(device):
            return {
                "draws": [random.random(), torch.randn(3), torch.initial_seed()],
                "hash_order": list({"alpha", "beta", "gamma", "delta"}),
                "device": str(device),
                "deterministic": torch.are_deterministic_algorithms_enabled(),
                "env": [os.environ.get(name) for name in
                        ("PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED")],
                "main": sys.modules["__main__"].__file__.endswith("_child.py"),
                "fixture_module": __name__,
            }
    """)
    results = {}
    for method in ("fork", "spawn"):
        monkeypatch.setenv("TORCHFIX_VERIFY_START", method)
        work = tmp_path / method
        work.mkdir()
        child = run_child(method, case, case, ["run"], work, work)
        assert child.problem is None, child.stderr
        results[method] = child.calls["run"].value
    assert compare(results["spawn"], results["fork"], labels=("spawn", "fork")) == []
    assert results["fork"]["fixture_module"] == "tfc_fixture"


def test_spawned_runs_time_out_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHFIX_VERIFY_START", "spawn")
    case = write_case(tmp_path, "import time\n\ndef run(device):\n    time.sleep(60)\n")
    outcome = verify_case(case, fixed_text=case.read_text(), timeout=1)
    assert outcome.detail.startswith("before: timed out after 1 s")


@pytest.mark.cuda
@cuda_only
def test_a_real_gpu_checkpoint_needs_map_location_without_cuda(tmp_path: Path) -> None:
    case = write_case(tmp_path, """
        import torch

        CONTRACT = "fixes-crash"
        EXPECTED_ERROR = "RuntimeError: Attempting to deserialize object on a CUDA device"
        RUN_WITHOUT_CUDA = True

        def prepare(device):
            assert device.type == "cuda"
            torch.save({"w": torch.ones(3, device=device)}, "gpu.pt")

        def run(device):
            assert device.type == "cpu"
            return torch.load("gpu.pt")

        def reference(device):
            return {"w": torch.ones(3)}
    """)
    fixed = case.read_text().replace('torch.load("gpu.pt")',
                                     'torch.load("gpu.pt", map_location="cpu")')
    outcome = verify_case(case, fixed_text=fixed)
    assert outcome.ok, outcome.detail


# --- fixture specs and headers ------------------------------------------------------------------

def test_spec_errors_are_clear() -> None:
    with pytest.raises(FixtureError, match="'intended' needs a `def reference"):
        read_spec('CONTRACT = "intended"\ndef run(device):\n    pass\n')
    with pytest.raises(FixtureError, match="'fixes-crash' needs EXPECTED_ERROR"):
        read_spec('CONTRACT = "fixes-crash"\ndef run(device):\n    pass\n')
    with pytest.raises(FixtureError, match="'bitwise' is not one of"):
        read_spec('CONTRACT = "bitwise"\ndef run(device):\n    pass\n')
    with pytest.raises(FixtureError, match="no top-level `def run"):
        read_spec("x = 1\n")


def test_fixture_args_header() -> None:
    args = parse_fixture_args(
        "# fixture-args: --unsafe-fixes --target-torch 2.4 --extend-select TFC002,TFC003\n"
        "import torch\n")
    assert args.unsafe_fixes and args.target_torch == "2.4"
    assert args.select is None and args.extend_select == ("TFC002", "TFC003")
    assert parse_fixture_args("# -*- coding: utf-8 -*-\n# fixture-args: --select=TFC1\n").select \
        == ("TFC1",)
    assert parse_fixture_args("import torch\n# fixture-args: --unsafe-fixes\n").unsafe_fixes is False
    with pytest.raises(FixtureError, match="unknown fixture-args flag '--unsafe'"):
        parse_fixture_args("# fixture-args: --unsafe\n")
    with pytest.raises(FixtureError, match="needs a value"):
        parse_fixture_args("# fixture-args: --target-torch\n")


def test_fixture_settings(tmp_path: Path) -> None:
    directory = tmp_path / "TFC001"
    directory.mkdir()
    plain = write_case(directory, "import torch\n", "plain.py")
    settings = fixture_settings(plain)
    assert settings.enabled == {"TFC000", "TFC001"}  # every selection keeps TFC000
    assert not settings.unsafe_fixes and settings.target_torch is None
    headed = write_case(directory, "# fixture-args: --unsafe-fixes --target-torch 2.4 "
                                   "--extend-select TFC002\n", "headed.py")
    settings = fixture_settings(headed)
    assert settings.enabled == {"TFC000", "TFC001", "TFC002"}
    assert settings.unsafe_fixes and settings.target_torch == (2, 4)
    bad = write_case(directory, "# fixture-args: --select TFC999\n", "bad.py")
    with pytest.raises(FixtureError, match="TFC999"):
        fixture_settings(bad)


def test_engine_that_changes_nothing_fails_a_case_with_an_expected_file(tmp_path: Path) -> None:
    directory = tmp_path / "TFC001"
    directory.mkdir()
    case = write_case(directory, "def run(device):\n    return 1\n")
    write_case(directory, "def run(device):\n    return 2\n", "case.expected.py")
    outcome = verify_case(case)
    assert not outcome.ok
    assert outcome.detail.startswith("fix changed nothing, but case.expected.py expects")


# --- the verify command -------------------------------------------------------------------------

def test_run_verify_exit_codes_and_lines(tmp_path: Path) -> None:
    write_case(tmp_path, SAME, "good.py")
    write_case(tmp_path, CRASH, "crash.py")  # no rule fixes it: the crash stays
    write_case(tmp_path, "x = 1\n", "not_a_case.py")
    lines: list[str] = []
    assert run_verify([str(tmp_path / "good.py")], lines.append) == 0
    assert lines == [f"PASS {tmp_path / 'good.py'} [same on cpu]", "1 passed, 0 failed"]
    lines.clear()
    assert run_verify([str(tmp_path)], lines.append, jobs=2) == 1
    assert lines[0].startswith(f"FAIL {tmp_path / 'crash.py'}: after (fixed) still crashes")
    assert any(line.startswith(f"PASS {tmp_path / 'good.py'}") for line in lines)
    assert lines[-1] == "1 passed, 1 failed"
    lines.clear()
    assert run_verify([str(tmp_path / "nope")], lines.append) == 2
    assert lines == [f"error: {tmp_path / 'nope'}: no such file or directory"]
    assert run_verify([str(tmp_path / "not_a_case.py")], lines.append) == 2


def test_importing_verify_does_not_import_torch() -> None:
    code = "import sys, torchfix_codemods.verify; print('torch' in sys.modules)"
    root = Path(__file__).resolve().parent.parent
    output = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    assert output.strip() == "False"
