"""Ranking quality, side by side: kbkit, its lexical peers (bm25s, tantivy) and kbkit's hybrid.

Three data sets, every system on the same documents and questions in the same run:

- **tldr known-item**: the English tldr pages (7,4xx small Markdown pages, many of them copies of
  a command's page for another platform), and the questions in `bench/data/tldr_questions.tsv`,
  written as a person asks ("which folders are eating all my disk space"), each with the pages
  that answer it. success@5: an answer is in the top 5; MRR@10: 1 / rank of the first answer.
- **httpx known-item**: a small API reference (the 24 Markdown pages of the httpx docs, in
  `bench/data/httpx-docs`, BSD-3-Clause) and the questions in `bench/data/httpx_questions.tsv`,
  asked as a developer would ("make the client throw whenever the server answers 4xx"), each with
  the one page that answers it. Same metrics as tldr.
- **BEIR SciFact** (test split): 5,183 abstracts, each written as `<id>.md` (`# title`, blank line,
  abstract); the 300 judged claims go in raw. nDCG@10 (trec_eval: binary gains, log2 discount,
  ideal DCG over the judged documents) and Recall@100.

kbkit is searched through `KnowledgeBase` as an agent's query would be (limit 100, no token
budget). Peers get each file's text (and its title), through `bench/_peers.py`. The hybrid
columns appear when the `semantic` extra is installed: "kbkit hybrid" is what
`[search] semantic = true` serves, "dense alone" the embedding ranking by itself.

`--sweep` also runs every fusion in CANDIDATES on the same lexical and dense rankings (kbkit's own
search with BM25's share in the fusion passed as its `lexical_weight` option), and prints each
one's figures on every set beside the lexical ones: the fusion shipped must not lose to BM25
alone on any of them.

    .venv/bin/python -m bench.search_quality [--data DIR] [--only tldr|httpx|scifact] [--no-hybrid]
        [--sweep] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._peers import Peer, available_peers
from bench._util import MachineWatch, data_dir, ms, percentile, print_table, unpack, verdict
from kbkit.config import load_settings
from kbkit.kb import search as kb_search
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats.markdown import parse_markdown

DATA = Path(__file__).resolve().parent / "data"
QUESTIONS = DATA / "tldr_questions.tsv"
HTTPX_QUESTIONS = DATA / "httpx_questions.tsv"
HTTPX_DOCS = DATA / "httpx-docs"
TLDR_PAGES = "tldr-en/pages"
TARGETS = {
    "success@5": (0.85, 0.90),
    "MRR@10": (0.62, 0.68),
    "nDCG@10": (0.69, 0.72),
    "Recall@100": (0.92, None),
}
"""metric -> (lexical target, hybrid target)."""
LIMIT = 100

Ranker = Callable[[str], list[str]]


def _ranker(peer: Peer) -> Ranker:
    return lambda query: peer.rank(query, LIMIT)


def load_questions(path: Path = QUESTIONS) -> list[tuple[str, list[str]]]:
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, answers = line.split("\t")
            questions.append((text, answers.split()))
    return questions


def answers_match(path: str, answers: list[str]) -> bool:
    """`name` accepts that command's page on any platform; `platform/name` only that page; a path
    ending in `.md` only that file."""
    if any(answer.endswith(".md") for answer in answers):
        return path in answers
    stem = path[:-3] if path.endswith(".md") else path
    return any(stem == answer if "/" in answer else stem.rsplit("/", 1)[-1] == answer for answer in answers)


def ndcg_at(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal


def write_project(root: Path, kb_path: str, *, semantic: bool) -> None:
    (root / kb_path).mkdir(parents=True, exist_ok=True)
    search = "\n[search]\nsemantic = true\n" if semantic else ""
    (root / "kbkit.toml").write_text(f'[kb]\npath = "{kb_path}"\n{search}', encoding="utf-8")


def hybrid_available() -> str | None:
    """None when the semantic extra can run; otherwise why not."""
    from kbkit.kb import semantic

    return semantic.unavailable_reason()


class _Remembered:
    """A dense ranker that embeds each query once, however many fusions read its ranking."""

    def __init__(self, ranker: kb_search.DenseRanker) -> None:
        self._ranker = ranker
        self._seen: dict[tuple[str, int, str], list[tuple[int, float, int]]] = {}

    @property
    def languages(self) -> frozenset[str] | None:
        return self._ranker.languages

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        key = (query, limit, path_prefix)
        if key not in self._seen:
            self._seen[key] = self._ranker.rank(query, limit, path_prefix=path_prefix)
        return self._seen[key]

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        return self._ranker.passage_cosines(query, doc_ids)

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        return self._ranker.text_cosines(query, texts)


CANDIDATES: dict[str, float | None] = {
    "convex 0.4": 0.4,
    "convex 0.45": 0.45,
    "convex 0.5": 0.5,
    "shipped: 0.5, a query of keywords 0.6": None,
    "convex 0.55": 0.55,
    "convex 0.6": 0.6,
    "convex 0.7": 0.7,
}
"""The fusions `--sweep` measures: name -> BM25's share in the convex fusion (the search option
`lexical_weight`; None: kbkit's own rule, fusion.lexical_share). Reciprocal-rank fusion and its
confidence-weighted variants were measured against these before docs/adr/0028 and lost; their
figures are in docs/benchmarks.md."""


class Systems:
    """Every system under test over one folder of Markdown documents."""

    def __init__(self, root: Path, kb_path: str, *, hybrid: bool, key: Callable[[str], str]) -> None:
        write_project(root, kb_path, semantic=hybrid)
        self.kb = KnowledgeBase.open(load_settings(root))
        started = time.perf_counter()
        self.kb.scan()
        self.index_seconds = {"kbkit": time.perf_counter() - started}
        self.key = key
        self.rankers: dict[str, Ranker] = {"kbkit": self._lexical}
        docs = []
        kb_root = root / kb_path
        for path in sorted(kb_root.rglob("*.md")):
            parsed = parse_markdown(path.read_bytes())
            rel = path.relative_to(kb_root).as_posix()
            docs.append((key(rel), parsed.title or "", path.read_text(encoding="utf-8")))
        for name, peer_type in available_peers().items():
            started = time.perf_counter()
            peer = peer_type(docs)
            self.index_seconds[name] = time.perf_counter() - started
            self.rankers[name] = _ranker(peer)
        if hybrid:
            started = time.perf_counter()
            self.kb.embed()
            self.index_seconds["kbkit hybrid"] = time.perf_counter() - started + self.index_seconds["kbkit"]
            self.rankers["kbkit hybrid"] = self._hybrid
            self.rankers["dense alone"] = self._dense

    def _lexical(self, query: str) -> list[str]:
        result = kb_search.search(self.kb.store, self.kb.registry, query, limit=LIMIT, max_tokens=None)
        return [self.key(hit.path) for hit in result.results]

    def _hybrid(self, query: str) -> list[str]:
        return [self.key(hit.path) for hit in self.kb.search(query, limit=LIMIT, max_tokens=None).results]

    def _dense(self, query: str) -> list[str]:
        ranker = self.kb.dense_ranker()
        assert ranker is not None
        ids = [doc_id for doc_id, _, _ in ranker.rank(query, LIMIT)]
        conn = self.kb.store.reader()
        paths = dict(conn.execute(f"SELECT id, path FROM documents WHERE id IN ({','.join(map(str, ids))})"))
        return [self.key(paths[doc_id]) for doc_id in ids if doc_id in paths]

    def sweep(self, queries: list[str]) -> dict[str, list[list[str]]]:
        """Each fusion in CANDIDATES over the same BM25 and dense rankings: kbkit's search with its
        fusion rule swapped (the dense ranking of each query computed once)."""
        ranker = self.kb.dense_ranker()
        assert ranker is not None
        dense = _Remembered(ranker)
        out = {}
        for name, weight in CANDIDATES.items():
            out[name] = [
                [
                    self.key(hit.path)
                    for hit in kb_search.search(
                        self.kb.store,
                        self.kb.registry,
                        query,
                        limit=LIMIT,
                        max_tokens=None,
                        dense=dense,
                        lexical_weight=weight,
                    ).results
                ]
                for query in queries
            ]
        return out

    def run(self, queries: list[str]) -> dict[str, tuple[list[list[str]], list[float]]]:
        out = {}
        for name, ranker in self.rankers.items():
            for query in queries[:10]:  # warm-up
                ranker(query)
            ranked, times = [], []
            for query in queries:
                started = time.perf_counter()
                ranked.append(ranker(query))
                times.append(time.perf_counter() - started)
            out[name] = (ranked, times)
        return out

    def close(self) -> None:
        self.kb.close()


def table(
    title: str,
    metrics: dict[str, dict[str, float]],
    runs: dict[str, Any],
    systems: Systems,
    targets: dict[str, tuple[float, float | None]] | None = TARGETS,
) -> None:
    """The set's table; with `targets` None the hybrid verdict is "not below BM25 alone"."""
    names = list(runs)
    headers = ["metric", *names, "target (lexical / hybrid)", "kbkit", "hybrid"]
    rows = []
    for metric, values in metrics.items():
        if targets is None:
            target, kbkit_ok = "hybrid >= kbkit", None
            hybrid_ok = values["kbkit hybrid"] >= values["kbkit"] if "kbkit hybrid" in values else None
        else:
            lexical, hybrid = targets[metric]
            target = f">= {lexical}" + (f" / >= {hybrid}" if hybrid else "")
            kbkit_ok = values["kbkit"] >= lexical
            hybrid_ok = values["kbkit hybrid"] >= (hybrid or lexical) if "kbkit hybrid" in values else None
        rows.append(
            [
                metric,
                *(f"{values[name]:.3f}" for name in names),
                target,
                verdict(kbkit_ok),
                verdict(hybrid_ok),
            ]
        )
    rows.append(["query p50", *(ms(percentile(runs[n][1], 50)) for n in names), "", "", ""])
    rows.append(["index build", *(f"{systems.index_seconds.get(n, 0):.1f} s" for n in names), "", "", ""])
    print_table(headers, rows, title)


