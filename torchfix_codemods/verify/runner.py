"""Run one fixture text in a process of its own and read back what it returned.

Every run is its own process (see launch.py): nothing a fixture does (imports,
CUDA state, RNG state, monkey-patches) can leak from the input's run into the
fixed version's. The child is ``_child.py``; this side only writes a request,
has the run killed with its whole process group (DataLoader workers included)
on timeout, and unpickles the payload. Unpickling tensors imports torch here,
lazily: importing the verify package never does.
"""

from __future__ import annotations

import json
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchfix_codemods.verify.launch import launch

DEFAULT_TIMEOUT = 120.0
_TAIL = 2000


@dataclass
class ErrorInfo:
    """An exception raised inside the child, as the child described it."""

    type: str
    classes: list[str]
    message: str
    traceback: str

    def short(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        text = f"{self.type}: {first}" if first else self.type
        return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class CallResult:
    """One fixture function's outcome: a value, or the error it raised.

    ``harness`` marks errors that are the fixture's or the harness's fault
    (a missing function, a return value that cannot be carried back) rather
    than behaviour a contract may expect.
    """

    name: str
    ok: bool
    value: Any = None
    error: ErrorInfo | None = None
    harness: bool = False


@dataclass
class ChildResult:
    """What one child process produced; ``problem`` is set when it produced nothing usable."""

    label: str
    device: str | None = None
    calls: dict[str, CallResult] = field(default_factory=dict)
    import_error: ErrorInfo | None = None
    problem: str | None = None
    seconds: float = 0.0
    stderr: str = ""

    @property
    def device_type(self) -> str | None:
        return None if self.device is None else self.device.split(":")[0]


def run_child(
    label: str,
    source: Path,
    case_path: Path,
    calls: list[str],
    cwd: Path,
    meta: Path,
    *,
    display: str | None = None,
    hide_cuda: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> ChildResult:
    """Execute ``source`` as the fixture at ``case_path`` in ``cwd``, then call ``calls``.

    ``display`` is the file name tracebacks show (default: the case's path).
    """
    request = meta / f"{label}.request.json"
    output = meta / f"{label}.result.pkl"
    stdout_path, stderr_path = meta / f"{label}.stdout", meta / f"{label}.stderr"
    request.write_text(json.dumps({
        "source": str(source.resolve()),
        "display": display or str(case_path),
        "case_path": str(case_path.resolve()),
        "case_dir": str(case_path.resolve().parent),
        "calls": calls,
        "output": str(output),
    }), encoding="utf-8")
    result = ChildResult(label)
    started = time.monotonic()
    returncode = launch(request, cwd, stdout_path, stderr_path, hide_cuda=hide_cuda,
                        timeout=timeout)
    result.seconds = time.monotonic() - started
    result.stderr = _tail(stderr_path)
    if returncode is None:
        result.problem = f"timed out after {timeout:g} s"
        return result
    if returncode != 0 or not output.is_file():
        result.problem = f"the subprocess exited with code {returncode} and no result"
        return result
    _read_payload(output, result)
    return result


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-_TAIL:].decode("utf-8", "replace")


def _error(raw: dict[str, Any] | None) -> ErrorInfo | None:
    if raw is None:
        return None
    return ErrorInfo(raw["type"], list(raw["mro"]), raw["message"], raw["traceback"])


def _read_payload(output: Path, result: ChildResult) -> None:
    try:
        with open(output, "rb") as handle:
            payload = pickle.load(handle)
    except Exception as error:  # noqa: BLE001 - a corrupt payload is reported, not raised
        result.problem = f"cannot read the subprocess result ({type(error).__name__}: {error})"
        return
    result.device = payload["device"]
    result.import_error = _error(payload["import_error"])
    for raw in payload["calls"]:
        call = CallResult(raw["name"], raw["ok"], error=_error(raw.get("error")),
                          harness=raw.get("harness", False))
        if call.ok:
            try:
                call.value = pickle.loads(raw["value"])
            except Exception as error:  # noqa: BLE001 - e.g. a class only the fixture defines
                call.ok, call.harness = False, True
                call.error = ErrorInfo("UnsupportedResult", ["UnsupportedResult"],
                                       f"`{call.name}` returned a value the harness cannot "
                                       f"load ({type(error).__name__}: {error})", "")
        result.calls[call.name] = call
