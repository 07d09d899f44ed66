"""Run one fixture text in this process (fresh, or freshly forked) and pickle its results.

Executed by path (``python _child.py request.json``, or forked by
``python _child.py --serve``), never imported by the package: it imports
nothing from torchfix_codemods (the package need not be importable where
fixtures run). A fixture whose text mentions torch gets torch set up (seeds,
deterministic kernels) and a ``torch.device`` (cuda > mps > cpu); one that
does not gets the string ``"cpu"``.

The fixture is executed as a module named ``tfc_fixture`` (not ``__main__``,
so its own ``if __name__ == "__main__"`` block stays inert). The name is the
same in every child, so an object pickled by ``prepare`` in one process can be
unpickled by ``run`` in another.

The payload (a pickled dict) holds, per requested function, either the pickled
return value or a description of the exception it raised. Return values are
checked first: objects of classes defined in the fixture could not be
unpickled by the parent, so they are rejected with the path to them.
"""

from __future__ import annotations

import json
import linecache
import os
import pickle
import random
import sys
import traceback
import types
from typing import Any

MODULE_NAME = "tfc_fixture"
SEED = 0
# What the fork server imports before forking: torch, and torch._dynamo, which
# torch imports lazily on first use of everyday APIs (an optimizer's __init__,
# via torch._disable_dynamo) at a cost of seconds. Importing them earlier
# changes when that time is spent, not what a fixture computes.
WARM_IMPORTS = ("torch", "torch._dynamo")
# Set when the launcher turned on torch's NVML-based CUDA check for the server
# (so nothing it imports can initialise the CUDA driver before forking); each
# forked run takes it off again, to see the environment a fresh process sees.
SERVER_SET_NVML = "TORCHFIX_VERIFY_SERVER_SET_NVML"


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)  # the verify package's own modules must not shadow the fixture's imports
    sys.path.insert(0, request["case_dir"])
    sys.argv = [request["case_path"]]
    with open(request["source"], encoding="utf-8") as handle:
        text = handle.read()

    payload: dict[str, Any] = {"device": "cpu", "torch": None, "import_error": None, "calls": []}
    torch = _import_if_mentioned(text, "torch")
    _import_if_mentioned(text, "numpy")
    if torch is not None:
        _determinism(torch)
    pristine = _registry_snapshot()

    module = types.ModuleType(MODULE_NAME)
    module.__file__ = request["case_path"]
    sys.modules[MODULE_NAME] = module
    # Tracebacks name the case ("x.py (fixed)") and still show its source lines.
    display = request["display"]
    linecache.cache[display] = (len(text), None, text.splitlines(True), display)
    _seed()
    try:
        exec(compile(text, display, "exec"), module.__dict__)
    except BaseException as error:  # noqa: BLE001 - reported to the parent
        payload["import_error"] = _describe(error)
        _write(request["output"], payload)
        return 0
    payload["torch"] = getattr(torch, "__version__", None)
    device = _pick_device(torch)
    payload["device"] = str(device)

    for name in request["calls"]:
        function = module.__dict__.get(name)
        if not callable(function):
            payload["calls"].append({"name": name, "ok": False, "harness": True, "error": {
                "type": "FixtureError", "mro": ["FixtureError"], "traceback": "",
                "message": f"the fixture defines no function `{name}`"}})
            continue
        _seed()
        try:
            value = function(device)
        except BaseException as error:  # noqa: BLE001 - the contract decides what it means
            payload["calls"].append({"name": name, "ok": False, "harness": False,
                                     "error": _describe(error)})
            continue
        payload["calls"].append(_pack(name, value, pristine))
    _write(request["output"], payload)
    return 0


def _import_if_mentioned(text: str, module_name: str) -> Any:
    """The module when the fixture's text names it (so a torch-free fixture stays fast)."""
    if module_name not in text:
        return None
    try:
        return __import__(module_name)
    except ImportError:
        return None


def _determinism(torch: Any) -> None:
    """Deterministic kernels where torch has them; warn (never fail) where it has not.

    ``torch.use_deterministic_algorithms`` also imports torch._inductor to set
    its flag, which costs seconds per child; the C switch it wraps is all that
    eager code needs (the parent sets TORCHINDUCTOR_DETERMINISTIC for torch.compile).
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    try:
        if setter is not None:
            setter(True, warn_only=True)
        else:  # pragma: no cover - a torch without the private switch
            torch.use_deterministic_algorithms(True, warn_only=True)
    except Exception:  # noqa: BLE001 - an old torch without warn_only
        pass
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def _pick_device(torch: Any) -> Any:
    """cuda > mps > cpu, as a ``torch.device``; the string ``"cpu"`` without torch."""
    if torch is None:
        return "cpu"
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _seed() -> None:
    """The same seeds before the module runs and before every function call."""
    random.seed(SEED)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(SEED)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(SEED)  # seeds every device's generator


def _describe(error: BaseException) -> dict[str, Any]:
    kind = type(error)
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
        message = f"<unprintable {kind.__name__}>"
    mro = []
    for cls in kind.__mro__:
        mro += [cls.__name__, f"{cls.__module__}.{cls.__qualname__}"]
    tb = error.__traceback__.tb_next if error.__traceback__ is not None else None
    return {
        "type": kind.__name__,
        "mro": mro,
        "message": message,
        "traceback": "".join(traceback.format_exception(kind, error, tb)),
    }


class _Unsupported(Exception):
    pass


def _registry_snapshot() -> list[Any] | None:
    """torch's storage-location taggers as they were before the fixture ran."""
    torch = sys.modules.get("torch")
    registry = getattr(getattr(torch, "serialization", None), "_package_registry", None)
    return list(registry) if isinstance(registry, list) else None


