"""Processes forked from one parent per test process that has imported what they run already
(multiprocessing's forkserver, preloaded): each start costs a fork instead of the ~1.5 s of CPU that
importing the MCP SDK takes in a fresh interpreter. Each is still a process of its own, with its
own sockets, file descriptors, limits and signals, killed and restarted like one.

Two ways in: `Forked` (HTTP servers, with stdin and stdout on /dev/null) and the memory peer are
started by the test itself; `forked_kbkit()` is a command line for whoever starts a stdio server
or a command (the SDK's stdio_client, the Inspector, subprocess.run), whose launcher hands its own
pipes, environment and folder to the process forked here (tests/peers/stdio_launcher.py).

Launching the console script itself (its interpreter start, PATH) is what the tests that run
`kbkit_command()` are for."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import multiprocessing
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from multiprocessing import connection, reduction
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(
    [
        "tests.peers.memory_server",
        "kbkit.cli",
        "kbkit.diagnostics",
        "kbkit.server.factory",
        "kbkit.server.http",
        "kbkit.server.stdio",
    ]
)


def _quiet(*fds: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in fds:
        os.dup2(null, fd)


def _run_memory_peer(argv: list[str], sock: socket.socket) -> None:
    from tests.peers import memory_server

    _quiet(1, 2)  # as a subprocess with its output sent to DEVNULL
    sys.argv = ["memory_server.py", *argv, "--fd", str(sock.detach())]
    memory_server.main()


def start_memory_peer(argv: list[str], sock: socket.socket) -> BaseProcess:
    """tests/peers/memory_server.py with `argv`, serving on `sock` (bound by the caller)."""
    process = _CONTEXT.Process(target=_run_memory_peer, args=(argv, sock), daemon=True)
    process.start()
    return process


def _kbkit_main(argv: list[str], env: dict[str, str]) -> None:
    """`kbkit ARGS` in this forked child with `env` as its whole environment, ending as an
    interpreter ends: `atexit` handlers run (a forked child would skip them)."""
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["kbkit", *argv]
    from kbkit.entry import main

    try:
        main()
    finally:
        atexit._run_exitfuncs()


def _run_kbkit(
    argv: list[str], env: dict[str, str], stderr_path: str, open_files: tuple[int, int] | None
) -> None:
    _quiet(0, 1)
    log = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.close(log)
    if open_files is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, open_files)
    _kbkit_main(argv, env)


class Forked:
    """`kbkit ARGS` in a forked process, with the part of subprocess.Popen's interface tests use:
    stdin and stdout on /dev/null, stderr appended to `stderr_path`, the environment `env` only."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        stderr_path: Path,
        open_files: tuple[int, int] | None = None,
    ) -> None:
        self._process = _CONTEXT.Process(
            target=_run_kbkit, args=(argv, dict(env), str(stderr_path), open_files), daemon=True
        )
        self._process.start()
        self.args = ["kbkit", *argv]

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _PassedFd:
    """A file descriptor handed to a forked process as it starts (pickled the way multiprocessing
    hands sockets over: the forkserver passes the descriptor itself)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return (_PassedFd._received, (reduction.DupFd(self.fd),))

    @staticmethod
    def _received(dup: Any) -> int:
        return int(dup.detach())


def _run_stdio(argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> None:
    """`kbkit ARGS` on the launcher's stdin, stdout and stderr, in its environment and folder."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]  # clear of 0-2 before taking them
    for target, fd in enumerate(high):
        os.dup2(fd, target)
        os.close(fd)
    for fd in fds:
        os.close(fd)
    os.chdir(cwd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own stdin
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
    _kbkit_main(argv, env)


class _LaunchService:
    """Listens on a Unix socket for tests/peers/stdio_launcher.py, forks `kbkit ARGS` for each
    launcher onto its pipes, and tells it the pid, then the exit code. A launcher that goes away
    (killed) takes its server with it."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="kbkit-launch-")
        self.path = os.path.join(self.folder, "socket")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(64)
        threading.Thread(target=self._accept, name="kbkit-launch", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed: the run is over
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            request = json.loads(conn.makefile("rb").readline())
            try:
                process = _CONTEXT.Process(
                    target=_run_stdio,
                    args=(request["argv"], request["env"], request["cwd"], [_PassedFd(fd) for fd in fds]),
                    daemon=True,
                )
                process.start()
            finally:
                for fd in fds:
                    os.close(fd)
            conn.sendall(f"{process.pid}\n".encode())
            if process.sentinel not in connection.wait([process.sentinel, conn]):  # the launcher is gone
                process.kill()
            process.join()
            with contextlib.suppress(OSError):  # the launcher was killed
                conn.sendall(f"{process.exitcode}\n".encode())

    def close(self) -> None:
        self._listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_SERVICE: _LaunchService | None = None
_SERVICE_LOCK = threading.Lock()
LAUNCHER = Path(__file__).with_name("stdio_launcher.py")


def forked_kbkit() -> list[str]:
    """A command line that runs `kbkit` forked from the preloaded forkserver, on the pipes of
    whoever starts it: append kbkit's arguments. For every test but those about the launch itself
    (the console script, its interpreter, PATH), which run `kbkit_command()`."""
    global _SERVICE
    with _SERVICE_LOCK:
        if _SERVICE is None:
            _SERVICE = _LaunchService()
        return [sys.executable, "-I", "-S", str(LAUNCHER), _SERVICE.path]


def stop_forkserver() -> None:
    """Stop and reap this process's forkserver, if one was started: nothing outlives the run, and
    its CPU time (and its children's) is counted as the suite's. `_stop` is the stdlib's own
    way to stop it, the one its tests use."""
    from multiprocessing import forkserver

    if _SERVICE is not None:
        _SERVICE.close()
    forkserver._forkserver._stop()  # type: ignore[attr-defined]
