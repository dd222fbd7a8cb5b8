"""The ASGI gate of `kbkit serve --http`: one principal per request, or a 401/403 that says why.

A bearer is, in this order: the shared `MCP_TOKEN` (principal `shared`, compared in constant
time), a personal token (`kbk_...`, the tokens file), or an OAuth access token (a JWT, when
`[server.http.oauth]` is set). The answers follow RFC 6750 and the MCP authorization spec:

- 401 `invalid_token` for anything not accepted: missing, malformed, unknown, revoked, expired,
  tampered, for another audience or issuer. The body never says which (nor whether a token name
  exists); `WWW-Authenticate` carries `resource_metadata` (RFC 9728) when OAuth is on.
- 403 for a valid token that may not do this: `insufficient_scope` (with the scope it lacks) for
  a memory tool called with a `read` token or an OAuth token without the required scopes, and
  `access_denied` for a valid OAuth token of someone who does not belong.

The principal is handed to the SDK as `scope["user"]`, which binds each 2025-11-25 session to the
principal that opened it: the same session id presented by another principal gets 404.
Each MCP request then gets one audit line (kbkit/server/auth/audit.py).
"""

from __future__ import annotations

import hmac
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbkit.server.auth.audit import Audit, Entry, plain
from kbkit.server.auth.oauth import JwtVerifier
from kbkit.server.auth.scopes import MEMORY, granted
from kbkit.server.auth.tokens import PREFIX, TokenStore

MAX_AUTHORIZATION_BYTES = 8192 + 7
"""A longer Authorization header is refused before it is parsed (a JWT is rarely 2 KiB)."""
MAX_PEEK_BYTES = 1024 * 1024
"""Bodies up to this size are read for the method and tool name (the SDK refuses bigger ones)."""
_SUBJECT = re.compile(r"[A-Za-z0-9_.@|:+/-]{1,256}")

Kind = Literal["shared", "token", "oauth", "anonymous"]


@dataclass(frozen=True)
class Caller:
    name: str
    kind: Kind
    memory: bool
    """May call the session-memory tools (and every other tool)."""
    issuer: str | None = None


@dataclass(frozen=True)
class GatePolicy:
    """Who is let in, built once by `kbkit serve --http` (kbkit/server/http.py)."""

    shared: str | None = None
    store: TokenStore | None = None
    verifier: JwtVerifier | None = None
    anonymous: bool = False
    """MCP_ALLOW_ANONYMOUS: everybody is `anonymous` (loopback only; refused elsewhere)."""
    kb_tools: tuple[str, ...] = ("search", "get_document")
    """Tools a `read` principal may call; any other tool needs the memory scope."""
    resource_metadata_url: str | None = None
    open_paths: frozenset[str] = field(default_factory=frozenset)
    """Paths served without a token (/healthz, the protected resource metadata)."""


def subject_name(subject: str) -> str:
    """An OAuth subject as the audit log shows it: itself if plain, else JSON-escaped and cut."""
    return subject if _SUBJECT.fullmatch(subject) else json.dumps(subject)[:256]


