"""Where the embedding time goes, and what cheap levers change it.

A fixed sample of cpp-docs pages (`--docs`, default 500, `--seed`) is indexed once; then each
variant of the embedding pass (`embed_pending`, what `kbkit index` runs with every core) embeds it
from nothing in its own process, over a fresh copy of the same index. The first variant is the
code as it ships. For each: the windows embedded, their tokens (mean, p50, p95), the padding share
of the model runs, the rows per run, and the pass's time split into prose and tokenizer, ONNX runs,
SQLite (vector lookups and writes) and the rest (reading the text, numpy, Python), each as wall and
process CPU seconds; the threads the model used (its CPU over its wall time). Each variant's
vectors are compared with the first's: identical bytes, or the lowest cosine between the two.

Beside it: the model's FLOPs per token, its share of run time by operator (onnxruntime's profiler
on the shipping settings), and a float32 matrix product of this CPU in numpy (GFLOP/s per CPU
second): how far the model runs from what the cores can do at all.

    .venv/bin/python -m bench.embedding_cost [--data DIR] [--docs 500] [--variants baseline,...]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._util import PROJECT_ROOT, MachineWatch, data_dir, percentile, print_table, rerun, unpack

LAYERS, HIDDEN, FFN = 6, 384, 1536
"""all-MiniLM-L6-v2, the packaged model (its config.json): six BERT layers of 384, feed-forward 1,536."""

VARIANTS: dict[str, str] = {
    "baseline": "as shipped: int8 products, every core, no spinning, RUN_TOKENS 512, optimization level all",
    "float32": "the packaged model.onnx run as it is: int8 weights cast to float32 products (before 0073)",
    "spinning": "onnxruntime's threads spin between runs (session.intra_op.allow_spinning 1)",
    "one-thread": "intra-op threads 1 (CPU per token without a second thread's overhead)",
    "runs-2048": "RUN_TOKENS 2,048: fewer, larger model runs",
    "runs-128": "RUN_TOKENS 128: one window a run, no padding at all",
    "parallel": "execution mode parallel, 2 inter-op threads",
    "opt-basic": "graph optimization level basic (no fused attention, layer norm or GELU)",
    "no-reuse": "stored vectors not looked up: a repeat in a later group of documents runs again",
}
"""name -> what it changes against the shipping code."""


class Phases:
    """Wall and process CPU seconds per named phase (a phase inside another is counted in both)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = collections.defaultdict(float)
        self.cpu: dict[str, float] = collections.defaultdict(float)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.process_time() - cpu

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timed(name):
                return function(*args, **kwargs)

        return timed


class _Timed:
    """A stand-in for an object whose one method is timed (the session's `run`, the tokenizer's `encode`)."""

    def __init__(self, inner: Any, method: str, phases: Phases, name: str) -> None:
        self._inner = inner
        setattr(self, method, phases.wrap(name, getattr(inner, method)))

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._inner, attribute)


