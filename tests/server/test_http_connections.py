"""`kbkit serve --http` under connection-level attack: stalled sockets, too many sockets, floods of
garbage, clients that stop reading, and a SIGTERM while requests are in flight.

Every test starts its own server in a subprocess (sockets, file limits and signals are what is
tested) and talks to it with raw sockets where a well-behaved client could not misbehave enough.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path

import h11
import httpx2
import pytest

from kbkit.kb.reads import MAX_MAX_TOKENS
from tests.helpers.http import (
    STOPPED,
    TEST_TOKEN,
    HttpServer,
    auth_headers,
    legacy_session,
    open_event_stream,
)
from tests.helpers.project import make_project
from tests.helpers.wait import wait_until

MODERN = "2026-07-28"
HALF_REQUEST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
"""A request head that never ends: what a slowloris client sends before it stalls."""

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc"),
    pytest.mark.processes,
]


def limited_project(tmp_path: Path, **http: int) -> Path:
    lines = "".join(f"{key} = {value}\n" for key, value in http.items())
    return make_project(tmp_path / "p", config=f'[kb]\npath = "docs"\n[server.http]\n{lines}')


def stall(port: int, count: int, payload: bytes = HALF_REQUEST) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(payload)
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset: the server aborted it
        return True


def server_sockets(server: HttpServer) -> int:
    """Sockets the server process holds open (the listening one included)."""
    fd_dir = Path(f"/proc/{server.process.pid}/fd")
    count = 0
    for entry in fd_dir.iterdir():
        with contextlib.suppress(OSError):  # closed while we looked
            count += os.readlink(entry).startswith("socket:")
    return count


def modern_tools_list(server: HttpServer) -> httpx2.Response:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    headers = {
        **auth_headers(),
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/list",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    return httpx2.post(server.url, headers=headers, json=body, timeout=30)


def log_lines(server: HttpServer) -> list[str]:
    """stderr after the boot lines, less the audit line of each MCP request the test made."""
    lines = server.stderr().splitlines()
    boot_end = next(i for i, line in enumerate(lines) if line.startswith("[kbkit] memory:"))
    return [line for line in lines[boot_end + 1 :] if not line.startswith("[kbkit] audit ")]


def test_stalled_half_requests_past_the_limit_leave_health_and_mcp_answering_and_are_closed(
    tmp_path: Path,
) -> None:
    server = HttpServer(limited_project(tmp_path, max_connections=40, client_timeout=2)).wait_ready()
    stalled: list[socket.socket] = []
    idle = server_sockets(server)  # the listening socket and the event loop's own
    try:
        stalled = stall(server.port, 60)
        wait_until(
            lambda: server_sockets(server) <= idle + 40, what="the server holds at most max_connections"
        )
        assert httpx2.get(f"{server.base}/healthz", timeout=30).json() == {"status": "ok"}
        listing = modern_tools_list(server)
        assert listing.status_code == 200 and "get_document" in listing.text
        wait_until(lambda: all(closed_by_server(s) for s in stalled), what="every stalled socket is closed")
        wait_until(lambda: server_sockets(server) <= idle, what="the server holds no stalled socket")
        assert server.stop() == STOPPED
        log = log_lines(server)
        assert len(log) <= 6, log  # one line per kind, then the count of those held back
        assert any("closed the oldest one still waiting for a request" in line for line in log)
        assert any("sent no whole request within 2 s" in line for line in log)
    finally:
        server.stop()
        for sock in stalled:
            sock.close()


def test_more_stalled_sockets_than_the_open_file_limit_never_take_the_server_down(tmp_path: Path) -> None:
    server = HttpServer(limited_project(tmp_path), open_files=(320, 320)).wait_ready()
    stalled: list[socket.socket] = []
    idle = server_sockets(server)
    try:
        stalled = stall(server.port, 400)
        assert httpx2.get(f"{server.base}/healthz", timeout=30).json() == {"status": "ok"}
        assert modern_tools_list(server).status_code == 200
        wait_until(
            lambda: server_sockets(server) <= idle + 64, what="the server holds at most 64 client sockets"
        )
        assert "limits: 64 connections" in server.stderr()
        assert "lowered to fit the open-file limit, 320" in server.stderr()
    finally:
        server.stop()
        for sock in stalled:
            sock.close()
    assert "out of system resource" not in server.stderr()
    assert len(log_lines(server)) <= 4


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(tmp_path: Path) -> None:
    server = HttpServer(limited_project(tmp_path), open_files=(512, 4096)).wait_ready()
    try:
        limits = Path(f"/proc/{server.process.pid}/limits").read_text()
        row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        assert row.split()[3:5] == ["4096", "4096"]
        assert "limits: 1000 connections, 30 s to send a request\n" in server.stderr()
    finally:
        server.stop()


def test_a_request_body_that_stalls_is_cut_off(tmp_path: Path) -> None:
    server = HttpServer(limited_project(tmp_path, client_timeout=1)).wait_ready()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TEST_TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    ).encode()
    try:
        (sock,) = stall(server.port, 1, head + b'{"jsonrpc": "2.0", ')
        wait_until(lambda: closed_by_server(sock), what="the stalled body's connection is closed")
        sock.close()
        assert httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 200
    finally:
        server.stop()


def test_a_flood_of_garbage_requests_is_logged_once_with_a_count(tmp_path: Path) -> None:
    server = HttpServer(limited_project(tmp_path)).wait_ready()
    try:
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 400")
        assert httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 200
    finally:
        server.stop()
    garbage = [line for line in log_lines(server) if "Invalid HTTP request" in line]
    assert 2 <= len(garbage) <= 6, garbage  # the first line, then a count per 10 s (a slow machine: more)
    assert sum(_count(line) for line in garbage) == 200


def _count(line: str) -> int:
    """1 for a printed record, N for a line saying `[N more like this ...]`."""
    if "more like this" not in line:
        return 1
    return int(line.rsplit("[", 1)[1].split()[0])


def test_a_client_that_stops_reading_its_replies_is_cut_off(tmp_path: Path) -> None:
    big = (
        "word " * 180_000
    )  # 80 KB a reply (the largest read); 120 of them, pipelined, outgrow the kernel buffers
    root = limited_project(tmp_path, client_timeout=1)
    (root / "docs" / "big.md").write_text(big)
    server = HttpServer(root).wait_ready()
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "get_document",
                "arguments": {"path": "big.md", "max_tokens": MAX_MAX_TOKENS},
                "_meta": meta,
            },
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TEST_TOKEN}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Mcp-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: get_document\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.connect(("127.0.0.1", server.port))
        sock.sendall((head + body) * 120)
        wait_until(
            lambda: "left its reply unread for 1 s" in server.stderr(), what="the unread reply is given up"
        )
        assert httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 200
    finally:
        sock.close()
        server.stop()


class HeldRequest:
    """A request whose head has reached the server's handler (it asked for the body with
    `100 Continue`) and whose body is sent only when the test says so: in flight, for certain."""

    def __init__(self, server: HttpServer, headers: dict[str, str], body: dict) -> None:
        self.body = json.dumps(body).encode()
        self.conn = h11.Connection(h11.CLIENT)
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        head = [("host", f"127.0.0.1:{server.port}"), *headers.items()]
        head += [("content-length", str(len(self.body))), ("expect", "100-continue")]
        self.sock.sendall(self.conn.send(h11.Request(method="POST", target="/mcp", headers=head)))
        event = self._next()
        assert isinstance(event, h11.InformationalResponse) and event.status_code == 100, event

    def finish(self) -> tuple[int, bytes]:
        self.sock.sendall(self.conn.send(h11.Data(data=self.body)) + self.conn.send(h11.EndOfMessage()))
        response, chunks = self._next(), []
        while not isinstance(event := self._next(), h11.EndOfMessage):
            chunks.append(bytes(event.data))
        self.sock.close()
        return response.status_code, b"".join(chunks)

    def _next(self) -> h11.Event:
        while (event := self.conn.next_event()) is h11.NEED_DATA:
            self.conn.receive_data(self.sock.recv(65536))
        return event


def _rpc_result(status: int, body: bytes) -> dict:
    assert status == 200, body
    text = body.decode()
    if text.lstrip().startswith("{"):
        return json.loads(text)["result"]
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    assert data, f"no event in the response: {text!r}"
    return json.loads(data[-1])["result"]


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return True
    return False


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
def test_sigterm_answers_every_request_in_flight_and_ends_notification_streams(
    tmp_path: Path, era: str
) -> None:
    docs = {f"doc{i}.md": f"# Document {i}\n\nThe body of document {i}.\n" for i in range(4)}
    server = HttpServer(make_project(tmp_path / "p", docs)).wait_ready()
    streams: list[socket.socket] = []
    try:
        if era == MODERN:
            headers = {
                **auth_headers(),
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": MODERN,
                "mcp-method": "tools/call",
                "mcp-name": "get_document",
            }
            meta = {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                }
            }
        else:
            headers, meta = legacy_session(server.url), {}
            streams.append(open_event_stream(server.port, headers))  # open for the whole shutdown
        held = [
            HeldRequest(
                server,
                headers,
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "get_document", "arguments": {"path": f"doc{i}.md"}, **meta},
                },
            )
            for i in range(4)
        ]
        server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: _refused(server.port), what="the server stops accepting connections")
        for i, request in enumerate(held):
            result = _rpc_result(*request.finish())
            assert f"The body of document {i}." in json.dumps(result), result
        assert server.process.wait(timeout=60) == 0
    finally:
        server.stop()
        for stream in streams:
            stream.close()
    log = server.stderr()
    assert "stopped: in-flight requests finished, index closed" in log
    assert "graceful shutdown exceeded" not in log  # the notification stream did not hold the shutdown up


def test_past_the_limit_with_every_connection_busy_a_newcomer_gets_503_and_one_log_line(
    tmp_path: Path,
) -> None:
    server = HttpServer(limited_project(tmp_path, max_connections=2)).wait_ready()
    streams: list[socket.socket] = []
    try:
        for _ in range(2):  # a notification stream is a request being served for as long as it is open
            streams.append(open_event_stream(server.port, legacy_session(server.url)))
        # A connection the sessions were opened on may linger a moment: a newcomer closes that one
        # (it waits for a request) rather than being refused. Once only the streams are left: 503.
        wait_until(lambda: _health_answer(server).startswith(b"HTTP/1.1 503"), what="a newcomer is refused")
        for _ in range(2):
            assert _health_answer(server).startswith(b"HTTP/1.1 503 Service Unavailable")
        for stream in streams:
            stream.close()
        wait_until(
            lambda: httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 200,
            what="room again once the streams end",
        )
    finally:
        server.stop()
        for stream in streams:
            stream.close()
    refused = [line for line in log_lines(server) if "refused a new one with 503" in line]
    assert len(refused) == 2 and "[2 more like this" in refused[1], refused


def _health_answer(server: HttpServer) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return sock.recv(4096)
