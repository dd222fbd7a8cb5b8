"""`search` under load: `kbkit serve --http` (auth on) and `kbkit serve` (stdio) on cpp-docs.

cpp-docs (9,753 Markdown files) is unpacked into a temporary project and indexed before the
server starts. The queries come from the corpus itself: document titles and runs of 2-3 prose
words. Every call goes through the real `mcp` client:

- HTTP: `kbkit serve --http` with `MCP_TOKEN` set; first one client calling sequentially
  (the per-call floor), then fleets of `--sweep` clients (2, 4, 8; 100 calls each) to show
  where latency starts to climb, then `--clients` concurrent clients (32), each with its own
  connection (its own httpx2 client and MCP session), each making `--calls` (200) `search`
  calls back to back (a closed loop: no think time, so p50 is about clients / throughput).
  Errors, p50/p99 latency, throughput, and the CPU the server and this load generator used
  per call.
- stdio: one `kbkit serve` subprocess and one client: sequential calls, then a few concurrent
  tasks sharing that one session.
- replicas: HAProxy with the shipped deploy/haproxy.cfg in front of 1, 2 and 3 `kbkit serve
  --http` replicas (`--replicas`), each on its own copy of the indexed project, under the same
  `--clients` x `--calls` load: throughput and latency side by side (and one server without
  HAProxy, for what the balancer costs), with the CPU the replicas, HAProxy and this load
  generator used, and the machine's core count. Needs Debian's `haproxy`.

Latency is measured in the client (it includes the client's own work). The load generator runs
on the same machine: on 2 cores it competes with the server, and the table says how much.

- who is calling: the same 32-client load with the shared token, a personal token (`kbk_`, the
  tokens file) and an OAuth JWT (RS256, from an issuer this script serves on loopback), side by
  side on one server, in the order A B C C B A so drift over the run falls on each alike.

    .venv/bin/python -m bench.http_load [--clients 32] [--calls 200] [--sweep 2,4,8] [--mode auto|legacy]
        [--replicas 1,2,3] # HAProxy in front of that many replicas ('' for none)
        [--only-replicas]  # only the HAProxy runs (and one server without it, for comparison)
        [--profile FILE]   # py-spy samples of the HTTP server during the load, summed up by
                           # the deepest kbkit source line on each stack (needs py-spy)
        [--auth-calls 100] [--auth-only]
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import TextContent

from bench._util import (
    MachineWatch,
    cpu_seconds,
    data_dir,
    make_queries,
    ms,
    percentile,
    print_table,
    unpack,
    verdict,
    write_project,
)
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.server.auth.tokens import create
from tests.helpers.http import TEST_TOKEN, HttpServer, http_client
from tests.helpers.serve import serve_stdio
from tests.peers.haproxy import Balancer, haproxy_path

AUDIENCE = "http://kbkit-bench.invalid/mcp"
P50_AUTH_TARGET = 1.10
"""A personal token's or a JWT's p50 within 10 % of the shared token's."""

KB_FOLDER = "cpp-docs"
P99_TARGET = 0.050


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []

    async def call(self, client: Client, query: str) -> None:
        started = time.perf_counter()
        try:
            result = await client.call_tool("search", {"query": query})
        except Exception as exc:  # counted, never fatal: the table reports errors
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        self.latencies.append(time.perf_counter() - started)
        if result.is_error:
            first = result.content[0] if result.content else None
            self.errors.append(first.text if isinstance(first, TextContent) else "is_error")


def summary(label: str, tally: Tally, wall: float, server_cpu: float | None, client_cpu: float) -> list[str]:
    calls = len(tally.latencies) + len(tally.errors)
    lat = tally.latencies or [float("nan")]
    per_call = (
        f"{server_cpu / calls * 1000:.2f} / {client_cpu / calls * 1000:.2f} ms"
        if server_cpu is not None
        else ""
    )
    return [
        label,
        str(calls),
        str(len(tally.errors)),
        ms(percentile(lat, 50)),
        ms(percentile(lat, 99)),
        ms(max(lat)),
        f"{calls / wall:,.0f}/s",
        per_call,
    ]