def child(root: Path, variant: str, vectors_out: Path) -> None:
    """Runs in the child: one embedding pass of the project at `root` under `variant`, instrumented;
    prints its figures as JSON and writes its vectors (in document path and chunk order)."""
    import dataclasses

    import onnxruntime as ort

    from kbkit.config import load_settings
    from kbkit.kb import semantic as sem
    from kbkit.kb.base import KnowledgeBase
    from kbkit.kb.semantic import chunks as chunks_module
    from kbkit.kb.semantic import embedding as embedding_module
    from kbkit.kb.semantic import encoder as encoder_module

    phases = Phases()
    runs: list[tuple[int, int, int]] = []
    """(rows, width, tokens without padding) of each model run."""
    threads = 1 if variant == "one-thread" else 0
    real_session = ort.InferenceSession

    def session(path: str, sess_options: Any = None, **kwargs: Any) -> Any:
        if variant == "spinning":
            sess_options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        elif variant == "parallel":
            sess_options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
            sess_options.inter_op_num_threads = 2
        elif variant == "opt-basic":
            sess_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        return real_session(path, sess_options=sess_options, **kwargs)

    ort.InferenceSession = session  # the variant's options, where Encoder sets its own
    if variant == "runs-2048":
        encoder_module.RUN_TOKENS = 2048
    elif variant == "runs-128":
        encoder_module.RUN_TOKENS = 128
    if variant == "no-reuse":
        embedding_module._known = lambda conn, model, keys: {}

    kb = KnowledgeBase.open(load_settings(root))
    try:
        assert kb.hybrid is not None, kb.hybrid_off
        files = kb.hybrid.files
        if variant == "float32":
            files = dataclasses.replace(files, int8_as="")
        encoder = sem.Encoder(files, threads=threads)
        encoder._session = _Timed(encoder._session, "run", phases, "onnx")
        encoder._chunker._tokenizer = _Timed(encoder._chunker._tokenizer, "encode", phases, "tokenizer")
        setattr(chunks_module, "prose", phases.wrap("prose", sem.prose))  # noqa: B010  (its own global)
        run = encoder._run

        def counted(rows: list[tuple[int, ...]]) -> Any:
            runs.append((len(rows), max(len(row) for row in rows), sum(len(row) for row in rows)))
            return run(rows)

        encoder._run = counted  # type: ignore[method-assign]
        encoder.encode_ids = phases.wrap("encode", encoder.encode_ids)  # type: ignore[method-assign]
        encoder.chunks = phases.wrap("chunks", encoder.chunks)  # type: ignore[method-assign]
        embedding_module._write = phases.wrap("write", embedding_module._write)
        with phases.timed("pass"):
            report = sem.embed_pending(kb.store, encoder)
        rows = kb.store.reader().execute(
            "SELECT e.vector FROM embeddings e JOIN documents d ON d.id = e.doc_id ORDER BY d.path, e.chunk"
        )
        vectors_out.write_bytes(b"".join(row[0] for row in rows))
        profile = op_profile(encoder) if variant in ("baseline", "float32") else {}
    finally:
        kb.close()
    print(
        json.dumps(
            {
                "variant": variant,
                "documents": report.embedded,
                "windows": report.chunks,
                "reused": report.reused,
                "runs": runs,
                "wall": dict(phases.wall),
                "cpu": dict(phases.cpu),
                "profile": profile,
            }
        )
    )


def census(root: Path) -> dict[str, Any]:
    """The windows the pass would embed for the project at `root`, from the shipping chunker, run
    by nothing: all of them and the distinct ones (a window whose tokens repeat is run once), the
    page openings' and the passages', and the distinct windows' lengths."""
    from kbkit.config import load_settings
    from kbkit.kb import semantic as sem
    from kbkit.kb.base import KnowledgeBase

    kb = KnowledgeBase.open(load_settings(root))
    windows = {"opening": 0, "passage": 0}
    tokens = {"opening": 0, "passage": 0}
    seen: dict[bytes, tuple[str, int]] = {}
    late: set[bytes] = set()
    """Distinct windows that are a page opening's third or fourth."""
    try:
        assert kb.hybrid is not None, kb.hybrid_off
        encoder = sem.Encoder(kb.hybrid.files, threads=1)
        conn = kb.store.reader()
        parts: dict[int, list[sem.Section]] = {}
        for doc_id, start, length, path in conn.execute(
            "SELECT doc_id, start, length, section FROM passages ORDER BY doc_id, ord"
        ):
            parts.setdefault(doc_id, []).append(sem.Section(start, length, path))
        for doc_id, title, body in conn.execute("SELECT rowid, title, body FROM documents_fts"):
            for chunk in encoder.chunks(title or "", body or "", parts.get(doc_id)):
                kind = "opening" if chunk.number < sem.MAX_CHUNKS else "passage"
                windows[kind] += 1
                tokens[kind] += len(chunk.ids)
                seen[chunk.key] = (kind, len(chunk.ids))
                if kind == "opening" and chunk.number >= 2:
                    late.add(chunk.key)
    finally:
        kb.close()
    return {
        "windows": windows,
        "tokens": tokens,
        "distinct": {kind: sum(1 for k, _ in seen.values() if k == kind) for kind in windows},
        "distinct_tokens": {kind: sum(n for k, n in seen.values() if k == kind) for kind in windows},
        "lengths": [n for _, n in seen.values()],
        "what_if": {
            "passage windows cut to 64 tokens": sum(
                min(n, 64) if kind == "passage" else n for kind, n in seen.values()
            ),
            "openings of 2 windows, not 4": sum(n for key, (_, n) in seen.items() if key not in late),
            "openings alone (no passage windows)": sum(n for kind, n in seen.values() if kind == "opening"),
        },
    }


