"""Replicas behind HAProxy, with the shipped deploy/haproxy.cfg (docs/deploy.md, docs/adr/0029).

Three `kbkit serve --http` replicas on loopback, each with its own copy of a small project, behind
HAProxy started from the production file with only its environment set (tests/peers/haproxy.py).
Several SDK clients of both protocol eras call through it at once while one replica is SIGKILLed
and another is rolled (SIGTERM, which drains, then a restart): no 2026-07-28 call fails (but one
in flight across the SIGKILL, at most one a client, docs/adr/0058), a
2025-11-25 session whose replica went away gets 404 and its client opens a new one, sessions on
the replica left alone are untouched, and an edit made in every replica's checkout reaches each
replica's listeners."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.http import TEST_TOKEN, HttpServer, auth_headers
from tests.helpers.project import SAMPLE_DOCS, make_project
from tests.peers.haproxy import MAX_REPLICAS, Balancer, check_config, config_env, haproxy_path
from tests.peers.required import missing

pytestmark = [pytest.mark.anyio, pytest.mark.haproxy]

NOTES = "kb://doc/notes.txt"
WHOAMI = "kb://doc/whoami.md"
THINK = 0.1
"""Seconds each client waits between calls: load, not a flood that starves the health checks."""
MAX_CALLS = 3000
"""Calls one client makes at most, whatever happens (with THINK, far more than the test needs)."""


def executable() -> str:
    found = haproxy_path()
    if found is None:
        missing("HAProxy (Debian's haproxy package)")
    return found


def test_the_shipped_config_passes_haproxy_check(tmp_path: Path) -> None:
    haproxy = executable()
    cert = self_signed_pem(tmp_path)
    replicas = [f"127.0.0.1:{18081 + n}" for n in range(MAX_REPLICAS)]
    variants = {
        "no variable set (its defaults)": config_env([]),
        "three replicas and the runtime API": config_env(
            replicas[:3], KBKIT_HAPROXY_SOCKET=str(tmp_path / "a")
        ),
        "every replica slot, TLS terminated": config_env(
            replicas, KBKIT_BIND=":8443", KBKIT_TLS_CERT=str(cert)
        ),
    }
    for name, env in variants.items():
        checked = check_config(haproxy, env)
        assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"
        assert "Configuration file is valid" in checked.stdout + checked.stderr, name
        assert "WARNING" not in checked.stdout + checked.stderr, f"{name}: {checked.stderr}"


def self_signed_pem(folder: Path) -> Path:
    """A certificate for 127.0.0.1 and its key in one PEM, as HAProxy's `crt` takes them."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    command = [
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ]  # fmt: skip
    try:
        made = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        missing("openssl (Debian's openssl package)")
    assert made.returncode == 0, made.stderr
    pem = folder / "kb.pem"
    pem.write_text(cert.read_text() + key.read_text())
    return pem


def replica_project(folder: Path, name: str) -> Path:
    """A small project of its own for one replica; whoami.md says which replica serves a session."""
    docs = {**SAMPLE_DOCS, "whoami.md": f"# Replica {name}\n\nThis checkout is served by {name}.\n"}
    return make_project(folder / name, docs)


async def test_tls_is_terminated_by_haproxy_in_front_of_a_replica(tmp_path: Path) -> None:
    import ssl

    haproxy = executable()
    pem = self_signed_pem(tmp_path)
    with ExitStack() as stack:
        replica = HttpServer(replica_project(tmp_path, "r1")).wait_ready()
        stack.callback(replica.stop)
        balancer = Balancer(
            haproxy,
            [f"127.0.0.1:{replica.port}"],
            tmp_path / "haproxy.log",
            extra={"KBKIT_TLS_CERT": str(pem)},
        )
        stack.callback(balancer.stop)
        await anyio.to_thread.run_sync(balancer.wait_ready)
        trust = ssl.create_default_context(cafile=str(pem))
        url = f"https://127.0.0.1:{balancer.port}/mcp"
        async with (
            httpx2.AsyncClient(headers=auth_headers(), timeout=30, verify=trust) as http,
            Client(streamable_http_client(url, http_client=http), mode="auto", cache=None) as client,
        ):
            found = await client.call_tool("search", {"query": "blue green"})
            assert found.structured_content["results"][0]["path"] == "runbooks/deploy.rst"
            reply = await http.get(f"https://127.0.0.1:{balancer.port}/healthz")
            assert reply.headers["strict-transport-security"].startswith("max-age=")
        with pytest.raises(httpx2.TransportError):  # plain HTTP is not served on the TLS port
            httpx2.get(f"http://127.0.0.1:{balancer.port}/healthz", timeout=10)


