"""What a team server's tool filter saves and costs: Microsoft's Playwright MCP server (71 tools with
every capability on) started by `kbkit run` as an agent starts it, without a filter (kbkit execs the
server) and with `tools = [...]` (kbkit proxies it); then the same server serving streamable HTTP
(`--port`), reached directly by the SDK client, and through `kbkit run`'s relay without and with
the filter (`[servers.NAME] url`).

Per path: the tokens of the `tools/list` answer (estimated as kbkit estimates replies, four
characters a token, and counted in characters), and the median and p95 of `--calls` round trips
(`ping`, which only the server answers, so the proxy's cost is all that differs), alternating path
by path so the machine's load hits both alike. No browser starts: listing and pinging need none.

    .venv/bin/python -m bench.tool_filter [--calls 300]

The "added p50" column is each path's median minus its baseline's: stdio's is the exec'd server,
HTTP's the direct connection (so the relay's row is the whole cost of going through kbkit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench._util import ms, percentile, print_table
from tests.helpers.trust import trust_project
from tests.peers.node import NODE, PLAYWRIGHT_CAPS, PLAYWRIGHT_MCP, playwright_http

KEEP = ("browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_wait_for")


def project(folder: Path, keep: tuple[str, ...], url: str) -> Path:
    argv = json.dumps([str(NODE), str(PLAYWRIGHT_MCP), PLAYWRIGHT_CAPS])
    only = f"tools = {json.dumps(list(keep))}\n"
    config = f'[kb]\npath = "docs"\n[servers.all]\ncommand = {argv}\n[servers.some]\ncommand = {argv}\n{only}'
    config += f'[servers.http-all]\nurl = "{url}"\n[servers.http-some]\nurl = "{url}"\n{only}'
    (folder / "docs").mkdir(parents=True)
    (folder / "kbkit.toml").write_text(config, encoding="utf-8")
    trust_project(folder)
    return folder


def entry(root: Path, name: str) -> StdioServerParameters:
    kbkit = Path(sys.executable).parent / "kbkit"
    env = {k: os.environ[k] for k in ("PATH", "HOME", "XDG_STATE_HOME") if k in os.environ}
    return StdioServerParameters(command=str(kbkit), args=["run", name, "--root", str(root)], env=env)


PATHS = {
    "stdio exec (no filter)": "all",
    "stdio proxied (tools = 5)": "some",
    "HTTP direct (no kbkit)": None,
    "HTTP relay (no filter)": "http-all",
    "HTTP relay (tools = 5)": "http-some",
}
"""Each path measured: the team server `kbkit run` starts, or None for the SDK client straight to the URL."""
BASELINE = {
    label: "stdio exec (no filter)" if label.startswith("stdio") else "HTTP direct (no kbkit)"
    for label in PATHS
}


async def measure(root: Path, url: str, calls: int) -> dict[str, tuple[int, int, list[float]]]:
    found: dict[str, tuple[int, int, list[float]]] = {}
    async with AsyncExitStack() as stack:
        clients: dict[str, Any] = {}
        for label, name in PATHS.items():
            transport = streamable_http_client(url) if name is None else stdio_client(entry(root, name))
            clients[label] = await stack.enter_async_context(Client(transport, mode="legacy", cache=None))
        times: dict[str, list[float]] = {label: [] for label in clients}
        for label, client in clients.items():
            tools = (await client.list_tools()).tools
            text = json.dumps([tool.model_dump(by_alias=True, exclude_none=True) for tool in tools])
            found[label] = (len(tools), len(text), times[label])
        for _ in range(calls):
            for label, client in clients.items():
                started = time.perf_counter()
                await client.send_ping()
                times[label].append(time.perf_counter() - started)
    return found


def main() -> None:
    warnings.filterwarnings("ignore", message="ping is removed")  # pinged under 2025-11-25, as meant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    if not PLAYWRIGHT_MCP.is_file():
        sys.exit("bench.tool_filter: @playwright/mcp is missing; run bash tests/setup.sh")
    with tempfile.TemporaryDirectory(prefix="kbkit-tool-filter-") as tmp, playwright_http() as url:
        os.environ.setdefault("XDG_STATE_HOME", str(Path(tmp) / "state"))
        found = anyio.run(measure, project(Path(tmp) / "p", KEEP, url), url, args.calls)
    rows = []
    for label, (count, chars, times) in found.items():
        median = statistics.median(times)
        base = statistics.median(found[BASELINE[label]][2])
        rows.append(
            [
                label,
                str(count),
                f"{chars:,}",
                f"{chars // 4:,}",
                ms(median),
                ms(percentile(times, 95)),
                ms(median - base),
            ]
        )
    headers = ["path", "tools", "tools/list chars", "~tokens", "ping p50", "ping p95", "added p50"]
    print_table(
        headers, rows, title=f"Playwright MCP ({PLAYWRIGHT_CAPS}), stdio and HTTP, {args.calls} pings each"
    )


if __name__ == "__main__":
    main()
