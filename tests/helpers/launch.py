"""What an agent does first with a server it launched: initialize, then one search, asked again while
the server is still indexing."""

from __future__ import annotations

import anyio
from mcp import Client

EXPECTED_HIT = "adr/0001-guards.md"
QUERY = "guard sequence"


async def initialize_and_search(client: Client) -> str:
    """The search, asked again while it finds nothing (a server may still be indexing at start)."""
    while True:
        found = await client.call_tool("search", {"query": QUERY})
        paths = [hit["path"] for hit in (found.structured_content or {}).get("results", [])]
        if paths or found.is_error:
            break
        await anyio.sleep(0.1)
    if not paths or paths[0] != EXPECTED_HIT:
        raise AssertionError(f"search answered {paths or found.content}")
    return f"initialize, then search -> {paths[0]}"
