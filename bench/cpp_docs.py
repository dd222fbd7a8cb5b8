"""Indexing throughput, rescans and search latency on a real ~10k-document Markdown knowledge base.

`cpp-docs.tar.gz` (Microsoft's C++ docs, 9,753 Markdown files with YAML front matter, 45 MB)
is unpacked once into a temporary project and indexed through `KnowledgeBase.scan()`:

- full index from scratch, run twice with a warm page cache (the second run is reported);
- a rescan with nothing changed (median of 5);
- a rescan after appending a line to 10 files, and one after only touching 10 files (mtime);
- search latency over ~200 queries drawn from the corpus itself: document titles and 2-4
  consecutive words of a document's prose, through `KnowledgeBase.search()` with the defaults
  an agent gets (limit 10, max_tokens 4000), plus limit 100 for reference.

    .venv/bin/python -m bench.cpp_docs [--data DIR] [--queries 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Unpack

from bench._util import (
    MachineWatch,
    data_dir,
    make_queries,
    ms,
    percentile,
    print_table,
    unpack,
    verdict,
    write_project,
)
from kbkit.config import STATE_DIR, load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.indexer import ScanReport
from kbkit.kb.search import SearchOptions

KB_FOLDER = "cpp-docs"
FULL_TARGET = 3.0
RESCAN_TARGET = 0.100
SEARCH_P95_TARGET = 0.020
EDITED = 10
MARKER = "quokkabench"


def full_index(root: Path) -> tuple[float, int]:
    shutil.rmtree(root / STATE_DIR, ignore_errors=True)
    started = time.perf_counter()
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
    finally:
        kb.close()
    return time.perf_counter() - started, report.documents


def timed_scan(kb: KnowledgeBase) -> tuple[float, ScanReport]:
    started = time.perf_counter()
    report = kb.scan()
    return time.perf_counter() - started, report


def search_latencies(
    kb: KnowledgeBase, queries: list[str], rounds: int, **options: Unpack[SearchOptions]
) -> tuple[list[float], list[float]]:
    """Wall time and this thread's CPU time per search (SQLite runs in the calling thread, so the
    CPU figure holds on a busy machine, where wall time also counts waiting for a core)."""
    for query in queries:  # warm-up round, not counted
        kb.search(query, **options)
    times, cpu = [], []
    for _ in range(rounds):
        for query in queries:
            started, started_cpu = time.perf_counter(), time.thread_time()
            kb.search(query, **options)
            times.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)
    return times, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--queries", type=int, default=200, help="how many search queries (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="seed for picking queries and edited files")
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    machine = MachineWatch()

    rows: list[list[str]] = []
    problems: list[str] = []

    def check(ok: bool, problem: str) -> None:
        """A sanity check on what the scan reported; a failure is printed, the timings still are."""
        if not ok:
            problems.append(problem)

    with tempfile.TemporaryDirectory(prefix="kbkit-cpp-docs-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        unpack(archive, root)
        unpack_seconds = time.perf_counter() - started
        write_project(root, KB_FOLDER)
        kb_root = root / KB_FOLDER
        files = sorted(kb_root.rglob("*.md"))

        first, _ = full_index(root)  # also warms the page cache
        second, documents = full_index(root)
        rows.append(["full index, 1st run (reported: 2nd)", f"{first:.2f} s", "", ""])
        rows.append(
            [
                f"full index from scratch ({documents} docs, {documents / second:,.0f} docs/s)",
                f"{second:.2f} s",
                f"<= {FULL_TARGET:.0f} s",
                verdict(second <= FULL_TARGET),
            ]
        )

        kb = KnowledgeBase.open(load_settings(root))
        try:
            rescans = []
            for _ in range(5):
                seconds, report = timed_scan(kb)
                check(not report.touched, f"a no-change rescan changed the index: {report}")
                rescans.append(seconds)
            rescan = statistics.median(rescans)
            rows.append(
                [
                    "no-change rescan (median of 5)",
                    ms(rescan),
                    f"<= {RESCAN_TARGET * 1000:.0f} ms",
                    verdict(rescan <= RESCAN_TARGET),
                ]
            )

            rng = random.Random(args.seed)
            for number, path in enumerate(rng.sample(files, EDITED)):
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(f"\n\nEdited by the benchmark: {MARKER}{number}.\n")
            seconds, report = timed_scan(kb)
            check(report.changed == EDITED, f"expected {EDITED} changed documents: {report}")
            hits = kb.search(f"{MARKER}3", limit=10).results
            check(len(hits) == 1, f"expected the edited word in 1 document, found {len(hits)}")
            rows.append([f"rescan after editing {EDITED} files", ms(seconds), "", ""])

            for path in rng.sample(files, EDITED):
                info = path.stat()
                os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
            seconds, report = timed_scan(kb)
            check(not report.touched, f"touching files changed the index: {report}")
            rows.append([f"rescan after touching {EDITED} files (mtime only)", ms(seconds), "", ""])

            queries = make_queries(kb_root, args.queries, args.seed)
            latencies, cpu = search_latencies(kb, queries, args.rounds)
            p95 = percentile(latencies, 95)
            label = f"search, {len(queries)} queries x {args.rounds}, limit 10"
            rows.append([f"{label}: p50", ms(percentile(latencies, 50)), "", ""])
            rows.append(
                [
                    f"{label}: p95",
                    ms(p95),
                    f"<= {SEARCH_P95_TARGET * 1000:.0f} ms",
                    verdict(p95 <= SEARCH_P95_TARGET),
                ]
            )
            rows.append([f"{label}: max", ms(max(latencies)), "", ""])
            rows.append(
                [f"{label}: CPU p50 / p95", f"{ms(percentile(cpu, 50))} / {ms(percentile(cpu, 95))}", "", ""]
            )
            wide, _ = search_latencies(kb, queries, 1, limit=100, max_tokens=None)
            rows.append(
                [
                    "search, limit 100, no token budget: p50 / p95",
                    f"{ms(percentile(wide, 50))} / {ms(percentile(wide, 95))}",
                    "",
                    "",
                ]
            )
        finally:
            kb.close()

    print(
        f"cpp-docs: {len(files)} Markdown files unpacked in {unpack_seconds:.1f} s; "
        f"sample queries: {', '.join(repr(q) for q in queries[:4])}"
    )
    print(f"machine: {machine.note()}")
    print_table(["measurement", "kbkit", "target", "status"], rows)
    for problem in problems:
        print(f"WARNING: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