async def run_http(
    url: str, pid: int, queries: list[str], clients: int, calls: int, mode: str, sweep: list[int]
) -> tuple[list[list[str]], Tally]:
    """Rows: one client calling sequentially, a few smaller fleets (`sweep`), then `clients`."""
    rows = []
    sequential = Tally()
    async with http_client(url, mode) as client:
        for query in queries[:50]:  # warm-up: threads, connections, page cache
            await client.call_tool("search", {"query": query})
        server0, client0, started = cpu_seconds(pid), own_cpu(), time.perf_counter()
        for query in queries:
            await sequential.call(client, query)
        wall = time.perf_counter() - started
        rows.append(
            summary(
                f"HTTP, 1 client, sequential ({mode})",
                sequential,
                wall,
                cpu_seconds(pid) - server0,
                own_cpu() - client0,
            )
        )
    for fleet in sweep:
        row, _, _ = await fleet_run(url, lambda: cpu_seconds(pid), queries, fleet, min(calls, 100), mode)
        rows.append(row)
    row, tally, _ = await fleet_run(url, lambda: cpu_seconds(pid), queries, clients, calls, mode)
    rows.append(row)
    return rows, tally


async def fleet_run(
    url: str,
    server_cpu: Callable[[], float],
    queries: list[str],
    clients: int,
    calls: int,
    mode: str,
    headers: Mapping[str, str] | None = None,
    label: str = "",
) -> tuple[list[str], Tally, float]:
    """`clients` connections, each calling `calls` times back to back, all released at once.
    Returns the table row, the calls, and the wall time."""
    tally = Tally()
    ready = 0
    go = anyio.Event()
    all_ready = anyio.Event()

    async def worker(number: int) -> None:
        nonlocal ready
        async with http_client(url, mode, headers) as client:
            await client.call_tool("search", {"query": queries[number % len(queries)]})  # connect + warm
            ready += 1
            if ready == clients:
                all_ready.set()
            await go.wait()
            offset = number * 7
            for i in range(calls):
                await tally.call(client, queries[(offset + i) % len(queries)])

    with anyio.fail_after(600):
        async with anyio.create_task_group() as group:
            for number in range(clients):
                group.start_soon(worker, number)
            await all_ready.wait()
            server0, client0, started = server_cpu(), own_cpu(), time.perf_counter()
            go.set()
        wall = time.perf_counter() - started
    row = summary(
        f"HTTP, {clients} clients x {calls} calls ({mode}){label}",
        tally,
        wall,
        server_cpu() - server0,
        own_cpu() - client0,
    )
    return row, tally, wall


async def run_auth(
    url: str, pid: int, queries: list[str], clients: int, calls: int, mode: str, bearers: dict[str, str]
) -> tuple[list[list[str]], dict[str, float]]:
    """The same fleet with each credential, in the order A B C C B A; a row per credential, summed."""
    order = [*bearers, *reversed(bearers)]
    tallies: dict[str, Tally] = {name: Tally() for name in bearers}
    walls: dict[str, float] = dict.fromkeys(bearers, 0.0)
    cpus: dict[str, float] = dict.fromkeys(bearers, 0.0)
    for name in order:
        server0, started = cpu_seconds(pid), time.perf_counter()
        _, tally, _ = await fleet_run(
            url,
            lambda: cpu_seconds(pid),
            queries,
            clients,
            calls,
            mode,
            {"Authorization": f"Bearer {bearers[name]}"},
        )
        walls[name] += time.perf_counter() - started
        cpus[name] += cpu_seconds(pid) - server0
        tallies[name].latencies += tally.latencies
        tallies[name].errors += tally.errors
    rows = [
        summary(
            f"{name}, {clients} clients x {2 * calls} calls ({mode})",
            tallies[name],
            walls[name],  # includes each fleet's connecting: throughput is a little low for all three
            cpus[name],
            0.0,
        )
        for name in bearers
    ]
    p50s = {name: percentile(tallies[name].latencies or [float("nan")], 50) for name in bearers}
    return rows, p50s


