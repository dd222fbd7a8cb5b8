"""The streamable HTTP transport: the same server, behind a token, a Host/Origin gate and limits.

    GET  /healthz   unauthenticated: {"status": "ok"}, or 503 {"status": "draining"} after SIGTERM
    *    /mcp       the MCP endpoint (2025-11-25 sessions and 2026-07-28 stateless requests)

On SIGTERM the server drains before it stops (docs/adr/0029): for `[server.http] drain_seconds`
/healthz answers 503 so a balancer's health check takes the replica out, while every request,
in flight or newly arrived, is still served (each reply then says `Connection: close`, so a
client's next request opens a connection the balancer routes elsewhere). A second SIGTERM, or
SIGINT (Ctrl-C), stops at once.

Connections are bounded in number and in how long they may stall (kbkit/server/connections.py),
and every warning goes to stderr through one rate limit (kbkit/server/logs.py).

Who may call is kbkit/server/auth/ (docs/adr/0031, 0032): personal tokens, the shared secret
`MCP_TOKEN`, OAuth access tokens, as `Authorization: Bearer <token>` (or `?token=`, the weaker form
for clients that cannot set headers: query strings end up in logs and histories), and one audit
line per request. `MCP_ALLOW_ANONYMOUS=1` lifts that for local development, never on a
non-loopback bind.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kbkit.catalog.clients import TOKEN_VAR
from kbkit.config import Settings, check_option
from kbkit.errors import ConfigError, EnvironmentProblem
from kbkit.server.auth.audit import LogFormat
from kbkit.server.auth.plan import AuthPlan, plan_auth
from kbkit.server.connections import (
    ACCEPT_BACKLOG,
    ConnectionGuard,
    connection_budget,
    raise_open_file_limit,
    usable_file_limit,
)
from kbkit.server.logs import install_stderr_log

logger = logging.getLogger("kbkit.http")

TOKEN_MIN_LENGTH = 16
"""The shortest MCP_TOKEN `kbkit serve --http` accepts (and `kbkit doctor` passes)."""
MAX_BODY_BYTES = 1024 * 1024
KEEP_ALIVE_SECONDS = 5
"""An idle connection between requests is closed after this long."""
GRACEFUL_SECONDS = 10
"""On SIGTERM, requests in flight get this long to finish before they are cancelled."""
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOOPBACK_ORIGINS = (
    "http://127.0.0.1:*",
    "http://localhost:*",
    "http://[::1]:*",
    "http://127.0.0.1",
    "http://localhost",
    "http://[::1]",
)


@dataclass(frozen=True)
class HttpPlan:
    """Everything decided before binding: where, with which gate. Holds the token: never print it."""

    host: str
    port: int
    token: str | None
    loopback: bool
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    max_sessions: int
    session_idle_timeout: int
    max_sessions_per_principal: int
    max_connections: int
    """`[server.http] max_connections`, lowered where the open-file limit would not hold that many."""
    client_timeout: int
    drain_seconds: int = 0
    """`[server.http] drain_seconds`: how long SIGTERM keeps serving with /healthz at 503."""
    file_limit: int = 0
    """The open-file limit the server runs under, when it lowered max_connections (else 0)."""
    auth: AuthPlan | None = field(default=None, repr=False)
    """Who may call (kbkit/server/auth/plan.py)."""
    kb_tools: tuple[str, ...] = ("search", "get_document")

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"

    def describe(self) -> list[str]:
        """Boot lines: the URL, whether auth is on, and how far the bind reaches. Never the token."""
        reach = (
            "reach: loopback only (this machine)"
            if self.loopback
            else f"reach: NETWORK ({self.host}): any host that routes here may connect; the token guards it"
        )
        limits = f"limits: {self.max_connections} connections, {self.client_timeout} s to send a request"
        if self.file_limit:
            limits += f" (lowered to fit the open-file limit, {self.file_limit}; raise it with `ulimit -Hn`)"
        auth = self.auth.describe(self.url) if self.auth else []
        drain = (
            f"drain: {self.drain_seconds} s on SIGTERM ({HEALTH_PATH} answers 503 meanwhile)"
            if self.drain_seconds
            else "drain: none (drain_seconds = 0: SIGTERM stops at once)"
        )
        return [f"http: {self.url} (health: {HEALTH_PATH})", *auth, reach, limits, drain]


def weak_token(token: str) -> str | None:
    """Why `token` is too weak to guard `kbkit serve --http`, or None: the one rule serve and doctor apply."""
    if len(token) < TOKEN_MIN_LENGTH:
        return f"{TOKEN_VAR} is shorter than {TOKEN_MIN_LENGTH} characters"
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def plan_http(
    settings: Settings, host: str | None = None, port: int | None = None, log_format: LogFormat = "text"
) -> HttpPlan:
    """Decide the bind and the gate, or refuse to start with the fix."""
    host = host or settings.http.host
    if port is not None:
        check_option("--port", "server.http.port", port)  # the config key's own range, and its message
    port = settings.http.port if port is None else port
    token = settings.env.get(TOKEN_VAR) or None
    loopback = is_loopback(host)
    auth = plan_auth(settings, loopback=loopback, host=host, log_format=log_format)
    if token is not None and (weak := weak_token(token)):
        raise ConfigError(f"{weak}; use a long random string")
    file_limit = usable_file_limit()
    budget = connection_budget(settings.http.max_connections, file_limit)
    allowed_hosts = [*LOOPBACK_HOSTS, *settings.http.allowed_hosts]
    if not loopback:
        if host in ("0.0.0.0", "::") and not settings.http.allowed_hosts:
            raise ConfigError(
                f"binding {host} accepts any Host header name; list the names clients use in "
                '[server.http] allowed_hosts (e.g. ["kb.internal:*"]) so DNS rebinding stays blocked',
                file=settings.origin("server.http.allowed_hosts"),
                key="server.http.allowed_hosts",
            )
        allowed_hosts += [f"{host}:*", host] if ":" not in host else [f"[{host}]:*"]
    return HttpPlan(
        host=host,
        port=port,
        token=token,
        loopback=loopback,
        allowed_hosts=tuple(dict.fromkeys(allowed_hosts)),
        allowed_origins=tuple(dict.fromkeys([*LOOPBACK_ORIGINS, *settings.http.allowed_origins])),
        max_sessions=settings.http.max_sessions,
        max_sessions_per_principal=settings.http.max_sessions_per_principal,
        session_idle_timeout=settings.http.session_idle_timeout,
        max_connections=budget,
        client_timeout=settings.http.client_timeout,
        drain_seconds=settings.http.drain_seconds,
        file_limit=file_limit if budget < settings.http.max_connections else 0,
        auth=auth,
        kb_tools=settings.server_tools,
    )


@dataclass
class Drain:
    """Whether the server is draining: set by SIGTERM, read by /healthz and by every response."""

    seconds: float
    until: float | None = None
    """time.monotonic() at which draining ends and the server stops; None while serving normally."""
    announced: bool = False

    @property
    def draining(self) -> bool:
        return self.until is not None

    def start(self) -> None:
        """Begin draining (safe in a signal handler: it only stores a number)."""
        self.until = time.monotonic() + self.seconds

    def over(self) -> bool:
        return self.until is not None and time.monotonic() >= self.until


class DrainGate:
    """ASGI middleware: while the server drains, every response carries `Connection: close`, so a
    keep-alive client comes back on a new connection (one a balancer routes to another replica)."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if message["type"] == "http.response.start" and self.drain.draining:
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)


