"""`kbkit serve --http`: the same server behind a token, a Host/Origin gate and limits.

The contract test here and in tests/server/test_stdio.py pins the exact tool list over both transports
and both protocol eras: when the tool surface changes, these are the tests that notice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from tests.helpers.http import (
    INITIALIZE,
    JSON_HEADERS,
    STOPPED,
    TEST_TOKEN,
    HttpServer,
    auth_headers,
    http_client,
)
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, serve_stdio
from tests.helpers.wait import eventually, wait_until
from tests.peers.launch import forked_kbkit

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

EXPECTED_TOOLS = ["search", "get_document"]
MODERN = "2026-07-28"


def modern_meta() -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "contract-test", "version": "1"},
    }


def sse_json(response: httpx2.Response) -> dict:
    """The JSON-RPC message in a response, whether sent as JSON or as one SSE event."""
    import json

    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_the_2025_handshake_over_raw_http(http_server: HttpServer) -> None:
    headers = {**auth_headers(), **JSON_HEADERS}
    init = httpx2.post(http_server.url, headers=headers, json=INITIALIZE)
    assert init.status_code == 200
    assert sse_json(init)["result"]["protocolVersion"] == "2025-11-25"
    session = {
        **headers,
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = httpx2.post(
        http_server.url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert initialized.status_code == 202
    tools = sse_json(
        httpx2.post(
            http_server.url, headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        )
    )
    assert [tool["name"] for tool in tools["result"]["tools"]] == EXPECTED_TOOLS
    call = sse_json(
        httpx2.post(
            http_server.url,
            headers=session,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "guard sequence"}},
            },
        )
    )
    assert call["result"]["structuredContent"]["results"][0]["path"] == "adr/0001-guards.md"


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_the_2026_stateless_requests_over_raw_http(http_server: HttpServer) -> None:
    headers = {**auth_headers(), **JSON_HEADERS, "mcp-protocol-version": MODERN}

    def post(method: str, params: dict | None = None) -> dict:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {**(params or {}), "_meta": modern_meta()},
        }
        routing = {"mcp-method": method}
        if params and "name" in params:
            routing["mcp-name"] = params["name"]
        response = httpx2.post(http_server.url, headers={**headers, **routing}, json=body)
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        return sse_json(response)["result"]

    discovered = post("server/discover")
    assert MODERN in discovered["supportedVersions"]
    assert set(discovered["capabilities"]) >= {"tools", "resources"}
    assert [tool["name"] for tool in post("tools/list")["tools"]] == EXPECTED_TOOLS
    found = post("tools/call", {"name": "search", "arguments": {"query": "blue green"}})
    assert found["structuredContent"]["results"][0]["uri"] == "kb://doc/runbooks/deploy.rst"


@pytest.mark.parametrize("mode", ERAS)
async def test_the_same_tools_over_http_and_stdio_in_both_eras(project: Path, mode: str) -> None:
    server = HttpServer(project).wait_ready()
    try:
        async with http_client(server.url, mode) as remote, serve_stdio(project, mode) as local:
            assert remote.protocol_version == local.protocol_version
            remote_tools = (await remote.list_tools()).tools
            local_tools = (await local.list_tools()).tools
            assert [t.name for t in remote_tools] == EXPECTED_TOOLS
            assert [t.model_dump() for t in remote_tools] == [t.model_dump() for t in local_tools]
            remote_hits = (await remote.call_tool("search", {"query": "write-ahead"})).structured_content
            local_hits = (await local.call_tool("search", {"query": "write-ahead"})).structured_content
            assert remote_hits == local_hits
            doc = (await remote.read_resource("kb://doc/notes.txt")).contents[0]
            assert "write-ahead" in doc.text
    finally:
        assert server.stop() == STOPPED


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-wrong-token"},
        {"Authorization": f"Basic {TEST_TOKEN}"},
        {"Authorization": f"Bearer {TEST_TOKEN[:-1]}"},
    ],
    ids=["missing", "wrong", "not-bearer", "prefix-of-the-token"],
)
def test_a_missing_or_wrong_token_gets_401_and_the_server_keeps_running(
    http_server: HttpServer, headers
) -> None:
    response = httpx2.post(http_server.url, headers={**JSON_HEADERS, **headers}, json={})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"] == (
        "unauthorized" if not headers.get("Authorization", "").startswith("Bearer") else "invalid_token"
    )
    assert TEST_TOKEN not in response.text
    assert httpx2.get(f"{http_server.base}/healthz").json() == {"status": "ok"}


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_the_query_string_token_is_accepted_for_clients_without_headers(http_server: HttpServer) -> None:
    response = httpx2.post(
        f"{http_server.url}?token={TEST_TOKEN}",
        headers={**JSON_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}},
    )
    assert response.status_code == 200


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_healthz_needs_no_token_and_says_nothing_internal(http_server: HttpServer) -> None:
    response = httpx2.get(f"{http_server.base}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
@pytest.mark.parametrize(
    ("extra", "status"),
    [({"origin": "http://evil.example"}, 403), ({"host": "evil.example:80"}, 421)],
    ids=["bad-origin", "bad-host"],
)
def test_the_dns_rebinding_gate_refuses_foreign_hosts_and_origins(
    http_server: HttpServer, extra, status
) -> None:
    response = httpx2.post(http_server.url, headers={**auth_headers(), **JSON_HEADERS, **extra}, json={})
    assert response.status_code == status


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_a_loopback_origin_is_accepted(http_server: HttpServer) -> None:
    headers = {
        **auth_headers(),
        **JSON_HEADERS,
        "origin": f"http://localhost:{http_server.port}",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/list",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}
    assert httpx2.post(http_server.url, headers=headers, json=body).status_code == 200


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_bodies_over_1_mib_get_413(http_server: HttpServer) -> None:
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "'
        + b"x" * (1024 * 1024)
        + b'"}}'
    )
    response = httpx2.post(http_server.url, headers={**auth_headers(), **JSON_HEADERS}, content=body)
    assert response.status_code == 413


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_malformed_json_gets_a_json_rpc_parse_error(http_server: HttpServer) -> None:
    for extra in ({}, {"mcp-protocol-version": MODERN}):
        response = httpx2.post(
            http_server.url, headers={**auth_headers(), **JSON_HEADERS, **extra}, content=b"{nope"
        )
        assert sse_json(response)["error"]["code"] == -32700


def test_old_era_sessions_are_bounded_in_number(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\nmax_sessions = 2\n')
    server = HttpServer(root).wait_ready()
    try:
        headers = {**auth_headers(), **JSON_HEADERS}
        init = INITIALIZE
        opened = [httpx2.post(server.url, headers=headers, json=init) for _ in range(3)]
        assert [answer.status_code for answer in opened] == [200, 200, 200]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        still = [
            httpx2.post(
                server.url,
                headers={
                    **headers,
                    "mcp-session-id": a.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25",
                },
                json=listing,
            ).status_code
            for a in opened
        ]
        assert still == [404, 200, 200]  # the third ended the one idle the longest: never more than 2
    finally:
        server.stop()


def test_an_idle_old_era_session_expires(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\nsession_idle_timeout = 1\n'
    )
    server = HttpServer(root).wait_ready()
    try:
        headers = {**auth_headers(), **JSON_HEADERS}
        init = INITIALIZE
        session = httpx2.post(server.url, headers=headers, json=init).headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        with_session = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        assert httpx2.post(server.url, headers=with_session, json=listing).status_code == 200

        def expired_after_an_idle_spell() -> bool:
            # idle for longer than the timeout, then ask; on a loaded machine the expiry may land
            # later, so ask again (each spell as long as the first) until a generous deadline
            time.sleep(1.5)
            return httpx2.post(server.url, headers=with_session, json=listing).status_code == 404

        wait_until(expired_after_an_idle_spell, timeout=60, step=0, what="the idle session to expire")
    finally:
        server.stop()


@pytest.mark.xdist_group("http-shared")  # the module's one http_server
def test_port_0_binds_a_port_the_system_picks_and_the_boot_line_names_it(http_server: HttpServer) -> None:
    assert http_server.fixed_port is None  # started with --port 0
    assert http_server.port != 0
    assert f"http: http://127.0.0.1:{http_server.port}/mcp (health: /healthz)" in http_server.stderr()
    assert httpx2.get(f"{http_server.base}/healthz").json() == {"status": "ok"}


def test_anonymous_mode_is_refused_off_loopback(project: Path) -> None:
    env = {"MCP_ALLOW_ANONYMOUS": "1", "MCP_TOKEN": ""}
    result = subprocess.run(
        [*forked_kbkit(), "serve", "--http", "--root", str(project), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(**env),
    )
    assert result.returncode == 2
    assert "MCP_ALLOW_ANONYMOUS=1 is refused on a non-loopback bind" in result.stderr


def test_no_token_refuses_to_start_and_says_how_to_set_one(project: Path) -> None:
    result = subprocess.run(
        [*forked_kbkit(), "serve", "--http", "--root", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert result.returncode == 2
    assert "no MCP_TOKEN is set" in result.stderr and ".env.local" in result.stderr


def test_anonymous_mode_works_on_loopback_and_the_boot_line_says_auth_is_off(project: Path) -> None:
    server = HttpServer(project, token=None, env={"MCP_ALLOW_ANONYMOUS": "1"}).wait_ready()
    try:
        response = httpx2.post(
            server.url,
            headers={**JSON_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}},
        )
        assert response.status_code == 200
        assert "auth: OFF (MCP_ALLOW_ANONYMOUS=1" in server.stderr()
    finally:
        server.stop()


def test_a_network_bind_needs_a_token_and_the_boot_line_says_it_reaches_the_network(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\nallowed_hosts = ["kb.test:*"]\n'
    )
    server = HttpServer(root, args=("--host", "0.0.0.0")).wait_ready()
    try:
        log = server.stderr()
        assert "reach: NETWORK (0.0.0.0)" in log
        assert "auth: bearer token from MCP_TOKEN" in log
        assert TEST_TOKEN not in log
    finally:
        server.stop()


def test_the_token_from_env_local_works_and_never_appears_in_boot_lines(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    secret = "from-env-local-0123456789"
    (root / ".env.local").write_text(f"MCP_TOKEN={secret}\n")
    server = HttpServer(root, token=None).wait_ready()
    try:
        headers = {**JSON_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/list"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}
        assert (
            httpx2.post(server.url, headers={**headers, **auth_headers(secret)}, json=body).status_code == 200
        )
        assert httpx2.post(server.url, headers={**headers, **auth_headers()}, json=body).status_code == 401
    finally:
        server.stop()
    assert secret not in server.stderr()


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A corpus where one query matches every document on 64 terms: a search that takes a while.

    Built once for the module: the second server finds it indexed already."""
    words = [f"w{i}" for i in range(64)]
    body = "# d\n\n" + " ".join(words * 3) + "\n"
    root = make_project(tmp_path_factory.mktemp("heavy") / "heavy", {f"d{i}.md": body for i in range(30000)})
    return root, " ".join(words)


