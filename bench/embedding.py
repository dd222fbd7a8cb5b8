"""Embedding cost of hybrid search: throughput and peak memory per 1,000 documents.

A sample of documents from each data set (tldr pages: short; cpp-docs: long, chunked) is indexed in
a temporary project with `[search] semantic = true`, then embedded by `KnowledgeBase.embed()`, the
pass `kbkit index` runs, in a child process so its peak RSS is its own (`ru_maxrss`). Reported:
documents and chunks per second, and the child's peak memory, with the lexical-only index of the
same sample as a baseline for memory.

`--against REF` instead times `kbkit index` (scan and embedding, as a user runs it) over all of a
data set, fresh each time, with the code at git REF and with this checkout, alternately in one run
(before, after, then after, before, ... for `--rounds`), each in its own process: wall and CPU
seconds, peak RSS, and what it embedded.

    .venv/bin/python -m bench.embedding [--data DIR] [--docs 1000] [--threads 2]
    .venv/bin/python -m bench.embedding --against main [--set tldr] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._util import PROJECT_ROOT, MachineWatch, data_dir, print_table, rerun, unpack

SETS = {"tldr pages": ("tldr-en.tar.gz", "tldr-en/pages"), "cpp-docs": ("cpp-docs.tar.gz", "cpp-docs")}
"""label -> (archive, the folder of pages in it)."""


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
        rerun(__spec__.name, "--child", str(root), "--threads", str(threads))
        + (["--semantic"] if semantic else []),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    measured: dict[str, Any] = json.loads(result.stdout)
    return measured


def time_index(source: Path, pages: Path, project: Path) -> dict[str, Any]:
    """`kbkit index` of the code in `source` over `pages`, in a fresh project: wall and CPU seconds,
    peak RSS (the child's own, from wait4) and the summary lines it printed."""
    project.mkdir(parents=True)
    # The pages inside the project: a kb folder outside it waits for the member's trust.
    shutil.copytree(pages, project / "docs")
    config = '[kb]\npath = "docs"\n\n[search]\nsemantic = true\n'
    (project / "kbkit.toml").write_text(config, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(source)}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "kbkit", "index", "--root", str(project)],
            stdout=out,
            stderr=err,
            env=env,
            cwd=project,  # `-m` puts the working folder first on sys.path: it must hold no other kbkit
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if child.returncode != 0:
        raise SystemExit(f"kbkit index ({source}) failed: {stderr[-2000:]}")
    embedded = re.search(r"^vectors: .*$", stdout, re.MULTILINE)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "embedded": embedded.group(0) if embedded else "(no vectors line)",
        "progress_lines": sum(1 for line in stderr.splitlines() if line.startswith("embedding:")),
    }


def against(ref: str, data: Path, name: str, rounds: int) -> None:
    archive, folder = SETS[name]
    machine = MachineWatch()
    with tempfile.TemporaryDirectory(prefix="kbkit-embed-ab-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "worktree", "add", "--detach", "--quiet", str(before), ref],
            check=True,
        )
        try:
            unpack(data / archive, Path(tmp) / "data")
            pages = Path(tmp) / "data" / folder
            sides = {f"before ({ref})": before, "after (this checkout)": PROJECT_ROOT}
            results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for number in range(rounds):
                order = list(sides) if number % 2 == 0 else list(reversed(sides))
                for side in order:
                    measured = time_index(
                        sides[side], pages, Path(tmp) / f"project-{number}-{len(results[side])}-{side[:5]}"
                    )
                    results[side].append(measured)
                    print(f"round {number + 1}, {side}: {measured}", flush=True)
        finally:
            subprocess.run(
                ["git", "-C", str(PROJECT_ROOT), "worktree", "remove", "--force", str(before)], check=False
            )
    rows = []
    first = None
    for side, runs in results.items():
        wall = sum(run["wall"] for run in runs) / len(runs)
        first = first or wall
        rows.append(
            [
                side,
                " / ".join(f"{run['wall']:.0f} s" for run in runs),
                " / ".join(f"{run['cpu']:.0f} s" for run in runs),
                f"{max(run['rss_mb'] for run in runs):.0f} MB",
                f"{wall / first:.0%}",
                runs[-1]["embedded"],
            ]
        )
    print(f"\n`kbkit index` over {name}, fresh project each run; machine: {machine.note()}")
    print_table(["code", "wall", "CPU", "peak RSS", "wall vs before", "embedded"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--docs", type=int, default=1000, help="documents per sample (default 1000)")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--against", metavar="REF", help="time `kbkit index` at git REF and in this checkout")
    parser.add_argument(
        "--set", choices=["tldr", "cpp-docs"], default="tldr", help="the data set for --against"
    )
    parser.add_argument("--rounds", type=int, default=1, help="before/after pairs for --against (default 1)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--semantic", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.threads, args.semantic)
        return 0

    data = data_dir(args.data)
    if args.against:
        against(args.against, data, {"tldr": "tldr pages", "cpp-docs": "cpp-docs"}[args.set], args.rounds)
        return 0
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
