"""`kbkit connect URL`: a stdio-to-streamable-HTTP relay for clients that cannot put a secret
reference in their config. It reads MCP_TOKEN from the environment or `.env.local` itself, so
the client's file names only a command, never a token.

Messages pass through unchanged; the relay adds what the HTTP transport needs per request: the
bearer token, and the routing headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) that an SDK
client session would have stamped.
"""

from __future__ import annotations

import logging
from typing import Any

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
from mcp_types import PROTOCOL_VERSION_META_KEY, JSONRPCRequest, JSONRPCResponse
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger("kbkit")


class _Stamper:
    """Adds the per-request HTTP headers, remembering the version a handshake negotiated."""

    def __init__(self) -> None:
        self.negotiated: str | None = None
        self._initialize_ids: set[Any] = set()

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


async def relay(url: str, token: str | None, *, timeout: float = 300.0) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    stamper = _Stamper()
    async with (
        stdio_server() as (local_read, local_write),
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout, connect=10)) as http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        anyio.create_task_group() as group,
    ):

        async def to_server() -> None:
            async for item in local_read:
                if isinstance(item, Exception):
                    logger.warning("kbkit connect: unreadable message from the client: %s", item)
                    continue
                await remote_write.send(stamper.outgoing(item))
            group.cancel_scope.cancel()

        async def to_client() -> None:
            async for item in remote_read:
                if isinstance(item, Exception):
                    logger.warning("kbkit connect: %s", item)
                    continue
                stamper.incoming(item)
                await local_write.send(item)
            group.cancel_scope.cancel()

        group.start_soon(to_server)
        group.start_soon(to_client)