def print_census(label: str, found: dict[str, Any]) -> None:
    rows = []
    for kind in ("opening", "passage"):
        rows.append(
            [
                kind,
                f"{found['windows'][kind]:,}",
                f"{found['tokens'][kind]:,}",
                f"{found['distinct'][kind]:,}",
                f"{found['distinct_tokens'][kind]:,}",
            ]
        )
    rows.append(
        [
            "all",
            f"{sum(found['windows'].values()):,}",
            f"{sum(found['tokens'].values()):,}",
            f"{len(found['lengths']):,}",
            f"{sum(found['lengths']):,}",
        ]
    )
    lengths = [float(n) for n in found["lengths"]]
    print_table(
        ["windows", "count", "tokens", "distinct windows (run once)", "their tokens"],
        rows,
        title=f"{label}: the windows embedded; distinct windows' tokens (mean / p50 / p95) {stats(lengths)}",
    )
    whole = sum(found["lengths"])
    print_table(
        ["tokens run if (vectors change: needs the quality benches)", "tokens", "share"],
        [[name, f"{tokens:,}", f"{tokens / whole:.0%}"] for name, tokens in found["what_if"].items()],
    )


def op_profile(encoder: Any, rounds: int = 10) -> dict[str, float]:
    """Share of the model's kernel time by operator, from onnxruntime's profiler: `rounds` runs of
    four full windows on a session built as the encoder's (same file and options)."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(tempfile.gettempdir()) / "kbkit-embedding-profile")
    session = ort.InferenceSession(
        str(encoder.onnx), sess_options=options, providers=["CPUExecutionProvider"]
    )
    ids = np.random.default_rng(1).integers(1000, 20000, (4, 128)).astype(np.int64)
    names = {item.name for item in session.get_inputs()}
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    for _ in range(rounds):
        session.run(None, {k: v for k, v in feeds.items() if k in names})
    path = Path(session.end_profiling())
    totals: dict[str, float] = collections.defaultdict(float)
    for event in json.loads(path.read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[event["args"]["op_name"]] += event["dur"]
    path.unlink()
    whole = sum(totals.values()) or 1.0
    return {name: spent / whole for name, spent in sorted(totals.items(), key=lambda item: -item[1])}


def flops(width: int) -> float:
    """FLOPs of one window of `width` tokens (padding included) through the model: the dense
    products (Q, K, V, output, two feed-forward) and attention's two products; the rest is small."""
    dense = 2 * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
    attention = 2 * 2 * width * HIDDEN
    return LAYERS * width * (dense + attention)


def gemm() -> list[tuple[str, float, float]]:
    """numpy float32 matrix products on this CPU: (shape, GFLOP/s wall, GFLOP/s per CPU second).
    A large square one (what BLAS reaches at best) and the model's own shapes at a run of 512
    tokens (the projection, the feed-forward up and down)."""
    import numpy as np

    found = []
    rng = np.random.default_rng(1)
    for n, k, m in ((2048, 2048, 2048), (512, HIDDEN, HIDDEN), (512, HIDDEN, FFN), (512, FFN, HIDDEN)):
        a = rng.random((n, k), dtype=np.float32)
        b = rng.random((k, m), dtype=np.float32)
        a @ b
        rounds = max(5, int(3e10 / (2 * n * k * m)))
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(rounds):
            a @ b
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        work = 2 * n * k * m * rounds / 1e9
        found.append((f"{n}x{k} @ {k}x{m}", work / wall, work / cpu))
    return found


