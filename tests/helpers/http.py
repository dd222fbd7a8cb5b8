"""`kbkit serve --http` in a process of its own, and what talks to it: bearer headers, raw 2025-11-25
sessions and event streams, the real mcp client over streamable HTTP."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

from mcp import Client

from kbkit.errors import ExitCode
from tests.helpers.serve import kbkit_command
from tests.peers.launch import Forked

JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A 2025-11-25 initialize request, as a raw HTTP body."""

TEST_TOKEN = "test-token-0123456789abcdef"

STOPPED = ExitCode.INTERRUPTED
"""What `HttpServer.stop` returns after a clean stop: SIGINT is Ctrl-C, and Ctrl-C exits 130."""


_LISTENING = re.compile(r'(?:\] |"message":")http: http://[^\s"]+:(\d+)/mcp ')
"""The boot line naming the port, as text or (`--log-format json`) as a JSON status line."""


class HttpServer:
    """`kbkit serve --http` in a process of its own on loopback: forked from a preloaded parent
    (tests/peers/launch.py), or with `exec_script` the console script started as agents start it.

    Without `port` the server binds port 0 and reports the port it got, so no free port is guessed
    (and raced for) beforehand; with `port` (a restart on the same address) a bind that fails
    because the port is still held is retried."""

    def __init__(
        self,
        root: Path,
        *,
        env: Mapping[str, str] | None = None,
        args: tuple[str, ...] = (),
        token: str | None = TEST_TOKEN,
        port: int | None = None,
        open_files: tuple[int, int] | None = None,
        exec_script: bool = False,
    ) -> None:
        """`open_files`: the (soft, hard) RLIMIT_NOFILE the server starts under."""
        self.root = root
        self._exec_script = exec_script
        self.fixed_port = port
        self.port = port or 0
        self.log_path = root / "http-stderr.log"
        self._args = args
        self._env = _child_env(token, env)
        self._open_files = open_files
        self._log: IO[str] | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self) -> None:
        if self._log is not None:
            self._log.close()
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        argv = ["serve", "--http", "--root", str(self.root), "--port", str(self.fixed_port or 0), *self._args]
        self.process: subprocess.Popen[bytes] | Forked
        if not self._exec_script:
            self.process = Forked(argv, env=self._env, stderr_path=self.log_path, open_files=self._open_files)
            return
        self.process = subprocess.Popen(
            [*kbkit_command(), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=self._env,
            preexec_fn=_limiting_open_files(self._open_files),
        )

    def wait_ready(self, timeout: float = 60.0) -> HttpServer:
        """Wait (bounded) until this server, and not another on the same port, answers /healthz."""
        import httpx2

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "already in use" in self.stderr() and self.fixed_port:
                    time.sleep(0.2)  # the port's previous holder is still letting go of it
                    self._start()
                    continue
                raise RuntimeError(f"kbkit serve --http exited: {self.stderr()}")
            if not self.fixed_port:
                found = _LISTENING.search(self.stderr())
                if found is None:
                    time.sleep(0.05)
                    continue
                self.port = int(found.group(1))
            try:
                if httpx2.get(f"{self.base}/healthz", timeout=5).status_code == 200:
                    return self
            except httpx2.TransportError:
                time.sleep(0.05)
        raise TimeoutError(f"kbkit serve --http did not answer /healthz: {self.stderr()}")

    def stderr(self) -> str:
        return self.log_path.read_text()  # the child writes to the file itself; nothing is buffered here

    def stop(self) -> int:
        """Stop the server and return its exit code (STOPPED after a clean stop). SIGINT, the stop
        without the drain SIGTERM starts (docs/adr/0029), so no test waits out `drain_seconds`; the
        drain's own tests, and those about SIGTERM, send it themselves."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
        code = self.process.returncode
        assert code is not None
        return int(code)


def _limiting_open_files(limits: tuple[int, int] | None) -> Callable[[], None] | None:
    """A preexec_fn that sets RLIMIT_NOFILE to `limits` in the child, or None to leave it."""
    if limits is None:
        return None

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, limits)

    return limit


def _child_env(token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("MCP_TOKEN", "MCP_ALLOW_ANONYMOUS")}
    if token is not None:
        env["MCP_TOKEN"] = token
    return {**env, **(extra or {})}


def auth_headers(token: str = TEST_TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def legacy_session(url: str) -> dict[str, str]:
    """A 2025-11-25 session opened over raw HTTP (initialize, initialized): the headers its requests carry."""
    import httpx2

    headers = {
        **auth_headers(),
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    init = httpx2.post(
        url,
        headers=headers,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        timeout=30,
    )
    session = {
        **headers,
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(url, headers=session, json=initialized, timeout=30).status_code == 202
    return session


def open_event_stream(
    port: int, session: Mapping[str, str], receive_buffer: int | None = None
) -> socket.socket:
    """The session's notification stream (GET /mcp) on a raw socket, its response head read: open."""
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    get = {**session, "accept": "text/event-stream", "host": f"127.0.0.1:{port}"}
    sock.sendall(
        ("GET /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in get.items()) + "\r\n").encode()
    )
    assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    return sock


@asynccontextmanager
async def http_client(
    url: str, mode: str = "legacy", headers: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """The real mcp client over streamable HTTP, with the bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=dict(headers or auth_headers()), timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client
