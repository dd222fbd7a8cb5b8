"""`search()`: the steps of one search in order, within its time budget."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypedDict

from kbkit.errors import QueryError
from kbkit.kb import passages
from kbkit.kb.formats.registry import Registry
from kbkit.kb.search import fusion, naming, ranking, results, translations
from kbkit.kb.search.fusion import DenseRanker
from kbkit.kb.search.query import CompiledQuery, compile_query
from kbkit.kb.search.snippets import marker, snippets
from kbkit.kb.store import Deadline, SqliteError, Store, index_error

MAX_LIMIT = 100
DEFAULT_LIMIT = 10
DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 50
FOLD_MARGIN = 10
"""Candidates ranked beyond `limit`, so folding copies away still leaves `limit` hits."""
POOL = 100
"""At least this many BM25 candidates are weighed by the reference prior before the cut to `limit`."""
PASSAGE_POOL = 300
"""The best-matching passages of the whole index weighed beside the documents' own scores."""
PASSAGE_FLOOR = 50
"""The fewest passages pooled in an index searched beside others (`rank`'s `share`)."""
SEARCH_SECONDS = 10.0
"""A search's time budget. The work per hit is bounded (snippet windows, marks); what is left is
SQLite's ranking, which the budget stops: the caller gets a QueryError saying how to narrow it."""


class SearchOptions(TypedDict, total=False):
    """`search`'s keyword options, for callers that pass them through."""

    limit: int
    path_prefix: str | None
    max_tokens: int | None
    seconds: float | None
    lexical_weight: float | None
    """BM25's share when a dense ranking is fused in (None: fusion.lexical_share; benchmarks vary it)."""


@dataclass
class Ranking:
    """One index's ranking of a query, before its hits are shaped: what `shape` needs to serve any
    of them, in any thread. Several indexes (a kb with restricted folders) each rank, the best hits
    of all are chosen, and only those are shaped (snippets, sections), each by its own index."""

    store: Store
    registry: Registry
    query: str
    compiled: CompiledQuery
    prefix: str
    dense: DenseRanker | None
    near: list[tuple[int, float, int]]
    seconds: float
    pool_passages: dict[int, list[passages.Best]]
    best: dict[int, passages.Best]
    hits: list[ranking.Ranked]
    folded: dict[int, list[str]]
    translated: dict[int, list[str]]


def search(
    store: Store,
    registry: Registry,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    path_prefix: str | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    dense: DenseRanker | None = None,
    seconds: float | None = None,
    lexical_weight: float | None = None,
) -> results.SearchResult:
    """Rank the documents matching `query`; `seconds` is the time budget (SEARCH_SECONDS)."""
    if max_tokens is not None and max_tokens < MIN_MAX_TOKENS:
        raise QueryError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
    ranked = rank(
        store,
        registry,
        query,
        limit=limit,
        path_prefix=path_prefix,
        dense=dense,
        seconds=seconds,
        lexical_weight=lexical_weight,
    )
    return shape(ranked, ranked.hits, max_tokens=max_tokens)


