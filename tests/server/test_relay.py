"""`kbkit connect`, driven as an agent drives it: JSON-RPC lines on its stdin, answers on its stdout,
its stderr read as the agent's log. A server that is missing, refusing or dying never makes it hang,
die or print a traceback."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http import TEST_TOKEN, HttpServer
from tests.helpers.project import make_project
from tests.helpers.wait import closed_port, wait_until
from tests.peers.launch import forked_kbkit

DEADLINE = 60.0
"""Generous: every wait here is bounded, none is a timing assertion."""

INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "agent", "version": "1"},
}
SEARCH = {"name": "search", "arguments": {"query": "guard sequence"}}


class Relay:
    """`kbkit connect URL --root ROOT` as an agent starts it: its own environment, stdin/stdout pipes."""

    def __init__(self, url: str, root: Path, *, env: dict[str, str] | None = None) -> None:
        self.stderr_path = root / f"relay-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        # The member's own kbkit.local.toml names the server: kbkit connect sends a token nowhere else.
        (root / "kbkit.local.toml").write_text(f'[sync]\nremote_url = "{url}"\n', encoding="utf-8")
        base = {k: v for k, v in os.environ.items() if k != "MCP_TOKEN"}
        self.process = subprocess.Popen(
            [*forked_kbkit(), "connect", url, "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**base, **(env or {})},
            cwd="/",
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._ids = iter(range(1, 10**6))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.decode("utf-8"))
        self._lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and wait (bounded) for its answer, skipping notifications."""
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        deadline = time.monotonic() + DEADLINE
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(f"the relay exited without answering {method}: {self.stderr()}")
            message = json.loads(line)
            if message.get("id") == request_id:
                return message
        raise AssertionError(f"no answer to {method} within {DEADLINE} s: {self.stderr()}")

    def handshake(self) -> dict[str, Any]:
        answer = self.request("initialize", INITIALIZE)
        if "result" in answer:
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close_stdin_and_wait(self) -> tuple[int, float]:
        """Close stdin as an agent does on exit; the exit code and how long the relay took to go."""
        assert self.process.stdin is not None
        started = time.monotonic()
        self.process.stdin.close()
        code = self.process.wait(timeout=DEADLINE)
        return code, time.monotonic() - started

    def finish(self, case: str) -> float:
        """Close stdin; the relay must exit 0 with no traceback. Returns (and shows) how long it took."""
        code, seconds = self.close_stdin_and_wait()
        print(f"kbkit connect exited {seconds:.2f} s after stdin closed ({case})")  # noqa: T201
        assert code == 0, self.stderr()
        assert "Traceback" not in self.stderr()
        return seconds

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")

    def lines(self) -> list[str]:
        return self.stderr().splitlines()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=DEADLINE)
        self._stderr.close()


@pytest.fixture
def served(tmp_path: Path) -> Path:
    return make_project(tmp_path / "served")


@pytest.fixture
def server(served: Path):
    running = HttpServer(served).wait_ready()
    yield running
    running.stop()