async def gate_cost(jwt_token: str, issuer_url: str, repeat: int = 3000) -> list[list[str]]:
    """The gate alone, in this process: one `tools/call search` request through `AuthGate` to an
    app that answers at once, per credential; the median of `repeat` runs. No server, no search:
    what the check itself costs, whatever else the machine is doing."""
    import statistics

    from kbkit.server.auth.audit import Audit
    from kbkit.server.auth.gate import AuthGate, GatePolicy
    from kbkit.server.auth.oauth import JwtVerifier, OAuthPolicy, http_fetch
    from kbkit.server.auth.tokens import TokenStore

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens.json"
        bearers = {"shared token": TEST_TOKEN, "personal token": create(tokens, "bench", "read", None)}
        bearers["OAuth JWT (RS256)"] = jwt_token
        policy = OAuthPolicy(issuer_url, AUDIENCE, ("kb",), claims={"groups": ("eng",)})
        gate = AuthGate(
            app,
            GatePolicy(
                shared=TEST_TOKEN, store=TokenStore(tokens), verifier=JwtVerifier(policy, http_fetch())
            ),
            Audit("text", lambda line: None),
        )
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search"}}
        ).encode()

        async def one(bearer: str) -> None:
            scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b""}
            scope["headers"] = [(b"authorization", f"Bearer {bearer}".encode())]

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: Any) -> None:
                if message["type"] == "http.response.start" and message["status"] != 200:
                    raise RuntimeError(f"the gate refused the bench's {bearer[:4]}... token")

            await gate(scope, receive, send)

        rows = []
        for name, bearer in bearers.items():
            times = []
            for n in range(repeat + 100):  # the first 100: warm-up (the JWT's keys are fetched once)
                started = time.perf_counter()
                await one(bearer)
                if n >= 100:
                    times.append(time.perf_counter() - started)
            rows.append([name, f"{statistics.median(times) * 1e6:.0f} µs"])
        return rows


JWKS: list[dict[str, str]] = []
"""The bench issuer's one public key (set by `issuer`)."""


class _Issuer(BaseHTTPRequestHandler):
    """An OAuth issuer on loopback: its metadata and its one signing key (set on the server)."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        base = f"http://127.0.0.1:{self.server.server_port}"  # type: ignore[attr-defined]  # an HTTPServer
        documents = {
            "/.well-known/openid-configuration": {"issuer": base, "jwks_uri": base + "/jwks"},
            "/jwks": {"keys": [JWKS[0]]},
        }
        body = json.dumps(documents.get(self.path, {})).encode()
        self.send_response(200 if self.path in documents else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the http.server hook
        pass


@contextmanager
def issuer() -> Iterator[tuple[str, str]]:
    """(issuer URL, a JWT it signed for AUDIENCE, valid for an hour), served until the block ends."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Issuer)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    JWKS[:] = [{**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": "bench", "alg": "RS256"}]
    now = int(time.time())
    claims = {
        "iss": url,
        "aud": AUDIENCE,
        "sub": "bench-agent",
        "exp": now + 3600,
        "scope": "kb",
        "groups": ["eng"],
    }
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "bench"})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url, token
    finally:
        server.shutdown()
        server.server_close()


async def run_stdio(
    root: Path, queries: list[str], sequential_calls: int, tasks: int, calls: int, mode: str
) -> list[list[str]]:
    rows = []
    async with serve_stdio(root, mode, stderr_path=root.parent / "stdio-stderr.log") as client:
        pid = _child_pid("serve", str(root))
        for query in queries[:50]:
            await client.call_tool("search", {"query": query})
        tally = Tally()
        server0, client0, started = _cpu_or_none(pid), own_cpu(), time.perf_counter()
        for i in range(sequential_calls):
            await tally.call(client, queries[i % len(queries)])
        wall = time.perf_counter() - started
        server_cpu = None if pid is None else cpu_seconds(pid) - server0
        rows.append(
            summary(f"stdio, 1 client, sequential ({mode})", tally, wall, server_cpu, own_cpu() - client0)
        )

        tally = Tally()

        async def task(number: int) -> None:
            for i in range(calls):
                await tally.call(client, queries[(number * 7 + i) % len(queries)])

        server0, client0, started = _cpu_or_none(pid), own_cpu(), time.perf_counter()
        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for number in range(tasks):
                    group.start_soon(task, number)
        wall = time.perf_counter() - started
        server_cpu = None if pid is None else cpu_seconds(pid) - server0
        rows.append(
            summary(
                f"stdio, 1 session, {tasks} concurrent tasks x {calls} calls ({mode})",
                tally,
                wall,
                server_cpu,
                own_cpu() - client0,
            )
        )
    return rows