@dataclass
class Tally:
    """2026-07-28 calls by the phase of the test they began in: how many, and which failed (with why).

    A call that began before the SIGKILL and failed after it was in flight when a replica died: if
    that replica had begun its reply, no proxy can replay it (docs/adr/0058). Such a failure is kept
    apart, not excused silently: the test allows one per client and prints them."""

    calls: dict[str, int] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    across_the_kill: list[str] = field(default_factory=list)

    def count(self, begun: str, ended: str, failure: str | None) -> None:
        self.calls[begun] = self.calls.get(begun, 0) + 1
        if failure is None:
            return
        if begun == "warm-up" and ended != "warm-up":
            self.across_the_kill.append(failure)
        else:
            self.failures.setdefault(begun, []).append(failure)


@dataclass
class Session:
    """One 2025-11-25 session, as a client saw it."""

    client: int
    replica: str
    opened_in: str
    calls: int = 0
    ended_by: str | None = None
    """The error that ended it (None: it lasted until the clients were stopped)."""
    ended_in: str | None = None
    statuses: list[int] = field(default_factory=list)
    """HTTP statuses of its POSTs, in order."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(phase, error) of each call that failed without ending the session."""


@asynccontextmanager
async def sdk_client(
    url: str,
    mode: str,
    on_response: Callable[[httpx2.Response], None] | None = None,
    message_handler=None,  # noqa: ANN001 - the SDK's MessageHandlerFnT
) -> AsyncIterator[Client]:
    async def hook(response: httpx2.Response) -> None:
        if on_response is not None:
            on_response(response)

    async with (
        httpx2.AsyncClient(headers=auth_headers(), timeout=30, event_hooks={"response": [hook]}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            cache=None,
            message_handler=message_handler,
        ) as client,
    ):
        yield client


def leaves(error: BaseException) -> str:
    """What an exception group holds, leaf by leaf: the SDK wraps a transport's failure in one."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(leaves(inner) for inner in error.exceptions)
    cause = f" (from {leaves(error.__cause__)})" if error.__cause__ is not None else ""
    return f"{type(error).__name__}: {error}{cause}"


async def whoami(client: Client) -> str:
    text = (await client.read_resource(WHOAMI)).contents[0].text
    return text.split("served by ", 1)[1].split(".", 1)[0]


class Cluster:
    """Three replicas and the balancer; every process is stopped by `close`, whatever happened."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self.folder = folder
        self.names = names
        self.roots = {name: replica_project(folder, name) for name in names}
        self.replicas: dict[str, HttpServer] = {}
        self.balancer: Balancer | None = None
        self.retired: list[HttpServer] = []

    def start(self) -> Balancer:
        for name in self.names:
            self.replicas[name] = HttpServer(self.roots[name])
        for replica in self.replicas.values():
            replica.wait_ready()
        addresses = [f"127.0.0.1:{self.replicas[name].port}" for name in self.names]
        self.balancer = Balancer(executable(), addresses, self.folder / "haproxy.log").wait_ready()
        return self.balancer

    def server_name(self, name: str) -> str:
        """The replica's server line in deploy/haproxy.cfg (r1, r2, ...)."""
        return f"r{self.names.index(name) + 1}"

    def restart(self, name: str) -> None:
        """Start the replica again on its port (after it died or stopped)."""
        old = self.replicas[name]
        self.retired.append(old)
        self.replicas[name] = HttpServer(self.roots[name], port=old.port).wait_ready()

    def close(self) -> None:
        with ExitStack() as stack:  # every stop runs even when one of them raises
            if self.balancer is not None:
                stack.callback(self.balancer.stop)
            for replica in [*self.replicas.values(), *self.retired]:
                stack.callback(replica.stop)


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")  # the 2025-11-25 API, on purpose
@pytest.mark.timeout(300)  # three replicas, HAProxy and twelve clients on a loaded two-core machine
async def test_a_killed_and_a_rolled_replica_lose_no_stateless_call_and_sessions_reopen(
    tmp_path: Path,
) -> None:
    names = ["red", "green", "blue"]
    cluster = Cluster(tmp_path, names)
    try:
        balancer = await anyio.to_thread.run_sync(cluster.start)
        with anyio.fail_after(240):
            await exercise(cluster, balancer)
    finally:
        cluster.close()