def health_route(drain: Drain) -> Route:
    """GET /healthz: 200 `ok` while serving, 503 `draining` once SIGTERM has started the drain."""

    async def healthz(request: Request) -> JSONResponse:
        if drain.draining:
            return JSONResponse({"status": "draining"}, status_code=503, headers={"retry-after": "1"})
        return JSONResponse({"status": "ok"})

    return Route(HEALTH_PATH, healthz, methods=["GET"])


def build_app(server: Server[Any], plan: HttpPlan, drain: Drain | None = None) -> ASGIApp:
    from kbkit.server.auth.share import Shares
    from kbkit.server.auth.wiring import gated

    drain = drain or Drain(plan.drain_seconds)
    shares = Shares(
        max_sessions=plan.max_sessions,
        per_principal=plan.max_sessions_per_principal,
        idle_timeout=plan.session_idle_timeout,
    )
    routes, wrap = gated(plan.auth, plan.url, plan.kb_tools, open_paths=(HEALTH_PATH,), shares=shares)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=plan.session_idle_timeout,
        max_sessions=plan.max_sessions,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(plan.allowed_hosts),
            allowed_origins=list(plan.allowed_origins),
        ),
        host=plan.host,
        custom_starlette_routes=[health_route(drain), *routes],
    )
    return DrainGate(wrap(app), drain)


