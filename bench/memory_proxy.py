"""Latency a proxied memory call adds: `recall` on the memory peer directly vs through `kbkit serve`.

The memory peer is tests/peers/memory_server.py (Hindsight's tool names and habits, streamable
HTTP on 127.0.0.1, a bearer key). It is seeded with `--memories` memories through `retain`, then
`recall` is called `--calls` times (300) on two paths, alternating call by call so drift in the
machine's load hits both alike:

- direct: the real `mcp` client over streamable HTTP to the peer (2026-07-28, as kbkit's own
  upstream connection speaks);
- proxied: the real `mcp` client over stdio to `kbkit serve` whose `[memory] url` points at the
  peer (the agent's path: client -> kbkit over stdio -> peer over HTTP).

The added median is median(proxied) - median(direct). For reference, a kb tool call answered by
kbkit itself on the same stdio session (get_document of a small file) shows what the stdio hop
alone costs.

    .venv/bin/python -m bench.memory_proxy [--calls 300] [--memories 50] [--mode auto|legacy]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp.types import CallToolResult

from bench._util import MachineWatch, ms, percentile, print_table, verdict
from tests.helpers.http import http_client
from tests.helpers.memory import KEY, MemoryUpstream
from tests.helpers.project import make_project
from tests.helpers.serve import serve_stdio

ADDED_TARGET = 0.005
TOPICS = ["WAL", "index", "deploy", "release", "guard", "token", "sync", "search", "cache", "schema"]


async def measure(
    root: Path, upstream: MemoryUpstream, calls: int, memories: int, mode: str
) -> tuple[dict[str, list[float]], dict[str, int]]:
    direct_url = upstream.url.replace("{bank}", "default")
    times: dict[str, list[float]] = {"direct": [], "proxied": [], "local": []}
    errors: dict[str, int] = dict.fromkeys(times, 0)
    async with (
        http_client(direct_url, "auto", headers={"Authorization": f"Bearer {KEY}"}) as direct,
        serve_stdio(root, mode, env={"HINDSIGHT_API_KEY": KEY}) as proxied,
    ):
        names = [tool.name for tool in (await proxied.list_tools()).tools]
        if "recall" not in names:
            raise SystemExit(f"kbkit did not attach the memory tools: {names}; see {root}/serve-stderr.log")
        for number in range(memories):
            topic = TOPICS[number % len(TOPICS)]
            content = f"decision {number}: the {topic} choice was reviewed and kept for release {number}"
            await direct.call_tool("retain", {"content": content})

        async def timed(path: str, call: Callable[[], Awaitable[CallToolResult]]) -> None:
            started = time.perf_counter()
            try:
                result = await call()
            except Exception:  # counted, never fatal
                errors[path] += 1
                return
            times[path].append(time.perf_counter() - started)
            if result.is_error:
                errors[path] += 1

        for round_ in range(calls + 20):  # the first 20 rounds warm up and are dropped
            query = {"query": f"{TOPICS[round_ % len(TOPICS)]} choice"}
            order = [("direct", direct), ("proxied", proxied)]
            if round_ % 2:
                order.reverse()
            for path, client in order:
                await timed(path, functools.partial(client.call_tool, "recall", query))
            await timed("local", lambda: proxied.call_tool("get_document", {"path": "notes.txt"}))
            if round_ == 19:
                for values in times.values():
                    values.clear()
                errors.update(dict.fromkeys(errors, 0))
    return times, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="recall calls per path (default 300)")
    parser.add_argument("--memories", type=int, default=50, help="memories retained before timing")
    parser.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="client -> kbkit era")
    args = parser.parse_args(argv)
    machine = MachineWatch()

    with tempfile.TemporaryDirectory(prefix="kbkit-memory-proxy-") as tmp:
        tmp_path = Path(tmp)
        upstream = MemoryUpstream(tmp_path).start()
        try:
            config = f'[kb]\npath = "docs"\n[memory]\nurl = "{upstream.url}"\ntimeout = 10\n'
            root = make_project(tmp_path / "project", config=config)
            times, errors = anyio.run(measure, root, upstream, args.calls, args.memories, args.mode)
        finally:
            upstream.kill()

    rows = []
    labels = {
        "direct": "recall, direct to the peer (mcp client, streamable HTTP)",
        "proxied": f"recall through kbkit serve (stdio, {args.mode}) -> peer",
        "local": "reference: get_document answered by kbkit itself (same stdio session)",
    }
    for path, label in labels.items():
        values = times[path] or [float("nan")]
        rows.append(
            [
                label,
                str(len(times[path])),
                str(errors[path]),
                ms(statistics.median(values)),
                ms(percentile(values, 95)),
            ]
        )
    print_table(["path", "calls", "errors", "median", "p95"], rows, title="memory proxy: recall latency")
    added = statistics.median(times["proxied"]) - statistics.median(times["direct"])
    added_p95 = percentile(times["proxied"], 95) - percentile(times["direct"], 95)
    print()
    print_table(
        ["measure", "value", "target", "status"],
        [
            ["added median (proxied - direct)", ms(added), "<= 5 ms", verdict(added <= ADDED_TARGET)],
            ["added p95 (proxied - direct)", ms(added_p95), "", ""],
        ],
    )
    print(f"\nmachine: {machine.note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
