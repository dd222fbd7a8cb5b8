"""`kbkit connect URL`: a stdio-to-streamable-HTTP relay, the entry every agent runs in remote
mode. It reads MCP_TOKEN from the environment or `.env.local` itself, so the agent's file names
only a command, never a token, and the agent's own environment needs nothing (docs/adr/0011).

Messages pass through unchanged; the relay adds what the HTTP transport needs per request: the
bearer token, and the routing headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) that an SDK
client session would have stamped. It behaves like a server towards the agent:

- a refused token, a server that is down, unreachable or answers an HTTP error becomes a JSON-RPC
  error for the request that met it, saying what happened and where the token came from, and one
  stderr line per outage, never a traceback;
- the next request tries the connection again; when the server lost the session (it restarted),
  the agent's own handshake is replayed first, so the agent never notices;
- closing stdin ends the relay; ending the remote session may take CLOSE_GRACE seconds at most.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import ssl
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    PROTOCOL_VERSION_META_KEY,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbkit.catalog.clients import PERSONAL_TOKEN_VAR, TOKEN_VAR
from kbkit.config import ENV_FILE, find_root, load_env, load_settings
from kbkit.errors import ConfigError, ExitCode, InputError, KbkitError, describe, leaves
from kbkit.server.memory.redaction import Redactor
from kbkit.server.toolfilter import ToolFilter

CLOSE_GRACE = 0.5
"""Seconds the relay spends ending the remote session once stdin has closed."""
CONNECT_TIMEOUT = 10.0
REPLAY_TIMEOUT = 30.0
TOKEN_REFUSED = -32001
"""The JSON-RPC error code of a request the server refused for its token (an implementation code)."""
SESSION_HEADER = "mcp-session-id"
RETRY = "the relay tries again at the next request"
SDK_STREAM_LOST = "SSE stream"
"""How the SDK's synthesized errors for a response stream that ended without an answer begin."""

Report = Callable[[str], None]


@dataclass(frozen=True)
class Token:
    """The bearer token and where it was read from (said in every refusal; the value never)."""

    value: str | None
    source: str
    """"the environment", or the path of the .env.local that was read."""
    var: str = TOKEN_VAR
    headers: tuple[tuple[str, str], ...] | None = None
    """A team server's own headers (`[servers.<name>] headers`, substituted), sent instead of a
    bearer token; `var` then names the variables they came from."""
    shown_url: str | None = None
    """How messages name the URL when it holds substituted values (a team server's `?key=${KEY}`)."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Values substituted into the URL or headers: cut out of every line and error said."""

    def describe(self) -> str:
        if self.headers is not None:
            return f"{self.var} from {self.source}" if self.var else f"no header set in {self.source}"
        if self.value is None:
            return f"no {PERSONAL_TOKEN_VAR} or {TOKEN_VAR} in the environment or {self.source}"
        return f"{self.var} from {self.source}"


def read_token(root: Path | None) -> Token:
    """The personal KBKIT_TOKEN, else the shared MCP_TOKEN; for each, the environment wins over the
    project's .env.local."""
    try:
        base = (root or find_root()).resolve()
    except KbkitError:
        base = Path.cwd()
    env_file: dict[str, str] | None = None
    for var in (PERSONAL_TOKEN_VAR, TOKEN_VAR):
        if os.environ.get(var):
            return Token(os.environ[var], "the environment", var)
        if env_file is None:
            env_file = dict(load_env(base, environ={}))
        if env_file.get(var):
            return Token(env_file[var], str(base / ENV_FILE), var)
    return Token(None, str(base / ENV_FILE))


def check_destination(url: str, root: Path | None) -> None:
    """ConfigError unless `url` is the project's trusted `[sync] remote_url`: the member's token goes
    nowhere a commit chose and they did not allow (docs/adr/0063). Outside a project (no
    kbkit.toml), the URL the member typed is theirs."""
    try:
        base = root or find_root()
    except KbkitError:
        return
    settings = load_settings(base)
    if url == settings.sync.remote_url:
        return
    waiting = settings.waiting("sync.remote_url")
    if waiting is not None:
        raise ConfigError(f"kbkit connect {url}: {waiting.line()}", fix="then run kbkit sync")
    raise ConfigError(
        f"kbkit connect sends your token only to this project's [sync] remote_url "
        f"({settings.sync.remote_url or 'none is set'}), not to {url}",
        fix="set [sync] remote_url in kbkit.toml (or kbkit.local.toml), then run kbkit sync",
    )


