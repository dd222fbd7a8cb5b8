"""`search()`: the steps of one search in order, within its time budget."""

from __future__ import annotations

from typing import TypedDict

from kbkit.errors import QueryError
from kbkit.kb import passages
from kbkit.kb.formats.registry import Registry
from kbkit.kb.search import fusion, naming, ranking, results, translations
from kbkit.kb.search.fusion import DenseRanker
from kbkit.kb.search.query import compile_query
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
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    if max_tokens is not None and max_tokens < MIN_MAX_TOKENS:
        raise QueryError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
    compiled = compile_query(query)
    if dense is not None and not fusion.reads(dense, query):
        dense = None
    prefix = (path_prefix or "").lstrip("/")
    try:
        prefix.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("path_prefix is not valid Unicode (it holds a lone surrogate)") from None
    pool = max(limit + FOLD_MARGIN, POOL)
    conn = store.reader()
    budget_seconds = SEARCH_SECONDS if seconds is None else seconds
    deadline = Deadline(conn, budget_seconds)
    try:
        with deadline:
            pool_passages = passages.pooled(conn, compiled.match, PASSAGE_POOL, prefix=prefix)
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
                share = fusion.lexical_share(compiled.keywords, lexical_weight)
                ranked = fusion.fuse(conn, ranked, cosines, pool, lexical_weight=share)
                if ranking.on("change logs"):
                    ranked = ranking.changelogs_demoted(ranked)
            ranked = ranking.exact(ranked, query)
            ranked, _ = translations.fold(ranked, translations.spoken(conn, query, compiled.terms, ranked))
            if ranking.on("near copies"):
                hits, folded = ranking.fold(conn, ranked, limit)
            else:
                hits, folded = ranked[:limit], {}
            translated = translations.other_languages(conn, hits, limit)
            targets = naming.targets(query)
            best |= naming.chosen(pool_passages, [hit.doc_id for hit in hits], targets)
            missing = [hit.doc_id for hit in hits if hit.doc_id not in best]
            best |= passages.best_in(conn, compiled.match, missing)
            if dense is not None and near:
                named = {
                    doc_id for doc_id, found in best.items() if naming.names_member(found.section, targets)
                }
                unnamed = [hit for hit in hits if hit.doc_id not in named]
                windows = dense.passage_cosines(query, [hit.doc_id for hit in unnamed])
                best |= fusion.vector_passages(conn, compiled.match, unnamed, best, windows, pool_passages)
            shown = snippets(conn, hits, best, marker(compiled.terms, compiled.runs), registry)
            also = results.other_sections(pool_passages, best, [hit.doc_id for hit in hits])
    except SqliteError as exc:
        if deadline.expired:
            raise QueryError(
                f"the search ran past its {budget_seconds:g} s budget and was stopped; "
                "use more specific words or a path_prefix"
            ) from None
        raise index_error(exc, "the search could not run against", store.path) from None

    result, notes = results.shaped(
        hits,
        best=best,
        snippets=shown,
        folded=folded,
        translated=translated,
        also=also,
        servable=set(registry.extensions),
        max_tokens=max_tokens,
        compiled=compiled,
    )
    if not hits:
        with store.translated("the search could not run against"):
            notes.append(results.why_empty(conn, compiled, prefix))
    result.note = "; ".join(notes) or None
    return result
