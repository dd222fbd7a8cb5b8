"""An agent's own code reading its MCP config and connecting to one server, for the agents whose
CLI has no offline command that does (tests/e2e/test_agents.py). Run by that agent's interpreter
(tests/peers/agents/python/AGENT), in the project folder, under the fake HOME:

    python check.py mistral-vibe|openhands SERVER

Mistral Vibe: the configuration its entry points build (`build_default_orchestrator`: the user and project
layers, the project one only in a folder trusted in ~/.vibe/trusted_folders.toml), then its MCP
registry's discovery, which starts each server and lists its tools as a session does.
OpenHands: the servers its CLI enables from ~/.openhands/mcp.json (`list_enabled_servers`), then
the SDK's `create_mcp_tools`, which connects and lists the tools as an agent does at start.

Prints `SERVER: connected (N tools: ...)` and exits 0, or says why not and exits 1.
Standard library and the agent's own packages only: the suite's packages are not installed here.
"""

from __future__ import annotations

import asyncio
import sys

TIMEOUT = 120.0
"""The bound on one server's start and listing, the agent's own default raised for a loaded machine."""


def vibe(name: str) -> list[str]:
    from vibe.core.config.default_orchestrator import build_default_orchestrator  # type: ignore[import-not-found]
    from vibe.core.config.harness_files import init_harness_files_manager  # type: ignore[import-not-found]
    from vibe.core.tools.mcp.registry import MCPRegistry  # type: ignore[import-not-found]

    init_harness_files_manager("user", "project")  # what its entry points do first (vibe-acp's)

    async def discover() -> list[str]:
        config = (await build_default_orchestrator()).config
        servers = [server for server in config.mcp_servers if server.name == name]
        if not servers:
            known = ", ".join(server.name for server in config.mcp_servers) or "none"
            raise SystemExit(f"{name}: not in Mistral Vibe's configuration (its servers: {known})")
        registry = MCPRegistry()
        tools = await registry.get_tools_async(servers)
        failed = registry.pop_failed()
        if name in failed:
            raise SystemExit(f"{name}: failed: {failed[name]}")
        return sorted(tool.get_remote_name() for tool in tools.values())

    return asyncio.run(discover())


def openhands(name: str) -> list[str]:
    from openhands.sdk.mcp.utils import create_mcp_tools  # type: ignore[import-not-found]
    from openhands_cli.mcp.mcp_utils import list_enabled_servers  # type: ignore[import-not-found]

    enabled = list_enabled_servers()
    if name not in enabled:
        raise SystemExit(f"{name}: not among OpenHands' enabled servers ({', '.join(enabled) or 'none'})")
    with create_mcp_tools({"mcpServers": {name: enabled[name]}}, timeout=TIMEOUT) as client:
        return sorted(tool.name for tool in client.tools)


def main(agent: str, name: str) -> None:
    tools = {"mistral-vibe": vibe, "openhands": openhands}[agent](name)
    if not tools:
        raise SystemExit(f"{name}: connected but no tools listed")
    print(f"{name}: connected ({len(tools)} tools: {', '.join(tools)})")  # noqa: T201


if __name__ == "__main__":
    main(*sys.argv[1:3])
