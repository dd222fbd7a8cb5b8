"""Ranked search over the FTS5 index.

`search()` ranks with BM25 over weighted fields (`fields.COLUMNS`) plus each document's best
passage (kbkit/kb/passages.py: a long page whose one section answers competes), folds copies of a
page (same file name and title in another folder, or the same bytes) into the best-ranked one,
optionally fuses a dense ranking (`[search] semantic`: a convex combination of normalised
scores), and reports scores relative to the best hit, so 1.0 is the top hit and 0.5 half as good,
on any corpus size. Each hit names the section of its best passage, where a read of it starts, and
takes its snippet from it (docs/adr/0026); with hybrid on, the passage its BM25 score and its
vector favour together, after a second look at the headings of the best few (docs/adr/0057, 0074).

One module per concern, each importing only those before it: `query` (user text -> MATCH),
`ranking` (BM25, passages, the reference prior, folding), `naming` (what a query names),
`fusion` (the dense ranking), `snippets`, `results` (what is served), `core` (`search()`).
"""

from kbkit.kb.search.core import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_TOKENS,
    MAX_LIMIT,
    MIN_MAX_TOKENS,
    SEARCH_SECONDS,
    Ranking,
    SearchOptions,
    rank,
    search,
    shape,
)
from kbkit.kb.search.fusion import DenseRanker
from kbkit.kb.search.naming import named, names_member
from kbkit.kb.search.query import MAX_TERMS, STOP_WORDS, CompiledQuery, compile_query
from kbkit.kb.search.ranking import search_sql
from kbkit.kb.search.results import Hit, SearchResult
from kbkit.kb.search.snippets import SNIPPET_CHARS, SNIPPET_SCAN_CHARS, marker, snippet_window

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_TOKENS",
    "MAX_LIMIT",
    "MAX_TERMS",
    "MIN_MAX_TOKENS",
    "SEARCH_SECONDS",
    "SNIPPET_CHARS",
    "SNIPPET_SCAN_CHARS",
    "STOP_WORDS",
    "CompiledQuery",
    "DenseRanker",
    "Hit",
    "Ranking",
    "SearchOptions",
    "SearchResult",
    "compile_query",
    "marker",
    "named",
    "names_member",
    "rank",
    "search",
    "shape",
    "search_sql",
    "snippet_window",
]
