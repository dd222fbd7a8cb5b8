"""The connection to the memory service: connect (streamable HTTP or stdio), list the tools, probe,
and reconnect with backoff when it breaks; and a failure to reach it, in words a user can act on.

The key is read afresh at every attempt, so a rotated key is picked up without a restart. What
the tools are and what the agent is told is the proxy's (proxy.py); this module hands it each
tool list and each failure.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import httpx2
import mcp.types as types
from mcp import Client

from kbkit.config import ENV_FILE, MemorySettings
from kbkit.errors import describe, leaves
from kbkit.server.memory.bounds import MAX_REPLY_BYTES, CappedTransport, ReplyTooLarge
from kbkit.server.memory.keys import Credential, key_problem, read_credential, upstream_env
from kbkit.server.memory.redaction import Redactor

PROBE_INTERVAL = 15.0
"""Seconds between health probes (a tools/list) of a connected upstream."""
FIRST_ATTEMPT_WAIT = 5.0
"""How long start-up waits for the first connection, so tools are listed from the first request."""
MAX_BACKOFF = 60.0
MIN_ATTEMPT_GAP = 1.0
"""Seconds between two connection attempts, however many calls ask for one."""

OnListed = Callable[[list[types.Tool], float | None], Awaitable[None]]
"""Told the upstream's tools at each connection (with how long it took) and each probe (None)."""
OnFailed = Callable[[str], None]
"""Told why an attempt failed, in words, for the status line."""


