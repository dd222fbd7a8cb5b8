"""Start-up on a large kb: `kbkit serve` against a minimal low-level MCP SDK stdio server.

The C++ docs corpus (9,753 Markdown files) is unpacked once into a temporary project. Each run
spawns a server, writes a JSON-RPC `initialize` (protocol 2025-11-25) to its stdin at once and
times the reply on stdout; then `notifications/initialized` and `tools/list`, timed from spawn
to that reply too. Three servers alternate (the order rotates every round), after one untimed
warm-up run of each:

- minimal SDK server: `mcp.server.Server` with one `on_list_tools` handler over `stdio_server`;
- kbkit, first start: `kbkit serve` with no index at all (`.kbkit/` deleted before each run),
  so the whole index is built in the background; the run also waits for the boot line
  `indexing finished` and reports when it came;
- kbkit, warm start: `kbkit serve` on an index that is already up to date.

For reference, `kbkit index` builds the same index in the foreground once.

    .venv/bin/python -m bench.startup [--runs 5] [--data DIR] [--kbkit PATH]
"""

from __future__ import annotations

import argparse
import json
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._util import MachineWatch, cpu_seconds, data_dir, ms, print_table, unpack, verdict, write_project

RATIO_TARGET = 1.5
PROTOCOL = "2025-11-25"
FINISHED = "indexing finished:"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "kbkit-bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}

MINIMAL_SERVER = """\
import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


async def on_list_tools(ctx, params):
    return types.ListToolsResult(tools=[])


server = Server("minimal", on_list_tools=on_list_tools)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""


@dataclass
class Run:
    initialize: float
    tools_list: float
    main_cpu: float
    """CPU time of the server's main thread (the event loop) when the initialize reply arrived:
    what the reply cost, whatever else ran on the machine."""
    indexed: float | None = None
    """Spawn to the `indexing finished` boot line (first starts only)."""


def _send(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None  # a PIPE
    proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
    proc.stdin.flush()


def _reply(proc: subprocess.Popen[bytes], request_id: int, name: str) -> dict[str, Any]:
    assert proc.stdout is not None  # a PIPE
    while True:  # skip notifications (list_changed while indexing) until our reply arrives
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"{name}: stdout closed before the reply to request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "result" not in message:
                raise SystemExit(f"{name}: error reply to request {request_id}: {line[:300]!r}")
            result: dict[str, Any] = message["result"]
            return result


def one_run(name: str, command: list[str], *, wait_indexed: bool = False) -> Run:
    stderr_lines: queue.Queue[tuple[float, str]] = queue.Queue()
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if wait_indexed else subprocess.DEVNULL,
    )
    if wait_indexed:

        def drain() -> None:
            assert proc.stderr is not None  # a PIPE when waiting for the boot line
            for raw in proc.stderr:
                stderr_lines.put((time.perf_counter(), raw.decode(errors="replace")))

        threading.Thread(target=drain, daemon=True).start()
    try:
        _send(proc, INITIALIZE)
        result = _reply(proc, 1, name)
        initialized = time.perf_counter() - started
        main_cpu = cpu_seconds(proc.pid, proc.pid)
        if result.get("protocolVersion") != PROTOCOL:
            raise SystemExit(f"{name}: unexpected reply to initialize: {result}")
        _send(proc, INITIALIZED, LIST_TOOLS)
        _reply(proc, 2, name)
        run = Run(initialized, time.perf_counter() - started, main_cpu)
        if wait_indexed:
            while True:
                at, line = stderr_lines.get(timeout=300)
                if FINISHED in line:
                    run.indexed = at - started
                    break
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
        return run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def find_kbkit(explicit: Path | None) -> str:
    if explicit:
        return str(explicit)
    beside = Path(sys.executable).parent / "kbkit"
    found = str(beside) if beside.is_file() else shutil.which("kbkit")
    if not found:
        raise SystemExit("cannot find the kbkit console script; pass --kbkit PATH")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each server (default 5)")
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default ../shared/data)")
    parser.add_argument("--kbkit", type=Path, help="the kbkit executable (default: beside this Python)")
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    kbkit = find_kbkit(args.kbkit)
    machine = MachineWatch()

    with tempfile.TemporaryDirectory(prefix="kbkit-startup-") as tmp:
        cold = Path(tmp) / "cold"
        warm = Path(tmp) / "warm"
        for root in (cold, warm):
            write_project(root, "cpp-docs")
            unpack(archive, root)
        files = sum(1 for p in (cold / "cpp-docs").rglob("*.md"))
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER, encoding="utf-8")
        started = time.perf_counter()
        subprocess.run([kbkit, "index", "--root", str(warm)], check=True, capture_output=True)
        foreground_index = time.perf_counter() - started

        def first_start() -> Run:
            shutil.rmtree(cold / ".kbkit", ignore_errors=True)
            return one_run("kbkit first start", [kbkit, "serve", "--root", str(cold)], wait_indexed=True)

        servers: dict[str, Callable[[], Run]] = {
            "minimal SDK server": lambda: one_run("minimal", [sys.executable, str(minimal)]),
            "kbkit serve, first start (no index)": first_start,
            "kbkit serve, warm start (index current)": lambda: one_run(
                "kbkit warm start", [kbkit, "serve", "--root", str(warm)]
            ),
        }
        runs: dict[str, list[Run]] = {name: [] for name in servers}
        for start in servers.values():  # warm-up: bytecode, page cache
            start()
        names = list(servers)
        for round_ in range(args.runs):
            for name in names[round_ % 3 :] + names[: round_ % 3]:
                runs[name].append(servers[name]())

    def median(name: str, field: str) -> float:
        return float(statistics.median(getattr(run, field) for run in runs[name]))

    base = names[0]
    print(f"cpp-docs ({files:,} files): spawn -> reply, {args.runs} rotating runs each (medians)")
    print(f"machine: {machine.note()}")
    rows = []
    for name in names:
        indexed = [run.indexed for run in runs[name] if run.indexed is not None]
        rows.append(
            [
                name,
                ms(median(name, "initialize")),
                ms(median(name, "tools_list")),
                f"{min(r.tools_list for r in runs[name]) * 1000:.0f}-"
                f"{max(r.tools_list for r in runs[name]) * 1000:.0f} ms",
                ms(median(name, "main_cpu")),
                f"{statistics.median(indexed):.2f} s" if indexed else "",
            ]
        )
    headers = ["server", "initialize", "tools/list", "tools/list range", "main-thread CPU", "indexed"]
    print_table(headers, rows)
    print(f"\nfor reference: `kbkit index` from nothing, in the foreground: {foreground_index:.2f} s\n")
    ratios = []
    for name in names[1:]:
        for field, label in (
            ("initialize", "initialize"),
            ("tools_list", "tools/list"),
            ("main_cpu", "main-thread CPU at initialize (reference)"),
        ):
            ratio = median(name, field) / median(base, field)
            target = field != "main_cpu"
            ratios.append(
                [
                    f"{name.split(', ', 1)[1]}: {label}",
                    f"{ratio:.2f}x",
                    f"<= {RATIO_TARGET}x" if target else "",
                    verdict(ratio <= RATIO_TARGET) if target else "",
                ]
            )
    print_table(["kbkit / minimal (medians)", "ratio", "target", "status"], ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
