"""The one server factory. Every transport serves the `Server` built here, so the tool registry,
the resources and the guards exist once whatever the wire.

Built on the SDK's low-level `Server`: it pages resources, carries sizes, takes our own
schemas, and answers both protocol eras (2025-11-25 sessions, 2026-07-28 stateless requests).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, TypeVarTuple

import anyio.to_thread
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from kbkit import __version__
from kbkit.config.restricted import PUBLIC
from kbkit.errors import IndexUnavailable
from kbkit.kb.base import KnowledgeBase
from kbkit.server import resources
from kbkit.server.auth.audit import note_denied
from kbkit.server.auth.scopes import may_use_memory
from kbkit.server.caching import FIXED_MS, hinted
from kbkit.server.grants import Library, Part, View
from kbkit.server.live import LiveIndex
from kbkit.server.memory import MemoryProxy, offered_names
from kbkit.server.notify import Notifier, reader_of
from kbkit.server.skills import SkillShelf
from kbkit.server.tools import KB_TOOLS, KbTool

INSTRUCTIONS = (
    "This server holds the team's knowledge base (docs, ADRs, runbooks). Use the `search` tool to "
    "find documents, then read the part a hit points at with get_document (its path and offset); "
    "resources (kb://doc/<path>) hold whole documents. Cite the kb://doc/ URI of what you used. "
    "kb://topic/<folder> lists the documents under a folder."
)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def select_tools(allowlist: tuple[str, ...]) -> dict[str, KbTool]:
    """The kb tools `[server] tools` allows, in its order (the config model accepts only known names)."""
    return {name: KB_TOOLS[name] for name in allowlist}


class KbServer(Server[Any]):
    """The SDK server plus what kbkit hangs on it: the notifier and the memory proxy.

    `create_initialization_options` defaults to kbkit's own notification options, because the
    HTTP session manager calls it without arguments, and both transports must advertise the same.
    """

    notifier: Notifier
    memory: MemoryProxy | None
    notification_options: NotificationOptions

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or self.notification_options, experimental_capabilities, extensions
        )


def create_server(
    kb: KnowledgeBase | Sequence[KnowledgeBase],
    *,
    attach_memory: bool = True,
    watch: bool = False,
    report: Callable[[str], None] | None = None,
) -> KbServer:
    """The one server: kb tools and resources, plus memory tools when `[memory]` and its key allow.

    It indexes in the background from the moment it runs (docs/adr/0012): no scan is needed
    first. `report` receives later status lines (indexing finished, memory coming up or going
    away) for stderr. Several indexes (`KnowledgeBase.partitioned`: a kb with restricted folders,
    served over HTTP) are read through the guard (kbkit/server/grants.py): each request reads the
    parts its principal may read.
    """
    kbs = [kb] if isinstance(kb, KnowledgeBase) else list(kb)
    settings = kbs[0].settings
    tools = select_tools(settings.server_tools)
    declarations = [tool.declaration() for tool in tools.values()]
    notifier = Notifier()
    shelf = SkillShelf(settings.root)
    lives = [
        LiveIndex(one, notifier, watch=watch, report=report or (lambda line: None), skills=not number)
        for number, one in enumerate(kbs)
    ]
    library = Library(
        [Part(one.partition or PUBLIC, one, live.indexing) for one, live in zip(kbs, lives, strict=True)]
    )
    notifier.may_read = library.may_read

    def view(ctx: ServerRequestContext[Any]) -> View:
        """What this request may read: the guard, once, for every way out."""
        return library.view(reader_of(ctx), lambda folder: note_denied(ctx.request, folder))

    memory = None
    if attach_memory and settings.memory.configured:
        waiting = settings.waiting("memory")
        memory = MemoryProxy(
            settings.memory,
            settings.root,
            reserved_names=KB_TOOLS,
            on_tools_changed=notifier.tools_changed,
            report=report,
            waiting=waiting.line() if waiting is not None and not waiting.fallback else None,
        )
    dynamic_tools = memory is not None and memory.enabled

    limiter: list[anyio.CapacityLimiter] = []

    async def in_thread(fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """SQLite and parsing block; the event loop keeps answering meanwhile. At most one worker
        per core: more only queue inside SQLite, whose allocator lock makes them slower."""
        if not limiter:
            limiter.append(anyio.CapacityLimiter(max(2, os.cpu_count() or 2)))
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=limiter[0])
        except IndexUnavailable as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        extra = memory.tools if memory is not None and may_use_memory(ctx.request) else []
        return hinted(types.ListToolsResult(tools=[*declarations, *extra]), everyone=memory is None)

    async def from_index(fn: Callable[..., T], *args: Any) -> T:
        """A request that reads the index: during the start-up scan it waits a little (docs/adr/0012)."""
        for live in lives:
            await live.settled()
        return await in_thread(fn, *args)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is not None:
            readable = view(ctx)
            return await from_index(tool.call, readable, params.arguments, readable.indexing)
        if memory is not None and memory.owns(params.name):
            return await memory.call(params.name, params.arguments)
        offered = [*tools, *(t.name for t in (memory.tools if memory else []))]
        message = f"unknown tool {params.name!r}; this server offers: {', '.join(offered)}"
        why = why_not_offered(params.name)
        raise MCPError(types.INVALID_PARAMS, f"{message} ({why})" if why else message)

    def why_not_offered(name: str) -> str | None:
        """For a memory tool the configuration names but this server does not offer now: why."""
        if memory is not None:
            return memory.why_absent(name)
        if settings.memory.configured and name in offered_names(settings.memory, KB_TOOLS):
            return (
                f"{name} is a session-memory tool, and session memory is not attached to this shared "
                "server; set [server.http] memory = true to attach it"
            )
        return None

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        readable = view(ctx)
        cursor = params.cursor if params else None
        listed = await from_index(resources.list_resources, readable, cursor, shelf)
        return hinted(listed, everyone=readable.everyone_reads(None))

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return hinted(resources.list_templates(), everyone=True, ttl_ms=FIXED_MS)

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        readable = view(ctx)
        result = await from_index(resources.read_resource, readable, params.uri, shelf)
        return hinted(result, everyone=resources.read_alike(readable, params.uri))

    async def on_list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return hinted(await in_thread(shelf.list_prompts), everyone=True)

    async def on_get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await in_thread(shelf.get_prompt, params.name)

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as group:
            await group.start(notifier.run)
            for live in lives:
                group.start_soon(live.run)
            if memory is not None and dynamic_tools:
                await group.start(memory.run)
                await memory.wait_first_attempt()
            try:
                yield {}
            finally:
                for live in lives:
                    live.stop()
                notifier.close()
                group.cancel_scope.cancel()

    server = KbServer(
        settings.server_name,
        version=__version__,
        title="kbkit knowledge base",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
        on_subscribe_resource=notifier.subscribe,
        on_unsubscribe_resource=notifier.unsubscribe,
        on_subscriptions_listen=notifier.listen,
    )
    server.middleware.append(notifier.track)
    server.notifier = notifier
    server.memory = memory
    server.notification_options = NotificationOptions(
        prompts_changed=True, resources_changed=True, tools_changed=dynamic_tools
    )
    return server
