"""Change notifications to every connected client, in both protocol eras.

2026-07-28 clients opt in with `subscriptions/listen`; the SDK's `ListenHandler` serves those
streams from a subscription bus, each stream with its own bounded buffer, so publishing an event
on the bus reaches them and never waits for one of them. 2025-11-25 sessions get spontaneous
notifications on their connection; `Notifier.track` (a server middleware) remembers the
connection of every handshake-era request (weakly: a closed connection is forgotten).

With restricted folders (kbkit/server/grants.py) a change is heard only by whom may read the part
of the kb it happened in: `may_read` is asked for each connection and each listen stream at each
event, with the principal as it is then, so a grant revoked while a stream is open stops the
stream hearing of that folder from the next event on.

A 2025-11-25 client that stops reading its notification stream blocks every send to it. So each
such connection gets its own outbox, drained by its own task: a publisher only appends, never
waits, and a connection that falls OUTBOX_SIZE notifications behind (or whose send fails) is
dropped, while every other client keeps hearing about changes.
"""

from __future__ import annotations

import logging
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from kbkit.config.restricted import Reader
from kbkit.server.auth.gate import caller_of

logger = logging.getLogger("kbkit.notify")

OUTBOX_SIZE = 256
"""Notifications queued for one 2025-11-25 connection; a client this far behind is dropped."""
MAX_SUBSCRIPTIONS = 1000
"""Resources one session may subscribe to (`resources/subscribe`, or the URIs of one listen stream)."""
MAX_SUBSCRIBED_BYTES = 256 * 1024
"""The URIs one 2025-11-25 session subscribes to, in total characters: what its subscriptions may cost."""
MAX_LISTEN_STREAMS = 256
"""`subscriptions/listen` streams open at once, over all 2026-07-28 clients."""
MAX_LISTEN_PER_PRINCIPAL = 16
"""Listen streams one principal (whom the HTTP gate named) may hold at once: nobody takes them all."""


MayRead = Callable[[Reader | None, str | None], bool]
"""(the principal, the part of the kb a change happened in, None for none) -> it may hear of it."""


@dataclass(frozen=True)
class InPart:
    """A change in one part of the kb (kbkit/server/grants.py): only its readers hear of it."""

    part: str


@dataclass(frozen=True)
class PartListChanged(ResourcesListChanged, InPart):
    pass


@dataclass(frozen=True)
class PartResourceUpdated(ResourceUpdated, InPart):
    pass


class _ReaderBus:
    """The notifier's bus as one listen stream's principal may hear it (asked at every event)."""

    def __init__(self, bus: InMemorySubscriptionBus, reader: Reader | None, may_read: MayRead) -> None:
        self._bus, self._reader, self._may_read = bus, reader, may_read

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        def heard(event: ServerEvent) -> None:
            if self._may_read(self._reader, event.part if isinstance(event, InPart) else None):
                listener(event)

        return self._bus.subscribe(heard)


def reader_of(ctx: ServerRequestContext[Any, Any]) -> Reader | None:
    """Who sent the request, as the guard sees it; None without a gate (stdio: the member)."""
    caller = caller_of(ctx.request)
    return None if caller is None else caller.reader


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who sent the request, as the HTTP gate named it (`scope["user"]`); "" without a gate (stdio)."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    client_id = getattr(getattr(user, "access_token", None), "client_id", None)
    return client_id if isinstance(client_id, str) else ""


class _Outbox:
    __slots__ = ("pending", "draining")

    def __init__(self) -> None:
        self.pending: deque[tuple[str, tuple[Any, ...]]] = deque()
        self.draining = False