def rank(
    store: Store,
    registry: Registry,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    path_prefix: str | None = None,
    dense: DenseRanker | None = None,
    seconds: float | None = None,
    lexical_weight: float | None = None,
    share: float = 1.0,
) -> Ranking:
    """The first step of a search: the best `limit` documents, copies and translations folded.
    `share`: this index's part of the documents searched together (several indexes, one search):
    its pools shrink to match, so the search weighs as many candidates as one index would."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    compiled = compile_query(query)
    if dense is not None and not fusion.reads(dense, query):
        dense = None
    prefix = (path_prefix or "").lstrip("/")
    try:
        prefix.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("path_prefix is not valid Unicode (it holds a lone surrogate)") from None
    pool = max(limit + FOLD_MARGIN, round(POOL * share))
    passage_pool = max(PASSAGE_FLOOR, round(PASSAGE_POOL * share))
    conn = store.reader()
    budget_seconds = SEARCH_SECONDS if seconds is None else seconds
    with _budget(conn, budget_seconds, store):
        pool_passages = passages.pooled(conn, compiled.match, passage_pool, prefix=prefix)
        best = {doc_id: found[0] for doc_id, found in pool_passages.items()}
        lexical = ranking.lexical(conn, compiled.match, prefix, pool)
        ranked = ranking.combined(conn, lexical, best, pool)
        if ranking.on("named titles"):
            ranked = naming.named_titles(ranked, compiled.stems)
        if ranking.on("references"):
            ranked = ranking.referenced(conn, ranked, keywords=compiled.keywords)
        if ranking.on("change logs"):
            ranked = ranking.changelogs_demoted(ranked)
        near = dense.rank(query, pool, path_prefix=prefix) if dense is not None else []
        if dense is not None:
            cosines = [(doc_id, cosine) for doc_id, cosine, _ in near]
            weight = fusion.lexical_share(compiled.keywords, lexical_weight)
            ranked = fusion.fuse(conn, ranked, cosines, pool, lexical_weight=weight)
            if ranking.on("change logs"):
                ranked = ranking.changelogs_demoted(ranked)
        ranked = ranking.exact(ranked, query)
        ranked, _ = translations.fold(ranked, translations.spoken(conn, query, compiled.terms, ranked))
        if ranking.on("near copies"):
            hits, folded = ranking.fold(conn, ranked, limit)
        else:
            hits, folded = ranked[:limit], {}
        languages = translations.other_languages(conn, hits, limit, translated=translations.has_copies(store))
    return Ranking(
        store=store,
        registry=registry,
        query=query,
        compiled=compiled,
        prefix=prefix,
        dense=dense,
        near=near,
        seconds=budget_seconds,
        pool_passages=pool_passages,
        best=best,
        hits=hits,
        folded=folded,
        translated=languages,
    )


def shape(
    ranked: Ranking, hits: list[ranking.Ranked], *, max_tokens: int | None, top: float | None = None
) -> results.SearchResult:
    """The second step: `hits` (some of `ranked.hits`, best first) as served: each its section,
    snippet and other sections, cut to `max_tokens`; scores relative to `top` (default: the first's)."""
    conn, compiled, best = ranked.store.reader(), ranked.compiled, dict(ranked.best)  # this thread's
    dense, pool_passages = ranked.dense, ranked.pool_passages
    with _budget(conn, ranked.seconds, ranked.store):
        targets = naming.targets(ranked.query)
        best |= naming.chosen(pool_passages, [hit.doc_id for hit in hits], targets)
        missing = [hit.doc_id for hit in hits if hit.doc_id not in best]
        best |= passages.best_in(conn, compiled.match, missing)
        if dense is not None and ranked.near:
            named = {doc_id for doc_id, found in best.items() if naming.names_member(found.section, targets)}
            unnamed = [hit for hit in hits if hit.doc_id not in named]
            windows = dense.passage_cosines(ranked.query, [hit.doc_id for hit in unnamed])
            first = frozenset(hit.doc_id for hit in hits[: fusion.HEADING_HITS])
            look = fusion.SecondLook(dense, ranked.query, first)
            best |= fusion.vector_passages(
                conn, compiled.match, unnamed, best, windows, pool_passages, look=look
            )
        shown = snippets(conn, hits, best, marker(compiled.terms, compiled.runs), ranked.registry)
        also = results.other_sections(pool_passages, best, [hit.doc_id for hit in hits])
    result = results.shaped(
        hits,
        best=best,
        snippets=shown,
        folded=ranked.folded,
        translated=ranked.translated,
        also=also,
        servable=set(ranked.registry.extensions),
        max_tokens=max_tokens,
        compiled=compiled,
        top=top,
    )
    if not ranked.hits:
        with ranked.store.translated("the search could not run against"):
            result.empty_note = results.why_empty(conn, compiled, ranked.prefix)
        result.note = "; ".join([*([result.note] if result.note else []), result.empty_note])
    return result


@contextmanager
def _budget(conn: sqlite3.Connection, seconds: float, store: Store) -> Iterator[None]:
    """SQLite's work inside stops at `seconds` with a QueryError saying how to narrow the search;
    any other SQLite error is the index's (`index_error`)."""
    deadline = Deadline(conn, seconds)
    try:
        with deadline:
            yield
    except SqliteError as exc:
        if deadline.expired:
            raise QueryError(
                f"the search ran past its {seconds:g} s budget and was stopped; "
                "use more specific words or a path_prefix"
            ) from None
        raise index_error(exc, "the search could not run against", store.path) from None
