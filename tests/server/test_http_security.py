"""`kbkit serve --http` under attack and through offboarding, over real HTTP: fair shares of
sessions, a held tokens lock, hostile bodies, retired keys, revocations that close streams,
forged subjects, and the standards a client relies on (docs/security.md, docs/adr/0052)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from kbkit.server.auth.tokens import create, read_tokens, revoke
from tests.helpers.http import (
    INITIALIZE,
    JSON_HEADERS,
    STOPPED,
    TEST_TOKEN,
    HttpServer,
    http_client,
    open_event_stream,
    personal_tokens,
)
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.helpers.trust import trust_project
from tests.helpers.wait import wait_until
from tests.peers.launch import forked_kbkit

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

KEYS = {kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in ("k1", "k2")}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def post(server: HttpServer, token: str, body: Any, **headers: str) -> httpx2.Response:
    return httpx2.post(
        server.url, headers={**JSON_HEADERS, **bearer(token), **headers}, json=body, timeout=30
    )


def open_session(server: HttpServer, token: str) -> dict[str, str]:
    """A 2025-11-25 session of `token`: the headers its requests carry."""
    opened = post(server, token, INITIALIZE)
    assert opened.status_code == 200, opened.text
    session = {
        **bearer(token),
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = post(server, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
    assert done.status_code == 202
    return session


def tools_list(server: HttpServer, session: dict[str, str]) -> httpx2.Response:
    token = session["Authorization"].removeprefix("Bearer ")
    return post(server, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, **session)


def sse_json(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message in a response, whether sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


def configure(root: Path, text: str) -> None:
    toml = root / "kbkit.toml"
    toml.write_text(toml.read_text() + "\n" + text if toml.exists() else text)


def stream_ends(sock: socket.socket, deadline: float = 60.0) -> bool:
    """Whether the server ends this response (EOF, or chunked encoding's last chunk) in time."""
    sock.settimeout(deadline)
    seen = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
            seen += chunk
            if b"\r\n0\r\n\r\n" in seen:
                return True
    except TimeoutError:
        return False


# --- availability ----------------------------------------------------------------------------------


async def test_one_principal_holding_every_session_does_not_lock_out_the_others(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    configure(root, "[server.http]\nmax_sessions = 4\n")
    alice, bob = personal_tokens(root, "alice", "bob")
    server = HttpServer(root).wait_ready()
    try:
        alices = [open_session(server, alice) for _ in range(4)]
        bobs = open_session(server, bob)  # the pool is full: alice's session idle the longest makes room
        assert tools_list(server, bobs).status_code == 200
        assert tools_list(server, alices[0]).status_code == 404
        assert tools_list(server, alices[-1]).status_code == 200
    finally:
        assert server.stop() == STOPPED


async def test_a_principal_at_its_cap_with_every_session_busy_is_refused_naming_the_limit(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    configure(root, "[server.http]\nmax_sessions_per_principal = 2\n")
    alice = create(root / ".kbkit" / "tokens.json", "alice", "read", None)
    server = HttpServer(root).wait_ready()
    streams = []
    try:
        first = open_session(server, alice)
        idle = open_session(server, alice)
        open_session(server, alice)  # at the cap: ends alice's own session idle the longest
        assert tools_list(server, first).status_code == 404
        del idle
        busy = [open_session(server, alice) for _ in range(2)]
        streams = [open_event_stream(server.port, {**s, **JSON_HEADERS}) for s in busy]
        refused = post(server, alice, INITIALIZE)
        assert refused.status_code == 429
        assert "max_sessions_per_principal = 2" in refused.text
        wait_until(lambda: "alice (token) initialize 429" in server.stderr(), what="the audit line")
    finally:
        for sock in streams:
            sock.close()
        assert server.stop() == STOPPED


async def test_listen_streams_are_capped_per_principal_naming_the_limit(tmp_path: Path) -> None:
    from contextlib import AsyncExitStack

    from mcp.shared.exceptions import MCPError

    from kbkit.server.notify import MAX_LISTEN_PER_PRINCIPAL

    root = make_project(tmp_path / "project")
    alice, bob = personal_tokens(root, "alice", "bob")
    server = HttpServer(root).wait_ready()
    try:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(http_client(server.url, "auto", bearer(alice)))
            for _ in range(MAX_LISTEN_PER_PRINCIPAL):
                await stack.enter_async_context(client.listen(resources_list_changed=True))
            with pytest.raises(
                MCPError, match=f"the most one principal may \\({MAX_LISTEN_PER_PRINCIPAL}\\)"
            ):
                async with client.listen(resources_list_changed=True):
                    pass
            async with (
                http_client(server.url, "auto", bearer(bob)) as other,
                other.listen(resources_list_changed=True),
            ):
                pass  # bob still gets his
    finally:
        assert server.stop() == STOPPED


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[tuple[Path, str, HttpServer]]:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    alice = create(tokens, "alice", "read", None)
    server = HttpServer(root).wait_ready()
    fd = os.open(f"{tokens}.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a stuck writer, or a share whose lock server hangs
    try:
        yield tokens, alice, server
    finally:
        os.close(fd)
        server.stop()


def test_health_and_requests_answer_while_another_writer_holds_the_tokens_lock(
    held_lock: tuple[Path, str, HttpServer],
) -> None:
    tokens, alice, server = held_lock
    answers: list[int] = []
    thread = threading.Thread(target=lambda: answers.append(post(server, alice, INITIALIZE).status_code))
    thread.start()  # alice's first use: its last-use time is due for saving
    assert httpx2.get(f"{server.base}/healthz", timeout=20).status_code == 200
    thread.join(timeout=60)
    assert answers == [200]
    wait_until(lambda: "is held by another writer" in server.stderr(), what="the deferred save")
    assert read_tokens(tokens)[0][0].last_used is None  # nothing written past the lock


async def test_a_deeply_nested_body_from_a_valid_token_is_a_400_with_an_audit_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    alice = create(root / ".kbkit" / "tokens.json", "alice", "read", None)
    server = HttpServer(root).wait_ready()
    try:
        answer = httpx2.post(
            server.url, headers={**JSON_HEADERS, **bearer(alice)}, content=b"[" * 5000, timeout=30
        )
        assert answer.status_code == 400 and "nested" in answer.text
        wait_until(lambda: "alice (token) POST 400" in server.stderr(), what="the audit line")
        assert "Traceback" not in server.stderr()
    finally:
        assert server.stop() == STOPPED


# --- revocation and offboarding --------------------------------------------------------------------


class JwksPeer:
    """An identity provider's two documents on loopback, whose keys can be retired while serving."""

    def __init__(self) -> None:
        self.kids = ["k1", "k2"]
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {"issuer": peer.issuer, "jwks_uri": peer.issuer + "/jwks"}
                elif self.path == "/jwks":
                    body = {"keys": [peer.jwk(kid) for kid in list(peer.kids)]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("cache-control", "public, max-age=1")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @staticmethod
    def jwk(kid: str) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(KEYS[kid].public_key()))
        return {**public, "kid": kid, "alg": "RS256", "use": "sig"}

    def token(self, audience: str, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.issuer, "aud": audience, "sub": "alice", "iat": now, "exp": now + 600}
        body.update({"groups": ["eng"], "scope": "kb kb.memory", **claims})
        return jwt.encode({k: v for k, v in body.items() if v is not None}, KEYS[kid], "RS256", {"kid": kid})

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def peer() -> Iterator[JwksPeer]:
    peer = JwksPeer()
    yield peer
    peer.stop()


AUDIENCE = "https://kb.example.test/mcp"


def oauth_project(tmp_path: Path, peer: JwksPeer, audience: str = AUDIENCE, extra: str = "") -> Path:
    """A project whose operator set OAuth in kbkit.local.toml (their own file: no trust needed)."""
    root = make_project(tmp_path / "project")
    (root / "kbkit.local.toml").write_text(
        f'[server.http.oauth]\nissuer = "{peer.issuer}"\naudience = "{audience}"\nscopes = ["kb"]\n'
        f'claims = {{ groups = ["eng"] }}\n{extra}',
    )
    return root


def test_a_key_the_issuer_retires_stops_working_without_a_new_kid(tmp_path: Path, peer: JwksPeer) -> None:
    server = HttpServer(oauth_project(tmp_path, peer)).wait_ready()
    try:
        wait_until(lambda: "2 signing key(s) cached" in server.stderr(), what="the keys")
        old = peer.token(AUDIENCE, kid="k1")
        assert post(server, old, INITIALIZE).status_code == 200
        peer.kids = ["k2"]  # the provider retires k1; no token with an unknown kid ever arrives
        wait_until(lambda: post(server, old, INITIALIZE).status_code == 401, what="k1 refused")
        assert post(server, peer.token(AUDIENCE, kid="k2"), INITIALIZE).status_code == 200
    finally:
        assert server.stop() == STOPPED


def test_chmod_600_restores_personal_tokens_and_chmod_644_is_noticed(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    alice = create(tokens, "alice", "read", None)
    server = HttpServer(root).wait_ready()
    try:
        assert post(server, alice, INITIALIZE).status_code == 200
        tokens.chmod(0o644)  # the size and mtime stay: only the mode says it
        assert post(server, alice, INITIALIZE).status_code == 401
        wait_until(lambda: "refused until fixed" in server.stderr(), what="the refusal")
        tokens.chmod(0o600)  # the fix the refusal names, and nothing else
        assert post(server, alice, INITIALIZE).status_code == 200
        assert "accepted again" in server.stderr()
    finally:
        assert server.stop() == STOPPED


async def test_a_revoke_closes_the_principals_open_streams(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    alice, bob = personal_tokens(root, "alice", "bob")
    server = HttpServer(root).wait_ready()
    try:
        alices = open_event_stream(server.port, {**open_session(server, alice), **JSON_HEADERS})
        bobs = open_event_stream(server.port, {**open_session(server, bob), **JSON_HEADERS})
        ended = anyio.Event()
        async with (
            http_client(server.url, "auto", bearer(alice)) as client,
            client.listen(resources_list_changed=True) as subscription,
        ):

            async def drain() -> None:
                try:
                    async for _ in subscription:
                        pass
                except Exception:  # an abrupt end (SubscriptionLost) is an end too
                    pass
                ended.set()

            async with anyio.create_task_group() as group:
                group.start_soon(drain)
                revoke(tokens, "alice")
                with anyio.fail_after(60):
                    await ended.wait()
        assert stream_ends(alices)
        bobs.settimeout(1.0)
        with pytest.raises(TimeoutError):
            bobs.recv(1)  # bob's stream stays open
        wait_until(lambda: "closed its" in server.stderr(), what="the log line")
        alices.close()
        bobs.close()
    finally:
        assert server.stop() == STOPPED


async def test_a_revoke_on_one_replica_is_refused_by_another_sharing_the_tokens_file(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "tokens.json"
    alice = create(shared, "alice", "read", None)
    replicas = []
    for name in ("r1", "r2"):
        root = make_project(tmp_path / name)
        (root / "kbkit.local.toml").write_text(f'[server.http]\ntokens_file = "{shared}"\n')
        replicas.append(HttpServer(root).wait_ready())
    try:
        assert all(post(r, alice, INITIALIZE).status_code == 200 for r in replicas)
        revoke(shared, "alice")  # run on replica 1's host
        assert all(post(r, alice, INITIALIZE).status_code == 401 for r in replicas)
    finally:
        for replica in replicas:
            assert replica.stop() == STOPPED


# --- trust and correctness -------------------------------------------------------------------------


def test_subjects_differing_late_are_two_principals_and_cannot_forge_an_audit_line(
    tmp_path: Path, peer: JwksPeer
) -> None:
    server = HttpServer(oauth_project(tmp_path, peer)).wait_ready()
    try:
        wait_until(lambda: "signing key(s) cached" in server.stderr(), what="the keys")
        first = peer.token(AUDIENCE, sub="a" * 300 + "1")
        second = peer.token(AUDIENCE, sub="a" * 300 + "2")
        session = open_session(server, first)
        assert tools_list(server, {**session, **bearer(second)}).status_code == 404
        forger = peer.token(AUDIENCE, sub='x 200 0B 1ms\n[kbkit] audit 2026 root (token) "tools/call:retain')
        assert post(server, forger, INITIALIZE).status_code == 200

        def principals() -> set[str]:
            lines = [line for line in server.stderr().splitlines() if "audit" in line]
            assert not any("root (token)" in line for line in lines)
            return {line.split()[3] for line in lines if " (oauth) " in line}

        wait_until(lambda: len(principals()) == 3, what="three principals in the audit lines")
        assert all('"' not in p for p in principals())
    finally:
        assert server.stop() == STOPPED


def test_client_text_in_warnings_is_rate_limited_and_bounded(tmp_path: Path) -> None:
    server = HttpServer(make_project(tmp_path / "project")).wait_ready()
    try:
        for i in range(30):
            origin = f"http://evil{i}.test/{'p' * 4000}"
            answer = httpx2.post(
                server.url,
                headers={**JSON_HEADERS, **bearer(TEST_TOKEN), "origin": origin},
                json=INITIALIZE,
                timeout=30,
            )
            assert answer.status_code == 403
    finally:
        server.stop()
    log = server.stderr()
    assert log.count("Origin") <= 2
    assert "p" * 300 not in log


def test_the_tokens_file_under_the_kb_folder_is_never_served(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", config='[kb]\npath = "."\n')
    alice = create(root / ".kbkit" / "tokens.json", "alice", "read", None)
    server = HttpServer(root).wait_ready()
    try:
        session = open_session(server, alice)
        for path in (".kbkit/tokens.json", ".kbkit/tokens.json.lock"):
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "get_document", "arguments": {"path": path}},
            }
            answer = sse_json(post(server, alice, call, **session))
            text = json.dumps(answer)
            assert "sha256" not in text and "never served" in text, text
    finally:
        assert server.stop() == STOPPED


# --- standards -------------------------------------------------------------------------------------


def test_refusals_follow_rfc_6750_and_the_mcp_authorization_spec(tmp_path: Path, peer: JwksPeer) -> None:
    root = oauth_project(tmp_path, peer)
    tokens = root / ".kbkit" / "tokens.json"
    reader = create(tokens, "bob", "read", None)
    server = HttpServer(root).wait_ready()
    retain = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "retain", "arguments": {}},
    }
    try:
        wait_until(lambda: "signing key(s) cached" in server.stderr(), what="the keys")
        missing = httpx2.post(server.url, headers=JSON_HEADERS, json=INITIALIZE, timeout=30)
        assert missing.status_code == 401 and 'scope="kb"' in missing.headers["www-authenticate"]
        no_memory = post(server, peer.token(AUDIENCE, scope="kb"), retain)
        challenge = no_memory.headers["www-authenticate"]
        assert (
            no_memory.status_code == 403
            and 'scope="kb.memory"' in challenge
            and "resource_metadata=" in challenge
        )
        read_only = post(server, reader, retain)
        assert read_only.status_code == 403 and "resource_metadata=" in read_only.headers["www-authenticate"]
        in_query = httpx2.post(
            f"{server.url}?token={reader}", headers=JSON_HEADERS, json=INITIALIZE, timeout=30
        )
        assert in_query.status_code == 401
        shared_in_query = httpx2.post(
            f"{server.url}?token={TEST_TOKEN}", headers=JSON_HEADERS, json=INITIALIZE, timeout=30
        )
        assert shared_in_query.status_code == 200
        huge = httpx2.post(
            server.url, headers={**JSON_HEADERS, **bearer("a" * 9000)}, json=INITIALIZE, timeout=30
        )
        assert huge.status_code == 400
        outsider = post(server, peer.token(AUDIENCE, sub="mallory", groups=["sales"]), INITIALIZE)
        assert outsider.status_code == 403
        wait_until(lambda: "mallory (oauth) POST 403" in server.stderr(), what="the outsider's subject")
        entra = peer.token(AUDIENCE, scope=None, scp="kb kb.memory")
        listed = peer.token(AUDIENCE, scope=["kb", "kb.memory"])
        assert post(server, entra, INITIALIZE).status_code == 200
        assert post(server, listed, INITIALIZE).status_code == 200
    finally:
        assert server.stop() == STOPPED


def test_an_audience_that_is_not_a_url_is_accepted(tmp_path: Path, peer: JwksPeer) -> None:
    server = HttpServer(oauth_project(tmp_path, peer, audience="api://kbkit")).wait_ready()
    try:
        wait_until(lambda: "signing key(s) cached" in server.stderr(), what="the keys")
        assert post(server, peer.token("api://kbkit"), INITIALIZE).status_code == 200
    finally:
        assert server.stop() == STOPPED


def test_last_use_is_kept_per_token_not_per_name(tmp_path: Path) -> None:
    from kbkit.server.auth.tokens import TokenStore

    path = tmp_path / "tokens.json"
    old = create(path, "alice", "read", None)
    store = TokenStore(path)
    assert store.check(old) is not None
    store.save_last_use()
    assert store.check(old) is not None  # a use not saved yet
    revoke(path, "alice")
    create(path, "alice", "read", None)  # a new token under the same name, never used
    store.save_last_use()  # a use kept by name would land on the new token
    assert read_tokens(path)[0][0].last_used is None


def test_an_expiry_past_what_a_date_holds_is_a_clear_error(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    result = subprocess.run(
        [*forked_kbkit(), "token", "create", "x", "--expires", "3000000", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "a bug in kbkit" not in result.stderr and "36500" in result.stderr, result.stderr


def test_a_network_bind_without_an_audience_warns(tmp_path: Path, peer: JwksPeer) -> None:
    root = make_project(tmp_path / "project")
    configure(root, '[server.http]\nallowed_hosts = ["kb.internal:*"]\n')
    trust_project(root)  # the operator reviewed the commit that opened the server to kb.internal
    (root / "kbkit.local.toml").write_text(
        f'[server.http.oauth]\nissuer = "{peer.issuer}"\nclaims = {{ groups = ["eng"] }}\n'
    )
    server = HttpServer(root, args=("--host", "0.0.0.0")).wait_ready()
    try:
        wait_until(lambda: "audience" in server.stderr() and "warning" in server.stderr(), what="the warning")
    finally:
        server.stop()


def test_anonymous_mode_says_that_tokens_created_later_are_ignored(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    server = HttpServer(root, token=None, env={"MCP_ALLOW_ANONYMOUS": "1"}).wait_ready()
    try:
        assert "a personal token created while this runs is ignored" in server.stderr()
    finally:
        assert server.stop() == STOPPED


def test_auth_settings_changed_while_serving_are_reported_as_needing_a_restart(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    alice = create(root / ".kbkit" / "tokens.json", "alice", "read", None)
    server = HttpServer(root).wait_ready()
    try:
        assert post(server, alice, INITIALIZE).status_code == 200
        configure(root, '[server.http]\ntokens_file = "elsewhere.json"\n')
        edited = (root / "kbkit.toml").read_text()

        def reported() -> bool:
            if "[server.http] tokens_file changed too" in server.stderr():
                return True
            (root / "kbkit.toml").write_text(edited)  # again: an edit before the watcher was up is unseen
            return False

        wait_until(reported, step=1.0, what="the stale line")
        assert "restart it" in server.stderr()
        doctor = kbkit_in_process("doctor", "--root", str(root), "--json")
        stale = [
            c for c in json.loads(doctor.stdout)["checks"] if "[server.http] tokens_file" in c["finding"]
        ]
        assert stale and stale[0]["status"] == "warn" and "restart" in stale[0]["fix"]
    finally:
        assert server.stop() == STOPPED
    doctor = kbkit_in_process("doctor", "--root", str(root), "--json")
    assert not [c for c in json.loads(doctor.stdout)["checks"] if "started with other" in c["finding"]]


def test_auth_settings_in_kbkit_toml_that_widen_access_wait_for_kbkit_trust(
    tmp_path: Path, peer: JwksPeer
) -> None:
    root = make_project(tmp_path / "project")
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    oauth = f'[server.http.oauth]\nissuer = "{peer.issuer}"\naudience = "{AUDIENCE}"\n'
    (root / "kbkit.toml").write_text(f'[kb]\npath = "docs"\n{oauth}allowed_subjects = ["alice", "bob"]\n')
    alice, mallory = peer.token(AUDIENCE), peer.token(AUDIENCE, sub="mallory", groups=[])

    def serve() -> HttpServer:
        return HttpServer(root, env=state).wait_ready()

    def trust() -> str:
        result = subprocess.run(
            [*forked_kbkit(), "trust", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **state},
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    server = serve()  # a pull brought OAuth in: nobody allowed it on this machine yet
    try:
        assert "OAuth sign-ins refused" in server.stderr() and "kbkit trust" in server.stderr()
        assert post(server, alice, INITIALIZE).status_code == 401
    finally:
        assert server.stop() == STOPPED
    assert "trusted: server.http" in trust()
    server = serve()
    try:
        wait_until(lambda: "signing key(s) cached" in server.stderr(), what="the keys")
        assert post(server, alice, INITIALIZE).status_code == 200
    finally:
        assert server.stop() == STOPPED
    (root / "kbkit.toml").write_text(
        f'[kb]\npath = "docs"\n{oauth}allowed_subjects = ["alice", "bob", "mallory"]\n'
    )
    server = serve()  # a commit adds a member: refused until reviewed
    try:
        assert "oauth.allowed_subjects adds mallory" in server.stderr()
        assert post(server, mallory, INITIALIZE).status_code == 401
    finally:
        assert server.stop() == STOPPED
    (root / "kbkit.toml").write_text(f'[kb]\npath = "docs"\n{oauth}allowed_subjects = ["bob"]\n')
    server = serve()  # a commit that only removes (alice leaves) applies at once
    try:
        wait_until(lambda: "signing key(s) cached" in server.stderr(), what="the keys")
        assert post(server, alice, INITIALIZE).status_code == 403
    finally:
        assert server.stop() == STOPPED