async def exercise(cluster: Cluster, balancer: Balancer) -> None:  # noqa: C901, PLR0915 - one scenario, told in order
    url = balancer.url
    phase = "warm-up"
    tally = Tally()
    sessions: list[Session] = []
    stop = anyio.Event()
    modern_clients, legacy_clients = 5, 5

    async def modern(number: int) -> None:
        """search calls, one after another; a failure is counted (a transport failure can end the
        SDK's client too: then a new one goes on, bounded)."""
        calls = 0
        for _ in range(10):
            begun = phase
            try:
                async with sdk_client(url, "auto") as client:
                    while calls < MAX_CALLS and not stop.is_set():
                        begun = phase
                        calls += 1
                        try:
                            result = await client.call_tool(
                                "search", {"query": ["blue green", "guard", "WAL"][calls % 3]}
                            )
                            tally.count(begun, phase, "is_error" if result.is_error else None)
                        except Exception as exc:  # counted, and the test says which
                            tally.count(begun, phase, f"{type(exc).__name__}: {exc}")
                        await anyio.sleep(THINK)
                    return
            except Exception as exc:  # the SDK's client ends when its transport fails: a new one goes on
                tally.count(begun, phase, f"the client ended: {leaves(exc)}")

    async def legacy(number: int) -> None:
        """Calls in a 2025-11-25 session; when the session is gone, opens a new one (bounded)."""
        now_open: list[Session | None] = [None]  # the session whose POSTs are answered now, if one is open

        def seen(response: httpx2.Response) -> None:
            if now_open[-1] is not None and response.request.method == "POST":
                now_open[-1].statuses.append(response.status_code)

        for _ in range(10):
            async with sdk_client(url, "legacy", seen) as client:
                session = Session(number, await whoami(client), phase)
                sessions.append(session)
                now_open.append(session)
                while session.calls < MAX_CALLS and not stop.is_set():
                    now = phase
                    try:
                        await client.call_tool("search", {"query": "guard sequence"})
                    except Exception as exc:
                        error = f"{type(exc).__name__}: {exc}"
                        if session.statuses[-1:] == [404] or len(session.failed) >= 3:
                            session.ended_by, session.ended_in = error, now  # the session is gone
                            break
                        session.failed.append((now, error))  # e.g. in flight when its replica died
                    else:
                        session.calls += 1
                    await anyio.sleep(THINK)
                now_open.append(None)
            if stop.is_set():
                return

    def current(name: str) -> list[Session]:
        return [s for s in sessions if s.replica == name and s.ended_by is None]

    async def until(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
        with anyio.move_on_after(timeout):
            while not predicate():
                await anyio.sleep(0.05)
        if not predicate():
            raise TimeoutError(f"not within {timeout} s: {what}; sessions: {sessions}")

    def in_thread(function: Callable[[], object]) -> object:
        return anyio.to_thread.run_sync(function)

    async with anyio.create_task_group() as group:
        for number in range(modern_clients):
            group.start_soon(modern, number)
        for number in range(legacy_clients):
            group.start_soon(legacy, number)
        await until(lambda: len(sessions) >= legacy_clients and sum(tally.calls.values()) >= 30, "warm-up")
        extra = legacy_clients
        while not all(current(name) for name in cluster.names) and extra < legacy_clients + 9:
            group.start_soon(legacy, extra)  # round robin spreads sessions; make sure each replica has one
            extra += 1
            await until(lambda: len(sessions) >= extra, "another session")  # noqa: B023
        assert all(current(name) for name in cluster.names), [(s.replica, s.ended_by) for s in sessions]
        killed, rolled, spared = cluster.names
        on_killed, on_rolled, on_spared = current(killed), current(rolled), current(spared)

        phase = "SIGKILL"
        cluster.replicas[killed].process.kill()
        await in_thread(lambda: balancer.wait({cluster.server_name(killed): "DOWN"}))
        await until(lambda: all(s.ended_by for s in on_killed), "every session on the killed replica to end")
        made = tally.calls.get(phase, 0)  # load on the two replicas left, counted, not timed
        await until(lambda: tally.calls.get(phase, 0) >= made + 20, "20 calls on the two replicas left")  # noqa: B023
        await in_thread(lambda: cluster.restart(killed))
        await in_thread(lambda: balancer.wait({cluster.server_name(killed): "UP"}))

        phase = "rolling restart"
        on_rolled = current(rolled)  # those that came to it after the kill too
        cluster.replicas[rolled].process.send_signal(signal.SIGTERM)
        await in_thread(lambda: balancer.wait({cluster.server_name(rolled): "DOWN"}))  # it said `draining`
        assert await in_thread(lambda: cluster.replicas[rolled].process.wait(timeout=60)) == 0
        await in_thread(lambda: cluster.restart(rolled))
        await in_thread(lambda: balancer.wait({cluster.server_name(rolled): "UP"}))
        await until(lambda: all(s.ended_by for s in on_rolled), "every session on the rolled replica to end")
        made = tally.calls.get(phase, 0)
        await until(lambda: tally.calls.get(phase, 0) >= made + 20, "20 calls after the restart")  # noqa: B023
        phase = "after"
        stop.set()
    retried = {
        row_name: counts
        for row_name, counts in balancer.counters().items()
        if row_name in ("replicas", "r1", "r2", "r3")
    }

    failed = {
        name: len(tally.failures.get(name, [])) for name in ("warm-up", "SIGKILL", "rolling restart", "after")
    }
    sys.stderr.write(
        f"\n2026-07-28 calls: {tally.calls}; failed: {failed}; in flight across the SIGKILL: {tally.across_the_kill}"
        f"\n2025-11-25 sessions: {len(sessions)}, ended by a lost replica: {sum(1 for s in sessions if s.ended_by)}"
        f", calls in flight when their replica was killed: {sum(len(s.failed) for s in sessions)}"
        f"\nHAProxy retries / redispatches: {retried}\n"
    )
    assert not any(tally.failures.values()), tally.failures
    assert len(tally.across_the_kill) <= modern_clients, tally.across_the_kill  # one in flight per client
    assert tally.calls.get("SIGKILL", 0) > 0 and tally.calls.get("rolling restart", 0) > 0, tally.calls

    lost = on_killed + on_rolled
    for session in lost:
        assert session.ended_by is not None and "Session" in session.ended_by, session  # not found
        assert session.statuses[-1] == 404, session  # the dead session's id, answered by a live replica
        after = sessions[sessions.index(session) + 1 :]
        reopened = next((s for s in after if s.client == session.client), None)
        assert reopened is not None and reopened.calls > 0, (session, reopened)  # a new session, and it works
        if session.failed:  # a call in flight on the killed replica: its SSE reply had begun, so
            # HAProxy could not replay it elsewhere; the session's next call got the 404
            assert session in on_killed and len(session.failed) == 1, session
    for session in on_spared:
        assert session.ended_by is None and not session.failed and session.calls > 0, session  # untouched
    for session in sessions:
        if session.ended_by is not None:
            assert session in lost, session  # no session ended but those whose replica went away

    await edits_reach_every_replica(cluster, balancer)


async def edits_reach_every_replica(cluster: Cluster, balancer: Balancer) -> None:
    """An edit made in every replica's checkout (as each one's git pull would) is heard by a
    2025-11-25 session stuck to each replica through HAProxy, by a 2026-07-28 listener on each
    replica, and by one through HAProxy."""
    heard: dict[str, anyio.Event] = {}

    async def legacy_listener(key: str, opened: anyio.Event, stop: anyio.Event, found: list[str]) -> None:
        stream_open = anyio.Event()

        def seen(response: httpx2.Response) -> None:
            if response.request.method == "GET" and response.status_code == 200:
                stream_open.set()

        async def handler(message: object) -> None:
            inner = getattr(message, "root", message)
            if isinstance(inner, types.ResourceUpdatedNotification) and inner.params.uri == NOTES:
                heard[key].set()

        async with sdk_client(balancer.url, "legacy", seen, handler) as client:
            found.append(await whoami(client))
            await client.session.subscribe_resource(NOTES)
            with anyio.fail_after(30):
                await stream_open.wait()
            opened.set()
            await stop.wait()

    async def modern_listener(key: str, url: str, opened: anyio.Event) -> None:
        async with (
            sdk_client(url, "auto") as client,
            client.listen(resource_subscriptions=[NOTES]) as subscription,
        ):
            opened.set()
            async for event in subscription:
                if getattr(event, "uri", None) == NOTES:
                    heard[key].set()
                    return

    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        covered: dict[str, str] = {}  # replica -> listener key
        for attempt in range(15):  # sessions go where round robin sends them: open until each replica has one
            if len(covered) == len(cluster.names):
                break
            key, opened, found = f"legacy-{attempt}", anyio.Event(), []
            heard[key] = anyio.Event()
            group.start_soon(legacy_listener, key, opened, stop, found)
            with anyio.fail_after(60):
                await opened.wait()
            covered.setdefault(found[0], key)
        assert set(covered) == set(cluster.names), covered
        modern = {f"modern-{name}": cluster.replicas[name].url for name in cluster.names}
        modern["modern-through-haproxy"] = balancer.url
        for key, url in modern.items():
            heard[key], opened = anyio.Event(), anyio.Event()
            group.start_soon(modern_listener, key, url, opened)
            with anyio.fail_after(60):
                await opened.wait()
        for root in cluster.roots.values():
            (root / "docs" / "notes.txt").write_text("Rewritten notes: checkpoints after every commit.\n")
        expected = [*covered.values(), *modern]
        with anyio.fail_after(60):
            for key in expected:
                await heard[key].wait()
        stop.set()
        group.cancel_scope.cancel()
    assert TEST_TOKEN not in balancer.log()
