"""Ranked search over the FTS5 index.

`compile_query()` is the one place user text becomes an FTS5 MATCH expression: words are
lower-cased, English stop-words dropped, and each remaining word quoted and OR-joined, so no
input (quotes, operators, parentheses, 10 KB of prose) can be an FTS5 syntax error, and a
natural-language question still ranks the documents sharing most of its words first (BM25).

`search()` ranks with BM25 over weighted fields (`fields.COLUMNS`) plus each document's best
passage (kbkit/kb/passages.py: a long page whose one section answers competes), folds copies of a
page (same file name and title in another folder, or the same bytes) into the best-ranked one,
optionally fuses a dense ranking (`[search] semantic`: a convex combination of normalised
scores, `fusion_scores`), and reports scores relative to the best
hit, so 1.0 is the top hit and 0.5 half as good, on any corpus size. Each hit names the section of
its best passage, where a read of it starts, and takes its snippet from it (docs/adr/0026); with
hybrid on, the passage holding its best vector when that evidence is the stronger (docs/adr/0028).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from typing import Any, Protocol, TypedDict

from kbkit.errors import QueryError
from kbkit.kb import passages
from kbkit.kb.fields import COLUMNS, reference_counts, stem
from kbkit.kb.formats.registry import Registry
from kbkit.kb.sections import SEPARATOR
from kbkit.kb.store import Deadline, SqliteError, Store, index_error
from kbkit.kb.tokens import estimate_tokens
from kbkit.kb.uris import doc_uri
from kbkit.kb.words import split_words

MAX_TERMS = 64
"""At most this many distinct words of a query are searched; the rest are dropped with a note."""
MAX_LIMIT = 100
DEFAULT_LIMIT = 10
DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 50
COLUMN_WEIGHTS = {"title": 1.5, "name": 2.0, "description": 1.5, "tags": 1.5, "headings": 1.0, "body": 1.0}
"""BM25 weights of the fields (docs/benchmarks.md has the measurements behind them)."""
FOLD_MARGIN = 10
"""Candidates ranked beyond `limit`, so folding copies away still leaves `limit` hits."""
POOL = 100
"""At least this many BM25 candidates are weighed by the reference prior before the cut to `limit`."""
PASSAGE_POOL = 300
"""The best-matching passages of the whole index weighed beside the documents' own scores."""
PASSAGE_WEIGHT = 1.5
"""A document's best passage score (relative to the best passage's) counts this much beside its
own BM25 score (relative to the best document's); docs/adr/0026 has the measurements."""
NAMED_TITLE_BOOST = 1.2
"""A document whose title the query names whole (`named`: "list Class" for "std::list: what type
...") has its score multiplied by this, before the reference prior: a question about a class's
member is about that class's page, not a sibling page sharing its words (docs/adr/0026)."""
NAMED_PASSAGES = 3
NAMED_SHARE = 0.8
"""Among a document's first NAMED_PASSAGES candidates scoring at least NAMED_SHARE of the best,
the first whose heading path names a member the query names whole (`multimap::insert` for
"multimap insert with a hint") is chosen over one that only shares words (`emplace_hint`)."""
REFERENCE_WEIGHT = 0.3
"""The reference prior: a hit's BM25 score is multiplied by 1 + 0.3 ln(1 + n), n being how many
other documents name it (a `name` code span or a relative link to it). The page others point at
(`chmod`, a team's main runbook) outranks rarer pages that only share a word with the query
(docs/adr/0024 and docs/benchmarks.md have the measurements)."""

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
    stems: frozenset[str] = frozenset()
    """The query's words as the naming rules compare them (`named`): names split, rough stems."""


@dataclass
class Hit:
    path: str
    title: str
    score: float
    """Relevance relative to the best hit of this search: 1.0 for the first, lower below it."""
    section: str
    """The heading path of the section the best-matching passage is in ("" before any heading)."""
    offset: int
    """Where that section starts in the text get_document serves (characters): read from here."""
    snippet: str
    uri: str | None = None
    folded: list[str] = field(default_factory=list)
    """Paths of near-copies of this hit (same file name and title, or same bytes) left out below it."""

    def to_dict(self) -> dict[str, Any]:
        item = asdict(self)
        if item["uri"] is None:
            del item["uri"]
        if not item["folded"]:
            del item["folded"]
        return item


