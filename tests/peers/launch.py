"""Processes forked from one parent per test process that has imported what they run already
(multiprocessing's forkserver, preloaded): each start costs a fork instead of the ~1.5 s of CPU that
importing the MCP SDK takes in a fresh interpreter. Each is still a process of its own, with its
own sockets, file descriptors, limits and signals, killed and restarted like one.

Launching the console script itself (its interpreter start, its environment checks) is what the
tests that run `kbkit_command()` are for."""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from multiprocessing.process import BaseProcess
from pathlib import Path

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(
    [
        "peers.memory_server",
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
    from peers import memory_server

    _quiet(1, 2)  # as a subprocess with its output sent to DEVNULL
    sys.argv = ["memory_server.py", *argv, "--fd", str(sock.detach())]
    memory_server.main()


def start_memory_peer(argv: list[str], sock: socket.socket) -> BaseProcess:
    """tests/peers/memory_server.py with `argv`, serving on `sock` (bound by the caller)."""
    process = _CONTEXT.Process(target=_run_memory_peer, args=(argv, sock), daemon=True)
    process.start()
    return process


def _run_kbkit(
    argv: list[str], env: dict[str, str], stderr_path: str, open_files: tuple[int, int] | None
) -> None:
    os.environ.clear()
    os.environ.update(env)
    _quiet(0, 1)
    log = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.close(log)
    if open_files is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, open_files)
    sys.argv = ["kbkit", *argv]
    from kbkit.entry import main

    main()


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


def stop_forkserver() -> None:
    """Stop and reap this process's forkserver, if one was started: nothing outlives the run, and
    its CPU time (and its children's) is counted as the suite's. `_stop` is the stdlib's own
    way to stop it, the one its tests use."""
    from multiprocessing import forkserver

    forkserver._forkserver._stop()  # type: ignore[attr-defined]