def run_replicas(
    root: Path,
    counts: list[int],
    queries: list[str],
    clients: int,
    calls: int,
    mode: str,
    machine: MachineWatch,
) -> list[list[str]]:
    """HAProxy (deploy/haproxy.cfg) in front of each of `counts` replicas in turn, each replica on
    its own copy of the indexed project at `root`; the same fleet load through it each time."""
    cores = machine.cores
    haproxy = haproxy_path()
    if haproxy is None:
        print("haproxy not found (apt-get install haproxy); the replica runs are skipped", file=sys.stderr)
        return []
    copies = [root]
    for number in range(1, max(counts)):
        copy = root.parent / f"replica-{number + 1}"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("*-stderr.log"))  # the index comes along
        copies.append(copy)
    rows = []
    direct = HttpServer(root)
    try:
        direct.wait_ready(timeout=120)
        pid = direct.process.pid
        direct_row, tally, wall = anyio.run(
            fleet_run, direct.url, lambda: cpu_seconds(pid), queries, clients, calls, mode
        )
    finally:
        machine.own(direct.process.pid)
        direct.stop()
    lat = tally.latencies or [float("nan")]
    rows.append(
        [
            "none: 1 server, direct",
            f"{clients} x {calls}",
            str(len(tally.errors)),
            ms(percentile(lat, 50)),
            ms(percentile(lat, 99)),
            f"{(len(tally.latencies) + len(tally.errors)) / wall:,.0f}/s",
            direct_row[-1].replace(" / ", " / - / "),
            str(cores),
        ]
    )
    for count in counts:
        replicas = [HttpServer(copy) for copy in copies[:count]]
        balancer = None
        try:
            for replica in replicas:
                replica.wait_ready(timeout=120)
            balancer = Balancer(
                haproxy, [f"127.0.0.1:{r.port}" for r in replicas], root.parent / "haproxy.log"
            )
            balancer.wait_ready()
            pids = [r.process.pid for r in replicas]
            proxy = balancer.process.pid
            before = cpu_seconds(proxy)
            row, tally, wall = anyio.run(
                fleet_run,
                balancer.url,
                lambda pids=pids: sum(cpu_seconds(pid) for pid in pids),
                queries,
                clients,
                calls,
                mode,
            )
            proxy_cpu = cpu_seconds(proxy) - before
        finally:
            if balancer is not None:
                balancer.stop()  # HAProxy is a child this process waits for: counted as its own
            for replica in replicas:
                machine.own(replica.process.pid)
                replica.stop()
        done = len(tally.latencies) + len(tally.errors)
        lat = tally.latencies or [float("nan")]
        rows.append(
            [
                f"HAProxy + {count} replica{'s' if count > 1 else ''}",
                f"{clients} x {calls}",
                str(len(tally.errors)),
                ms(percentile(lat, 50)),
                ms(percentile(lat, 99)),
                f"{done / wall:,.0f}/s",
                row[-1].replace(" / ", f" / {proxy_cpu / max(done, 1) * 1000:.2f} / "),
                str(cores),
            ]
        )
    return rows