@dataclass
class SearchResult:
    results: list[Hit] = field(default_factory=list)
    note: str | None = None
    truncated: bool = False
    """True when `max_tokens` cut the list short of `limit` hits."""

    def to_dict(self) -> dict[str, Any]:
        hits = []
        for hit in self.results:
            hits.append(hit.to_dict())
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
    return CompiledQuery(
        match=match,
        terms=tuple(terms),
        dropped_terms=len(unique) - len(terms),
        stems=frozenset(_stems(text)),
    )


KIND_WORDS = frozenset("class struct structure namespace function functions members enum union".split())
"""Words a reference page's title adds to the name it documents ("list Class", "concurrency
namespace functions"): left out when asking whether a query names a title."""


def _stems(text: str) -> Iterator[str]:
    """The words of `text` as the naming rules compare them: names split as words.split_words
    splits them (a camelCase word also kept whole), lower-cased, stop words and KIND_WORDS left
    out, common endings dropped (`_rough_stem`)."""
    for word in _WORD.findall(split_words(text)):
        word = word.lower()
        if word not in STOP_WORDS and word not in KIND_WORDS:
            yield _rough_stem(word)


def named(name: str, stems: frozenset[str]) -> bool:
    """Whether a query (its `stems`) names `name` whole: `name` has words and every one of them
    is among the query's. "CComboBox::Create: which style..." names the page "CComboBox Class",
    "multimap insert with a hint" names `multimap::insert` and "hash_map lower_bound" names
    `hash_map::lower_bound` (or "hash map lower bound": snake_case is split). A camelCase word
    counts whole: "get the text alignment" does not name `GetTextAlign`, since its parts (Get,
    Set, Send, Message) are common enough to name the wrong member: "install a timer that sends
    WM_TIMER messages" would name `SendMessage` (docs/benchmarks.md)."""
    seen = False
    for stem_ in _stems(name):
        if stem_ not in stems:
            return False
        seen = True
    return seen


def search_sql(with_prefix: bool) -> str:
    """The ranking query `search` runs (tests pin its weights and prefix filter)."""
    prefix = "AND substr(d.path, 1, :prefix_len) = :prefix " if with_prefix else ""
    weights = ", ".join(f":w_{name}" for name in COLUMNS)
    return (
        "SELECT d.id, d.path, d.title, d.ext, d.sha256, "
        f"-bm25(documents_fts, {weights}) AS score "
        "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
        f"WHERE documents_fts MATCH :match {prefix}"
        "ORDER BY score DESC, d.path LIMIT :limit"
    )


SNIPPET_SCAN_CHARS = 64 * 1024
"""At most this many characters of a hit's passage are scanned for its snippet window, so a page
dense with the query word costs no more than any other."""
MAX_MARKS = 4096
"""At most this many matched words of a hit are weighed when choosing its snippet window."""
SNIPPET_CHARS = 160
_FALLBACK_SQL = "SELECT rowid, title, description FROM documents_fts WHERE rowid IN ({ids})"
"""Snippets are found in Python with one C-level regex over a bounded window of the hit's best
passage. FTS5's snippet() was most of the search time on long pages (docs/benchmarks.md), and its
highlight() is quadratic in the number of matches in a document (49 s for a 1 MiB page made of the
query word)."""
_SUFFIXES: tuple[str, ...] = ("ational", "ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied")
_SUFFIXES += ("ers", "er", "ed", "es", "ly", "s", "e", "y")


def _rough_stem(term: str) -> str:
    """`term` without a common English ending, so its snippet marks other forms of the word too
    (deploy: deploys, deployed, deployment). Marks only: ranking uses FTS5's Porter stemmer."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def marker(terms: tuple[str, ...]) -> re.Pattern[str]:
    """A pattern finding the words of a text that match the query's terms (or other forms of them)."""
    stems = sorted({_rough_stem(term) for term in terms}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(stem) for stem in stems) + r")\w*", re.IGNORECASE)