def run(
    url: str,
    root: Path | None,
    report: Report,
    *,
    token: Token | None = None,
    tools: ToolFilter | None = None,
) -> ExitCode:
    """The `kbkit connect` process: relay until stdin closes. Returns the exit code. A bad URL or an
    unreadable .env.local raises (the CLI's boundary says it); everything after start is a line
    through `report`, never a traceback. `token`: what to send instead of the kb server's token
    (a team server's own headers)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(
            f"{url!r} is not an http(s) URL", fix="pass the server's URL, e.g. https://kb.internal/mcp"
        )
    if token is None:
        check_destination(url, root)
        token = read_token(root)
        if token.value is None:
            report(f"connect: {token.describe()}; sending no token")
    try:
        anyio.run(relay, url, token, report, tools)
    except KeyboardInterrupt:
        return ExitCode.OK
    except BaseException as exc:  # the process boundary: one line, whatever happened
        if any(isinstance(e, BrokenPipeError) for e in leaves(exc)):
            return ExitCode.OK  # the agent went away while we were answering
        redact = Redactor()
        redact.add(token.value, *token.secrets, *(value for _, value in token.headers or ()))
        report(redact(f"connect: stopped: {'; '.join(describe(e) for e in leaves(exc))}"))
        return ExitCode.REMOTE
    return ExitCode.OK


async def relay(
    url: str, token: Token, report: Report, tools: ToolFilter | None = None, *, timeout: float = 300.0
) -> None:
    """Pump messages between stdin/stdout and the server at `url` until stdin closes."""
    logging.getLogger("mcp").setLevel(logging.CRITICAL + 1)  # failures are reported here, once
    upstream = _Upstream(url, token, report)
    headers = {"Authorization": f"Bearer {token.value}"} if token.value else {}
    if token.headers is not None:
        headers = dict(token.headers)
    client = httpx2.AsyncClient(
        transport=upstream, headers=headers, timeout=httpx2.Timeout(timeout, connect=CONNECT_TIMEOUT)
    )
    async with stdio_server() as (local_read, local_write), local_write:
        with anyio.CancelScope() as closing:
            async with client, streamable_http_client(url, http_client=client) as (remote_read, remote_write):
                pump = _Pump(upstream, remote_write, local_write, report, tools)
                try:
                    async with anyio.create_task_group() as group:
                        group.start_soon(pump.to_client, remote_read)
                        await pump.to_server(local_read)
                        group.cancel_scope.cancel()
                finally:  # stdin closed: ending the remote session (a DELETE) may take this long
                    closing.deadline = anyio.current_time() + CLOSE_GRACE


class _Sender(Protocol):
    """The sending end of a transport's message stream (the SDK's stdio server and HTTP client)."""

    async def send(self, item: SessionMessage, /) -> None: ...


_Messages = AsyncIterable[SessionMessage | Exception]
"""The receiving end: messages, or the transport's own parse failures."""