@asynccontextmanager
async def search_client(url: str, sent: anyio.Event) -> AsyncIterator[Client]:
    """The real client over HTTP; `sent` is set once a tools/call request goes out on the wire."""
    from mcp.client.streamable_http import streamable_http_client

    async def on_request(request: httpx2.Request) -> None:
        if b'"tools/call"' in request.content:
            sent.set()

    async with (
        httpx2.AsyncClient(headers=auth_headers(), timeout=60, event_hooks={"request": [on_request]}) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", cache=None) as client,
    ):
        yield client


@pytest.mark.xdist_group("heavy")
@pytest.mark.timeout(600)  # indexing 30,000 documents first, on a loaded machine
async def test_healthz_answers_while_long_searches_are_running(heavy: tuple[Path, str]) -> None:
    root, query = heavy
    server = HttpServer(root).wait_ready(timeout=300)
    finished: list[float] = []
    sent = [anyio.Event() for _ in range(3)]
    try:

        async def slow_search(n: int) -> None:
            async with search_client(server.url, sent[n]) as client:
                await client.list_tools()
                result = await client.call_tool("search", {"query": query, "limit": 100})
                assert not result.is_error
                finished.append(time.monotonic())

        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(slow_search, n)
            with anyio.fail_after(60):
                for event in sent:  # the searches are under way
                    await event.wait()
            async with httpx2.AsyncClient(timeout=60) as http:
                health = await http.get(f"{server.base}/healthz")
                answered = time.monotonic()
            assert health.json() == {"status": "ok"}
        assert len(finished) == 3 and max(finished) > answered  # health answered before the searches ended
    finally:
        server.stop()