def snippet_window(text: str | None, pattern: re.Pattern[str], fallback: str) -> str:
    """The stretch of `text` holding the most distinct matched words, marked **so**.

    `text` is at most SNIPPET_SCAN_CHARS long and at most MAX_MARKS matches are weighed; with no
    match in it (the words were in the title or file name), the page's opening or `fallback`
    stands in."""
    text = text or ""
    marks = [(m.start(), m.end(), m.group(0).lower()) for m in islice(pattern.finditer(text), MAX_MARKS)]
    if not marks:
        opening = " ".join(text[: SNIPPET_CHARS * 2].split())
        if not opening:
            return fallback
        return opening[:SNIPPET_CHARS] + ("…" if len(opening) > SNIPPET_CHARS else "")
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
    begin = text.rfind(" ", 0, begin) + 1 if begin else 0
    end = text.find(" ", min(len(text), begin + SNIPPET_CHARS + 30))
    end = len(text) if end < 0 else end
    parts, pos = [], begin
    for start, stop, _ in marks[best[1] :]:
        if start >= end:
            break
        if start >= pos:
            parts += [text[pos:start], "**", text[start : min(stop, end)], "**"]
            pos = min(stop, end)
    parts.append(text[pos:end])
    window = " ".join("".join(parts).split())
    return ("…" if begin else "") + window + ("…" if end < len(text) else "")


@dataclass(frozen=True)
class _Ranked:
    doc_id: int
    path: str
    title: str
    ext: str
    sha256: str
    score: float


class DenseRanker(Protocol):
    """A ranking by meaning (the `semantic` extra): document ids, best first, with their similarity
    and where the text of their most similar piece starts (characters of the served text)."""

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]: ...


DENSE_PASSAGE_MARGIN = 0.5
"""A hybrid hit points at the passage holding its best vector, not at its best lexical passage, when
that vector's score (min-max normalised over the dense candidates) beats the lexical passage's BM25
score (relative to the best passage's) by more than this: a page found by meaning where no passage
holds the query's words, or only weakly. On the agent loop 0.5 reads as many answers as always
taking the lexical passage, 0 and 0.25 fewer, always the vector's far fewer (docs/benchmarks.md)."""


LEXICAL_WEIGHT = 0.5
"""BM25's share in the fusion (`convex_scores`); the dense ranking's is the rest. Measured against
reciprocal-rank fusion and confidence-weighted variants on three sets (docs/adr/0028,
docs/benchmarks.md): the one fusion here that is never below BM25 alone on any of them."""


SEARCH_SECONDS = 10.0
"""A search's time budget. The work per hit is bounded (snippet windows, marks); what is left is
SQLite's ranking, which the budget stops: the caller gets a QueryError saying how to narrow it."""