class Notifier:
    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.may_read: MayRead = lambda reader, part: True
        """Set by the server factory from its library of parts (kbkit/server/grants.py)."""
        self._streams: set[ListenHandler] = set()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._readers: weakref.WeakKeyDictionary[Connection, Reader | None] = weakref.WeakKeyDictionary()
        self._subscriptions: weakref.WeakKeyDictionary[Connection, set[str]] = weakref.WeakKeyDictionary()
        self._outboxes: weakref.WeakKeyDictionary[Connection, _Outbox] = weakref.WeakKeyDictionary()
        self._group: TaskGroup | None = None
        self._listening: dict[str, int] = {}
        """Principal -> its open listen streams."""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the per-connection senders; runs for the server's lifetime (start it in the lifespan)."""
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._group = None

    async def track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: remember handshake-era connections so they can be notified later."""
        if ctx.method == "initialize" or ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            # ctx.session is a per-request proxy; its connection is what lives as long as the
            # client does. The SDK's own (not yet wired) `Context.connection` exposes the same.
            connection = ctx.session._connection  # noqa: SLF001
            self._connections.add(connection)
            self._readers[connection] = reader_of(ctx)
        return await call_next(ctx)

    async def tools_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        await self._each_session("send_tool_list_changed")

    async def resources_changed(self, part: str | None = None) -> None:
        await self.bus.publish(ResourcesListChanged() if part is None else PartListChanged(part=part))
        await self._each_session("send_resource_list_changed", part)

    async def prompts_changed(self) -> None:
        await self.bus.publish(PromptsListChanged())
        await self._each_session("send_prompt_list_changed")

    async def resource_updated(self, uri: str, part: str | None = None) -> None:
        await self.bus.publish(
            ResourceUpdated(uri=uri) if part is None else PartResourceUpdated(uri=uri, part=part)
        )
        for connection, uris in list(self._subscriptions.items()):
            if uri in uris and self._hears(connection, part):
                await self._post(connection, "send_resource_updated", uri)

    def _hears(self, connection: Connection, part: str | None) -> bool:
        return self.may_read(self._readers.get(connection), part)

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """2025-11-25 `resources/subscribe`: this connection hears `updated` for that URI."""
        uris = self._subscriptions.setdefault(ctx.session._connection, set())  # noqa: SLF001
        if params.uri not in uris:
            if len(uris) >= MAX_SUBSCRIPTIONS:
                raise MCPError(
                    types.INVALID_REQUEST,
                    f"this session already subscribes to {MAX_SUBSCRIPTIONS} resources, the most one "
                    "session may; unsubscribe from some first",
                )
            if sum(map(len, uris)) + len(params.uri) > MAX_SUBSCRIBED_BYTES:
                raise MCPError(
                    types.INVALID_REQUEST,
                    f"this session's subscriptions would exceed {MAX_SUBSCRIBED_BYTES} characters of URIs; "
                    "unsubscribe from some first",
                )
        uris.add(params.uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._subscriptions.get(ctx.session._connection, set()).discard(params.uri)  # noqa: SLF001
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """2026-07-28 `subscriptions/listen`, with the same bound on resource URIs as a session."""
        uris = params.notifications.resource_subscriptions or []
        if len(uris) > MAX_SUBSCRIPTIONS:
            raise MCPError(
                types.INVALID_PARAMS,
                f"a listen stream may subscribe to at most {MAX_SUBSCRIPTIONS} resources ({len(uris)} given)",
            )
        who = principal_of(ctx)
        held = self._listening.get(who, 0)
        if who and held >= MAX_LISTEN_PER_PRINCIPAL:
            raise MCPError(
                types.INVALID_REQUEST,
                f"{who.partition(':')[2] or who} already holds {held} subscriptions/listen streams, the most "
                f"one principal may ({MAX_LISTEN_PER_PRINCIPAL}); close one first",
            )
        if sum(self._listening.values()) >= MAX_LISTEN_STREAMS:
            raise MCPError(types.INTERNAL_ERROR, "Subscription limit reached")
        handler = ListenHandler(_ReaderBus(self.bus, reader_of(ctx), self.may_read), max_subscriptions=1)
        self._listening[who] = held + 1
        self._streams.add(handler)
        try:
            return await handler(ctx, params)
        finally:
            self._streams.discard(handler)
            self._listening[who] -= 1
            if not self._listening[who]:
                del self._listening[who]

    async def _each_session(self, method: str, part: str | None = None) -> None:
        for connection in list(self._connections):
            if self._hears(connection, part):
                await self._post(connection, method)

    async def _post(self, connection: Connection, method: str, *args: Any) -> None:
        """Queue one notification for `connection`; never waits for the client."""
        if self._group is None:  # no sender tasks (the server is not running): send in place
            try:
                await getattr(connection, method)(*args)
            except Exception:  # a broken connection: forget it
                self._drop(connection)
            return
        outbox = self._outboxes.get(connection)
        if outbox is None:
            outbox = self._outboxes[connection] = _Outbox()
        if len(outbox.pending) >= OUTBOX_SIZE:
            logger.warning(
                "notifications: a client fell %d notifications behind; it is no longer notified", OUTBOX_SIZE
            )
            self._drop(connection)
            return
        outbox.pending.append((method, args))
        if not outbox.draining:
            outbox.draining = True
            self._group.start_soon(self._drain, weakref.ref(connection), outbox)

    async def _drain(self, ref: weakref.ref[Connection], outbox: _Outbox) -> None:
        """Send one connection's notifications in order; holds the connection only while sending."""
        try:
            while outbox.pending:
                method, args = outbox.pending.popleft()
                connection = ref()
                if connection is None:
                    return
                try:
                    await getattr(connection, method)(*args)
                except Exception as exc:  # a broken connection: forget it, the others are not affected
                    logger.debug("dropping a connection that could not be notified: %s", exc)
                    self._drop(connection)
                    return
                del connection
        finally:
            outbox.draining = False

    def _drop(self, connection: Connection) -> None:
        self._connections.discard(connection)
        self._subscriptions.pop(connection, None)
        outbox = self._outboxes.pop(connection, None)
        if outbox is not None:
            outbox.pending.clear()

    def close(self) -> None:
        for handler in list(self._streams):
            handler.close()
