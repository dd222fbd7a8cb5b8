"""The one server factory. Every transport serves the `Server` built here, so the tool registry,
the resources and the guards exist once whatever the wire.

Built on the SDK's low-level `Server`: it pages resources, carries sizes, takes our own
schemas, and answers both protocol eras (2025-11-25 sessions, 2026-07-28 stateless requests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from kbkit import __version__
from kbkit.config import CONFIG_FILE
from kbkit.errors import ConfigError, IndexUnavailable
from kbkit.kb.base import KnowledgeBase
from kbkit.server import resources
from kbkit.server.tools import KB_TOOLS, KbTool

INSTRUCTIONS = (
    "This server holds the team's knowledge base (docs, ADRs, runbooks). Use the `search` tool to "
    "find documents, then read them as resources (kb://doc/<path>) or with get_document. Cite the "
    "kb://doc/ URI of what you used. kb://topic/<folder> lists the documents under a folder."
)

T = TypeVar("T")


def select_tools(allowlist: tuple[str, ...]) -> dict[str, KbTool]:
    """The kb tools `[server] tools` allows, in its order; an unknown name is a config error."""
    unknown = [name for name in allowlist if name not in KB_TOOLS]
    if unknown:
        raise ConfigError(
            f"unknown tool {unknown[0]!r}; the kb tools are: {', '.join(KB_TOOLS)}",
            file=CONFIG_FILE,
            key="server.tools",
        )
    return {name: KB_TOOLS[name] for name in allowlist}


def create_server(kb: KnowledgeBase) -> Server[Any]:
    tools = select_tools(kb.settings.server_tools)
    declarations = [tool.declaration() for tool in tools.values()]

    async def in_thread(fn: Callable[..., T], *args: Any) -> T:
        """SQLite and parsing block; the event loop keeps answering meanwhile."""
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except IndexUnavailable as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=declarations)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}; this server offers: " + ", ".join(tools)
            )
        return await in_thread(tool.call, kb, params.arguments)

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await in_thread(resources.list_resources, kb, params.cursor if params else None)

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return resources.list_templates()

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await in_thread(resources.read_resource, kb, params.uri)

    return Server(
        kb.settings.server_name,
        version=__version__,
        title="kbkit knowledge base",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


def initialization_options(server: Server[Any]) -> InitializationOptions:
    """What the handshake advertises: exactly what is implemented (no change notifications yet)."""
    return server.create_initialization_options(NotificationOptions())