class SearchOptions(TypedDict, total=False):
    """`search`'s keyword options, for callers that pass them through."""

    limit: int
    path_prefix: str | None
    max_tokens: int | None
    seconds: float | None


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
) -> SearchResult:
    """Rank the documents matching `query`; `seconds` is the time budget (SEARCH_SECONDS)."""
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
    pool = max(limit + FOLD_MARGIN, POOL)
    conn = store.reader()
    budget_seconds = SEARCH_SECONDS if seconds is None else seconds
    deadline = Deadline(conn, budget_seconds)
    try:
        with deadline:
            pool_passages = passages.pooled(conn, compiled.match, PASSAGE_POOL, prefix=prefix)
            best = {doc_id: found[0] for doc_id, found in pool_passages.items()}
            ranked = _combined(conn, _lexical(conn, compiled, prefix, pool), best, pool)
            ranked = _named_titles(ranked, compiled.stems)
            ranked = _referenced(conn, ranked)
            top_passage = max((found.score for found in best.values()), default=0.0) or 1.0
            near = dense.rank(query, pool, path_prefix=prefix) if dense is not None else []
            if dense is not None:
                ranked = _fuse(conn, ranked, [(doc_id, cosine) for doc_id, cosine, _ in near], pool)
            hits, folded = _fold(ranked)
            hits = hits[:limit]
            best |= _chosen(pool_passages, [hit.doc_id for hit in hits], compiled.stems)
            missing = [hit.doc_id for hit in hits if hit.doc_id not in best]
            best |= passages.best_in(conn, compiled.match, missing)
            if near:
                named = {
                    doc_id for doc_id, found in best.items() if names_member(found.section, compiled.stems)
                }
                best |= _dense_passages(
                    conn, [hit for hit in hits if hit.doc_id not in named], best, near, top_passage
                )
            snippets = _snippets(conn, hits, best, marker(compiled.terms))
    except SqliteError as exc:
        if deadline.expired:
            raise QueryError(
                f"the search ran past its {budget_seconds:g} s budget and was stopped; "
                "use more specific words or a path_prefix"
            ) from None
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
    top = hits[0].score if hits and hits[0].score > 0 else 1.0
    shown_folds = 0
    for ranked_hit in hits:
        hit = Hit(
            path=ranked_hit.path,
            title=ranked_hit.title,
            score=round(ranked_hit.score / top, 3),
            section=best[ranked_hit.doc_id].section if ranked_hit.doc_id in best else "",
            offset=best[ranked_hit.doc_id].anchor if ranked_hit.doc_id in best else 0,
            snippet=snippets.get(ranked_hit.doc_id, ranked_hit.title),
            uri=doc_uri(ranked_hit.path) if ranked_hit.ext in servable else None,
            folded=folded.get(ranked_hit.doc_id, []),
        )
        cost = estimate_tokens(hit.to_dict())
        if budget is not None and cost > budget and result.results:
            result.truncated = True
            notes.append(
                f"max_tokens={max_tokens} cut the list at {len(result.results)} of {len(hits)} hits; "
                "raise max_tokens or lower limit"
            )
            break
        if budget is not None:
            budget -= cost
        result.results.append(hit)
        shown_folds += len(hit.folded)
    if shown_folds:
        notes.append(
            f"{shown_folds} near-copies (same file name and title, or same content) were folded into "
            "the hit ranked above them; each hit's `folded` lists them"
        )
    if not hits:
        with store.translated("the search could not run against"):
            notes.append(_why_empty(conn, compiled, prefix))
    result.note = "; ".join(notes) or None
    return result


def _lexical(conn: sqlite3.Connection, compiled: CompiledQuery, prefix: str, pool: int) -> list[_Ranked]:
    params: dict[str, object] = {f"w_{name}": COLUMN_WEIGHTS[name] for name in COLUMNS}
    params |= {"match": compiled.match, "limit": pool}
    if prefix:
        params |= {"prefix": prefix, "prefix_len": len(prefix)}
    return [_Ranked(*row) for row in conn.execute(search_sql(bool(prefix)), params)]


def _combined(
    conn: sqlite3.Connection, lexical: list[_Ranked], best: dict[int, passages.Best], pool: int
) -> list[_Ranked]:
    """Each document's BM25 score and its best passage's, each relative to the best of its kind,
    added up (the passage's at PASSAGE_WEIGHT): a long page whose one section answers the query
    competes with pages that match all over. Documents found only by a passage join the ranking."""
    top_doc = max((hit.score for hit in lexical), default=0.0) or 1.0
    top_passage = max((found.score for found in best.values()), default=0.0) or 1.0
    known = {hit.doc_id: hit for hit in lexical}
    _add_rows(conn, known, [doc_id for doc_id in best if doc_id not in known])
    scores = {doc_id: hit.score / top_doc for doc_id, hit in known.items()}
    for doc_id, found in best.items():
        if doc_id in scores:
            scores[doc_id] += PASSAGE_WEIGHT * found.score / top_passage
    order = sorted(scores, key=lambda doc_id: (-scores[doc_id], known[doc_id].path))
    return [_replace_score(known[doc_id], scores[doc_id]) for doc_id in order[:pool]]