@pytest.mark.xdist_group("heavy")
@pytest.mark.timeout(600)  # indexing 30,000 documents first, on a loaded machine
async def test_sigterm_lets_in_flight_requests_finish_then_closes_the_index(heavy: tuple[Path, str]) -> None:
    root, query = heavy
    query = " ".join(query.split()[:16])  # in flight for a while, done well within the 10 s grace
    server = HttpServer(root).wait_ready(timeout=300)
    finished = {}
    sent = anyio.Event()

    async def slow_search() -> None:
        async with search_client(server.url, sent) as client:
            await client.list_tools()  # the client checks results against the output schema it listed
            finished["result"] = await client.call_tool("search", {"query": query, "limit": 100})

    def cpu_seconds() -> float:
        """The server's CPU time so far (/proc/PID/stat: utime and stime, in clock ticks)."""
        fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async with anyio.create_task_group() as group:
        group.start_soon(slow_search)
        with anyio.fail_after(60):
            await sent.wait()
        idle = cpu_seconds()

        async def searching() -> bool:  # an idle server burns no CPU; this search burns about 0.5 s
            return cpu_seconds() > idle + 0.1

        await eventually(searching, what="the server to be running the search")
        server.process.terminate()
    assert not finished["result"].is_error and finished["result"].structured_content["results"]
    assert server.process.wait(timeout=30) == 0
    server.stop()
    assert "stopped: in-flight requests finished, index closed" in server.stderr()