def run_variant(root: Path, pristine: Path, variant: str, vectors: Path) -> dict[str, Any]:
    index = root / ".kbkit" / "index.db"
    for extra in index.parent.glob("index.db*"):
        extra.unlink()
    shutil.copyfile(pristine, index)
    result = subprocess.run(
        rerun(__spec__.name, "--child", str(root), "--variant", variant, "--vectors", str(vectors)),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{result.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found


def compare(first: bytes, other: bytes) -> str:
    """How `other`'s vectors differ from `first`'s (float16 rows of the same windows, same order)."""
    import numpy as np

    if first == other:
        return "identical"
    a = np.frombuffer(first, dtype=np.float16).astype(np.float32)
    b = np.frombuffer(other, dtype=np.float16).astype(np.float32)
    if a.shape != b.shape:
        return f"different rows ({a.size} against {b.size} values)"
    a, b = a.reshape(-1, 384), b.reshape(-1, 384)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    same = float(np.mean(np.all(a == b, axis=1)))
    return f"{same:.1%} rows identical, min cosine {cosines.min():.6f}"


def stats(values: list[float]) -> str:
    return f"{statistics.fmean(values):.1f} / {percentile(values, 50):.0f} / {percentile(values, 95):.0f}"


def report(results: list[dict[str, Any]], vectors: dict[str, bytes], lengths: list[int]) -> None:
    first = results[0]
    rows = []
    for found in results:
        wall, cpu, runs = found["wall"], found["cpu"], found["runs"]
        cells = sum(r * w for r, w, _ in runs)
        tokens = sum(t for _, _, t in runs)
        model = sum(r * flops(w) for r, w, _ in runs)
        sqlite_wall = wall.get("write", 0.0) - wall.get("encode", 0.0)
        sqlite_cpu = cpu.get("write", 0.0) - cpu.get("encode", 0.0)
        rest_wall = wall["pass"] - wall.get("write", 0.0) - wall.get("chunks", 0.0)
        rest_cpu = cpu["pass"] - cpu.get("write", 0.0) - cpu.get("chunks", 0.0)
        numpy_wall = wall.get("encode", 0.0) - wall.get("onnx", 0.0)
        numpy_cpu = cpu.get("encode", 0.0) - cpu.get("onnx", 0.0)
        prose_wall, prose_cpu = wall.get("prose", 0.0), cpu.get("prose", 0.0)
        rows.append(
            [
                found["variant"],
                f"{wall['pass']:.1f} / {cpu['pass']:.1f}",
                f"{sum(r for r, _, _ in runs)} ({found['windows']} stored, {found['reused']} reused)",
                f"{1 - tokens / cells:.1%}" if cells else "-",
                stats([float(r) for r, _, _ in runs]) if runs else "-",
                f"{prose_wall:.1f} / {prose_cpu:.1f}",
                f"{wall.get('tokenizer', 0.0):.1f} / {cpu.get('tokenizer', 0.0):.1f}",
                f"{wall.get('onnx', 0.0):.1f} / {cpu.get('onnx', 0.0):.1f}",
                f"{numpy_wall:.1f} / {numpy_cpu:.1f}",
                f"{sqlite_wall:.1f} / {sqlite_cpu:.1f}",
                f"{rest_wall:.1f} / {rest_cpu:.1f}",
                f"{cpu.get('onnx', 0.0) / max(wall.get('onnx', 0.0), 1e-9):.2f}",
                f"{model / 1e9 / max(cpu.get('onnx', 0.0), 1e-9):.1f}",
                compare(vectors[first["variant"]], vectors[found["variant"]]),
            ]
        )
    print_table(
        [
            "variant",
            "pass (wall / CPU s)",
            "windows run",
            "padding",
            "rows a run (mean/p50/p95)",
            "prose",
            "tokenizer",
            "ONNX runs",
            "numpy around runs",
            "SQLite",
            "rest (reads, Python)",
            "threads in ONNX",
            "model GFLOP/s per CPU s",
            "vectors against baseline",
        ],
        rows,
        title="The embedding pass by variant (seconds: wall / process CPU)",
    )
    print(
        "\nvariants: " + "; ".join(f"{found['variant']}: {VARIANTS[found['variant']]}" for found in results)
    )
    runs = first["runs"]
    tokens = sum(t for _, _, t in runs)
    print(
        f"\nbaseline: {len(lengths)} distinct windows in the sample, tokens per window (mean / p50 / p95) "
        f"{stats([float(n) for n in lengths])}, {sum(lengths):,} tokens; model runs {len(runs)}, "
        f"{tokens:,} tokens run; {flops(128) / 128 / 1e6:.1f} MFLOP a token at 128 tokens "
        f"({flops(int(statistics.fmean(lengths))) / statistics.fmean(lengths) / 1e6:.1f} at the mean window)"
    )
    for found in {found["variant"]: found for found in results if found.get("profile")}.values():
        print(
            f"\n{found['variant']}'s kernel time by operator (4 x 128 tokens, one thread): "
            + ", ".join(f"{name} {share:.1%}" for name, share in list(found["profile"].items())[:8])
        )


def whole_census(data: Path, cpu_per_token: float) -> None:
    """Every window of all of cpp-docs, counted, and what embedding them costs at `cpu_per_token` ms
    of CPU a token (a sample run's ONNX and rest together), on 2 cores at 1.9 busy."""
    with tempfile.TemporaryDirectory(prefix="kbkit-embedding-census-") as tmp:
        root = Path(tmp) / "project"
        unpack(data / "cpp-docs.tar.gz", root)
        (root / "kbkit.toml").write_text(
            '[kb]\npath = "cpp-docs"\n\n[search]\nsemantic = true\n', encoding="utf-8"
        )
        from bench._util import scan_project

        documents = scan_project(root).documents
        found = census(root)
    print_census(f"all of cpp-docs ({documents:,} pages)", found)
    if cpu_per_token:
        for name, tokens in {"as shipped": sum(found["lengths"]), **found["what_if"]}.items():
            cpu = tokens * cpu_per_token / 1000
            print(
                f"{name}: at {cpu_per_token:.3f} ms of CPU a token, {cpu:,.0f} s of CPU, "
                f"{cpu / 1.9:,.0f} s on an idle 2-core machine (1.9 cores busy)"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--docs", type=int, default=500, help="cpp-docs pages in the sample (default 500)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, baseline first")
    parser.add_argument(
        "--census",
        action="store_true",
        help="instead: count the windows of all of cpp-docs (no model run) and estimate its embedding time",
    )
    parser.add_argument(
        "--cpu-per-token",
        type=float,
        default=0.0,
        help="with --census: ms of CPU a token, from a sample run (default: none, no estimate)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.variant, args.vectors)
        return 0
    if args.census:
        whole_census(data_dir(args.data), args.cpu_per_token)
        return 0
    variants = args.variants.split(",")
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown or variants[0] != "baseline":
        raise SystemExit(f"--variants: baseline first, then any of {', '.join(VARIANTS)} ({unknown})")
    data = data_dir(args.data)
    machine = MachineWatch()
    with tempfile.TemporaryDirectory(prefix="kbkit-embedding-cost-") as tmp:
        unpacked, root = Path(tmp) / "all", Path(tmp) / "project"
        unpack(data / "cpp-docs.tar.gz", unpacked)
        files = sorted((unpacked / "cpp-docs").rglob("*.md"))
        sample = random.Random(args.seed).sample(files, min(args.docs, len(files)))
        for path in sample:
            target = root / "docs" / path.relative_to(unpacked / "cpp-docs")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        (root / "kbkit.toml").write_text(
            '[kb]\npath = "docs"\n\n[search]\nsemantic = true\n', encoding="utf-8"
        )
        from bench._util import scan_project

        documents = scan_project(root).documents
        pristine = Path(tmp) / "pristine.db"
        with sqlite3.connect(root / ".kbkit" / "index.db") as source, sqlite3.connect(pristine) as copy:
            source.backup(copy)
        lengths = census(root)["lengths"]
        results, vectors = [], {}
        for variant in variants:
            out = Path(tmp) / f"{variant}.vectors"
            found = run_variant(root, pristine, variant, out)
            vectors[variant] = out.read_bytes()
            results.append(found)
            print(
                f"{variant}: pass {found['wall']['pass']:.1f} s wall, {found['cpu']['pass']:.1f} s CPU",
                flush=True,
            )
    print(f"\ncpp-docs sample: {documents} pages (seed {args.seed}); machine: {machine.note()}")
    report(results, vectors, lengths)
    print_table(
        ["numpy float32 product", "GFLOP/s wall", "GFLOP/s per CPU second"],
        [[shape, f"{wall:.1f}", f"{cpu:.1f}"] for shape, wall, cpu in gemm()],
        title="This CPU's dense limit (numpy, its BLAS with its own threads)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