def _named_titles(ranked: list[_Ranked], stems: frozenset[str]) -> list[_Ranked]:
    """`ranked` with the score of each document whose title the query names (`named`) raised by
    NAMED_TITLE_BOOST, in its new order."""
    raised = [
        _replace_score(hit, hit.score * NAMED_TITLE_BOOST) if named(hit.title, stems) else hit
        for hit in ranked
    ]
    return sorted(raised, key=lambda hit: (-hit.score, hit.path))


def _chosen(
    pool: dict[int, list[passages.Best]], doc_ids: list[int], stems: frozenset[str]
) -> dict[int, passages.Best]:
    """doc_id -> the passage each hit points at: among its passages in the index-wide pool (best
    first), the first of the leading ones whose heading path names a member the query names whole
    (`names_member`), else the best. No query: at most NAMED_PASSAGES headings looked at a hit."""
    chosen = {}
    for doc_id in doc_ids:
        found = pool.get(doc_id)
        if found:
            leading = [item for item in found[:NAMED_PASSAGES] if item.score >= NAMED_SHARE * found[0].score]
            chosen[doc_id] = next((item for item in leading if names_member(item.section, stems)), found[0])
    return chosen


def names_member(section: str, stems: frozenset[str]) -> bool:
    """Whether a query names a member a heading path is about: a heading below the page's title
    whose name (after its last `::`) the query names whole (`named`), unless the page's title
    names it too (a class's constructor, `deque::deque`, is named by every question on `deque`)."""
    title, *headings = section.split(SEPARATOR)
    title_stems = frozenset(_stems(title))
    for heading in headings:
        name = heading.rsplit("::", 1)[-1]
        if named(name, stems) and not named(name, title_stems):
            return True
    return False


def _add_rows(conn: sqlite3.Connection, known: dict[int, _Ranked], doc_ids: list[int]) -> None:
    """Add the documents `doc_ids` to `known`, with score 0."""
    for start in range(0, len(doc_ids), 500):
        ids = ",".join(str(doc_id) for doc_id in doc_ids[start : start + 500])
        for row in conn.execute(f"SELECT id, path, title, ext, sha256 FROM documents WHERE id IN ({ids})"):
            doc_id, path, title, ext, sha256 = row
            known[doc_id] = _Ranked(doc_id, path, title, ext, sha256, 0.0)


def _snippets(
    conn: sqlite3.Connection, hits: list[_Ranked], best: dict[int, passages.Best], pattern: re.Pattern[str]
) -> dict[int, str]:
    """doc_id -> the snippet of each hit, from its best passage (its description or title when the
    words matched only there)."""
    if not hits:
        return {}
    shown = [best[hit.doc_id].passage_id for hit in hits if hit.doc_id in best]
    texts = passages.texts(conn, shown, SNIPPET_SCAN_CHARS)
    sql = _FALLBACK_SQL.format(ids=",".join(str(hit.doc_id) for hit in hits))
    snippets = {}
    for rowid, title, description in conn.execute(sql):
        found = best.get(rowid)
        text = texts.get(found.passage_id) if found is not None else None
        snippets[rowid] = snippet_window(text, pattern, description or title)
    return snippets


def _referenced(conn: sqlite3.Connection, ranked: list[_Ranked]) -> list[_Ranked]:
    """`ranked` with the reference prior applied to each score, in its new order."""
    names = {hit.doc_id: stem(hit.path).lower() for hit in ranked}
    counts = reference_counts(conn, sorted(set(names.values())))
    if not counts:
        return ranked
    weighed = [
        replace(hit, score=hit.score * (1 + REFERENCE_WEIGHT * math.log1p(counts.get(names[hit.doc_id], 0))))
        for hit in ranked
    ]
    return sorted(weighed, key=lambda hit: (-hit.score, hit.path))