def _env(**extra: str) -> dict[str, str]:
    """This environment without any token, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_TOKEN", "MCP_ALLOW_ANONYMOUS")}
    return {**env, **extra}


def test_a_busy_port_is_one_line_naming_it_and_no_boot_line_claims_the_server_is_up(project: Path) -> None:
    import socket

    with socket.socket() as holder:  # another program already listens on the port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run(
            [*forked_kbkit(), "serve", "--http", "--root", str(project), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(MCP_TOKEN=TEST_TOKEN),
        )
    assert result.returncode == 3  # the environment is in the way, not the input (docs/adr/0013)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert f"port {port} on 127.0.0.1 is already in use" in lines[0] and "--port" in lines[0]
    assert "Traceback" not in result.stderr and "[kbkit]" not in result.stderr
    assert result.stdout == ""


def _search_request(url: str) -> httpx2.Response:
    """A 2026-07-28 `search` call on a connection of its own."""
    headers = {
        **auth_headers(),
        **JSON_HEADERS,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "search",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "blue green"}, "_meta": modern_meta()},
    }
    with httpx2.Client(timeout=30) as http:
        return http.post(url, headers=headers, json=body)


def test_sigterm_drains_healthz_says_so_requests_are_still_served_then_it_exits_0(tmp_path: Path) -> None:
    drain = 6  # long enough that the request below goes out within it on a loaded machine
    root = make_project(
        tmp_path / "p", config=f'[kb]\npath = "docs"\n[server.http]\ndrain_seconds = {drain}\n'
    )
    server = HttpServer(root).wait_ready()
    try:
        assert f"drain: {drain} s on SIGTERM" in server.stderr()
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)

        def draining() -> httpx2.Response | None:
            health = httpx2.get(f"{server.base}/healthz", timeout=30)
            return health if health.status_code == 503 else None

        health = wait_until(draining, timeout=30, what="/healthz to answer 503")
        assert health.json() == {"status": "draining"}
        assert health.headers["connection"] == "close"
        answered = _search_request(server.url)  # sent during the grace period, on a new connection
        assert answered.status_code == 200, answered.text
        assert (
            sse_json(answered)["result"]["structuredContent"]["results"][0]["path"] == "runbooks/deploy.rst"
        )
        assert (
            answered.headers["connection"] == "close"
        )  # answered while draining; the next request reconnects
        assert server.process.wait(timeout=60) == 0
        assert time.monotonic() - signalled >= drain  # it served for the whole grace period
    finally:
        server.stop()
    log = server.stderr()
    assert f"SIGTERM: draining for {drain} s" in log
    assert "stopped: in-flight requests finished, index closed" in log


def test_a_second_sigterm_or_a_sigint_cuts_the_drain_short(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\ndrain_seconds = 600\n')
    for second in (signal.SIGTERM, signal.SIGINT):
        server = HttpServer(root).wait_ready()
        try:
            server.process.send_signal(signal.SIGTERM)
            wait_until(
                lambda: httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 503,  # noqa: B023
                timeout=30,
                what="/healthz to answer 503",
            )
            server.process.send_signal(second)
            stopped = 0 if second == signal.SIGTERM else STOPPED  # SIGINT is Ctrl-C: 130
            assert server.process.wait(timeout=60) == stopped  # well before the 600 s drain is over
        finally:
            server.stop()
