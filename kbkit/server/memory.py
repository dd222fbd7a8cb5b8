"""Session-memory tools proxied from a remote memory MCP server (Hindsight-style).

On only when `[memory]` names an upstream and its credential is in the environment (or
`.env.local`). A supervisor task owns the upstream connection: it connects, lists the tools,
offers the allowed ones beside the kb tools, probes the connection, and reconnects with backoff
when it breaks, announcing every change of the tool list to clients; a memory call that finds it
down asks for an attempt at once instead of waiting out the backoff. The kb side never waits on
it: a memory call has its own timeout and fails with a clear tool error when the upstream is away.

The credential is read afresh, stripped and checked, at every connection attempt, so a rotated
key is picked up without a restart. It is never logged and never put in an error: every line
kbkit says or returns about the upstream goes through `Redactor` (docs/adr/0018). A stdio
upstream gets the key, the variables `[memory] env` names, and a safe base environment; never
kbkit's own. Replies are bounded: over MAX_REPLY_BYTES the upstream is not read further, and text
over RESULT_TEXT_CAP is cut with a notice.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import anyio.abc
import httpx2
import mcp.types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbkit.config import ENV_FILE, MemorySettings, load_env
from kbkit.server.tools import tool_error

PROBE_INTERVAL = 15.0
"""Seconds between health probes (a tools/list) of a connected upstream."""
FIRST_ATTEMPT_WAIT = 5.0
"""How long start-up waits for the first connection, so tools are listed from the first request."""
MAX_BACKOFF = 60.0
MIN_ATTEMPT_GAP = 1.0
"""Seconds between two connection attempts, however many calls ask for one."""
CLASH_PREFIX = "memory_"
MAX_REPLY_BYTES = 8 * 1024 * 1024
"""Bytes of one upstream reply kbkit reads; past this it stops reading and says so."""
RESULT_TEXT_CAP = 512 * 1024
"""Bytes (UTF-8) of text one memory result may pass on to the agent; the rest is cut, with a notice."""
LOCALE_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR")
"""Passed to a stdio upstream beside the SDK's safe base (PATH, HOME, USER, ...)."""
MIN_SECRET = 8
"""A run of this many characters of a key (or longer) is redacted wherever it appears."""


# -- the credential -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Credential:
    name: str
    value: str | None
    """The key, stripped and checked; None when it cannot be used (see `problem`)."""
    source: str
    """Where it came from, for hints: "the environment" or the .env.local path."""
    problem: str | None = None
    raw: str | None = None

    def hint(self) -> str:
        if self.source == "the environment":
            return f"{self.name} in the environment (it wins over {ENV_FILE})"
        return f"{self.name} in {self.source}"


def read_credential(name: str, root: Path | None, environ: Mapping[str, str] | None = None) -> Credential:
    """The key as it is now: the environment first, then .env.local (config.load_env's order)."""
    environ = os.environ if environ is None else environ
    values = load_env(root, environ) if root is not None else dict(environ)
    source = "the environment" if name in environ or root is None else str(root / ENV_FILE)
    raw = values.get(name)
    if raw is None:
        return Credential(name, None, source, "not set", None)
    key = raw.strip()
    if not key:
        return Credential(name, None, source, "empty", raw)
    bad = next((i for i, c in enumerate(key) if not "!" <= c <= "~"), None)
    if bad is not None:
        return Credential(
            name,
            None,
            source,
            f"holds a character a key cannot have at position {bad + 1} (a space, a control "
            "character or a non-ASCII letter)",
            raw,
        )
    return Credential(name, key, source, None, raw)


def key_problem(credential: Credential) -> str:
    """Why the key cannot be used, and what to do, without showing it."""
    name = credential.name
    if credential.problem == "not set":
        return f"{name} is not set: add {name}=<your key> to {ENV_FILE} or export it"
    if credential.problem == "empty":
        return f"{credential.hint()} is empty: put your key after the = sign"
    return f"{credential.hint()} {credential.problem}: set it again"


