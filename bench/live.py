"""The live index: edit-to-notification latency, and the CPU a watching server burns when idle.

cpp-docs (9,753 Markdown files) is unpacked into a temporary project and indexed before any
server starts, so each `kbkit serve --root <project>` (stdio, watching) boots on a warm index.

(a) Edit-to-notification: a client subscribes to one document, then the document is rewritten
    `--edits` times (30), `--gap` seconds apart once the previous notification arrived; each
    latency is from just before the write to the moment the client receives
    `notifications/resources/updated` for that URI. Two clients, each on its own server:
    a 2025-11-25 session with `resources/subscribe`, and a 2026-07-28 client with
    `subscriptions/listen` (resource_subscriptions). The path measured: inotify -> watchfiles
    debounce -> incremental rescan of the whole folder -> index commit -> the monitor's diff ->
    the notification on stdio.
(b) Idle CPU: a watching server with a connected 2025-11-25 client that does nothing; after
    the start-up settles, the server's CPU time (utime + stime from /proc/<pid>/stat) is read
    over `--seconds` (60) of nothing changing, reported as % of one core.

    .venv/bin/python -m bench.live [--edits 30] [--gap 0.3] [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import anyio
import mcp.types as types

from bench._util import (
    MachineWatch,
    cpu_seconds,
    data_dir,
    ms,
    percentile,
    print_table,
    unpack,
    verdict,
    write_project,
)
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.uris import doc_uri
from tests.helpers.serve import serve_stdio

KB_FOLDER = "cpp-docs"
P50_TARGET = 1.0
IDLE_TARGET = 1.0  # % of one core
SETTLE_SECONDS = 3.0
"""After connecting: the server's catch-up rescan (0.5 s after the watcher starts) is over."""
NOTIFY_TIMEOUT = 10.0


def server_pid(root: Path) -> int:
    """The `kbkit serve --root ROOT` child of this process (the stdio client started it)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"serve" in cmdline and str(root).encode() in cmdline:
            return int(entry.name)
    raise RuntimeError("the kbkit serve process was not found among this process's children")


class Arrivals:
    """`updated` notifications for one URI, time-stamped on arrival."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.times: list[float] = []
        self._event = anyio.Event()

    def arrived(self) -> None:
        self.times.append(time.perf_counter())
        self._event.set()
        self._event = anyio.Event()

    async def legacy_handler(self, message: object) -> None:
        inner = getattr(message, "root", message)
        if isinstance(inner, types.ResourceUpdatedNotification) and inner.params.uri == self.uri:
            self.arrived()

    async def first_after(self, count: int) -> float:
        with anyio.fail_after(NOTIFY_TIMEOUT):
            while len(self.times) <= count:
                await self._event.wait()
        return self.times[count]


async def edit_loop(
    path: Path, arrivals: Arrivals, edits: int, gap: float, tag: str
) -> tuple[list[float], int]:
    """Rewrite `path` `edits` times; each latency is write -> the next `updated` for its URI."""
    original = path.read_text(encoding="utf-8")
    latencies = []
    missed = 0
    await anyio.sleep(SETTLE_SECONDS)
    for number in range(edits):
        seen = len(arrivals.times)
        started = time.perf_counter()
        path.write_text(f"{original}\n\nEdited by the benchmark ({tag} {number}).\n", encoding="utf-8")
        try:
            arrived = await arrivals.first_after(seen)
        except TimeoutError:
            missed += 1
            continue
        latencies.append(arrived - started)
        await anyio.sleep(gap)  # let any late duplicate arrive before the next edit
    path.write_text(original, encoding="utf-8")
    return latencies, missed


async def legacy_latency(root: Path, target: Path, edits: int, gap: float) -> tuple[list[float], int]:
    uri = doc_uri(target.relative_to(root / KB_FOLDER).as_posix())
    arrivals = Arrivals(uri)
    async with serve_stdio(
        root, "legacy", stderr_path=root.parent / "legacy.log", message_handler=arrivals.legacy_handler
    ) as client:
        with warnings.catch_warnings():  # the 2025-11-25 path is the point here
            warnings.filterwarnings("ignore", message="resources/subscribe is removed")
            await client.session.subscribe_resource(uri)
        return await edit_loop(target, arrivals, edits, gap, "legacy")