class _Pump:
    """Both directions of the relay, and the handshake it replays when the server lost the session."""

    def __init__(
        self,
        upstream: _Upstream,
        remote_write: _Sender,
        local_write: _Sender,
        report: Report,
        tools: ToolFilter | None = None,
    ) -> None:
        self.tools = tools
        self.upstream = upstream
        self.remote_write = remote_write
        self.local_write = local_write
        self.report = report
        self.stamper = _Stamper()
        self.handshake: JSONRPCRequest | None = None
        self._replay_ids = (f"kbkit-connect-replay-{n}" for n in count(1))
        self._replays: dict[str, anyio.Event] = {}
        self._replayed: dict[str, bool] = {}

    async def to_server(self, local_read: _Messages) -> None:
        async for item in local_read:
            if isinstance(item, Exception):
                self.report("connect: skipped a line from the agent that is not a JSON-RPC message")
                continue
            message = item.message
            if self.tools is not None and isinstance(message, JSONRPCRequest):
                refusal = self.tools.from_agent(message.model_dump(by_alias=True, exclude_none=True))
                if refusal is not None:  # a tool the team leaves out: answered here, never sent
                    await self.local_write.send(SessionMessage(JSONRPCError.model_validate(refusal)))
                    continue
            if isinstance(message, JSONRPCRequest):
                if message.method == "initialize":
                    self.handshake = message
                    self.upstream.session_lost = False
                elif self.upstream.session_lost and self.handshake is not None:
                    await self._replay(self.handshake)
            await self.remote_write.send(self.stamper.outgoing(item))

    async def to_client(self, remote_read: _Messages) -> None:
        async for item in remote_read:
            if isinstance(item, Exception):
                continue  # the transport's own parse failures; the request they belong to is answered
            message = item.message
            if isinstance(message, JSONRPCResponse):
                self.upstream.answered()
                if self.tools is not None:
                    self.tools.from_server({"id": message.id, "result": message.result})
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id in self._replays:
                self._replayed[message.id] = isinstance(message, JSONRPCResponse)
                self._replays.pop(message.id).set()
                continue  # the relay's own request: the agent never sees it
            if isinstance(message, JSONRPCError) and message.error.message.startswith(SDK_STREAM_LOST):
                message.error.message = self.upstream.broke_off(message.error.message)
            self.stamper.incoming(item)
            await self.local_write.send(item)

    async def _replay(self, handshake: JSONRPCRequest) -> None:
        """Open a new session with the agent's own initialize, as if it had never been lost."""
        self.upstream.session_lost = False
        replay_id = next(self._replay_ids)
        done = self._replays[replay_id] = anyio.Event()
        request = JSONRPCRequest(jsonrpc="2.0", id=replay_id, method="initialize", params=handshake.params)
        await self.remote_write.send(SessionMessage(request))
        with anyio.move_on_after(REPLAY_TIMEOUT):
            await done.wait()
        self._replays.pop(replay_id, None)
        if self._replayed.pop(replay_id, False):
            initialized = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
            await self.remote_write.send(self.stamper.outgoing(SessionMessage(initialized)))
        else:
            self.upstream.session_lost = True  # still down: the request after this one tries again


