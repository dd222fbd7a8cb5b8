"""Ranked search over the FTS5 index.

`compile_query()` is the one place user text becomes an FTS5 MATCH expression: words are
lower-cased, English stop-words dropped, and each remaining word quoted and OR-joined, so no
input (quotes, operators, parentheses, 10 KB of prose) can be an FTS5 syntax error, and a
natural-language question still ranks the documents sharing most of its words first (BM25).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from kbkit.errors import QueryError
from kbkit.kb.parsers import Registry
from kbkit.kb.store import SqliteError, Store, index_error
from kbkit.kb.uris import doc_uri

MAX_TERMS = 64
"""At most this many distinct words of a query are searched; the rest are dropped with a note."""
MAX_LIMIT = 100
DEFAULT_LIMIT = 10
DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 50
COLUMN_WEIGHTS = (1.5, 1.0, 1.0)
"""BM25 weights of the title, headings and body columns: a title match counts a little more. On
SciFact any weights from equal to 1.5 for titles score alike (docs/benchmarks.md)."""

# Lucene's English stop set plus a few question words that carry no topic.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with what which who whom how why when where do does did i you we can "
    "should would could my our your".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class CompiledQuery:
    match: str
    terms: tuple[str, ...]
    dropped_terms: int = 0


@dataclass
class Hit:
    path: str
    title: str
    score: float
    snippet: str
    uri: str | None = None


@dataclass
class SearchResult:
    results: list[Hit] = field(default_factory=list)
    note: str | None = None
    truncated: bool = False
    """True when `max_tokens` cut the list short of `limit` hits."""

    def to_dict(self) -> dict[str, Any]:
        hits = []
        for hit in self.results:
            item = asdict(hit)
            if item["uri"] is None:
                del item["uri"]
            hits.append(item)
        out: dict[str, Any] = {"results": hits, "truncated": self.truncated}
        if self.note:
            out["note"] = self.note
        return out


def compile_query(text: str) -> CompiledQuery:
    """User text -> a MATCH expression that FTS5 always accepts."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty; pass a few words describing what you are looking for")
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        raise QueryError("the query has no words to search for (only punctuation); try some words")
    kept = [w for w in words if w not in STOP_WORDS] or words
    unique = list(dict.fromkeys(kept))
    terms = unique[:MAX_TERMS]
    match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return CompiledQuery(match=match, terms=tuple(terms), dropped_terms=len(unique) - len(terms))


def search_sql(with_prefix: bool) -> str:
    """The ranking query `search` runs (tests pin its weights and prefix filter)."""
    prefix = "AND substr(d.path, 1, :prefix_len) = :prefix " if with_prefix else ""
    return (
        "SELECT d.id, d.path, d.title, d.ext, "
        "-bm25(documents_fts, :w_title, :w_headings, :w_body) AS score "
        "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
        f"WHERE documents_fts MATCH :match {prefix}"
        "ORDER BY score DESC, d.path LIMIT :limit"
    )


_SNIPPET_SQL = (
    "SELECT rowid, title, highlight(documents_fts, 2, char(1), char(2)) FROM documents_fts "
    "WHERE documents_fts MATCH ? AND rowid IN ({ids})"
)
"""FTS5's highlight() is linear in a document's length; its snippet() is not, and on long pages full
of matches it was most of the search time (docs/benchmarks.md). The window is chosen below."""
_MARK = re.compile("\x01([^\x02]*)\x02")
SNIPPET_CHARS = 160