def _pack(name: str, value: Any, pristine: list[Any] | None) -> dict[str, Any]:
    """Pickle a return value with torch's own taggers, then give the fixture its own back.

    torch pickles tensors through ``torch.serialization``'s tagger registry; a
    fixture that registers one (a "cuda:0" tagger simulating a GPU save) must
    not change how its results travel back to the parent.
    """
    torch = sys.modules.get("torch")
    registry = getattr(getattr(torch, "serialization", None), "_package_registry", None)
    current = list(registry) if isinstance(registry, list) else None
    try:
        if current is not None and pristine is not None:
            registry[:] = pristine  # type: ignore[index]
        clean = _normalize(value, "result")
        data = pickle.dumps(clean, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - the fixture returned something we cannot carry
        reason = str(error) if isinstance(error, _Unsupported) else (
            f"cannot pickle the return value ({type(error).__name__}: {error})")
        return {"name": name, "ok": False, "harness": True, "error": {
            "type": "UnsupportedResult", "mro": ["UnsupportedResult"], "traceback": "",
            "message": f"`{name}` returned {reason}"}}
    finally:
        if current is not None:
            registry[:] = current  # type: ignore[index]
    return {"name": name, "ok": True, "value": data}


def _normalize(value: Any, path: str) -> Any:
    """Detach tensors (keeping ``requires_grad``) and reject fixture-defined objects."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        plain = value.detach()
        if type(plain) is not torch.Tensor:  # a subclass such as nn.Parameter
            plain = plain.as_subclass(torch.Tensor)
        if value.requires_grad:
            plain.requires_grad_(True)
        return plain
    if type(value).__module__ == MODULE_NAME:
        raise _Unsupported(f"an instance of the fixture's own class {type(value).__qualname__} "
                           f"at {path}; return plain data (tensors, numbers, str, containers)")
    if isinstance(value, dict):
        items = [(key, _normalize(item, f"{path}[{key!r}]")) for key, item in value.items()]
        if all(new is value[key] for key, new in items):
            return value
        try:
            return type(value)(items)
        except TypeError:  # e.g. defaultdict: the type is compared, so keep it
            clone = value.copy()
            clone.update(items)
            return clone
    if isinstance(value, (list, tuple)):
        items = [_normalize(item, f"{path}[{index}]") for index, item in enumerate(value)]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        if type(value) in (list, tuple):
            return type(value)(items)
        if hasattr(value, "_make"):  # namedtuple
            return value._make(items)
        return type(value)(items)  # torch.return_types structseq
    return value


def _write(output: str, payload: dict[str, Any]) -> None:
    temporary = output + ".tmp"
    with open(temporary, "wb") as handle:
        pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, output)


def serve() -> int:
    """Fork server: import torch once, then fork one child per request (Linux only).

    Importing torch costs seconds, running most fixtures milliseconds. The
    server imports :data:`WARM_IMPORTS` (and with them numpy) and nothing else, never runs
    fixture code and never initialises CUDA; each request forks a child that
    starts from exactly that state, as a fresh interpreter would after
    ``import torch``, and then runs :func:`main`. Protocol, one JSON object a
    line: requests on stdin ``{"id", "request", "cwd", "stdout", "stderr",
    "hide_cuda"}``; replies on stdout ``{"id", "pid"}`` once forked and
    ``{"pid", "exit"}`` once reaped. End of stdin stops the server.
    """
    import select
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
    for name in WARM_IMPORTS:
        try:
            __import__(name)
        except ImportError:
            break
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return 3  # CUDA must first start in a forked child: the parent starts runs plainly
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    commands = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # nothing a library prints may reach the protocol channel
    channel.write(json.dumps({"ready": True}) + "\n")
    pending = b""
    running = 0
    while True:
        readable, _, _ = select.select([commands], [], [], 0.02 if running else 1.0)
        if readable:
            chunk = os.read(commands, 65536)
            if not chunk:
                return 0
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                command = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    channel.close()
                    os.close(commands)
                    os._exit(_forked(command))
                running += 1
                channel.write(json.dumps({"id": command["id"], "pid": pid}) + "\n")
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                running = 0
                break
            if pid == 0:
                break
            running -= 1
            exit_code = os.waitstatus_to_exitcode(status)
            channel.write(json.dumps({"pid": pid, "exit": exit_code}) + "\n")


def _forked(command: dict[str, Any]) -> int:
    """In a forked child: become a process group, take the run's files, env and cwd."""
    try:
        os.setsid()
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(command[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        if os.environ.pop(SERVER_SET_NVML, None):
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        if command["hide_cuda"]:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
            os.environ["HIP_VISIBLE_DEVICES"] = ""
        os.chdir(command["cwd"])
        code = main([sys.argv[0], command["request"]])
    except BaseException:  # noqa: BLE001 - the parent reads stderr
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(serve())
    sys.exit(main(sys.argv))
