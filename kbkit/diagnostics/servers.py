"""The team's other MCP servers: each started (or reached) once, within a bound, as an agent would.

Per server, one finding: started with N tools, or why not (the variable that is unset, the
command not found, the HTTP status, the time it did not answer in). Servers are tried together,
so the doctor waits for the slowest one at most; a project without `[servers]` costs nothing.
No value of a variable is ever in a finding: every one found is cut out of the words first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbkit.config import ENV_FILE, Settings
from kbkit.diagnostics.base import Context, Finding, ok
from kbkit.errors import describe, leaves

if TYPE_CHECKING:
    from kbkit.server.team import Launch

CHECK = "servers"
DOCTOR_BOUND = 20
"""The most seconds the doctor gives one server (its `startup_timeout` when that is shorter)."""


def check_servers(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    if not ctx.settings.servers:
        return ok(CHECK, "none declared (team servers are optional: [servers.<name>] in kbkit.toml)")
    import logging

    import anyio

    logging.getLogger("mcp").setLevel(logging.CRITICAL + 1)  # a junk line is the server's, said here
    settings = ctx.settings
    found: dict[str, Finding] = {}

    async def every() -> None:
        async with anyio.create_task_group() as group:
            for name in settings.servers:
                group.start_soon(_one, name)

    async def _one(name: str) -> None:
        found[name] = await probe(settings, name)

    anyio.run(every)
    return [found[name] for name in settings.servers]


async def probe(settings: Settings, name: str) -> Finding:
    """Start (or reach) team server `name`, initialize, list its tools: one finding."""
    import anyio

    from kbkit.errors import KbkitError
    from kbkit.server.team import executable, resolve

    server = settings.servers[name]
    bound = min(server.startup_timeout, DOCTOR_BOUND)
    waiting = settings.waiting(f"servers.{name}")
    if waiting is not None and not waiting.fallback:  # never started, not even here
        return Finding(CHECK, "warn", f"{name}: not started: {waiting.what()}", waiting.review)
    try:
        launch = resolve(settings, name)
        path = executable(launch) if launch.argv else ""
    except KbkitError as exc:
        return Finding(
            CHECK, "fail", f"{name}: {exc.message.removeprefix(f'team server {name!r}: ')}", exc.fix
        )
    status: list[int] = []
    started = time.monotonic()
    try:
        with anyio.fail_after(bound):
            tools = await _list_tools(launch, path, status)
    except TimeoutError:
        return Finding(
            CHECK,
            "fail",
            f"{name}: timeout: no answer to initialize and tools/list within {bound} s",
            "start it by hand (`kbkit run " + name + "`) to see what it waits for; raise startup_timeout "
            "if it is only slow",
        )
    except Exception as exc:
        http = next((code for code in status if code >= 400), None)
        if http is not None:
            fix = f"check the variables its headers name in {ENV_FILE}" if http in (401, 403) else None
            where = _redact(server.url or launch.url, launch.secrets)
            return Finding(CHECK, "fail", f"{name}: {where} answered HTTP {http}", fix)
        words = _redact("; ".join(describe(leaf) for leaf in leaves(exc)), launch.secrets)
        return Finding(
            CHECK, "fail", f"{name}: did not speak MCP: {words}", f"try `kbkit run {name}` by hand"
        )
    elapsed = (time.monotonic() - started) * 1000
    named = f"; variables set: {', '.join(launch.sources)}" if launch.sources else ""
    how = "reached" if launch.url else "started"
    return Finding(CHECK, "ok", f"{name}: {how}, {tools} tools offered, in {elapsed:.0f} ms{named}")


async def _list_tools(launch: Launch, path: str, status: list[int]) -> int:
    from mcp import Client

    if launch.url:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def remember(response: httpx2.Response) -> None:
            status.append(response.status_code)

        async with (
            httpx2.AsyncClient(headers=dict(launch.headers), event_hooks={"response": [remember]}) as http,
            Client(streamable_http_client(launch.url, http_client=http), mode="auto", cache=None) as client,
        ):
            return len((await client.list_tools()).tools)
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=path, args=list(launch.argv[1:]), env=dict(launch.env), cwd=launch.cwd
    )
    with open(os.devnull, "w") as quiet:  # a server's stderr may say anything, its key included
        async with Client(stdio_client(params, errlog=quiet), mode="auto", cache=None) as client:
            return len((await client.list_tools()).tools)


def _redact(text: str, secrets: Iterable[str]) -> str:
    for value in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(value, "[redacted]")
    return text
