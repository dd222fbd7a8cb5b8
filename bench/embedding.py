"""Embedding cost of hybrid search: throughput and peak memory per 1,000 documents.

A sample of documents from each data set (tldr pages: short; cpp-docs: long, chunked) is indexed in
a temporary project with `[search] semantic = true`, then embedded by `KnowledgeBase.embed()`, the
pass `kbkit index` runs, in a child process so its peak RSS is its own (`ru_maxrss`). Reported:
documents and chunks per second, and the child's peak memory, with the lexical-only index of the
same sample as a baseline for memory.

    .venv/bin/python bench/embedding.py [--data DIR] [--docs 1000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _util import MachineWatch, data_dir, print_table, unpack

SETS = {"tldr pages": ("tldr-en.tar.gz", "tldr-en/pages"), "cpp-docs": ("cpp-docs.tar.gz", "cpp-docs")}


def child(root: Path, threads: int, semantic: bool) -> None:
    """Runs in the child: index (and embed), print the figures as JSON."""
    from kbkit.config import load_settings
    from kbkit.kb import semantic as sem
    from kbkit.kb.base import KnowledgeBase

    kb = KnowledgeBase.open(load_settings(root))
    try:
        started = time.perf_counter()
        report = kb.scan()
        index_seconds = time.perf_counter() - started
        out = {"documents": report.documents, "index_seconds": index_seconds}
        if semantic:
            assert kb.hybrid is not None, kb.hybrid_off
            encoder = sem.Encoder(kb.hybrid.files, threads=threads)
            started, cpu = time.perf_counter(), time.process_time()
            embedded = sem.embed_pending(kb.store, encoder)
            out |= {
                "embed_seconds": time.perf_counter() - started,
                "embed_cpu_seconds": time.process_time() - cpu,
                "embedded": embedded.embedded,
                "chunks": embedded.chunks,
            }
    finally:
        kb.close()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(root: Path, threads: int, semantic: bool) -> dict[str, Any]:
    config = '[kb]\npath = "docs"\n' + ("\n[search]\nsemantic = true\n" if semantic else "")
    (root / "kbkit.toml").write_text(config, encoding="utf-8")
    state = root / ".kbkit"
    if state.exists():
        for path in state.iterdir():
            path.unlink()
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(root), "--threads", str(threads)]
        + (["--semantic"] if semantic else []),
        capture_output=True,
        text=True,
        check=True,
    )
    measured: dict[str, Any] = json.loads(result.stdout)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--docs", type=int, default=1000, help="documents per sample (default 1000)")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--semantic", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.threads, args.semantic)
        return 0

    data = data_dir(args.data)
    machine = MachineWatch()
    rows = []
    for label, (archive, folder) in SETS.items():
        with tempfile.TemporaryDirectory(prefix="kbkit-embed-") as tmp:
            unpacked, root = Path(tmp) / "all", Path(tmp) / "project"
            unpack(data / archive, unpacked)
            files = sorted((unpacked / folder).rglob("*.md"))
            sample = random.Random(args.seed).sample(files, min(args.docs, len(files)))
            size = 0
            for number, path in enumerate(sample):
                target = root / "docs" / f"{number:05d}-{path.name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
                size += target.stat().st_size
            lexical = measure(root, args.threads, semantic=False)
            hybrid = measure(root, args.threads, semantic=True)
        per_1000 = 1000 / hybrid["embedded"]
        seconds = hybrid["embed_seconds"]
        rows.append(
            [
                f"{label}: {hybrid['embedded']} docs, {size / 1e6:.1f} MB, {hybrid['chunks']} chunks",
                f"{seconds * per_1000:.0f} s wall, {hybrid['embed_cpu_seconds'] * per_1000:.0f} s CPU",
                f"{hybrid['embedded'] / seconds:.1f} / {hybrid['chunks'] / seconds:.0f}",
                f"{hybrid['peak_rss_mb']:.0f} MB",
                f"{lexical['peak_rss_mb']:.0f} MB",
            ]
        )
    print(f"threads: {args.threads}; machine: {machine.note()}")
    print_table(
        ["sample", "embedding per 1,000 docs", "docs/s / chunks/s", "peak RSS hybrid", "peak RSS BM25 only"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