class _Upstream(httpx2.AsyncBaseTransport):
    """The HTTP side, as the relay wants it: every failure becomes a JSON-RPC error the agent reads
    (the SDK passes an error body on to the request it answers), and one stderr line per outage."""

    def __init__(self, url: str, token: Token, report: Report) -> None:
        self.url = url
        self.shown = token.shown_url or url
        """The URL as messages name it: a team server's with its `${NAME}`s, never their values."""
        self.token = token
        self.redact = Redactor()
        self.redact.add(token.value, *token.secrets, *(value for _, value in token.headers or ()))
        self.report: Report = lambda line: report(self.redact(line))
        self.session_lost = False
        """Set when the server may have lost the session (unreachable, restarted): the next request
        replays the handshake first."""
        self.last_cause: str | None = None
        """Why the connection last failed, for errors the SDK words itself."""
        self._inner = httpx2.AsyncHTTPTransport()
        self._state = "new"

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and _method_of(request) == "initialize":
            request.headers.pop(SESSION_HEADER, None)  # an initialize always opens a new session
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            cause = self._down(exc, "cannot reach")
            if request.method != "POST":
                raise  # the SDK retries its notification stream itself
            return self._error(
                request, 502, CONNECTION_CLOSED, f"cannot reach {self.shown} ({cause}); {RETRY}"
            )
        if response.status_code == 401:
            await response.aclose()
            how = "wants a token and none was sent" if self.token.value is None else "refused the token"
            if self.token.headers is not None:
                how = "refused the request" if self.token.headers else "wants credentials and none were sent"
            problem = f"the server at {self.shown} {how} ({self.token.describe()}); put the right token there"
            self._enter("refused", problem)
            return self._error(request, 401, TOKEN_REFUSED, problem)
        if response.status_code >= 400:
            return await self._http_error(request, response)
        response.stream = _WatchedStream(response.stream, self._lost)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _http_error(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """A JSON-RPC error body passes through; anything else is said plainly."""
        try:
            body = await response.aread()
        except httpx2.TransportError as exc:
            body = str(exc).encode()
        error = None
        with contextlib.suppress(ValueError, TypeError, KeyError):
            error = json.loads(body)["error"]
        if isinstance(error, dict):
            if response.status_code == 404 and request.headers.get(SESSION_HEADER):
                self.session_lost = True  # the server restarted: the next request opens a new session
                problem = f"{self.shown} no longer knows this session (the server restarted); {RETRY}"
                return self._error(request, 404, INVALID_REQUEST, problem)
            return httpx2.Response(
                response.status_code, headers=response.headers, content=body, request=request
            )
        text = body.decode("utf-8", "replace").strip()[:200] or response.reason_phrase
        problem = f"{self.shown} answered HTTP {response.status_code}: {text}"
        self._enter(f"http {response.status_code}", problem)
        return self._error(request, response.status_code, CONNECTION_CLOSED, problem)

    def _error(self, request: httpx2.Request, status: int, code: int, problem: str) -> httpx2.Response:
        """An HTTP error whose body is a JSON-RPC error (id null: the SDK gives it the request's id)."""
        error = {"code": code, "message": for_agent(self.redact(problem))}
        return httpx2.Response(status, json={"jsonrpc": "2.0", "id": None, "error": error}, request=request)

    def _enter(self, state: str, problem: str) -> None:
        """Say a problem once per outage on stderr, not once per request."""
        if state != self._state:
            self.report(f"connect: {problem}")
        self._state = state

    def _down(self, exc: httpx2.TransportError, what: str) -> str:
        """The server is unreachable or went away: say so once, and reopen the session next time."""
        cause = self.last_cause = _cause(exc)
        self.session_lost = True
        self._enter("down", f"{what} {self.shown} ({cause}); {RETRY}")
        return cause

    def answered(self) -> None:
        """A real answer came through: the outage, if any, is over."""
        if self._state == "down":
            self.report(f"connect: reached {self.shown} again")
        self._state, self.last_cause = "up", None

    def broke_off(self, sdk_message: str) -> str:
        """A response stream ended before its answer (the SDK's words): say whose, and what next."""
        cause = self.last_cause or sdk_message
        problem = f"lost the connection to {self.shown} before the answer came ({cause}); {RETRY}"
        self.session_lost = True
        self._enter("down", problem)
        return for_agent(self.redact(problem))

    def _lost(self, exc: httpx2.TransportError) -> None:
        self._down(exc, "lost the connection to")


class _WatchedStream(httpx2.AsyncByteStream):
    """A response body whose connection breaking midway is noticed (a server that died)."""

    def __init__(self, inner: Any, on_error: Callable[[httpx2.TransportError], None]) -> None:
        self._inner = inner
        self._on_error = on_error

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.TransportError as exc:
            self._on_error(exc)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Stamper:
    """Adds the per-request HTTP headers, remembering the version a handshake negotiated."""

    def __init__(self) -> None:
        self.negotiated: str | None = None
        self._initialize_ids: set[RequestId] = set()

    def outgoing(self, item: SessionMessage) -> SessionMessage:
        message = item.message
        if not isinstance(message, JSONRPCRequest):
            return item
        if message.method == "initialize":
            self._initialize_ids.add(message.id)
            return item
        params = message.params or {}
        version = (params.get("_meta") or {}).get(PROTOCOL_VERSION_META_KEY) or self.negotiated
        headers: dict[str, str] = {}
        if version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
        if version in MODERN_PROTOCOL_VERSIONS:
            headers[MCP_METHOD_HEADER] = message.method
            name_key = NAME_BEARING_METHODS.get(message.method)
            if name_key and isinstance(params.get(name_key), str):
                headers[MCP_NAME_HEADER] = params[name_key]
        return SessionMessage(message, metadata=ClientMessageMetadata(headers=headers or None))

    def incoming(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCResponse) and message.id in self._initialize_ids:
            self._initialize_ids.discard(message.id)
            self.negotiated = (message.result or {}).get("protocolVersion")


def _method_of(request: httpx2.Request) -> str | None:
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    return body.get("method") if isinstance(body, dict) else None


AGENT_PREFIX = "kbkit relay error: "
"""What starts every error the relay answers. Claude Code shows a server's errors with any text
equal to one of its arguments replaced by `[redacted]` (`connect`, the URL, the root), so the
relay's own words are none of them: `kbkit connect:` reached the user as `kbkit [redacted]:`."""


def for_agent(problem: str) -> str:
    """An error message as the agent shows it."""
    return AGENT_PREFIX + problem


def _cause(exc: BaseException) -> str:
    """The root cause of a connection failure, in a few words ("connection refused")."""
    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return f"TLS: {getattr(seen, 'verify_message', None) or seen.reason or seen}"
        if isinstance(seen, OSError) and seen.errno:
            # asyncio words refusals as "Connect call failed (...)"; the errno says it plainly
            return (os.strerror(seen.errno) if seen.errno > 0 else str(seen.strerror)).lower()
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, httpx2.RemoteProtocolError):
        return "the server closed the connection"
    return str(exc) or type(exc).__name__