@pytest.fixture
def client_project(tmp_path: Path) -> Path:
    """The agent's project: its .env.local holds the right token (tests change that as they need)."""
    root = make_project(tmp_path / "client")
    (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n")
    return root


@pytest.fixture
def start_relay(client_project: Path):
    started: list[Relay] = []

    def start(url: str, env: dict[str, str] | None = None) -> Relay:
        started.append(Relay(url, client_project, env=env))
        return started[-1]

    yield start
    for relay in started:
        relay.close()


def found_paths(answer: dict[str, Any]) -> list[str]:
    assert "result" in answer, answer
    return [hit["path"] for hit in answer["result"]["structuredContent"]["results"]]


def search(relay: Relay) -> list[str]:
    """The search's hits, asked again while it finds nothing (a server may still be indexing at start)."""
    return wait_until(lambda: found_paths(relay.request("tools/call", SEARCH)), DEADLINE, 0.1, "a search hit")


@pytest.mark.processes
def test_the_relay_exits_soon_after_stdin_closes_and_says_nothing(server: HttpServer, start_relay) -> None:
    relay = start_relay(server.url)
    assert "result" in relay.handshake()
    assert search(relay)[0] == "adr/0001-guards.md"
    relay.finish("live server")
    assert relay.stderr() == ""


@pytest.mark.processes
def test_with_nothing_listening_initialize_gets_a_clear_error_and_stdin_closing_ends_it(start_relay) -> None:
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        relay = start_relay(url)
        message = relay.handshake()["error"]["message"]
        assert url in message and "connection refused" in message and "tries again" in message
        relay.finish("nothing listening")
    lines = relay.lines()
    assert len(lines) == 1 and url in lines[0] and "connection refused" in lines[0], lines


@pytest.mark.processes
@pytest.mark.parametrize("source", ["env-file", "environment"])
def test_a_refused_token_is_one_line_and_an_error_saying_where_the_token_came_from(
    server: HttpServer, client_project: Path, start_relay, source: str
) -> None:
    wrong = "not-the-token-0123456789"
    if source == "env-file":
        (client_project / ".env.local").write_text(f"MCP_TOKEN={wrong}\n")
        relay, where = start_relay(server.url), str(client_project / ".env.local")
    else:
        relay, where = start_relay(server.url, env={"MCP_TOKEN": wrong}), "the environment"
    for _ in range(2):  # an agent retrying: the agent is told each time, the log once
        message = relay.handshake()["error"]["message"]
        assert "refused the token" in message and f"MCP_TOKEN from {where}" in message
        assert wrong not in message
    relay.finish("after a refused token")
    lines = relay.lines()
    assert len(lines) == 1, lines
    assert "refused the token" in lines[0] and where in lines[0] and server.url in lines[0]
    assert wrong not in relay.stderr()


@pytest.mark.processes
def test_no_token_anywhere_is_said_at_start_and_in_the_refusal(
    server: HttpServer, client_project: Path, start_relay
) -> None:
    (client_project / ".env.local").unlink()
    relay = start_relay(server.url)
    message = relay.handshake()["error"]["message"]
    assert "none was sent" in message and str(client_project / ".env.local") in message
    relay.finish("no token")
    lines = relay.lines()
    assert len(lines) == 2 and "sending no token" in lines[0] and "none was sent" in lines[1], lines


@pytest.mark.processes
def test_a_server_that_starts_later_is_reached_at_the_next_request(served: Path, start_relay) -> None:
    with closed_port() as port:  # held until the server takes it
        relay = start_relay(f"http://127.0.0.1:{port}/mcp")
        assert "connection refused" in relay.handshake()["error"]["message"]
    server = HttpServer(served, port=port).wait_ready()
    try:
        assert "result" in relay.handshake()
        assert search(relay)[0] == "adr/0001-guards.md"
        relay.finish("after the server came up")
    finally:
        server.stop()
    lines = relay.lines()
    assert len(lines) == 2 and "cannot reach" in lines[0] and "reached" in lines[1], lines


@pytest.mark.processes
def test_a_server_that_dies_is_one_line_and_its_successor_serves_the_same_session(
    server: HttpServer, served: Path, start_relay
) -> None:
    relay = start_relay(server.url)
    assert "result" in relay.handshake()
    assert search(relay)
    server.process.kill()  # a crash: no graceful shutdown
    server.stop()
    failed = relay.request("tools/call", SEARCH)["error"]["message"]
    assert server.url in failed and "tries again" in failed
    successor = HttpServer(served, port=server.port).wait_ready()
    try:
        # the agent does not initialize again: the relay replays its handshake
        assert search(relay)[0] == "adr/0001-guards.md"
        assert "result" in relay.request("tools/list")
        relay.finish("after the server came back")
    finally:
        successor.stop()
    lines = relay.lines()
    assert len(lines) == 2, lines  # one line for the outage, whatever failed first; one when back
    assert server.url in lines[0] and ("lost the connection" in lines[0] or "cannot reach" in lines[0])
    assert lines[1].endswith(f"reached {server.url} again")


@pytest.mark.processes
def test_a_wrong_url_is_named_with_the_http_status(server: HttpServer, start_relay) -> None:
    wrong = server.url.replace("/mcp", "/nope")
    relay = start_relay(wrong)
    message = relay.handshake()["error"]["message"]
    assert wrong in message and "HTTP 40" in message
    relay.finish("after an HTTP error")
    assert len(relay.lines()) == 1


@pytest.mark.processes
def test_a_line_that_is_not_json_rpc_is_skipped_with_one_line_and_the_relay_goes_on(
    server: HttpServer, start_relay
) -> None:
    relay = start_relay(server.url)
    assert relay.process.stdin is not None
    relay.process.stdin.write(b"this is not json\n")
    relay.process.stdin.flush()
    assert "result" in relay.handshake()
    relay.finish("after a bad line")
    assert len(relay.lines()) == 1 and "not a JSON-RPC message" in relay.lines()[0]


class SilentServer:
    """A port that accepts connections and never answers: a hung server."""

    def __init__(self) -> None:
        import socket

        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/mcp"
        self.held: list[Any] = []
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self._socket.settimeout(0.2)
        while not self._stop.is_set():
            try:
                self._take(self._socket.accept()[0])
            except OSError:
                continue

    def _take(self, connection: Any) -> None:
        self.held.append(connection)

    def close(self) -> None:
        self._stop.set()
        for connection in self.held:
            connection.close()
        self._socket.close()


class BreakingServer(SilentServer):
    """Answers every request with the start of an event stream, then drops the connection."""

    def _take(self, connection: Any) -> None:
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        connection.close()


@pytest.mark.processes
def test_stdin_closing_ends_the_relay_even_while_a_hung_server_holds_a_request(start_relay) -> None:
    with closing(SilentServer()) as hung:
        relay = start_relay(hung.url)
        relay.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
        wait_until(lambda: hung.held, DEADLINE, what=f"the request to be held: {relay.stderr()}")
        relay.finish("a request held by a hung server")


@pytest.mark.processes
def test_a_server_that_drops_the_answer_midway_is_named_and_said_once(start_relay) -> None:
    with closing(BreakingServer()) as breaking:
        relay = start_relay(breaking.url)
        for _ in range(2):
            message = relay.handshake()["error"]["message"]
            assert f"lost the connection to {breaking.url} before the answer came" in message, message
        relay.finish("after answers broke off")
    lines = relay.lines()
    assert len(lines) == 1 and breaking.url in lines[0], lines


@pytest.mark.processes
def test_a_url_that_is_not_http_is_one_line_and_exit_code_2(client_project: Path) -> None:
    done = subprocess.run(
        [*forked_kbkit(), "connect", "kb.internal/mcp", "--root", str(client_project)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "'kb.internal/mcp' is not an http(s) URL" in done.stderr


def test_each_connection_failure_is_named_in_a_few_plain_words() -> None:
    import errno
    import socket
    import ssl

    import httpx2

    from kbkit.server.relay import _cause

    def failed(cause: BaseException) -> httpx2.ConnectError:
        try:
            raise httpx2.ConnectError("All connection attempts failed") from OSError("wrapped")
        except httpx2.ConnectError as exc:
            exc.__cause__.__cause__ = cause  # type: ignore[union-attr]
            return exc

    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 9)")
    assert _cause(failed(refused)) == "connection refused"
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert _cause(failed(unknown)) == "name or service not known"
    tls = ssl.SSLCertVerificationError(1, "certificate verify failed")
    tls.verify_message = "self-signed certificate"
    assert _cause(failed(tls)) == "TLS: self-signed certificate"
    assert _cause(httpx2.ReadTimeout("")) == "timed out"
    assert _cause(httpx2.RemoteProtocolError("")) == "the server closed the connection"