class Connection:
    """Owns the upstream connection while kbkit serves: `client` is the live one, or None."""

    def __init__(
        self,
        settings: MemorySettings,
        root: Path | None,
        redact: Redactor,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._root = root
        self._environ = os.environ if environ is None else environ
        self.redact = redact
        self.credential = self.read_credential()
        self.client: Client | None = None
        self.last_status: int | None = None
        """The HTTP status of the upstream's last reply (the SDK folds HTTP errors into one message)."""
        self._probe_now: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._attempt_over: anyio.Event | None = None
        self._attempts = 0
        self._lost_reason = "the connection was lost"

    def read_credential(self) -> Credential:
        """The key as it is now; every form of it is redacted from then on."""
        credential = read_credential(self.settings.credential, self._root, self._environ)
        self.redact.add(credential.raw, credential.value)
        return credential

    async def wait_first_attempt(self) -> None:
        assert self._attempt_over is not None, "start run() first"
        with anyio.move_on_after(min(FIRST_ATTEMPT_WAIT, self.settings.timeout)):
            while self._attempts == 0:
                await self._attempt_over.wait()

    async def run(
        self,
        on_listed: OnListed,
        on_failed: OnFailed,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, serve, probe, reconnect: until cancelled with the server."""
        self._probe_now = anyio.Event()
        self._wake = anyio.Event()
        self._attempt_over = anyio.Event()
        task_status.started()
        delay = 1.0
        while True:
            started = time.monotonic()
            credential = self.credential = self.read_credential()
            if credential.value is None:
                on_failed(key_problem(credential))
            else:
                try:
                    async with self.connect(credential.value) as client:
                        with anyio.fail_after(self.settings.timeout):
                            listed = await client.list_tools()
                        self.client = client
                        await on_listed(listed.tools, time.monotonic() - started)
                        delay = 1.0
                        self._attempt_finished()
                        await self._supervise(client, on_listed)
                except Exception as exc:  # includes the transport's ExceptionGroups; cancellation passes
                    status = self.last_status if self.last_status and self.last_status >= 400 else None
                    self.client = None
                    on_failed(explain_failure(exc, self.settings, status, credential))
                    if status in (401, 403) and self.read_credential().value != credential.value:
                        delay = 0.0  # the key changed since this attempt: try the new one now
                finally:
                    self.client = None
            self._attempt_finished()
            with anyio.move_on_after(delay):
                await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.sleep(max(0.0, started + MIN_ATTEMPT_GAP - time.monotonic()))
            delay = min(max(delay, 0.5) * 2, MAX_BACKOFF)

    async def attempt_now(self) -> None:
        """Ask for a connection attempt now and wait for it (within the call timeout)."""
        if self._wake is None or self._attempt_over is None:
            return
        seen = self._attempts
        self._wake.set()
        with anyio.move_on_after(self.settings.timeout):
            while self._attempts == seen:
                await self._attempt_over.wait()

    def probe_soon(self) -> None:
        """Probe now instead of at the next interval (a call went unanswered)."""
        if self._probe_now is not None:
            self._probe_now.set()

    def lost(self, reason: str) -> None:
        """A call found the connection broken: drop it, and reconnect in the background."""
        self._lost_reason = reason
        self.client = None
        self.probe_soon()

    def _attempt_finished(self) -> None:
        self._attempts += 1
        if self._attempt_over is not None:
            self._attempt_over.set()
            self._attempt_over = anyio.Event()

    async def _supervise(self, client: Client, on_listed: OnListed) -> None:
        assert self._probe_now is not None
        while True:
            with anyio.move_on_after(PROBE_INTERVAL):
                await self._probe_now.wait()
            self._probe_now = anyio.Event()
            if self.client is None:
                raise ConnectionError(self._lost_reason)
            with anyio.fail_after(self.settings.timeout):
                listed = await client.list_tools()
            self.client = client
            await on_listed(listed.tools, None)

    @asynccontextmanager
    async def connect(self, key: str) -> AsyncIterator[Client]:
        if self.settings.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            command, *args = self.settings.command
            env = upstream_env(self.settings, self._root, self._environ, key)
            params = StdioServerParameters(command=command, args=args, env=env)
            async with Client(stdio_client(params), mode="auto", cache=None) as client:
                yield client
            return
        from mcp.client.streamable_http import streamable_http_client

        self.last_status = None

        async def remember_status(response: httpx2.Response) -> None:
            self.last_status = response.status_code

        async with (
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {key}"},
                timeout=self.settings.timeout,
                event_hooks={"response": [remember_status]},
                transport=CappedTransport(httpx2.AsyncHTTPTransport()),
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


async def probe(settings: MemorySettings, root: Path | None) -> tuple[bool, str]:
    """One connection attempt, as `kbkit doctor` makes it: (ok, what happened in words)."""
    connection = Connection(settings, root, Redactor())
    credential = connection.credential
    if credential.value is None:
        return False, key_problem(credential)
    started = time.monotonic()
    try:
        async with connection.connect(credential.value) as client:
            with anyio.fail_after(settings.timeout):
                listed = await client.list_tools()
    except Exception as exc:
        last = connection.last_status
        status = last if last and last >= 400 else None
        return False, connection.redact(explain_failure(exc, settings, status, credential))
    names = [tool.name for tool in listed.tools]
    offered = [name for name in settings.tools if name in names]
    elapsed = (time.monotonic() - started) * 1000
    return (
        True,
        f"{settings.endpoint} accepted the key and listed {len(names)} tools in {elapsed:.0f} ms "
        f"({', '.join(offered) or 'none of [memory] tools'} offered)",
    )


def explain_failure(
    exc: BaseException,
    settings: MemorySettings,
    status: int | None = None,
    credential: Credential | None = None,
) -> str:
    """A failure to reach the upstream, in words a user can act on (`status`: the HTTP error seen)."""
    found = list(leaves(exc, causes=True))
    where = settings.endpoint
    if status in (401, 403):
        source = credential.hint() if credential else f"{settings.credential} in {ENV_FILE}"
        return f"key rejected: {where} answered HTTP {status}; check {source} (a rotated or mistyped key)"
    if any(isinstance(leaf, ReplyTooLarge) for leaf in found):
        return f"reply too large: {where} sent more than {MAX_REPLY_BYTES // (1024 * 1024)} MiB at once"
    if any(isinstance(leaf, TimeoutError) or "Timeout" in type(leaf).__name__ for leaf in found):
        return f"timeout: no answer from {where} within {settings.timeout} s; is the service overloaded?"
    connect_failed = any(
        "ConnectError" in type(leaf).__name__ or isinstance(leaf, ConnectionError) for leaf in found
    )
    if settings.command and any(isinstance(leaf, OSError) for leaf in found):
        return f"cannot start {where}: {'; '.join(describe(leaf) for leaf in found)}; check [memory] command"
    if connect_failed and status is None:
        return f"host unreachable: cannot connect to {where}; check [memory] url and that the service runs"
    if status is not None:
        return (
            f"not an MCP endpoint: {where} answered HTTP {status}; check [memory] url "
            "(Hindsight's is <base>/mcp/<bank>/)"
        )
    text = "; ".join(describe(leaf) for leaf in found)
    return f"not an MCP endpoint: {where} did not speak MCP ({text}); check [memory] url"
