"""What a team server's tool filter saves and costs: Microsoft's Playwright MCP server (71 tools with
every capability on) started by `kbkit run` as an agent starts it, without a filter (kbkit execs the
server) and with `tools = [...]` (kbkit proxies it).

Per path: the tokens of the `tools/list` answer (estimated as kbkit estimates replies, four
characters a token, and counted in characters), and the median and p95 of `--calls` round trips
(`ping`, which only the server answers, so the proxy's cost is all that differs), alternating path
by path so the machine's load hits both alike. No browser starts: listing and pinging need none.

    .venv/bin/python -m bench.tool_filter [--calls 300]
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
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench._util import ms, percentile, print_table
from tests.helpers.trust import trust_project
from tests.peers.node import NODE, PLAYWRIGHT_CAPS, PLAYWRIGHT_MCP

KEEP = ("browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_wait_for")


def project(folder: Path, keep: tuple[str, ...]) -> Path:
    argv = json.dumps([str(NODE), str(PLAYWRIGHT_MCP), PLAYWRIGHT_CAPS])
    config = f'[kb]\npath = "docs"\n[servers.all]\ncommand = {argv}\n[servers.some]\ncommand = {argv}\n'
    config += f"tools = {json.dumps(list(keep))}\n"
    (folder / "docs").mkdir(parents=True)
    (folder / "kbkit.toml").write_text(config, encoding="utf-8")
    trust_project(folder)
    return folder


def entry(root: Path, name: str) -> StdioServerParameters:
    kbkit = Path(sys.executable).parent / "kbkit"
    env = {k: os.environ[k] for k in ("PATH", "HOME", "XDG_STATE_HOME") if k in os.environ}
    return StdioServerParameters(command=str(kbkit), args=["run", name, "--root", str(root)], env=env)


async def measure(root: Path, calls: int) -> dict[str, tuple[int, int, list[float]]]:
    found: dict[str, tuple[int, int, list[float]]] = {}
    async with (
        Client(stdio_client(entry(root, "all")), mode="legacy", cache=None) as plain,
        Client(stdio_client(entry(root, "some")), mode="legacy", cache=None) as filtered,
    ):
        clients = {"exec (no filter)": plain, "proxied (tools = 5)": filtered}
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
    with tempfile.TemporaryDirectory(prefix="kbkit-tool-filter-") as tmp:
        os.environ.setdefault("XDG_STATE_HOME", str(Path(tmp) / "state"))
        found = anyio.run(measure, project(Path(tmp) / "p", KEEP), args.calls)
    base = statistics.median(found["exec (no filter)"][2])
    rows = []
    for label, (count, chars, times) in found.items():
        median = statistics.median(times)
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
        headers, rows, title=f"Playwright MCP ({PLAYWRIGHT_CAPS}) through kbkit run, {args.calls} pings each"
    )


if __name__ == "__main__":
    main()
