"""A team server's tools as the team allows them (`tools`, `exclude_tools`), the same for every agent:
`tools/list` keeps only those, and a call to any other tool is refused without reaching the server.
Over stdio (kbkit proxies the real `@modelcontextprotocol/server-memory`) and over HTTP (the relay in
front of a real `kbkit serve --http`), with clients of both protocol eras."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from kbkit.server.toolfilter import ToolFilter
from tests.helpers.http import TEST_TOKEN, HttpServer
from tests.helpers.project import make_project
from tests.peers.launch import forked_kbkit
from tests.peers.node import SERVER_MEMORY, playwright_http, require

pytestmark = pytest.mark.anyio


def test_the_filter_keeps_allowed_tools_and_answers_other_calls_itself() -> None:
    tools = ToolFilter("tracker", allow=["read", "list"], deny=["list"])
    assert tools.from_agent({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}) is None
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"tools": [{"name": n} for n in ("read", "list", "rm")]}}
    assert tools.from_server(answer) and answer["result"]["tools"] == [{"name": "read"}]
    refusal = tools.from_agent({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "rm"}})
    assert (
        refusal is not None
        and refusal["id"] == 8
        and "'rm' is not a tool of tracker" in refusal["error"]["message"]
    )
    assert (
        tools.from_agent({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read"}})
        is None
    )
    unrelated = {"jsonrpc": "2.0", "id": 10, "result": {"tools": [{"name": "rm"}]}}  # not a tools/list answer
    assert not tools.from_server(unrelated) and unrelated["result"]["tools"] == [{"name": "rm"}]


def run_entry(root: Path, name: str) -> StdioServerParameters:
    command = forked_kbkit()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/"),
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
    }
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "run", name, "--root", str(root)], env=env
    )


@pytest.mark.npm
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_stdio_server_offers_only_the_tools_the_team_allows(tmp_path: Path, mode: str) -> None:
    node, entry = require(SERVER_MEMORY, "@modelcontextprotocol/server-memory")
    memory_file = tmp_path / "memory.jsonl"
    config = (
        f'[kb]\npath = "docs"\n[servers.memory]\ncommand = {json.dumps([node, entry])}\n'
        f'env = {{ MEMORY_FILE_PATH = "{memory_file}" }}\ntools = ["read_graph", "search_nodes"]\n'
    )
    root = make_project(tmp_path / "p", config=config)
    async with Client(stdio_client(run_entry(root, "memory")), mode=mode, cache=None) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert names == ["read_graph", "search_nodes"]
        with pytest.raises(MCPError, match="'create_entities' is not a tool of memory here"):
            await client.call_tool(
                "create_entities", {"entities": [{"name": "x", "entityType": "t", "observations": []}]}
            )
        graph = await client.call_tool("read_graph", {})
        assert not graph.is_error
    assert not memory_file.exists()  # the refused call never reached the server


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory):
    server = HttpServer(make_project(tmp_path_factory.mktemp("served") / "project")).wait_ready()
    yield server
    server.stop()


@pytest.mark.processes
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_remote_server_through_the_relay_offers_only_the_tools_the_team_allows(
    tmp_path: Path, remote: HttpServer, mode: str
) -> None:
    config = (
        f'[kb]\npath = "docs"\n[servers.wiki]\nurl = "{remote.url}"\n'
        'headers = { Authorization = "Bearer ${WIKI_TOKEN}" }\nexclude_tools = ["get_document"]\n'
    )
    root = make_project(tmp_path / "p", config=config)
    (root / ".env.local").write_text(f"WIKI_TOKEN={TEST_TOKEN}\n")
    async with Client(stdio_client(run_entry(root, "wiki")), mode=mode, cache=None) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search"]
        with pytest.raises(MCPError, match="'get_document' is not a tool of wiki here"):
            await client.call_tool("get_document", {"path": "notes.txt"})
        found = await client.call_tool("search", {"query": "guard sequence"})
        assert not found.is_error


@pytest.fixture(scope="module")
def playwright() -> Iterator[str]:
    with playwright_http() as url:
        yield url


KEEP = ["browser_click", "browser_navigate", "browser_snapshot", "browser_type", "browser_wait_for"]


@pytest.mark.npm
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_many_tool_server_over_http_offers_only_the_tools_the_team_allows(
    tmp_path: Path, playwright: str, mode: str
) -> None:
    """Playwright MCP (71 tools) serving streamable HTTP, a team server `url` with `tools`: the relay
    (`kbkit run`) lists only those five, and refuses a call to any other without sending it."""
    config = f'[kb]\npath = "docs"\n[servers.browser]\nurl = "{playwright}"\ntools = {json.dumps(KEEP)}\n'
    root = make_project(tmp_path / "p", config=config)
    async with Client(stdio_client(run_entry(root, "browser")), mode=mode, cache=None) as client:
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == KEEP
        with pytest.raises(MCPError, match="'browser_close' is not a tool of browser here"):
            await client.call_tool("browser_close", {})
        with pytest.raises(MCPError, match="'browser_evaluate' is not a tool of browser here"):
            await client.call_tool("browser_evaluate", {"function": "() => 1"})
        assert len((await client.list_tools()).tools) == len(KEEP)  # the session goes on after a refusal


def test_sync_never_writes_a_filtered_remote_server_plainly(tmp_path: Path) -> None:
    from kbkit.config import load_settings
    from kbkit.sync.servers import team_entries

    config = '[kb]\npath = "docs"\n[sync]\nclients = ["cursor"]\n[servers.wiki]\nurl = "https://wiki.example/mcp"\n'
    root = make_project(tmp_path / "p", config=config + 'tools = ["search"]\n')
    (entry,) = team_entries(load_settings(root), ("kbkit",))
    assert entry.entry["args"][:2] == ["run", "wiki"] and "url" not in entry.entry
    assert sys.executable  # the entry runs kbkit, which applies the filter for Cursor as for any agent
