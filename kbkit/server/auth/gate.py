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

import contextlib
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbkit.config.restricted import Reader
from kbkit.server.auth.audit import DENIED, Audit, Entry, plain
from kbkit.server.auth.oauth import JwtVerifier
from kbkit.server.auth.scopes import MEMORY, granted
from kbkit.server.auth.share import Shares
from kbkit.server.auth.tokens import PREFIX, TokenStore

logger = logging.getLogger("kbkit.http")

MAX_AUTHORIZATION_BYTES = 8192 + 7
"""A longer Authorization header is refused (400) before it is parsed (a JWT is rarely 2 KiB)."""
MAX_PEEK_BYTES = 1024 * 1024
"""Bodies up to this size are read for the method and tool name (the SDK refuses bigger ones)."""
REVOCATION_POLL_SECONDS = 2.0
"""How often the tokens file is looked at for revoked tokens whose streams are still open."""
_SUBJECT = re.compile(r"[A-Za-z0-9_.@|:+/-]{1,64}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@|:+/-]")
_HANDSHAKE_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
"""Protocol versions with sessions (the SDK's HANDSHAKE_PROTOCOL_VERSIONS); no header also means one."""

Kind = Literal["shared", "token", "oauth", "anonymous"]


@dataclass(frozen=True)
class Caller:
    name: str
    kind: Kind
    memory: bool
    """May call the session-memory tools (and every other tool)."""
    issuer: str | None = None
    subject: str = ""
    """An OAuth subject, uncut (what sessions are bound to; `name` may be shortened)."""
    digest: str = ""
    """A personal token's SHA-256: what a revocation closes."""
    expires: float | None = None
    """When the credential stops being valid (epoch seconds): its streams end then."""
    claims: Mapping[str, tuple[str, ...]] | None = None
    """An OAuth token's string claims: what restricted folders grant by."""
    paths: tuple[str, ...] = ()
    """A personal token narrowed to these kb paths (`kbkit token create --paths`)."""

    @property
    def reader(self) -> Reader:
        """The principal as the guard of restricted folders sees it (kbkit/server/grants.py)."""
        return Reader(self.kind, self.name, self.subject, self.claims, self.paths)

    @property
    def key(self) -> str:
        """The principal, whole: what sessions and fair shares are counted by."""
        return f"{self.kind}:{self.subject or self.name}"

    @property
    def credential(self) -> str:
        """What a revocation names: one personal token (by digest), else the principal."""
        return f"token:{self.digest}" if self.kind == "token" else self.key


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
    shares: Shares | None = None
    """Each principal's share of sessions and listen streams (None: no per-principal bound)."""


class CallerUser(AuthenticatedUser):
    """The SDK's user for a request (it binds sessions by the access token), carrying the caller
    the gate identified: the server's handlers read who asks from it (`caller_of`)."""

    def __init__(self, caller: Caller, auth_info: AccessToken) -> None:
        super().__init__(auth_info)
        self.caller = caller