class Redactor:
    """Takes every form of each key it was given out of a text: raw, repr- and JSON-escaped,
    URL-encoded, and any run of MIN_SECRET or more of its first characters (a cut message)."""

    def __init__(self) -> None:
        self._forms: set[str] = set()

    def add(self, *secrets: str | None) -> None:
        for secret in secrets:
            if not secret:
                continue
            forms = {
                secret,
                secret.strip(),
                repr(secret)[1:-1],
                json.dumps(secret)[1:-1],
                quote(secret, safe=""),
                quote(secret),
                quote_plus(secret),
            }
            self._forms |= {form for form in forms if len(form) >= MIN_SECRET}

    def __call__(self, text: str) -> str:
        heads = {form[:MIN_SECRET] for form in self._forms}
        out: list[str] = []
        start = 0
        while True:
            found = [(at, head) for head in heads if (at := text.find(head, start)) != -1]
            if not found:
                return "".join(out) + text[start:]
            at = min(found)[0]
            length = max(_common_prefix(text, at, form) for form in self._forms)
            out += [text[start:at], "***"]
            start = at + length


def _common_prefix(text: str, at: int, form: str) -> int:
    """How many characters of `form` appear in `text` from `at` on (0 when under MIN_SECRET)."""
    length = 0
    while length < len(form) and at + length < len(text) and text[at + length] == form[length]:
        length += 1
    return length if length >= MIN_SECRET else 0


def offered_names(settings: MemorySettings, reserved: Iterable[str] = ()) -> dict[str, str]:
    """Published name -> upstream name for each allowed tool (a clash with a kb tool is prefixed)."""
    names = {}
    for tool in settings.tools:
        published = settings.prefix + tool
        names[CLASH_PREFIX + published if published in reserved else published] = tool
    return names


# -- the proxy ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryStatus:
    state: str
    """off | connecting | on | unavailable"""
    detail: str

    def line(self) -> str:
        return f"memory: {self.state} ({self.detail})"


class ReplyTooLarge(httpx2.StreamError):
    """The upstream's reply passed MAX_REPLY_BYTES; kbkit stopped reading it. A stream error, so the
    SDK answers the one call with an error and keeps the connection."""


