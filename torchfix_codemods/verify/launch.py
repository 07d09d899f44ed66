"""Start fixture processes: a fresh interpreter each time, or a fork of one that imported torch.

Both give every run its own process, started from a state in which no fixture
code has run and CUDA is not initialised. They differ in cost: a fresh
interpreter spends seconds importing torch before a fixture that runs for
milliseconds. On Linux the default is therefore a fork server (``_child.py
--serve``): one interpreter imports torch once per verifying process and
forks a child per run, which is how PyTorch's own DataLoader starts workers.
Set ``TORCHFIX_VERIFY_START=spawn`` to start every run as a fresh
``sys.executable`` instead (the only method elsewhere, and the fallback when
the server cannot start).

The environment is fixed when a process starts (the server's at its start),
see :func:`child_env`.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

CHILD = Path(__file__).with_name("_child.py")
START_ENV = "TORCHFIX_VERIFY_START"
_READY_TIMEOUT = 180.0


def child_env(hide_cuda: bool) -> dict[str, str]:
    """The environment of every run: reproducible hashing and cuBLAS, optionally no GPU."""
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    env.setdefault("TORCHINDUCTOR_DETERMINISTIC", "1")
    if hide_cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["HIP_VISIBLE_DEVICES"] = ""
    return env


def start_method() -> str:
    """``fork`` (Linux default) or ``spawn``; ``TORCHFIX_VERIFY_START`` overrides."""
    chosen = os.environ.get(START_ENV, "").strip().lower()
    if chosen in ("fork", "spawn"):
        return chosen if chosen == "spawn" or sys.platform == "linux" else "spawn"
    return "fork" if sys.platform == "linux" else "spawn"


class ServerDown(RuntimeError):
    """The fork server is gone; the caller starts the run the plain way."""


class _Run:
    def __init__(self) -> None:
        self.forked = threading.Event()
        self.exited = threading.Event()
        self.pid: int | None = None
        self.exit: int | None = None


class ForkServer:
    """One ``_child.py --serve`` process and a thread reading its replies."""

    def __init__(self) -> None:
        env = child_env(False)
        if "PYTORCH_NVML_BASED_CUDA_CHECK" not in env:
            # torch.cuda.is_available() without initialising the driver, should an import
            # in the server ask; forked runs drop the setting again (see _child.py).
            env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
            env["TORCHFIX_VERIFY_SERVER_SET_NVML"] = "1"
        self._process = subprocess.Popen(
            [sys.executable, str(CHILD), "--serve"],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self._lock = threading.Lock()
        self._next_id = 0
        self._by_id: dict[int, _Run] = {}
        self._by_pid: dict[int, _Run] = {}
        self._ready = threading.Event()
        self.dead = False
        self._reader = threading.Thread(target=self._read, name="tfc-verify-forkserver",
                                        daemon=True)
        self._reader.start()
        if not self._ready.wait(_READY_TIMEOUT) or self.dead:
            self.close()
            raise ServerDown("the fork server did not start")

    def _read(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            message = json.loads(raw)
            with self._lock:
                if "ready" in message:
                    self._ready.set()
                elif "id" in message:
                    run = self._by_id.pop(message["id"], None)
                    if run is None:
                        continue
                    run.pid = message["pid"]
                    self._by_pid[run.pid] = run
                    run.forked.set()
                elif "exit" in message:
                    run = self._by_pid.pop(message["pid"], None)
                    if run is None:
                        continue
                    run.exit = message["exit"]
                    run.exited.set()
        with self._lock:  # end of output: the server is gone, wake every waiter
            self.dead = True
            self._ready.set()
            for run in list(self._by_id.values()) + list(self._by_pid.values()):
                run.forked.set()
                run.exited.set()

    def run(self, request: Path, cwd: Path, stdout: Path, stderr: Path, *,
            hide_cuda: bool, timeout: float) -> int | None:
        """Fork one run; its exit code, or None when it was killed for the timeout."""
        run = _Run()
        with self._lock:
            if self.dead:
                raise ServerDown("the fork server is gone")
            self._next_id += 1
            self._by_id[self._next_id] = run
            line = json.dumps({"id": self._next_id, "request": str(request), "cwd": str(cwd),
                               "stdout": str(stdout), "stderr": str(stderr),
                               "hide_cuda": hide_cuda}) + "\n"
            try:
                assert self._process.stdin is not None
                self._process.stdin.write(line.encode())
                self._process.stdin.flush()
            except OSError:
                self.dead = True
                raise ServerDown("the fork server is gone") from None
        run.forked.wait()
        if run.pid is None:
            raise ServerDown("the fork server died before forking")
        if run.exited.wait(timeout):
            if run.exit is None:
                raise ServerDown("the fork server died during a run")
            return run.exit
        try:
            os.killpg(run.pid, signal.SIGKILL)  # the child called setsid(): pgid == pid
        except (ProcessLookupError, PermissionError):
            pass
        run.exited.wait(10)
        return None

    def close(self) -> None:
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()
        # The reader sees end of output once the server is gone; its pipe is then closed
        # here, not left to the interpreter's exit (a ResourceWarning after every test run).
        self._reader.join(5)
        if self._process.stdout is not None and not self._reader.is_alive():
            self._process.stdout.close()


_server: ForkServer | None = None
_server_owner: int | None = None
_server_failed = False
_server_lock = threading.Lock()


def fork_server() -> ForkServer | None:
    """This process's fork server, started on first use; None where it cannot run."""
    global _server, _server_owner, _server_failed
    with _server_lock:
        if _server_owner != os.getpid():  # a forked copy of the parent gets its own server
            _server, _server_owner, _server_failed = None, os.getpid(), False
        if _server is not None and not _server.dead:
            return _server
        if _server_failed:
            return None
        try:
            _server = ForkServer()
        except (OSError, ServerDown):
            _server_failed = True
            return None
        atexit.register(_server.close)
        return _server


def launch(request: Path, cwd: Path, stdout: Path, stderr: Path, *,
           hide_cuda: bool, timeout: float) -> int | None:
    """Run ``_child.py request`` in its own process; exit code, or None on timeout."""
    if start_method() == "fork":
        server = fork_server()
        if server is not None:
            try:
                return server.run(request, cwd, stdout, stderr, hide_cuda=hide_cuda,
                                  timeout=timeout)
            except ServerDown:
                pass  # start this run the plain way
    return spawn(request, cwd, stdout, stderr, hide_cuda=hide_cuda, timeout=timeout)


def spawn(request: Path, cwd: Path, stdout: Path, stderr: Path, *,
          hide_cuda: bool, timeout: float) -> int | None:
    """A fresh ``sys.executable``, killed with its whole process group on timeout."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, str(CHILD), str(request)],
            cwd=cwd, env=child_env(hide_cuda), stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=os.name == "posix",
        )
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                if os.name == "posix":
                    os.killpg(process.pid, signal.SIGKILL)
                else:  # pragma: no cover - no process groups on Windows
                    process.kill()
            except ProcessLookupError:
                pass
            process.wait()
            return None