def caller_of(request: Any) -> Caller | None:
    """The caller behind a request (a Starlette request), or None without a gate (stdio)."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.caller if isinstance(user, CallerUser) else None


def subject_name(subject: str) -> str:
    """An OAuth subject as the audit log shows it: itself when short and plain, else a readable
    prefix (unsafe characters as `_`) and a hash of the whole, so two subjects never share a name
    and no subject can forge an audit line (no space, quote or newline ever gets through)."""
    if _SUBJECT.fullmatch(subject):
        return subject
    prefix = _UNSAFE.sub("_", subject[:40])
    return f"{prefix}~{hashlib.sha256(subject.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


class AuthGate:
    def __init__(self, app: ASGIApp, policy: GatePolicy, audit: Audit) -> None:
        self.app = app
        self.policy = policy
        self.audit = audit
        self.shared = policy.shared.encode() if policy.shared else None
        self.shares = policy.shares or Shares(max_sessions=1 << 30, per_principal=1 << 30, idle_timeout=1e9)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.policy.open_paths:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        identified = await self._identify(scope)
        if isinstance(identified, _Refusal):
            await self._refuse(send, identified)
            self.audit.record(
                Entry(
                    identified.principal or "-",
                    "oauth" if identified.principal else "-",
                    scope["method"],
                    None,
                    identified.status,
                    len(identified.body),
                    _ms(started),
                )
            )
            return
        caller = identified
        user = CallerUser(
            caller,
            AccessToken(
                token="",  # the SDK compares (client_id, iss, sub) for session owners; the token stays here
                client_id=caller.key,
                scopes=granted(caller.memory),
                subject=caller.subject or caller.name,
                claims={"iss": caller.issuer} if caller.issuer else None,
            ),
        )
        scope["user"] = user
        method, tool = scope["method"], None
        if scope["method"] == "POST":
            peeked = await _peek(receive)
            if peeked is None:
                refused = _Refusal(400, "invalid_request", "the body is nested too deeply to be read")
                await self._refuse(send, refused, challenge=False)
                self.audit.record(
                    Entry(caller.name, caller.kind, "POST", None, 400, len(refused.body), _ms(started))
                )
                return
            receive, method, tool = peeked
        if tool is not None and tool not in self.policy.kb_tools and not caller.memory:
            needed = (
                self.policy.verifier.policy.memory_scope
                if caller.kind == "oauth" and self.policy.verifier
                else MEMORY
            )
            refused = _Refusal(
                403,
                "insufficient_scope",
                f"this tool needs the {needed} scope",
                self._metadata,
                scope_needed=needed,
            )
            await self._refuse(send, refused)
            self.audit.record(
                Entry(caller.name, caller.kind, method, tool, 403, len(refused.body), _ms(started))
            )
            return
        headers = dict(scope.get("headers", []))
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        sid = headers.get(b"mcp-session-id", b"").decode("latin-1") or None
        handshake = not version or version in _HANDSHAKE_VERSIONS
        listen = method == "subscriptions/listen"
        opening = handshake and sid is None and method == "initialize"
        limit = None
        if opening:
            ending, limit = self.shares.admit(caller.key, caller.name)
            for victim, owner in ending:
                await self._end_session(scope, victim, owner)
        if limit is not None:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": limit.message}}
            ).encode()
            await _answer(send, limit.status, body, [(b"retry-after", b"1")])
            self.audit.record(
                Entry(caller.name, caller.kind, method, tool, limit.status, len(body), _ms(started))
            )
            return
        stream = listen or (scope["method"] == "GET" and b"text/event-stream" in headers.get(b"accept", b""))
        tracked = sid is not None and handshake and self.shares.begin(sid, caller.key)
        sent = _Counter(send)
        try:
            with contextlib.ExitStack() as stack:
                cancel = anyio.CancelScope()
                if stream:
                    if caller.expires is not None:
                        cancel.deadline = anyio.current_time() + max(0.0, caller.expires - time.time())
                    stack.enter_context(self.shares.stream(caller.credential, cancel))
                with cancel:
                    await self.app(scope, receive, sent)
                if cancel.cancelled_caught and sent.status and not sent.complete:
                    await sent({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if opening and sent.status and sent.status < 400 and sent.session_id:
                self.shares.opened(sent.session_id, caller.key, user)
            if tracked and sid is not None:
                gone = sent.status == 404 or (scope["method"] == "DELETE" and 200 <= sent.status < 300)
                self.shares.end(sid, gone)
            denied = tuple(scope.get(DENIED, ()))
            self.audit.record(
                Entry(caller.name, caller.kind, method, tool, sent.status, sent.bytes, _ms(started), denied)
            )

    async def _end_session(self, scope: Scope, sid: str, owner: Any) -> None:
        """End a session to make room, as the SDK ends one a client DELETEs (its owner's request)."""
        kept = [(k, v) for k, v in scope.get("headers", []) if k in (b"host", b"origin")]
        delete: dict[str, Any] = {
            **{k: v for k, v in scope.items() if k not in ("headers", "method", "query_string", "user")},
            "method": "DELETE",
            "query_string": b"",
            "headers": [*kept, (b"mcp-session-id", sid.encode()), (b"mcp-protocol-version", b"2025-11-25")],
            "user": owner,
        }
        delivered = False

        async def nothing() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def discard(message: Message) -> None:
            return None

        with anyio.move_on_after(10):
            await self.app(delete, nothing, discard)
        logger.warning("http: ended the session idle the longest to make room (fair share of sessions)")

    async def close_revoked(self) -> None:
        """Close every open stream whose personal token is no longer accepted (revoked, expired)."""
        store = self.policy.store
        if store is None:
            return
        open_tokens = [c for c in self.shares.credentials() if c.startswith("token:")]
        if not open_tokens:
            return
        valid = await anyio.to_thread.run_sync(store.valid)
        closed = sum(self.shares.close(c) for c in open_tokens if c.removeprefix("token:") not in valid)
        if closed:
            logger.warning(
                "http: a personal token was revoked or expired: closed its %d open stream(s)", closed
            )

    async def watch_revocations(self) -> None:
        """Runs for the server's lifetime: a revoked token's streams end within seconds."""
        while True:
            await anyio.sleep(REVOCATION_POLL_SECONDS)
            try:
                await self.close_revoked()
            except Exception as exc:  # a file that cannot be read now is reported by the store
                logger.debug("revocation check failed: %s", exc)

    async def _identify(self, scope: Scope) -> Caller | _Refusal:
        if self.policy.anonymous:
            return Caller("anonymous", "anonymous", memory=True)
        presented, problem = _presented(scope)
        if problem == "long":
            return _Refusal(400, "invalid_request", "the Authorization header is too long", self._metadata)
        if problem == "query":
            if self.shared is not None and hmac.compare_digest(
                presented.encode("utf-8", "surrogateescape"), self.shared
            ):
                return Caller("shared", "shared", memory=True)
            return _Refusal(
                401,
                "invalid_request",
                "send the token as Authorization: Bearer; only the shared token may be in the URL",
                self._metadata,
            )
        if not presented:
            return _Refusal(401, None, "send Authorization: Bearer <token>", self._metadata, self._scopes)
        if self.shared is not None and hmac.compare_digest(
            presented.encode("utf-8", "surrogateescape"), self.shared
        ):
            return Caller("shared", "shared", memory=True)
        if presented.startswith(PREFIX) and self.policy.store is not None:
            holder = await anyio.to_thread.run_sync(self.policy.store.check, presented)
            if holder is not None:
                return Caller(
                    holder.name,
                    "token",
                    memory=holder.scope == "memory",
                    digest=holder.sha256,
                    paths=holder.paths,
                )
        elif self.policy.verifier is not None and presented.count(".") == 2:
            verifier = self.policy.verifier
            verdict = await verifier.verify(presented)
            if verdict.outcome == "forbidden":
                return _Refusal(
                    403,
                    "access_denied",
                    "this account is not allowed on this server",
                    self._metadata,
                    principal=subject_name(verdict.subject),
                )
            if verdict.outcome == "scope":
                return _Refusal(
                    403,
                    "insufficient_scope",
                    "the token lacks a required scope",
                    self._metadata,
                    verdict.reason,
                    principal=subject_name(verdict.subject),
                )
            if verdict.outcome == "ok":
                policy = verifier.policy
                return Caller(
                    subject_name(verdict.subject),
                    "oauth",
                    memory=policy.memory_scope in verdict.scopes,
                    issuer=policy.issuer,
                    subject=verdict.subject,
                    expires=verdict.expires,
                    claims=verdict.claims,
                )
        return _Refusal(401, "invalid_token", "the token was not accepted", self._metadata, self._scopes)

    @property
    def _metadata(self) -> str | None:
        return self.policy.resource_metadata_url

    @property
    def _scopes(self) -> str | None:
        """The scopes a client should ask for (RFC 6750 `scope` in a 401): OAuth's required ones."""
        verifier = self.policy.verifier
        return " ".join(verifier.policy.scopes) or None if verifier is not None else None

    async def _refuse(self, send: Send, refusal: _Refusal, *, challenge: bool = True) -> None:
        extra = [(b"www-authenticate", refusal.challenge.encode())] if challenge else []
        await _answer(send, refusal.status, refusal.body, extra)


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Refusal:
    """A 400, 401 or 403 with its RFC 6750 challenge."""

    def __init__(
        self,
        status: int,
        error: str | None,
        description: str,
        resource_metadata: str | None = None,
        scope_needed: str | None = None,
        *,
        principal: str | None = None,
    ) -> None:
        self.status = status
        self.principal = principal
        """The subject of a valid token refused (403 access_denied): the audit line names it."""
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


def _presented(scope: Scope) -> tuple[str, Literal["", "long", "query"]]:
    """(the bearer token or "", why it is not an ordinary header: too long, or from the URL query)."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            if len(value) > MAX_AUTHORIZATION_BYTES:
                return "", "long"
            if value[:7].lower() == b"bearer ":
                return value[7:].strip().decode("latin-1"), ""
            return "", ""
    query_string: bytes = scope.get("query_string", b"")
    if b"token=" not in query_string:
        return "", ""
    query = parse_qs(query_string.decode("latin-1"))
    token = query.get("token", [""])[0]
    return ("", "long") if len(token) > MAX_AUTHORIZATION_BYTES else (token, "query")


async def _peek(receive: Receive) -> tuple[Receive, str, str | None] | None:
    """Read the request body (bounded) for its JSON-RPC method and tool name, and a `receive` that
    hands the same body to the app. A body too big, not JSON or not a request is passed on as is;
    None for JSON nested too deeply to parse (thousands of `[`), which nothing behind could read."""
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
        except RecursionError:
            return None
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
        self.complete = False
        self.session_id: str | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            for name, value in message.get("headers", []):
                if name.lower() == b"mcp-session-id":
                    self.session_id = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            self.bytes += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        await self._send(message)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
