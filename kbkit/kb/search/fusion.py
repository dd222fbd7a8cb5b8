"""Hybrid search: a dense ranking (the `semantic` extra) fused with BM25, and the passage a hit
points at chosen by its passages' BM25 scores and vectors together, then by a second look at the
leading ones' headings (docs/adr/0028, 0057, 0074)."""

from __future__ import annotations

import bisect
import sqlite3
from dataclasses import dataclass
from typing import Protocol

from kbkit.kb import passages
from kbkit.kb.search import translations
from kbkit.kb.search.ranking import Ranked, add_rows

LEXICAL_WEIGHT = 0.5
"""BM25's share in the fusion (`convex_scores`); the dense ranking's is the rest. Measured against
reciprocal-rank fusion and confidence-weighted variants on three sets (docs/adr/0028,
docs/benchmarks.md): the one fusion here that is never below BM25 alone on any of them."""
KEYWORDS_LEXICAL_WEIGHT = 0.6
"""BM25's share for a query of keywords (no stop word: `pretty print json`, `ressourcen yaml`).
The vectors rank such a query worse than a sentence: on the languages' keyword questions fusion at
0.5 lost answers BM25 alone found (English 0.74 -> 0.66 success@5, German 0.96 -> 0.86). At 0.6
English gets 0.72 and German's MRR 0.75 -> 0.80, and no figure of tldr, httpx or SciFact falls;
at 0.7 and above tldr loses keyword questions the vectors answer (docs/adr/0062)."""
PASSAGE_VECTOR_WEIGHT = 0.3
"""Which passage a hybrid hit points at: of its passages, the one with the best (1 - w) x its BM25
score (relative to the page's best passage's) + w x its window's cosine with the query, w being
this. A question in plain words ("stop a timer started with SetTimer") shares few words with the
section that answers it (`KillTimer`: "Kills the timer event") and more with a neighbour; its
meaning is closer. Measured on the agent loop's named and plain-words questions at 0 (the words
alone) to 1 (the vector alone): from 0.5 up the vectors pull named questions off the member they
name (`SetTimer` for "install a timer that sends WM_TIMER"); 0.3 loses none (docs/benchmarks.md)."""


class DenseRanker(Protocol):
    """A ranking by meaning (the `semantic` extra): document ids, best first, with their similarity
    and where the text of their most similar piece starts (characters of the served text)."""

    @property
    def languages(self) -> frozenset[str] | None:
        """The languages its model was trained on; None when not known (kb/semantic/model.py)."""
        ...

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]: ...

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        """doc_id -> (where each of its passage windows' text starts, its cosine with `query`)."""
        ...

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        """The cosine of `query` with each of `texts`, embedded now (a few passages' headings)."""
        ...


def reads(dense: DenseRanker, query: str) -> bool:
    """Whether the dense ranking may speak for `query`: its model's languages are not known, the
    query is mostly in the Latin script (whose language a few words cannot tell: "no", "do" and
    "die" are English too), or mostly in a script its model was trained on. A query it cannot
    read is ranked by its words alone, as with hybrid search off (docs/adr/0061)."""
    known = dense.languages
    written = translations.mostly_written_in(query)
    return known is None or written is None or not known.isdisjoint(written)


def lexical_share(keywords: bool, lexical_weight: float | None) -> float:
    """BM25's share in the fusion: `lexical_weight` when a caller (a benchmark) gives one, else
    KEYWORDS_LEXICAL_WEIGHT for a query of keywords and LEXICAL_WEIGHT for the rest."""
    if lexical_weight is not None:
        return lexical_weight
    return KEYWORDS_LEXICAL_WEIGHT if keywords else LEXICAL_WEIGHT


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
    return ranked_by(conn, lexical, convex_scores(lexical, dense, lexical_weight=lexical_weight), pool)


def ranked_by(
    conn: sqlite3.Connection, lexical: list[Ranked], scores: dict[int, float], pool: int
) -> list[Ranked]:
    """The best `pool` documents of `scores` (doc_id -> fused score), BM25's candidates and the
    documents only the dense ranking found, each rescored; ties by path."""
    known = {hit.doc_id: hit for hit in lexical}
    add_rows(conn, known, [doc_id for doc_id in scores if doc_id not in known])
    order = sorted(
        (doc_id for doc_id in scores if doc_id in known), key=lambda d: (-scores[d], known[d].path)
    )
    return [known[doc_id].rescored(scores[doc_id]) for doc_id in order[:pool]]