async def modern_latency(root: Path, target: Path, edits: int, gap: float) -> tuple[list[float], int]:
    uri = doc_uri(target.relative_to(root / KB_FOLDER).as_posix())
    arrivals = Arrivals(uri)
    async with (
        serve_stdio(root, "auto", stderr_path=root.parent / "modern.log") as client,
        client.listen(resource_subscriptions=[uri]) as subscription,
    ):

        async def consume() -> None:
            async for event in subscription:
                if getattr(event, "uri", None) == uri:
                    arrivals.arrived()

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            result = await edit_loop(target, arrivals, edits, gap, "listen")
            group.cancel_scope.cancel()
        return result


async def idle_cpu(root: Path, seconds: float) -> tuple[float, list[float], float]:
    """(% of one core over the window, % per 10 s slice, the server's boot CPU seconds)."""
    async with serve_stdio(root, "legacy", stderr_path=root.parent / "idle.log") as client:
        pid = server_pid(root)
        await client.list_tools()
        await anyio.sleep(SETTLE_SECONDS)
        boot = cpu_seconds(pid)
        start_cpu, start_wall = boot, time.perf_counter()
        slices = []
        slice_cpu, slice_wall = start_cpu, start_wall
        deadline = start_wall + seconds
        while (now := time.perf_counter()) < deadline:
            await anyio.sleep(min(10.0, deadline - now))
            cpu, wall = cpu_seconds(pid), time.perf_counter()
            slices.append((cpu - slice_cpu) / (wall - slice_wall) * 100)
            slice_cpu, slice_wall = cpu, wall
        total = (cpu_seconds(pid) - start_cpu) / (time.perf_counter() - start_wall) * 100
    return total, slices, boot


def pick_target(kb_root: Path) -> Path:
    """A typical page: the first (by path) Markdown file of 4 to 8 KB under docs/."""
    for path in sorted((kb_root / "docs").rglob("*.md")):
        if 4096 <= path.stat().st_size <= 8192:
            return path
    raise SystemExit("no 4-8 KB Markdown file in the corpus")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--edits", type=int, default=30, help="edits per client (default 30)")
    parser.add_argument(
        "--gap", type=float, default=0.3, help="seconds between a notification and the next edit"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="idle CPU window (default 60)")
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    machine = MachineWatch()

    with tempfile.TemporaryDirectory(prefix="kbkit-live-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        unpack(archive, root)
        write_project(root, KB_FOLDER)
        kb = KnowledgeBase.open(load_settings(root))
        try:
            documents = kb.scan().documents
        finally:
            kb.close()
        target = pick_target(root / KB_FOLDER)
        legacy, legacy_missed = anyio.run(legacy_latency, root, target, args.edits, args.gap)
        modern, modern_missed = anyio.run(modern_latency, root, target, args.edits, args.gap)
        idle, slices, boot = anyio.run(idle_cpu, root, args.seconds)

    rows = []
    for label, values, missed in (
        ("2025-11-25, resources/subscribe", legacy, legacy_missed),
        ("2026-07-28, subscriptions/listen", modern, modern_missed),
    ):
        values = values or [float("nan")]
        p50 = percentile(values, 50)
        rows.append(
            [
                label,
                f"{len(values)} / {len(values) + missed}",
                ms(p50),
                ms(percentile(values, 95)),
                ms(max(values)),
                "<= 1000 ms",
                verdict(p50 <= P50_TARGET and not missed),
            ]
        )
    print_table(
        ["client", "notified / edits", "p50", "p95", "max", "target (p50)", "status"],
        rows,
        title=f"(a) edit -> notifications/resources/updated, cpp-docs ({documents} docs, watching), "
        f"editing {target.relative_to(root).as_posix()}",
    )
    print()
    print_table(
        ["measure", "value", "target", "status"],
        [
            [
                f"idle CPU of a watching `kbkit serve` over {args.seconds:.0f} s (1 idle client)",
                f"{idle:.2f} % of one core",
                "<= 1 %",
                verdict(idle <= IDLE_TARGET),
            ],
            ["per 10 s slice", ", ".join(f"{value:.2f}" for value in slices) + " %", "", ""],
            ["CPU spent by start-up and settling (for reference)", f"{boot:.2f} s", "", ""],
        ],
        title=f"(b) idle CPU, cpp-docs ({documents} docs)",
    )
    print(f"\nmachine: {machine.note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