@contextmanager
def project_dir(workdir: Path | None, name: str) -> Iterator[tuple[Path, bool]]:
    """A temporary folder, or `workdir/name` kept between runs (its index and vectors are reused:
    only the first run pays for embedding). Yields the folder and whether it is new."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix=f"kbkit-{name}-") as tmp:
            yield Path(tmp), True
        return
    root = workdir / name
    new = not (root / ".ready").exists()
    root.mkdir(parents=True, exist_ok=True)
    yield root, new
    (root / ".ready").touch()


SweepFigures = dict[str, dict[str, dict[str, float]]]
"""set -> fusion (and "kbkit", BM25 alone) -> metric -> value."""


def known_item_metrics(
    questions: list[tuple[str, list[str]]], ranked: list[list[str]]
) -> tuple[dict[str, float], list[str]]:
    """success@5 and MRR@10 of one system, and its misses (question -> its top 3)."""
    hits5, rr, misses = [], [], []
    for (text, answers), paths in zip(questions, ranked, strict=True):
        first = next((i for i, p in enumerate(paths[:10]) if answers_match(p, answers)), None)
        hits5.append(first is not None and first < 5)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
        if first is None or first >= 5:
            misses.append(f"{text!r} -> {', '.join(paths[:3])}")
    return {"success@5": statistics.fmean(hits5), "MRR@10": statistics.fmean(rr)}, misses


def run_known_item(
    label: str,
    questions: list[tuple[str, list[str]]],
    systems: Systems,
    *,
    targets: dict[str, tuple[float, float | None]] | None,
    sweep: SweepFigures | None,
    name: str,
) -> None:
    try:
        pages = systems.kb.store.reader().execute("SELECT count(*) FROM documents").fetchone()[0]
        texts = [text for text, _ in questions]
        runs = systems.run(texts)
        swept = systems.sweep(texts) if sweep is not None and "kbkit hybrid" in runs else {}
    finally:
        systems.close()
    metrics: dict[str, dict[str, float]] = {"success@5": {}, "MRR@10": {}}
    misses: dict[str, list[str]] = {}
    for system, (ranked, _) in runs.items():
        values, misses[system] = known_item_metrics(questions, ranked)
        for metric, value in values.items():
            metrics[metric][system] = value
    table(f"{label}: {len(questions)} questions over {pages} pages", metrics, runs, systems, targets)
    for line in misses.get("kbkit", []):
        print(f"  kbkit miss: {line}")
    if sweep is not None and swept:
        sweep[name] = {"kbkit": {metric: metrics[metric]["kbkit"] for metric in metrics}}
        sweep[name]["dense alone"] = {metric: metrics[metric]["dense alone"] for metric in metrics}
        for fusion, ranked in swept.items():
            sweep[name][fusion] = known_item_metrics(questions, ranked)[0]


def run_tldr(data: Path, hybrid: bool, workdir: Path | None, sweep: SweepFigures | None = None) -> None:
    with project_dir(workdir, "tldr") as (root, new):
        if new:
            unpack(data / "tldr-en.tar.gz", root)
        systems = Systems(root, TLDR_PAGES, hybrid=hybrid, key=lambda path: path)
        run_known_item(
            "tldr known-item", load_questions(), systems, targets=TARGETS, sweep=sweep, name="tldr"
        )


def write_httpx(docs: Path) -> None:
    """The httpx pages only: the licence beside them is not a page."""
    shutil.copytree(HTTPX_DOCS, docs, ignore=shutil.ignore_patterns("LICENSE"), dirs_exist_ok=True)


def run_httpx(hybrid: bool, workdir: Path | None, sweep: SweepFigures | None = None) -> None:
    with project_dir(workdir, "httpx") as (root, new):
        if new:
            write_httpx(root / "docs")
        systems = Systems(root, "docs", hybrid=hybrid, key=lambda path: path)
        run_known_item(
            "httpx docs known-item",
            load_questions(HTTPX_QUESTIONS),
            systems,
            targets=None,
            sweep=sweep,
            name="httpx",
        )


def scifact_claims(scifact: Path) -> tuple[dict[str, set[str]], dict[str, str]]:
    """SciFact's judged test claims: claim id -> the abstracts that answer it, and claim id -> text."""
    qrels: dict[str, set[str]] = {}
    with (scifact / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            if line.strip():
                query_id, doc_id, score = line.split("\t")
                if int(score) > 0:
                    qrels.setdefault(query_id, set()).add(doc_id)
    queries = {}
    with (scifact / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            if item["_id"] in qrels:
                queries[item["_id"]] = item["text"]
    return {q: found for q, found in qrels.items() if q in queries}, queries


def write_scifact(scifact: Path, docs: Path) -> None:
    """Each abstract as `docs/<id>.md`: `# title`, a blank line, the abstract."""
    docs.mkdir(exist_ok=True)
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            (docs / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")


def run_scifact(data: Path, hybrid: bool, workdir: Path | None, sweep: SweepFigures | None = None) -> None:
    qrels, queries = scifact_claims(data / "scifact")
    ids = list(qrels)
    with project_dir(workdir, "scifact") as (root, new):
        if new:
            write_scifact(data / "scifact", root / "docs")
        systems = Systems(root, "docs", hybrid=hybrid, key=lambda path: Path(path).stem)
        texts = [queries[query_id] for query_id in ids]
        try:
            runs = systems.run(texts)
            swept = systems.sweep(texts) if sweep is not None and "kbkit hybrid" in runs else {}
        finally:
            systems.close()

    def figures(ranked: list[list[str]]) -> dict[str, float]:
        return {
            "nDCG@10": statistics.fmean(ndcg_at(r, qrels[q]) for q, r in zip(ids, ranked, strict=True)),
            "Recall@100": statistics.fmean(
                len(qrels[q].intersection(r[:LIMIT])) / len(qrels[q])
                for q, r in zip(ids, ranked, strict=True)
            ),
        }

    metrics: dict[str, dict[str, float]] = {"nDCG@10": {}, "Recall@100": {}}
    for name, (ranked, _) in runs.items():
        for metric, value in figures(ranked).items():
            metrics[metric][name] = value
    table(f"BEIR SciFact test: {len(ids)} judged claims over 5,183 abstracts", metrics, runs, systems)
    if sweep is not None and swept:
        sweep["scifact"] = {name: {m: metrics[m][name] for m in metrics} for name in ("kbkit", "dense alone")}
        for fusion, ranked in swept.items():
            sweep["scifact"][fusion] = figures(ranked)


def sweep_table(sweep: SweepFigures) -> None:
    """Every fusion on every set, beside BM25 alone; "never loses" means >= BM25 on every figure."""
    sets = list(sweep)
    columns = [(name, metric) for name in sets for metric in next(iter(sweep[name].values()))]
    headers = ["fusion", *(f"{name} {metric}" for name, metric in columns), "never below BM25"]
    rows = []
    for fusion in next(iter(sweep.values())):
        values = [sweep[name][fusion][metric] for name, metric in columns]
        lexical = [sweep[name]["kbkit"][metric] for name, metric in columns]
        never = (
            ""
            if fusion in ("kbkit", "dense alone")
            else verdict(all(v >= b - 1e-9 for v, b in zip(values, lexical, strict=True)))
        )
        label = "BM25 alone (kbkit)" if fusion == "kbkit" else fusion
        rows.append([label, *(f"{v:.3f}" for v in values), never])
    print_table(headers, rows, "Fusion candidates on the same rankings")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--only", choices=["tldr", "httpx", "scifact"], help="run one data set")
    parser.add_argument("--no-hybrid", action="store_true", help="leave out the hybrid columns")
    parser.add_argument("--sweep", action="store_true", help="also measure every fusion in CANDIDATES")
    parser.add_argument(
        "--workdir", type=Path, help="keep each data set's project (index and vectors) here and reuse it"
    )
    args = parser.parse_args(argv)
    data = data_dir(args.data)
    machine = MachineWatch()
    why_not = hybrid_available()
    hybrid = not args.no_hybrid and why_not is None
    peers = ", ".join(available_peers()) or "none (pip install -e '.[bench]')"
    print(f"peers: {peers}; hybrid: {'on' if hybrid else 'off (' + (why_not or '--no-hybrid') + ')'}")
    sweep: SweepFigures | None = {} if args.sweep and hybrid else None
    if args.only in (None, "tldr"):
        run_tldr(data, hybrid, args.workdir, sweep)
    if args.only in (None, "httpx"):
        run_httpx(hybrid, args.workdir, sweep)
    if args.only in (None, "scifact"):
        run_scifact(data, hybrid, args.workdir, sweep)
    if sweep:
        sweep_table(sweep)
    print(f"\nmachine: {machine.note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