def _child_pid(*needles: str) -> int | None:
    """The pid of this process's child whose command line holds every needle (the stdio server)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and all(n in cmdline for n in needles):
            return int(entry.name)
    return None


def _cpu_or_none(pid: int | None) -> float:
    return cpu_seconds(pid) if pid is not None else 0.0


def profile_rows(raw: Path, top: int = 8) -> list[list[str]]:
    """py-spy's raw samples grouped by the deepest kbkit frame of each stack, with its source line."""
    shares: dict[str, int] = {}
    total = 0
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        frames = [f for f in stack.split(";") if "(kbkit/" in f]
        key = frames[-1] if frames else "(no kbkit frame: worker threads waiting for work)"
        shares[key] = shares.get(key, 0) + int(count)
    rows = []
    for key, samples in sorted(shares.items(), key=lambda item: item[1], reverse=True)[:top]:
        match = re.search(r"\((kbkit/[^:]+):(\d+)\)", key)
        code = ""
        if match:
            source = Path(__file__).resolve().parents[1] / match.group(1)
            code = linecache.getline(str(source), int(match.group(2))).strip()
        rows.append([key, f"`{code}`" if code else "", f"{samples / max(total, 1) * 100:.1f} %"])
    return rows


def find_py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def compare_credentials(
    root: Path, queries: list[str], args: argparse.Namespace, machine: MachineWatch
) -> tuple[list[list[str]], dict[str, float], list[list[str]]]:
    """One server taking the shared token, a personal token and an identity provider's JWT: the
    gate alone in process, then the same load with each credential. Leaves [server.http.oauth] in
    kbkit.toml; the caller puts the file back."""
    with issuer() as (issuer_url, jwt_token):
        with (root / "kbkit.toml").open("a", encoding="utf-8") as config:
            config.write(
                f'\n[server.http.oauth]\nissuer = "{issuer_url}"\naudience = "{AUDIENCE}"\n'
                'scopes = ["kb"]\nclaims = { groups = ["eng"] }\n'
            )
        personal = create(root / ".kbkit" / "tokens.json", "bench", "read", None)
        gate_rows = anyio.run(gate_cost, jwt_token, issuer_url)
        server = HttpServer(root).wait_ready(timeout=120)
        try:
            auth_rows, p50s = anyio.run(
                run_auth,
                server.url,
                server.process.pid,
                queries,
                args.clients,
                args.auth_calls,
                args.mode,
                {"shared token": TEST_TOKEN, "personal token": personal, "OAuth JWT (RS256)": jwt_token},
            )
        finally:
            machine.own(server.process.pid)
            server.stop()
    return auth_rows, p50s, gate_rows


