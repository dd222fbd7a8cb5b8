"""The streamable HTTP transport: the same server, behind a token, a Host/Origin gate and limits.

    GET  /healthz   unauthenticated liveness: {"status": "ok"} and nothing else
    *    /mcp       the MCP endpoint (2025-11-25 sessions and 2026-07-28 stateless requests)

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
import socket
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from kbkit.catalog.clients import TOKEN_VAR
from kbkit.config import Settings
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
    max_connections: int
    """`[server.http] max_connections`, lowered where the open-file limit would not hold that many."""
    client_timeout: int
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
        return [f"http: {self.url} (health: {HEALTH_PATH})", *auth, reach, limits]


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
        session_idle_timeout=settings.http.session_idle_timeout,
        max_connections=budget,
        client_timeout=settings.http.client_timeout,
        file_limit=file_limit if budget < settings.http.max_connections else 0,
        auth=auth,
        kb_tools=settings.server_tools,
    )


async def _healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def build_app(server: Server[Any], plan: HttpPlan) -> ASGIApp:
    from kbkit.server.auth.wiring import gated

    routes, wrap = gated(plan.auth, plan.url, plan.kb_tools, open_paths=(HEALTH_PATH,))
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
        custom_starlette_routes=[Route(HEALTH_PATH, _healthz, methods=["GET"]), *routes],
    )
    return wrap(app)


class _GracefulServer(uvicorn.Server):
    """uvicorn re-raises a caught SIGTERM/SIGINT after its graceful shutdown, which would kill the
    process before our own cleanup (closing the index) runs; forget the signal instead, so
    `kbkit serve --http` ends with exit code 0 after a clean shutdown."""

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()


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


async def serve_http(server: Server[Any], plan: HttpPlan, sock: socket.socket) -> None:
    """Serve on `sock` (from `bind`) until SIGINT/SIGTERM. On a signal, notification streams end
    and requests in flight get their responses (for up to GRACEFUL_SECONDS) before it stops."""
    raise_open_file_limit()
    # sse-starlette ends every SSE response as soon as uvicorn sees a signal, and 2025-11-25
    # replies are SSE responses: a request in flight would lose its answer. Listener streams are
    # ended by the connection guard instead (GuardedH11Protocol.shutdown).
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # sse-starlette is untyped here
    guard = ConnectionGuard(max_connections=plan.max_connections, client_timeout=plan.client_timeout)
    config = uvicorn.Config(
        build_app(server, plan),
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
    handler = install_stderr_log()
    try:
        await _GracefulServer(config).serve(sockets=[sock])
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
