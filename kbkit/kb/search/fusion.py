"""Hybrid search: a dense ranking (the `semantic` extra) fused with BM25, and the passage a hit
points at when its best vector is the stronger evidence (docs/adr/0028)."""

from __future__ import annotations

import sqlite3
from typing import Protocol

from kbkit.kb import passages
from kbkit.kb.search.ranking import Ranked, add_rows

LEXICAL_WEIGHT = 0.5
"""BM25's share in the fusion (`convex_scores`); the dense ranking's is the rest. Measured against
reciprocal-rank fusion and confidence-weighted variants on three sets (docs/adr/0028,
docs/benchmarks.md): the one fusion here that is never below BM25 alone on any of them."""
DENSE_PASSAGE_MARGIN = 0.5
"""A hybrid hit points at the passage holding its best vector, not at its best lexical passage, when
that vector's score (min-max normalised over the dense candidates) beats the lexical passage's BM25
score (relative to the best passage's) by more than this: a page found by meaning where no passage
holds the query's words, or only weakly. On the agent loop 0.5 reads as many answers as always
taking the lexical passage, 0 and 0.25 fewer, always the vector's far fewer (docs/benchmarks.md)."""


class DenseRanker(Protocol):
    """A ranking by meaning (the `semantic` extra): document ids, best first, with their similarity
    and where the text of their most similar piece starts (characters of the served text)."""

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]: ...


def normalised(pairs: list[tuple[int, float]]) -> dict[int, float]:
    """Scores min-max scaled to 0..1 over one ranking's candidates (all 1.0 when they are equal)."""
    if not pairs:
        return {}
    high, low = max(score for _, score in pairs), min(score for _, score in pairs)
    if high - low <= 1e-12:
        return dict.fromkeys((doc_id for doc_id, _ in pairs), 1.0)
    return {doc_id: (score - low) / (high - low) for doc_id, score in pairs}


def convex_scores(
    lexical: list[Ranked], dense: list[tuple[int, float]], *, lexical_weight: float = LEXICAL_WEIGHT
) -> dict[int, float]:
    """A convex combination of the two rankings' scores, each min-max normalised over its own
    candidates: lexical_weight x BM25 + (1 - lexical_weight) x cosine; a document missing from
    one ranking gets 0 from it.

    Scores, not ranks: a BM25 top hit far ahead of its second (an identifier only one page holds)
    keeps that lead, and a dense ranking whose top cosines are close together (unsure) moves
    little, where reciprocal-rank fusion counted only places and put such a hit below a page the
    dense side liked a little more."""
    scores = {
        doc_id: lexical_weight * value
        for doc_id, value in normalised([(h.doc_id, h.score) for h in lexical]).items()
    }
    for doc_id, value in normalised(dense).items():
        scores[doc_id] = scores.get(doc_id, 0.0) + (1 - lexical_weight) * value
    return scores


def fuse(
    conn: sqlite3.Connection,
    lexical: list[Ranked],
    dense: list[tuple[int, float]],
    pool: int,
    *,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[Ranked]:
    """The BM25 and dense rankings fused (`convex_scores`) into one, of documents in either list."""
    scores = convex_scores(lexical, dense, lexical_weight=lexical_weight)
    known = {hit.doc_id: hit for hit in lexical}
    add_rows(conn, known, [doc_id for doc_id in scores if doc_id not in known])
    order = sorted(
        (doc_id for doc_id in scores if doc_id in known), key=lambda d: (-scores[d], known[d].path)
    )
    return [known[doc_id].rescored(scores[doc_id]) for doc_id in order[:pool]]


def dense_passages(
    conn: sqlite3.Connection,
    hits: list[Ranked],
    best: dict[int, passages.Best],
    near: list[tuple[int, float, int]],
    top_passage: float,
) -> dict[int, passages.Best]:
    """doc_id -> the passage holding its best vector, for each hit whose dense evidence there
    beats its lexical passage's (DENSE_PASSAGE_MARGIN); the caller leaves out the hits whose
    passage the query names (`names_member`): a name asked for outweighs a likeness. Both on 0..1,
    the cosine min-max normalised over the dense candidates, the BM25 score relative to the best
    passage's (0 for a hit none of whose passages holds a query word)."""
    shares = normalised([(doc_id, cosine) for doc_id, cosine, _ in near])
    where = {doc_id: start for doc_id, _, start in near}
    out: dict[int, passages.Best] = {}
    for hit in hits:
        if hit.doc_id not in where:
            continue
        lexical = best[hit.doc_id].score / top_passage if hit.doc_id in best else 0.0
        if shares[hit.doc_id] - lexical > DENSE_PASSAGE_MARGIN:
            found = passages.holding(conn, hit.doc_id, where[hit.doc_id])
            if found is not None:
                out[hit.doc_id] = found
    return out