HEADING_WEIGHT = 0.5
"""A second look at a hybrid hit's leading passages: of its HEADING_CANDIDATES best (by
PASSAGE_VECTOR_WEIGHT's score), the one with the best (1 - w) x that score + w x the query's cosine
with the passage's heading (its heading path and summary line, "CWnd::KillTimer Kills the timer
event identified by nIDEvent"), embedded at search time, w being this. A window's vector mixes a
member's summary with its parameters and remarks; the heading alone says what the member does,
which is what a question in plain words describes (docs/adr/0074)."""
HEADING_CANDIDATES = 5
"""Passages of a hit given the second look: on the agent loop the answer section is among the right
page's five best by words and windows for 26 of 35 plain-words questions and 35 of 37 named ones
(the best one: 15 and 30). Each costs one short model run the first time it is looked at (its
vector is then kept, `DenseRanker.text_cosines`)."""
HEADING_HITS = 1
"""Hits given the second look: the first, which an agent reads first. Each one looked at embeds up
to HEADING_CANDIDATES headings not seen before: the first three cost about four times the CPU of a
hybrid search without it on a busy 2-core machine, the first one alone about twice
(docs/benchmarks.md)."""


@dataclass(frozen=True)
class SecondLook:
    """Which hits get a second look at their leading passages' headings, and with what."""

    dense: DenseRanker
    query: str
    doc_ids: frozenset[int]
    """The first HEADING_HITS hits of the search."""


def passage_scores(
    conn: sqlite3.Connection,
    match: str,
    doc_id: int,
    windows: list[tuple[int, float]],
    pooled: dict[int, list[passages.Best]],
    weight: float,
) -> tuple[dict[int, float], list[passages.Best]]:
    """passage id -> (1 - weight) x its BM25 score (relative to the page's best passage's) +
    weight x its window's best cosine, for the passages of `doc_id` that match or have a window;
    and the matching passages, best first. BM25 scores come from the index-wide pool (`pooled`;
    a passage outside it counts 0), or from one ranged query for a hit with none there."""
    if doc_id in pooled:
        matched, starts = pooled[doc_id], passages.starts(conn, doc_id)
    else:
        matched, starts = passages.scored(conn, match, doc_id)
    top = matched[0].score if matched and matched[0].score > 0 else 1.0
    scores = {found.passage_id: (1 - weight) * found.score / top for found in matched}
    offsets = [start for start, _ in starts]
    vector: dict[int, float] = {}
    for at, cosine in windows:
        index = bisect.bisect_right(offsets, at) - 1
        if index >= 0:
            passage_id = starts[index][1]
            vector[passage_id] = max(cosine, vector.get(passage_id, -1.0))
    for passage_id, cosine in vector.items():
        scores[passage_id] = scores.get(passage_id, 0.0) + weight * cosine
    return scores, matched


def headings_looked_at(
    conn: sqlite3.Connection, look: SecondLook, scores: dict[int, float]
) -> dict[int, float]:
    """`scores`' HEADING_CANDIDATES best passages, rescored with the query's cosine with their
    headings (HEADING_WEIGHT); the others are left out: the choice is among these. Weight 0: no
    second look, `scores` as they are."""
    weight = HEADING_WEIGHT
    leading = sorted(scores, key=lambda passage_id: (-scores[passage_id], passage_id))[:HEADING_CANDIDATES]
    if not leading or weight == 0:
        return scores
    marks = ", ".join("?" * len(leading))
    headings = dict(conn.execute(f"SELECT id, heading FROM passages WHERE id IN ({marks})", leading))
    cosines = look.dense.text_cosines(look.query, [headings.get(passage_id, "") for passage_id in leading])
    return {
        passage_id: (1 - weight) * scores[passage_id] + weight * cosine
        for passage_id, cosine in zip(leading, cosines, strict=True)
    }


def vector_passages(
    conn: sqlite3.Connection,
    match: str,
    hits: list[Ranked],
    best: dict[int, passages.Best],
    cosines: dict[int, list[tuple[int, float]]],
    pooled: dict[int, list[passages.Best]],
    *,
    weight: float | None = None,
    look: SecondLook | None = None,
) -> dict[int, passages.Best]:
    """doc_id -> the passage each hit points at when its passages' vectors change the choice
    (`passage_scores`, PASSAGE_VECTOR_WEIGHT), after a second look at their headings for the hits
    `look` names (`headings_looked_at`). The caller leaves out the hits whose passage the query
    names (`names_member`): a name asked for outweighs a likeness."""
    weight = PASSAGE_VECTOR_WEIGHT if weight is None else weight
    out: dict[int, passages.Best] = {}
    for hit in hits:
        windows = cosines.get(hit.doc_id)
        if not windows:
            continue
        scores, matched = passage_scores(conn, match, hit.doc_id, windows, pooled, weight)
        if look is not None and hit.doc_id in look.doc_ids:
            scores = headings_looked_at(conn, look, scores)
        chosen = max(scores, key=lambda passage_id: (scores[passage_id], -passage_id))
        current = best.get(hit.doc_id)
        if current is not None and current.passage_id == chosen:
            continue
        found = next((item for item in matched if item.passage_id == chosen), None)
        found = found or passages.by_id(conn, chosen)
        if found is not None:
            out[hit.doc_id] = found
    return out