def snippet_window(marked: str | None, title: str) -> str:
    """The stretch of the highlighted body holding the most distinct matched words, marked **so**."""
    marks = [(m.start(), m.end(), m.group(1).lower()) for m in _MARK.finditer(marked or "")]
    if not marks or marked is None:
        return title
    best, ahead = (0, 0), 0
    counts: dict[str, int] = {}
    for index, (start, _, word) in enumerate(marks):
        while ahead < len(marks) and marks[ahead][1] <= start + SNIPPET_CHARS:
            counts[marks[ahead][2]] = counts.get(marks[ahead][2], 0) + 1
            ahead += 1
        if len(counts) > best[0]:
            best = (len(counts), index)
        if word in counts:
            counts[word] -= 1
            if not counts[word]:
                del counts[word]
    begin = max(0, marks[best[1]][0] - 30)
    begin = marked.rfind(" ", 0, begin) + 1 if begin else 0
    end = marked.find(" ", min(len(marked), begin + SNIPPET_CHARS + 30))
    end = len(marked) if end < 0 else end
    text = " ".join(marked[begin:end].replace("\x01", "**").replace("\x02", "**").split())
    return ("…" if begin else "") + text + ("…" if end < len(marked) else "")


class SearchOptions(TypedDict, total=False):
    """`search`'s keyword options, for callers that pass them through."""

    limit: int
    path_prefix: str | None
    max_tokens: int | None


def search(
    store: Store,
    registry: Registry,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    path_prefix: str | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
) -> SearchResult:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    if max_tokens is not None and max_tokens < MIN_MAX_TOKENS:
        raise QueryError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
    compiled = compile_query(query)
    prefix = (path_prefix or "").lstrip("/")
    try:
        prefix.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("path_prefix is not valid Unicode (it holds a lone surrogate)") from None
    params = {
        "match": compiled.match,
        "w_title": COLUMN_WEIGHTS[0],
        "w_headings": COLUMN_WEIGHTS[1],
        "w_body": COLUMN_WEIGHTS[2],
        "limit": limit,
    }
    if prefix:
        params |= {"prefix": prefix, "prefix_len": len(prefix)}
    conn = store.reader()
    try:
        rows = conn.execute(search_sql(bool(prefix)), params).fetchall()
        snippets = {}
        if rows:
            sql = _SNIPPET_SQL.format(ids=",".join(str(row[0]) for row in rows))
            snippets = {
                rowid: snippet_window(marked, title)
                for rowid, title, marked in conn.execute(sql, (compiled.match,))
            }
    except SqliteError as exc:
        raise index_error(exc, "the search could not run against", store.path) from None

    result = SearchResult()
    notes = []
    if compiled.dropped_terms:
        notes.append(
            f"the query was cut to its first {MAX_TERMS} distinct words "
            f"({compiled.dropped_terms} more ignored)"
        )
    servable = set(registry.extensions)
    budget = max_tokens
    for doc_id, path, title, ext, score in rows:
        hit = Hit(
            path=path,
            title=title,
            score=round(score, 4),
            snippet=snippets.get(doc_id, title),
            uri=doc_uri(path) if ext in servable else None,
        )
        cost = estimate_tokens(asdict(hit))
        if budget is not None and cost > budget and result.results:
            result.truncated = True
            notes.append(
                f"max_tokens={max_tokens} cut the list at {len(result.results)} of {len(rows)} hits; "
                "raise max_tokens or lower limit"
            )
            break
        if budget is not None:
            budget -= cost
        result.results.append(hit)
    if not rows:
        with store.translated("the search could not run against"):
            notes.append(_why_empty(conn, compiled, prefix))
    result.note = "; ".join(notes) or None
    return result


def estimate_tokens(value: object) -> int:
    """A cheap, conservative token estimate: about four characters of JSON per token."""
    return len(json.dumps(value, ensure_ascii=False)) // 4 + 1


def _why_empty(conn: sqlite3.Connection, compiled: CompiledQuery, prefix: str) -> str:
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    if total == 0:
        return "the index holds no documents yet; check [kb] path in kbkit.toml and run `kbkit index`"
    if prefix:
        under = conn.execute(
            "SELECT count(*) FROM documents WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
        ).fetchone()[0]
        if under == 0:
            return f"no indexed document's path starts with {prefix!r}; drop path_prefix or fix it"
    words = ", ".join(compiled.terms[:10])
    return f"no document contains any of the words: {words}; try other words or synonyms"
