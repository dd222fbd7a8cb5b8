"""A static embedding model distilled from the packaged one, as the dense side of hybrid search.

The lever for a quarter of the embedding cost that needs no other model: model2vec's recipe, with
onnxruntime alone (no torch). Each token of the packaged model's vocabulary goes through the model
once (`[CLS] token [SEP]`, mean-pooled); the vectors' principal components are kept (`--dimensions`)
and weighted by the token's place in the vocabulary (Zipf: log(1 + rank)). A text's vector is then
the mean of its tokens' rows: no model run at all.

On BEIR SciFact (5,183 abstracts, 300 judged claims), in one run over one index: kbkit's BM25, its
hybrid search and the dense ranking alone with the packaged model, and the same two with the static
model in its place (kbkit's own fusion, through `search(dense=...)`). nDCG@10, Recall@100, and
the seconds each model took to embed the abstracts.

    .venv/bin/python -m bench.static_model [--data DIR] [--dimensions 256] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench._util import MachineWatch, data_dir, print_table
from bench.search_quality import LIMIT, ndcg_at, project_dir, scifact_claims, write_project, write_scifact
from kbkit.config import load_settings
from kbkit.kb import search as kb_search
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.semantic.encoder import Encoder

VOCABULARY_BATCH = 2048
"""Tokens a model run while distilling (three tokens each)."""


class StaticModel:
    """Token rows distilled from `encoder`'s model; a text is the mean of its tokens' rows."""

    def __init__(self, encoder: Encoder, dimensions: int) -> None:
        from tokenizers.implementations.bert_wordpiece import BertWordPieceTokenizer

        self._tokenizer = BertWordPieceTokenizer(str(encoder.files.tokenizer), lowercase=True)
        self._specials = tuple(self._tokenizer.encode("").ids)  # [CLS] [SEP]
        size = self._tokenizer.get_vocab_size()
        started = time.perf_counter()
        batches = [
            [
                (self._specials[0], token, *self._specials[1:])
                for token in range(first, min(first + VOCABULARY_BATCH, size))
            ]
            for first in range(0, size, VOCABULARY_BATCH)
        ]
        rows = np.concatenate([encoder.encode_ids(batch) for batch in batches])
        centred = rows - rows.mean(axis=0)
        _, _, components = np.linalg.svd(centred, full_matrices=False)
        self.rows = (centred @ components[:dimensions].T) * np.log1p(np.arange(size))[:, None]
        self.seconds = time.perf_counter() - started
        """How long the distillation took."""

    def encode(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), self.rows.shape[1]), dtype=np.float32)
        for index, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            ids = [token for token in encoding.ids if token not in self._specials]
            if ids:
                out[index] = self.rows[ids].mean(axis=0)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class StaticRanker:
    """kbkit's `DenseRanker` over one vector a document from a `StaticModel` (no passages)."""

    def __init__(self, model: StaticModel, kb: KnowledgeBase) -> None:
        conn = kb.store.reader()
        found = conn.execute("SELECT rowid, title, body FROM documents_fts ORDER BY rowid").fetchall()
        self._ids = [doc_id for doc_id, _, _ in found]
        started = time.perf_counter()
        self._matrix = model.encode([f"{title}\n{body}" for _, title, body in found])
        self.seconds = time.perf_counter() - started
        self._model = model

    @property
    def languages(self) -> frozenset[str] | None:
        return frozenset({"en"})

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        cosines = self._matrix @ self._model.encode([query])[0]
        top = np.argsort(-cosines)[:limit]
        return [(self._ids[i], float(cosines[i]), 0) for i in top]

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        return {}

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        vectors = self._model.encode([query, *texts])
        return [float(value) for value in vectors[1:] @ vectors[0]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--dimensions", type=int, default=256, help="principal components kept (at most 384)")
    parser.add_argument("--workdir", type=Path, help="keep the SciFact project (index and vectors) here")
    args = parser.parse_args(argv)
    scifact = data_dir(args.data) / "scifact"
    machine = MachineWatch()
    qrels, queries = scifact_claims(scifact)
    ids = list(qrels)
    with project_dir(args.workdir, "scifact") as (root, new):
        if new:
            write_scifact(scifact, root / "docs")
        write_project(root, "docs", semantic=True)
        kb = KnowledgeBase.open(load_settings(root, as_written=True))
        try:
            kb.scan()
            started = time.perf_counter()
            report = kb.embed()
            model_seconds = time.perf_counter() - started
            dense = kb.dense_ranker()
            assert report is not None and dense is not None and kb.hybrid is not None, kb.hybrid_off
            static = StaticModel(kb.hybrid.encoder(), args.dimensions)
            ranker = StaticRanker(static, kb)

            def paths(hits: list[Any]) -> list[str]:
                return [Path(hit.path).stem for hit in hits]

            def searched(query: str, with_dense: Any) -> list[str]:
                found = kb_search.search(
                    kb.store, kb.registry, query, limit=LIMIT, max_tokens=None, dense=with_dense
                )
                return paths(found.results)

            def alone(query: str, with_dense: Any) -> list[str]:
                conn = kb.store.reader()
                order = [doc_id for doc_id, _, _ in with_dense.rank(query, LIMIT)]
                names = dict(
                    conn.execute(f"SELECT id, path FROM documents WHERE id IN ({','.join(map(str, order))})")
                )
                return [Path(names[doc_id]).stem for doc_id in order if doc_id in names]

            systems: dict[str, Callable[[str], list[str]]] = {
                "kbkit BM25": lambda q: searched(q, None),
                "hybrid, packaged model": lambda q: searched(q, dense),
                "dense alone, packaged model": lambda q: alone(q, dense),
                f"hybrid, static {args.dimensions}": lambda q: searched(q, ranker),
                f"dense alone, static {args.dimensions}": lambda q: alone(q, ranker),
            }
            rows = []
            for name, system in systems.items():
                ranked = [system(queries[q]) for q in ids]
                ndcg = statistics.fmean(ndcg_at(r, qrels[q]) for q, r in zip(ids, ranked, strict=True))
                recall = statistics.fmean(
                    len(qrels[q].intersection(r[:LIMIT])) / len(qrels[q])
                    for q, r in zip(ids, ranked, strict=True)
                )
                cost = ""
                if "packaged" in name:
                    cost = (
                        f"{model_seconds:.1f} s ({report.chunks - report.reused:,} windows run)"
                        if report.embedded
                        else "kept"
                    )
                elif "static" in name:
                    cost = f"{ranker.seconds:.1f} s (distilled once in {static.seconds:.0f} s)"
                rows.append([name, f"{ndcg:.3f}", f"{recall:.3f}", cost])
        finally:
            kb.close()
    print(f"machine: {machine.note()}")
    print_table(
        ["system", "nDCG@10", "Recall@100", "abstracts embedded in"],
        rows,
        f"BEIR SciFact test: {len(ids)} judged claims over 5,183 abstracts",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
