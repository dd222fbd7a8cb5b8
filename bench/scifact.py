"""Retrieval quality on BEIR SciFact (test split), through kbkit's own index and search.

Each abstract becomes one Markdown document, `<id>.md` holding `# {title}\\n\\n{text}\\n`, in a
temporary project; `KnowledgeBase.scan()` indexes it and the 300 judged test claims are run raw
through `KnowledgeBase.search(claim, limit=100, max_tokens=None)`, exactly as an agent's query
would be. Metrics follow trec_eval: nDCG@10 with binary gains, a log2(rank + 1) discount and
the ideal DCG over all judged relevant documents; Recall@100 is the share of judged relevant
documents in the top 100. Results are taken in kbkit's own order.

    .venv/bin/python bench/scifact.py [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _util import MachineWatch, data_dir, ms, percentile, print_table, verdict, write_project

from kbkit.config import load_settings
from kbkit.errors import KbkitError
from kbkit.kb.base import KnowledgeBase

NDCG_TARGET = 0.69
RECALL_TARGET = 0.92
PUBLISHED_NDCG = 0.665  # BM25, BEIR paper (Thakur et al. 2021)
PUBLISHED_RECALL = 0.908  # BM25 multifield, Anserini (0.9076)
LIMIT = 100


def load_qrels(path: Path) -> dict[str, set[str]]:
    qrels: dict[str, set[str]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle)  # header: query-id corpus-id score
        for line in handle:
            if not line.strip():
                continue
            query_id, doc_id, score = line.split("\t")
            if int(score) > 0:
                qrels.setdefault(query_id, set()).add(doc_id)
    return qrels


def load_queries(path: Path, wanted: set[str]) -> dict[str, str]:
    queries = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            if item["_id"] in wanted:
                queries[item["_id"]] = item["text"]
    return queries


def write_corpus(corpus: Path, kb: Path) -> int:
    count = 0
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            (kb / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
            count += 1
    return count


def ndcg_at(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal


def recall_at(ranked: list[str], relevant: set[str], k: int = LIMIT) -> float:
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    args = parser.parse_args(argv)
    scifact = data_dir(args.data) / "scifact"
    machine = MachineWatch()

    qrels = load_qrels(scifact / "qrels" / "test.tsv")
    queries = load_queries(scifact / "queries.jsonl", set(qrels))
    missing = set(qrels) - set(queries)
    if missing:
        print(f"warning: {len(missing)} judged queries have no text; they score 0", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="kbkit-scifact-") as tmp:
        root = Path(tmp)
        write_project(root, "docs")
        documents = write_corpus(scifact / "corpus.jsonl", root / "docs")
        kb = KnowledgeBase.open(load_settings(root))
        try:
            started = time.perf_counter()
            report = kb.scan()
            index_seconds = time.perf_counter() - started
            for text in list(queries.values())[:20]:  # warm the connection and caches
                kb.search(text, limit=LIMIT, max_tokens=None)
            ndcgs, recalls, latencies, failures = [], [], [], 0
            for query_id, relevant in qrels.items():
                ranked: list[str] = []
                if query_id in queries:
                    started = time.perf_counter()
                    try:
                        result = kb.search(queries[query_id], limit=LIMIT, max_tokens=None)
                    except KbkitError as exc:
                        failures += 1
                        print(f"query {query_id} failed: {exc}", file=sys.stderr)
                    else:
                        latencies.append(time.perf_counter() - started)
                        ranked = [Path(hit.path).stem for hit in result.results]
                ndcgs.append(ndcg_at(ranked, relevant))
                recalls.append(recall_at(ranked, relevant))
        finally:
            kb.close()

    ndcg = statistics.fmean(ndcgs)
    recall = statistics.fmean(recalls)
    print(
        f"SciFact test: {documents} abstracts ({report.documents} indexed in {index_seconds:.2f} s), "
        f"{len(qrels)} judged queries, {sum(len(r) for r in qrels.values())} judgments"
        + (f", {failures} queries failed" if failures else "")
    )
    print(f"machine: {machine.note()}")
    print_table(
        ["metric", "kbkit", "target", "published BM25", "status"],
        [
            [
                "nDCG@10",
                f"{ndcg:.4f}",
                f">= {NDCG_TARGET}",
                f"{PUBLISHED_NDCG}",
                verdict(ndcg >= NDCG_TARGET),
            ],
            [
                "Recall@100",
                f"{recall:.4f}",
                f">= {RECALL_TARGET}",
                f"{PUBLISHED_RECALL}",
                verdict(recall >= RECALL_TARGET),
            ],
            ["search p50 (limit 100)", ms(percentile(latencies, 50)), "", "", ""],
            ["search p95 (limit 100)", ms(percentile(latencies, 95)), "", "", ""],
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