class _GracefulServer(uvicorn.Server):
    """uvicorn with a drain before its graceful shutdown.

    The first SIGTERM starts draining (when `drain.seconds` > 0): the server goes on accepting and
    serving while /healthz answers 503, and its tick ends the loop once the drain is over. A second
    SIGTERM, or a SIGINT, stops at once. uvicorn re-raises a caught signal after its graceful
    shutdown, which would kill the process before our own cleanup (closing the index) runs; forget
    the signal instead: `kbkit serve --http` then ends with exit code 0 after a clean shutdown on
    SIGTERM, and 130 after one on SIGINT (`interrupted`), as for every command stopped with Ctrl-C."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain
        self.interrupted = False

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.interrupted = self.interrupted or sig == signal.SIGINT
        first_term = sig == signal.SIGTERM and not self.drain.draining and not self.should_exit
        if first_term and self.drain.seconds > 0:
            self.drain.start()
            return
        super().handle_exit(sig, frame)
        self._captured_signals.clear()

    async def on_tick(self, counter: int) -> bool:
        if self.drain.draining and not self.drain.announced:
            self.drain.announced = True
            logger.warning(
                "http: SIGTERM: draining for %g s (%s answers 503; requests are still served), then stopping",
                self.drain.seconds,
                HEALTH_PATH,
            )
        if self.drain.over():
            self.should_exit = True
        return await super().on_tick(counter)


def bind(plan: HttpPlan) -> socket.socket:
    """Take the port before anything says the server is up; `serve_http` serves on this socket.

    A port in use (or an address this machine does not have) is one error naming it and the fix.
    """
    try:
        infos = socket.getaddrinfo(plan.host, plan.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(
            f"cannot listen on {plan.host!r} ({exc.strerror})",
            fix="give an address of this machine with --host",
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart need not wait out TIME_WAIT
        sock.bind(address)
        sock.listen(ACCEPT_BACKLOG)  # clients that connect while the app starts queue, not refused
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise EnvironmentProblem(
                f"port {plan.port} on {plan.host} is already in use (another kbkit serve --http?)",
                fix="stop that server or pick a free port with --port (or [server.http] port in kbkit.toml)",
            ) from None
        raise ConfigError(
            f"cannot listen on {plan.host}:{plan.port} ({exc.strerror})",
            fix="pick another address or port with --host / --port",
        ) from None
    return sock


async def serve_http(server: Server[Any], plan: HttpPlan, sock: socket.socket) -> bool:
    """Serve on `sock` (from `bind`) until SIGINT/SIGTERM. SIGTERM first drains for
    `plan.drain_seconds` (module docstring); then notification streams end and requests in flight
    get their responses (for up to GRACEFUL_SECONDS) before it stops. True when SIGINT stopped it."""
    raise_open_file_limit()
    # sse-starlette ends every SSE response as soon as uvicorn sees a signal, and 2025-11-25
    # replies are SSE responses: a request in flight would lose its answer. Listener streams are
    # ended by the connection guard instead (GuardedH11Protocol.shutdown).
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # sse-starlette is untyped here
    guard = ConnectionGuard(max_connections=plan.max_connections, client_timeout=plan.client_timeout)
    drain = Drain(plan.drain_seconds)
    config = uvicorn.Config(
        build_app(server, plan, drain),
        host=plan.host,
        port=plan.port,
        http=guard.protocol_class(),
        ws="none",
        backlog=ACCEPT_BACKLOG,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        server_header=False,
    )
    handler = install_stderr_log(log_format=plan.auth.log_format if plan.auth else "text")
    graceful = _GracefulServer(config, drain)
    try:
        await graceful.serve(sockets=[sock])
        return graceful.interrupted
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