def single_server(
    root: Path, queries: list[str], args: argparse.Namespace, machine: MachineWatch
) -> tuple[list[list[str]], Tally]:
    """One `kbkit serve --http`: sequential calls, the sweep, then the full fleet (optionally profiled)."""
    server = HttpServer(root).wait_ready(timeout=120)
    spy = None
    try:
        if args.profile:
            tool = find_py_spy()
            if tool is None:
                print("py-spy not found (pip install py-spy); --profile ignored", file=sys.stderr)
            else:
                spy = subprocess.Popen(
                    [tool, "record", "--pid", str(server.process.pid), "--format", "raw"]
                    + ["--rate", "200", "--output", str(args.profile), "--nonblocking"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
        return anyio.run(
            run_http,
            server.url,
            server.process.pid,
            queries,
            args.clients,
            args.calls,
            args.mode,
            [int(n) for n in args.sweep.split(",") if n.strip()],
        )
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes the flame graph and exits
            try:
                spy.wait(timeout=60)
            except subprocess.TimeoutExpired:
                spy.kill()
        machine.own(server.process.pid)
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent HTTP clients (default 32)")
    parser.add_argument("--calls", type=int, default=200, help="search calls per client (default 200)")
    parser.add_argument("--queries", type=int, default=400, help="distinct queries drawn from the corpus")
    parser.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="auto = 2026-07-28")
    parser.add_argument("--stdio-calls", type=int, default=1000, help="sequential stdio calls (default 1000)")
    parser.add_argument("--stdio-tasks", type=int, default=4, help="concurrent tasks on one stdio session")
    parser.add_argument(
        "--sweep", default="2,4,8", help="smaller fleets measured first, comma-separated ('' for none)"
    )
    parser.add_argument(
        "--replicas", default="1,2,3", help="HAProxy in front of this many replicas, in turn ('' for none)"
    )
    parser.add_argument(
        "--only-replicas",
        action="store_true",
        help="skip the single-server and stdio runs (HAProxy runs only)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="py-spy samples (raw) of the HTTP server under load")
    parser.add_argument(
        "--auth-calls", type=int, default=100, help="calls per client per credential and pass"
    )
    parser.add_argument(
        "--auth-only", action="store_true", help="only the shared / personal / JWT comparison"
    )
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    machine = MachineWatch()

    with tempfile.TemporaryDirectory(prefix="kbkit-http-load-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        unpack(archive, root)
        write_project(root, KB_FOLDER)
        kb = KnowledgeBase.open(load_settings(root))
        try:
            documents = kb.scan().documents
        finally:
            kb.close()
        queries = make_queries(root / KB_FOLDER, args.queries, args.seed, max_words=3)
        random.Random(args.seed).shuffle(queries)

        config_text = (root / "kbkit.toml").read_text(encoding="utf-8")
        auth_rows: list[list[str]] = []
        p50s: dict[str, float] = {}
        gate_rows: list[list[str]] = []
        if not args.only_replicas:
            auth_rows, p50s, gate_rows = compare_credentials(root, queries, args, machine)
        (root / "kbkit.toml").write_text(config_text, encoding="utf-8")  # the other runs: no OAuth
        http_rows: list[list[str]] = []
        stdio_rows: list[list[str]] = []
        tally = Tally()
        if not (args.only_replicas or args.auth_only):
            http_rows, tally = single_server(root, queries, args, machine)
            stdio_rows = anyio.run(
                run_stdio, root, queries, args.stdio_calls, args.stdio_tasks, args.calls, args.mode
            )
        replica_rows = (
            []
            if args.auth_only
            else run_replicas(
                root,
                [int(n) for n in args.replicas.split(",") if n.strip()],
                queries,
                args.clients,
                args.calls,
                args.mode,
                machine,
            )
        )

    headers = ["run", "calls", "errors", "p50", "p99", "max", "throughput", "CPU/call server / client"]
    if auth_rows:
        print_table(["credential", "median per request"], gate_rows, title="the gate alone, in-process")
        print()
        print_table(headers, auth_rows, title="who is calling: the same load, one server, each credential")
        shared = p50s["shared token"]
        print_table(
            ["target", "measured", "status"],
            [
                [
                    f"{name}: p50 within 10 % of the shared token's",
                    f"{p50 / shared:.3f}x",
                    verdict(p50 <= shared * P50_AUTH_TARGET),
                ]
                for name, p50 in p50s.items()
                if name != "shared token"
            ],
        )

    title = f"search on cpp-docs ({documents} docs, {len(queries)} queries: titles, 2-3 word runs)"
    if http_rows:
        print_table(headers, http_rows + stdio_rows, title=title)
        p99 = percentile(tally.latencies, 99) if tally.latencies else float("inf")
        print()
        print_table(
            ["target", "measured", "status"],
            [
                [
                    f"HTTP {args.clients} clients: errors = 0",
                    str(len(tally.errors)),
                    verdict(not tally.errors),
                ],
                [f"HTTP {args.clients} clients: p99 <= 50 ms", ms(p99), verdict(p99 <= P99_TARGET)],
            ],
        )
    else:
        print(f"\n{title}")
    if replica_rows:
        print_table(
            [
                "balancer",
                "clients x calls",
                "errors",
                "p50",
                "p99",
                "throughput",
                "CPU/call replicas / HAProxy / client",
                "cores",
            ],
            replica_rows,
            title=f"\nthe same load through HAProxy (deploy/haproxy.cfg), {args.mode}",
        )
    if tally.errors:
        print(f"\nfirst error: {tally.errors[0]}")
    if args.profile and args.profile.exists():
        print_table(
            ["deepest kbkit frame", "source line", "share of samples"],
            profile_rows(args.profile),
            title="\nwhere the HTTP server's time goes under load (py-spy, all busy threads)",
        )
    print(f"\nmachine: {machine.note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
