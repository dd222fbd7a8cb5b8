"""tests/peers/memory_server.py as an upstream memory service on a loopback port of its own."""

from __future__ import annotations

import socket
from multiprocessing.process import BaseProcess
from pathlib import Path

from tests.helpers.paths import PEERS
from tests.helpers.wait import wait_until
from tests.peers.launch import start_memory_peer

KEY = "hsk_test_key_0123456789"
PEER = PEERS / "memory_server.py"
KB_TOOLS = ["search", "get_document"]
MEMORY_TOOLS = ["retain", "recall", "reflect"]


class MemoryUpstream:
    """tests/peers/memory_server.py on a loopback port of its own, startable and killable at will.

    The port is bound here and the socket handed to the peer, so its address is known before it
    starts and no other process can take it in between."""

    def __init__(self, tmp: Path, *, slow_recall: float = 0.0, extra: tuple[str, ...] = ()) -> None:
        self._socket: socket.socket | None = self._bind(0)
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp/{{bank}}/"
        self.header_log = tmp / "upstream-headers.log"
        self.slow_recall = slow_recall
        self.extra = extra
        self.process: BaseProcess | None = None

    @staticmethod
    def _bind(port: int) -> socket.socket:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        return sock

    def _rebind(self) -> socket.socket | None:
        try:
            return self._bind(self.port)
        except OSError:  # the killed peer's socket is still being let go of
            return None

    def start(self) -> MemoryUpstream:
        if self._socket is None:  # a restart on the same port
            self._socket = wait_until(self._rebind, what=f"port {self.port} to be free again")
        assert self._socket is not None
        self.process = start_memory_peer(
            [
                "--key",
                KEY,
                "--slow-recall",
                str(self.slow_recall),
                "--header-log",
                str(self.header_log),
                *self.extra,
            ],
            self._socket,
        )
        self._socket.close()  # the peer holds its own copy; once it dies the port refuses connections
        self._socket = None
        wait_until(self._listening, timeout=60, what="the memory peer to listen")
        return self

    def _listening(self) -> bool:
        assert self.process is not None
        if self.process.exitcode is not None:
            raise RuntimeError(f"the memory peer exited with {self.process.exitcode}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
            return True
        except OSError:
            return False

    def kill(self) -> None:
        if self.process and self.process.exitcode is None:
            self.process.kill()
            self.process.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
            self._socket = None