class MemoryProxy:
    def __init__(
        self,
        settings: MemorySettings,
        root: Path | None,
        *,
        environ: Mapping[str, str] | None = None,
        reserved_names: Iterable[str] = (),
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self._root = root
        self._environ = os.environ if environ is None else environ
        self._reserved = set(reserved_names)
        self._on_tools_changed = on_tools_changed
        self._report = report or (lambda line: None)
        self._redact = Redactor()
        self._credential = self._read_credential()
        self._client: Client | None = None
        self._tools: dict[str, types.Tool] = {}
        self._upstream_names: dict[str, str] = {}
        self._read_only: set[str] = set()
        self._probe_now: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._attempt_over: anyio.Event | None = None
        self._attempts = 0
        self._said: tuple[str, str] | None = None
        self._last_status: int | None = None
        self._lost_reason = "the connection was lost"
        self.status = self._initial_status()

    # -- what the server asks ---------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.settings.configured and self._credential.value is not None

    @property
    def tools(self) -> list[types.Tool]:
        return list(self._tools.values())

    def owns(self, name: str) -> bool:
        """A tool this proxy answers for: offered now, or named by the configuration while the
        upstream is away (the call then asks for a reconnection at once)."""
        return name in self._tools or (self.enabled and name in offered_names(self.settings, self._reserved))

    def why_absent(self, name: str) -> str | None:
        """Why a memory tool the configuration names is not offered now (None: not one of them)."""
        if name not in offered_names(self.settings, self._reserved):
            return None
        status = self.status
        return f"{name} is a session-memory tool, and session memory is {status.state}: {status.detail}"

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        if self._client is None:
            await self._attempt_now()
        client = self._client
        if client is None or name not in self._upstream_names:
            return self._error(
                f"{name}: session memory is unavailable right now ({self.status.detail}). The kb tools "
                "still work; kbkit retries in the background and at the next memory call."
            )
        writes = name not in self._read_only
        unknown = (
            " The outcome is unknown: the memory service may or may not have applied the call; "
            "check (e.g. with a recall) before you retry."
            if writes
            else " Try again shortly."
        )
        try:
            with anyio.fail_after(self.settings.timeout):
                result = await client.call_tool(self._upstream_names[name], arguments or {})
        except TimeoutError:
            if self._probe_now is not None:
                self._probe_now.set()
            return self._error(
                f"{name}: the memory service did not answer within {self.settings.timeout} s.{unknown}"
            )
        except MCPError as exc:
            if _too_large(exc.message):
                return self._error(_too_large_notice(name))
            if self._last_status in (401, 403):  # the key was revoked or rotated under a live connection
                self._lost(f"the key was rejected (HTTP {self._last_status})")
                return self._error(
                    f"{name}: the memory service rejected the key (HTTP {self._last_status}); check "
                    f"{self._credential.hint()}. kbkit reads it again at the next call, no restart needed."
                )
            if exc.code != types.CONNECTION_CLOSED:  # the upstream answered with an error: it is alive
                return self._error(f"{name}: the memory service refused the call: {exc.message}")
            self._lost(f"the connection closed during a call ({exc.message})")
            return self._error(
                f"{name}: the connection to the memory service closed during the call.{unknown}"
            )
        except Exception as exc:  # the connection broke: reconnect in the background
            if any(isinstance(leaf, ReplyTooLarge) for leaf in _leaves(exc)):
                return self._error(_too_large_notice(name))
            self._lost(f"the connection broke during a call ({_describe(exc)})")
            return self._error(
                f"{name}: the connection to the memory service broke mid-call ({_describe(exc)}).{unknown}"
            )
        return self._redacted(self._bounded(reported_errors_as_errors(result)))

    # -- the supervisor ---------------------------------------------------------------------

    async def wait_first_attempt(self) -> None:
        assert self._attempt_over is not None, "start run() first"
        with anyio.move_on_after(min(FIRST_ATTEMPT_WAIT, self.settings.timeout)):
            while self._attempts == 0:
                await self._attempt_over.wait()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, probe, reconnect: until cancelled with the server."""
        self._probe_now = anyio.Event()
        self._wake = anyio.Event()
        self._attempt_over = anyio.Event()
        task_status.started()
        delay = 1.0
        while True:
            started = time.monotonic()
            credential = self._credential = self._read_credential()
            if credential.value is None:
                self._say("unavailable", key_problem(credential))
            else:
                try:
                    async with self._connect(credential.value) as client:
                        with anyio.fail_after(self.settings.timeout):
                            listed = await client.list_tools()
                        await self._install(client, listed.tools, time.monotonic() - started)
                        delay = 1.0
                        self._attempt_finished()
                        await self._supervise(client)
                except Exception as exc:  # includes the transport's ExceptionGroups; cancellation passes
                    status = self._last_status if self._last_status and self._last_status >= 400 else None
                    self._client = None
                    self._say("unavailable", explain_failure(exc, self.settings, status, credential))
                    if status in (401, 403) and self._read_credential().value != credential.value:
                        delay = 0.0  # the key changed since this attempt: try the new one now
                finally:
                    self._client = None
            self._attempt_finished()
            with anyio.move_on_after(delay):
                await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.sleep(max(0.0, started + MIN_ATTEMPT_GAP - time.monotonic()))
            delay = min(max(delay, 0.5) * 2, MAX_BACKOFF)

    async def _attempt_now(self) -> None:
        """Ask the supervisor for a connection attempt now and wait for it (within the call timeout)."""
        if self._wake is None or self._attempt_over is None:
            return
        seen = self._attempts
        self._wake.set()
        with anyio.move_on_after(self.settings.timeout):
            while self._attempts == seen:
                await self._attempt_over.wait()

    def _attempt_finished(self) -> None:
        self._attempts += 1
        if self._attempt_over is not None:
            self._attempt_over.set()
            self._attempt_over = anyio.Event()

    async def _supervise(self, client: Client) -> None:
        assert self._probe_now is not None
        while True:
            with anyio.move_on_after(PROBE_INTERVAL):
                await self._probe_now.wait()
            self._probe_now = anyio.Event()
            if self._client is None:
                raise ConnectionError(self._lost_reason)
            with anyio.fail_after(self.settings.timeout):
                listed = await client.list_tools()
            await self._install(client, listed.tools, None)

    async def _install(self, client: Client, upstream_tools: list[types.Tool], elapsed: float | None) -> None:
        by_name = {tool.name: tool for tool in upstream_tools}
        offered: dict[str, types.Tool] = {}
        names: dict[str, str] = {}
        for published, upstream in offered_names(self.settings, self._reserved).items():
            if upstream in by_name:
                offered[published] = by_name[upstream].model_copy(update={"name": published})
                names[published] = upstream
        changed = [t.model_dump() for t in offered.values()] != [t.model_dump() for t in self._tools.values()]
        self._tools, self._upstream_names, self._client = offered, names, client
        self._read_only = {
            name for name, tool in offered.items() if tool.annotations and tool.annotations.read_only_hint
        }
        missing = sorted(set(self.settings.tools) - set(by_name))
        reason = f"{len(offered)} tools from {self.settings.endpoint}"
        if missing:
            reason += f"; not offered upstream: {', '.join(missing)}"
        took = f" in {elapsed * 1000:.0f} ms" if elapsed is not None else ""
        self._say("on", reason, took)
        if changed and self._on_tools_changed is not None:
            await self._on_tools_changed()

    def _lost(self, reason: str) -> None:
        self._lost_reason = reason
        self._client = None
        if self._probe_now is not None:
            self._probe_now.set()

    @asynccontextmanager
    async def _connect(self, key: str) -> AsyncIterator[Client]:
        if self.settings.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            command, *args = self.settings.command
            params = StdioServerParameters(command=command, args=args, env=self._upstream_env(key))
            async with Client(stdio_client(params), mode="auto", cache=None) as client:
                yield client
            return
        from mcp.client.streamable_http import streamable_http_client

        self._last_status = None

        async def remember_status(response: httpx2.Response) -> None:
            self._last_status = response.status_code  # the SDK folds HTTP errors into one message

        async with (
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {key}"},
                timeout=self.settings.timeout,
                event_hooks={"response": [remember_status]},
                transport=_CappedTransport(httpx2.AsyncHTTPTransport()),
            ) as http,
            Client(
                streamable_http_client(
                    self.settings.endpoint, http_client=http, max_sse_event_size=MAX_REPLY_BYTES
                ),
                mode="auto",
                cache=None,
            ) as c,
        ):
            yield c

    def _upstream_env(self, key: str) -> dict[str, str]:
        """What a stdio upstream gets on top of the SDK's safe base: locale, the named variables, the key."""
        named = load_env(self._root, self._environ) if self._root is not None else dict(self._environ)
        env = {name: self._environ[name] for name in LOCALE_VARIABLES if name in self._environ}
        env.update({name: named[name] for name in self.settings.env if name in named})
        env[self.settings.credential] = key
        return env

    # -- what the proxy says ----------------------------------------------------------------

    def _read_credential(self) -> Credential:
        credential = read_credential(self.settings.credential, self._root, self._environ)
        self._redact.add(credential.raw, credential.value)
        return credential

    def _initial_status(self) -> MemoryStatus:
        if not self.settings.configured:
            return MemoryStatus("off", "not configured: add a [memory] section with url to kbkit.toml")
        if self._credential.value is None:
            return MemoryStatus("off", key_problem(self._credential))
        return MemoryStatus("connecting", f"to {self.settings.endpoint}")

    def _say(self, state: str, reason: str, timing: str = "") -> None:
        """Set the status; report it on stderr only when the state or its reason changed."""
        reason = self._redact(reason)
        retry = "; kbkit retries in the background" if state == "unavailable" else ""
        self.status = MemoryStatus(state, reason + timing + retry)
        if self._said != (state, reason):
            self._said = (state, reason)
            self._report(self.status.line())

    def _error(self, message: str) -> types.CallToolResult:
        return tool_error(self._redact(message))

    def _redacted(self, result: types.CallToolResult) -> types.CallToolResult:
        """The upstream's own words pass through the redactor too: an upstream may echo the key."""
        content = [
            block.model_copy(update={"text": self._redact(block.text)})
            if isinstance(block, types.TextContent)
            else block
            for block in result.content
        ]
        structured = result.structured_content
        if structured is not None:
            try:
                structured = json.loads(self._redact(json.dumps(structured)))
            except ValueError:
                structured = None
        return result.model_copy(update={"content": content, "structured_content": structured})

    def _bounded(self, result: types.CallToolResult) -> types.CallToolResult:
        """Text over RESULT_TEXT_CAP is cut, and the cut is said; the agent never gets part as all."""
        sizes = [len(b.text.encode()) for b in result.content if isinstance(b, types.TextContent)]
        total = sum(sizes)
        if total <= RESULT_TEXT_CAP:
            return result
        room, content = RESULT_TEXT_CAP, []
        for block in result.content:
            if isinstance(block, types.TextContent):
                kept = block.text.encode()[:room].decode("utf-8", "ignore")
                room -= len(kept.encode())
                if kept:
                    content.append(block.model_copy(update={"text": kept}))
        content.append(
            types.TextContent(
                text=f"[kbkit: the memory service returned {total:,} bytes of text; only the first "
                f"{RESULT_TEXT_CAP:,} are shown. Ask for less: a narrower query or a lower max_tokens.]"
            )
        )
        return result.model_copy(update={"content": content, "structured_content": None})


async def probe(settings: MemorySettings, root: Path | None) -> tuple[bool, str]:
    """One connection attempt, as `kbkit doctor` makes it: (ok, what happened in words)."""
    proxy = MemoryProxy(settings, root)
    credential = proxy._credential
    if credential.value is None:
        return False, key_problem(credential)
    started = time.monotonic()
    try:
        async with proxy._connect(credential.value) as client:
            with anyio.fail_after(settings.timeout):
                listed = await client.list_tools()
    except Exception as exc:
        status = proxy._last_status if proxy._last_status and proxy._last_status >= 400 else None
        return False, proxy._redact(explain_failure(exc, settings, status, credential))
    names = [tool.name for tool in listed.tools]
    offered = [name for name in settings.tools if name in names]
    elapsed = (time.monotonic() - started) * 1000
    return (
        True,
        f"{settings.endpoint} accepted the key and listed {len(names)} tools in {elapsed:.0f} ms "
        f"({', '.join(offered) or 'none of [memory] tools'} offered)",
    )


def reported_errors_as_errors(result: types.CallToolResult) -> types.CallToolResult:
    """Hindsight reports some failures as ordinary results; make them tool errors."""
    if result.is_error:
        return result
    payload = result.structured_content
    if payload is None:
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        try:
            payload = json.loads(texts[0]) if len(texts) == 1 and len(texts[0]) < 65536 else None
        except ValueError:
            payload = None
    if isinstance(payload, dict) and (payload.get("status") == "error" or "error" in payload):
        return result.model_copy(update={"is_error": True})
    return result


def explain_failure(
    exc: BaseException,
    settings: MemorySettings,
    status: int | None = None,
    credential: Credential | None = None,
) -> str:
    """A failure to reach the upstream, in words a user can act on (`status`: the HTTP error seen)."""
    leaves = list(_leaves(exc))
    where = settings.endpoint
    if status in (401, 403):
        source = credential.hint() if credential else f"{settings.credential} in {ENV_FILE}"
        return f"key rejected: {where} answered HTTP {status}; check {source} (a rotated or mistyped key)"
    if any(isinstance(leaf, ReplyTooLarge) for leaf in leaves):
        return f"reply too large: {where} sent more than {MAX_REPLY_BYTES // (1024 * 1024)} MiB at once"
    if any(isinstance(leaf, TimeoutError) or "Timeout" in type(leaf).__name__ for leaf in leaves):
        return f"timeout: no answer from {where} within {settings.timeout} s; is the service overloaded?"
    connect_failed = any(
        "ConnectError" in type(leaf).__name__ or isinstance(leaf, ConnectionError) for leaf in leaves
    )
    if settings.command and any(isinstance(leaf, OSError) for leaf in leaves):
        return (
            f"cannot start {where}: {'; '.join(_describe(leaf) for leaf in leaves)}; check [memory] command"
        )
    if connect_failed and status is None:
        return f"host unreachable: cannot connect to {where}; check [memory] url and that the service runs"
    if status is not None:
        return (
            f"not an MCP endpoint: {where} answered HTTP {status}; check [memory] url "
            "(Hindsight's is <base>/mcp/<bank>/)"
        )
    text = "; ".join(_describe(leaf) for leaf in leaves)
    return f"not an MCP endpoint: {where} did not speak MCP ({text}); check [memory] url"


def _leaves(exc: BaseException) -> Iterable[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
        if exc.__cause__ is not None:
            yield from _leaves(exc.__cause__)


def _describe(exc: BaseException) -> str:
    message = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {message}"[:300]


def _too_large(message: str) -> bool:
    return "exceeded the" in message and "byte limit" in message or ReplyTooLarge.__name__ in message


def _too_large_notice(name: str) -> str:
    return (
        f"{name}: the memory service's reply was over {MAX_REPLY_BYTES // (1024 * 1024)} MiB; kbkit stopped "
        "reading it. Ask for less: a narrower query or a lower max_tokens."
    )


class _CappedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose JSON replies stop at MAX_REPLY_BYTES (SSE events are capped by the SDK;
    an SSE stream as a whole may be long-lived, so only JSON bodies are counted)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("application/json"):
            response.stream = _CappedStream(response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > MAX_REPLY_BYTES:
                raise ReplyTooLarge(f"{ReplyTooLarge.__name__}: over {MAX_REPLY_BYTES} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
