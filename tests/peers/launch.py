"""Peers forked from one parent per test process that has imported them already (multiprocessing's
forkserver, preloaded): each start costs a fork instead of the ~1.5 s of CPU that importing the MCP
SDK takes. Each peer is still a process of its own, killed and restarted like one."""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
from multiprocessing.process import BaseProcess

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["peers.memory_server"])


def _run_memory_peer(argv: list[str], sock: socket.socket) -> None:
    from peers import memory_server

    quiet = os.open(os.devnull, os.O_WRONLY)  # as a subprocess with its output sent to DEVNULL
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.argv = ["memory_server.py", *argv, "--fd", str(sock.detach())]
    memory_server.main()


def start_memory_peer(argv: list[str], sock: socket.socket) -> BaseProcess:
    """tests/peers/memory_server.py with `argv`, serving on `sock` (bound by the caller)."""
    process = _CONTEXT.Process(target=_run_memory_peer, args=(argv, sock), daemon=True)
    process.start()
    return process