class AuthGate:
    def __init__(self, app: ASGIApp, policy: GatePolicy, audit: Audit) -> None:
        self.app = app
        self.policy = policy
        self.audit = audit
        self.shared = policy.shared.encode() if policy.shared else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.policy.open_paths:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        refusal = await self._identify(scope)
        if isinstance(refusal, _Refusal):
            await self._refuse(send, refusal)
            self.audit.record(
                Entry("-", "-", scope["method"], None, refusal.status, len(refusal.body), _ms(started))
            )
            return
        caller = refusal
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token="",  # the SDK compares (client_id, iss, sub) for session owners; the token stays here
                client_id=f"{caller.kind}:{caller.name}",
                scopes=granted(caller.memory),
                subject=caller.name,
                claims={"iss": caller.issuer} if caller.issuer else None,
            )
        )
        method, tool = scope["method"], None
        if scope["method"] == "POST":
            receive, method, tool = await _peek(receive)
        if tool is not None and tool not in self.policy.kb_tools and not caller.memory:
            refused = _Refusal(
                403, "insufficient_scope", "this tool needs the memory scope", scope_needed=MEMORY
            )
            await self._refuse(send, refused)
            self.audit.record(
                Entry(caller.name, caller.kind, method, tool, 403, len(refused.body), _ms(started))
            )
            return
        sent = _Counter(send)
        try:
            await self.app(scope, receive, sent)
        finally:
            self.audit.record(
                Entry(caller.name, caller.kind, method, tool, sent.status, sent.bytes, _ms(started))
            )

    async def _identify(self, scope: Scope) -> Caller | _Refusal:
        if self.policy.anonymous:
            return Caller("anonymous", "anonymous", memory=True)
        presented, too_long = _presented(scope)
        if too_long:
            return _Refusal(401, "invalid_request", "the Authorization header is too long", self._metadata)
        if not presented:
            return _Refusal(401, None, "send Authorization: Bearer <token>", self._metadata)
        if self.shared is not None and hmac.compare_digest(
            presented.encode("utf-8", "surrogateescape"), self.shared
        ):
            return Caller("shared", "shared", memory=True)
        if presented.startswith(PREFIX) and self.policy.store is not None:
            holder = self.policy.store.check(presented)
            if holder is not None:
                return Caller(holder.name, "token", memory=holder.scope == "memory")
        elif self.policy.verifier is not None and presented.count(".") == 2:
            verifier = self.policy.verifier
            verdict = await verifier.verify(presented)
            if verdict.outcome == "forbidden":
                return _Refusal(
                    403, "access_denied", "this account is not allowed on this server", self._metadata
                )
            if verdict.outcome == "scope":
                return _Refusal(
                    403,
                    "insufficient_scope",
                    "the token lacks a required scope",
                    self._metadata,
                    verdict.reason,
                )
            if verdict.outcome == "ok":
                policy = verifier.policy
                return Caller(
                    subject_name(verdict.subject),
                    "oauth",
                    memory=policy.memory_scope in verdict.scopes,
                    issuer=policy.issuer,
                )
        return _Refusal(401, "invalid_token", "the token was not accepted", self._metadata)

    @property
    def _metadata(self) -> str | None:
        return self.policy.resource_metadata_url

    async def _refuse(self, send: Send, refusal: _Refusal) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": refusal.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(refusal.body)).encode()),
                    (b"www-authenticate", refusal.challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": refusal.body})


class _Refusal:
    """A 401 or 403 with its RFC 6750 challenge."""

    def __init__(
        self,
        status: int,
        error: str | None,
        description: str,
        resource_metadata: str | None = None,
        scope_needed: str | None = None,
    ) -> None:
        self.status = status
        parts = ['realm="kbkit"']
        if error:
            parts.append(f'error="{error}"')
            parts.append(f'error_description="{description}"')
        if scope_needed:
            parts.append(f'scope="{scope_needed}"')
        if resource_metadata:
            parts.append(f'resource_metadata="{resource_metadata}"')
        self.challenge = "Bearer " + ", ".join(parts)
        self.body = json.dumps({"error": error or "unauthorized", "error_description": description}).encode()


def _presented(scope: Scope) -> tuple[str, bool]:
    """(the bearer token or "", whether the Authorization header was too long)."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            if len(value) > MAX_AUTHORIZATION_BYTES:
                return "", True
            if value[:7].lower() == b"bearer ":
                return value[7:].strip().decode("latin-1"), False
            return "", False
    query_string: bytes = scope.get("query_string", b"")
    if b"token=" not in query_string:
        return "", False
    query = parse_qs(query_string.decode("latin-1"))
    token = query.get("token", [""])[0]
    return ("", True) if len(token) > MAX_AUTHORIZATION_BYTES else (token, False)


async def _peek(receive: Receive) -> tuple[Receive, str, str | None]:
    """Read the request body (bounded) for its JSON-RPC method and tool name, and a `receive` that
    hands the same body to the app. A body too big, not JSON or not a request is passed on as is."""
    chunks: list[Message] = []
    size = 0
    more = True
    while more and size <= MAX_PEEK_BYTES:
        message = await receive()
        chunks.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    method, tool = "POST", None
    if not more and size <= MAX_PEEK_BYTES:
        try:
            document: Any = json.loads(
                b"".join(m.get("body", b"") for m in chunks if m["type"] == "http.request")
            )
        except ValueError:
            document = None
        if isinstance(document, dict):
            method = plain(document.get("method")) if "method" in document else "response"
            params = document.get("params")
            if method == "tools/call" and isinstance(params, dict):
                tool = plain(params.get("name"))
        elif isinstance(
            document, list
        ):  # no current revision batches; if one did, no tool is let through unchecked
            method = "batch"
            tool = (
                "?"
                if any(isinstance(m, dict) and m.get("method") == "tools/call" for m in document)
                else None
            )
    queue = list(chunks)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay, method, tool


class _Counter:
    """A `send` that notes the status and counts the reply's body bytes."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0
        self.bytes = 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.bytes += len(message.get("body", b""))
        await self._send(message)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
