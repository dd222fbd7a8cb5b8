"""Change notifications to every connected client, in both protocol eras.

2026-07-28 clients opt in with `subscriptions/listen`; the SDK's `ListenHandler` serves those
streams from a subscription bus, so publishing an event on the bus reaches them. 2025-11-25
sessions get spontaneous notifications on their connection; `Notifier.track` (a server
middleware) remembers the connection of every handshake-era request (weakly: a closed
connection is forgotten), and a connection whose send fails is dropped.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

logger = logging.getLogger("kbkit")


class Notifier:
    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()

    async def track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: remember handshake-era connections so they can be notified later."""
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            # ctx.session is a per-request proxy; its connection is what lives as long as the
            # client does. The SDK's own (not yet wired) `Context.connection` exposes the same.
            self._connections.add(ctx.session._connection)  # noqa: SLF001
        return await call_next(ctx)

    async def tools_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        await self._each_session("send_tool_list_changed")

    async def resources_changed(self) -> None:
        await self.bus.publish(ResourcesListChanged())
        await self._each_session("send_resource_list_changed")

    async def resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def _each_session(self, method: str, *args: Any) -> None:
        for connection in list(self._connections):
            try:
                await getattr(connection, method)(*args)
            except Exception as exc:  # a closed connection: forget it, keep notifying the others
                logger.debug("dropping a connection that could not be notified: %s", exc)
                self._connections.discard(connection)

    def close(self) -> None:
        self.listen.close()