def _normalised(pairs: list[tuple[int, float]]) -> dict[int, float]:
    """Scores min-max scaled to 0..1 over one ranking's candidates (all 1.0 when they are equal)."""
    if not pairs:
        return {}
    high, low = max(score for _, score in pairs), min(score for _, score in pairs)
    if high - low <= 1e-12:
        return dict.fromkeys((doc_id for doc_id, _ in pairs), 1.0)
    return {doc_id: (score - low) / (high - low) for doc_id, score in pairs}


def convex_scores(
    lexical: list[_Ranked], dense: list[tuple[int, float]], *, lexical_weight: float = LEXICAL_WEIGHT
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
        for doc_id, value in _normalised([(h.doc_id, h.score) for h in lexical]).items()
    }
    for doc_id, value in _normalised(dense).items():
        scores[doc_id] = scores.get(doc_id, 0.0) + (1 - lexical_weight) * value
    return scores


def fusion_scores(lexical: list[_Ranked], dense: list[tuple[int, float]]) -> dict[int, float]:
    """The fused score of every document in either ranking (the rule `_fuse` orders by)."""
    return convex_scores(lexical, dense)


def _fuse(
    conn: sqlite3.Connection, lexical: list[_Ranked], dense: list[tuple[int, float]], pool: int
) -> list[_Ranked]:
    """The BM25 and dense rankings fused (`fusion_scores`) into one, of documents in either list."""
    scores = fusion_scores(lexical, dense)
    known = {hit.doc_id: hit for hit in lexical}
    _add_rows(conn, known, [doc_id for doc_id in scores if doc_id not in known])
    order = sorted(
        (doc_id for doc_id in scores if doc_id in known), key=lambda d: (-scores[d], known[d].path)
    )
    return [_replace_score(known[doc_id], scores[doc_id]) for doc_id in order[:pool]]


def _dense_passages(
    conn: sqlite3.Connection,
    hits: list[_Ranked],
    best: dict[int, passages.Best],
    near: list[tuple[int, float, int]],
    top_passage: float,
) -> dict[int, passages.Best]:
    """doc_id -> the passage holding its best vector, for each hit whose dense evidence there
    beats its lexical passage's (DENSE_PASSAGE_MARGIN); the caller leaves out the hits whose
    passage the query names (`names_member`): a name asked for outweighs a likeness. Both on 0..1,
    the cosine min-max normalised over the dense candidates, the BM25 score relative to the best
    passage's (0 for a hit none of whose passages holds a query word)."""
    shares = _normalised([(doc_id, cosine) for doc_id, cosine, _ in near])
    where = {doc_id: start for doc_id, _, start in near}
    chosen: dict[int, passages.Best] = {}
    for hit in hits:
        if hit.doc_id not in where:
            continue
        lexical = best[hit.doc_id].score / top_passage if hit.doc_id in best else 0.0
        if shares[hit.doc_id] - lexical > DENSE_PASSAGE_MARGIN:
            found = passages.holding(conn, hit.doc_id, where[hit.doc_id])
            if found is not None:
                chosen[hit.doc_id] = found
    return chosen


def _replace_score(hit: _Ranked, score: float) -> _Ranked:
    return _Ranked(hit.doc_id, hit.path, hit.title, hit.ext, hit.sha256, score)


def _fold(ranked: list[_Ranked]) -> tuple[list[_Ranked], dict[int, list[str]]]:
    """Keep the best-ranked of each set of near-copies: the same file name and title in another
    folder (`linux/df.md`, `osx/df.md`), or the same bytes. Returns the kept hits, in order, and
    for each the paths folded into it."""
    kept: list[_Ranked] = []
    folded: dict[int, list[str]] = {}
    owner: dict[object, int] = {}
    for hit in ranked:
        keys = (("name", hit.path.rsplit("/", 1)[-1].lower(), hit.title.strip().lower()), ("sha", hit.sha256))
        first = next((owner[key] for key in keys if key in owner), None)
        if first is not None:
            folded.setdefault(first, []).append(hit.path)
            continue
        for key in keys:
            owner[key] = hit.doc_id
        kept.append(hit)
    return kept, folded


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
