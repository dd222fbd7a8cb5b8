"""What a search returns: hits cut to the caller's token budget, copies folded, and a note saying
why nothing was found or what was left out."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any

from kbkit.kb import passages
from kbkit.kb.search.query import MAX_TERMS, CompiledQuery
from kbkit.kb.search.ranking import Ranked
from kbkit.kb.tokens import estimate_tokens
from kbkit.kb.uris import doc_uri


@dataclass
class Section:
    """A section of a hit's document: its heading path, and where a read of it starts."""

    section: str
    offset: int


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
    """Paths of near-copies of this hit (the same bytes, or nearly the same text) left out below it."""
    translations: list[str] = field(default_factory=list)
    """Languages of this page's translations left out below it (the same path in that language's
    folder, or with that language's suffix; `default`: the copy without one)."""
    also: list[Section] = field(default_factory=list)
    """Other sections of this document that match nearly as well, best first (docs/adr/0059)."""

    def to_dict(self) -> dict[str, Any]:
        item = asdict(self)
        if item["uri"] is None:
            del item["uri"]
        for key in ("folded", "translations", "also"):
            if not item[key]:
                del item[key]
        return item


@dataclass
class SearchResult:
    results: list[Hit] = field(default_factory=list)
    note: str | None = None
    truncated: bool = False
    """True when `max_tokens` cut the list short of `limit` hits."""
    top: float = 1.0
    """The first hit's raw score, which every `score` is relative to (results of several indexes
    are merged by it; never sent)."""
    query_notes: list[str] = field(default_factory=list)
    """What the query lost before it ran (never sent apart from `note`)."""
    empty_note: str | None = None
    """Why nothing was found, when nothing was (never sent apart from `note`)."""

    def to_dict(self) -> dict[str, Any]:
        hits = []
        for hit in self.results:
            hits.append(hit.to_dict())
        out: dict[str, Any] = {"results": hits, "truncated": self.truncated}
        if self.note:
            out["note"] = self.note
        return out


def shaped(
    hits: list[Ranked],
    *,
    best: dict[int, passages.Best],
    snippets: dict[int, str],
    folded: dict[int, list[str]],
    translated: dict[int, list[str]] | None = None,
    also: dict[int, list[Section]] | None = None,
    servable: set[str],
    max_tokens: int | None,
    compiled: CompiledQuery,
    top: float | None = None,
) -> SearchResult:
    """The hits as served, scores relative to `top` (default: the first's), cut where `max_tokens`
    runs out, and the notes saying what was cut or folded (the caller adds why nothing was found)."""
    if top is None or top <= 0:
        top = hits[0].score if hits and hits[0].score > 0 else 1.0
    served = [
        Hit(
            path=ranked_hit.path,
            title=ranked_hit.title,
            score=round(ranked_hit.score / top, 3),
            section=best[ranked_hit.doc_id].section if ranked_hit.doc_id in best else "",
            offset=best[ranked_hit.doc_id].anchor if ranked_hit.doc_id in best else 0,
            snippet=snippets.get(ranked_hit.doc_id, ranked_hit.title),
            uri=doc_uri(ranked_hit.path) if ranked_hit.ext in servable else None,
            folded=folded.get(ranked_hit.doc_id, []),
            translations=(translated or {}).get(ranked_hit.doc_id, []),
            also=(also or {}).get(ranked_hit.doc_id, []),
        )
        for ranked_hit in hits
    ]
    query_notes = []
    if compiled.dropped_terms:
        query_notes.append(
            f"the query was cut to its first {MAX_TERMS} distinct words "
            f"({compiled.dropped_terms} more ignored)"
        )
    return within_budget(served, max_tokens, top=top, query_notes=query_notes)


def within_budget(
    hits: list[Hit],
    max_tokens: int | None,
    *,
    top: float,
    query_notes: list[str],
    empty_note: str | None = None,
) -> SearchResult:
    """`hits` (best first) as far as `max_tokens` goes, with the notes saying what was cut or folded."""
    result = SearchResult(top=top, query_notes=query_notes, empty_note=empty_note)
    notes = list(query_notes)
    budget = max_tokens
    shown_folds = shown_translations = 0
    for hit in hits:
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
        shown_translations += bool(hit.translations)
    notes += legend(shown_folds, shown_translations)
    if not hits and empty_note:
        notes.append(empty_note)
    result.note = "; ".join(notes) or None
    return result


def legend(folds: int, translated: int) -> list[str]:
    """The notes that explain the hits' `folded` and `translations` fields: a reader of the JSON
    needs them; the text rendering, which says the same on each hit's own line, leaves them out."""
    notes = []
    if folds:
        notes.append(
            f"{folds} near-copies (the same or nearly the same text) were folded into "
            "the hit ranked above them; each hit's `folded` lists them"
        )
    if translated:
        notes.append(
            f"{translated} hits stand for translated pages: each is the copy in the query's "
            "language where there is one, and `translations` lists the other languages (the same path "
            "in that language's folder, or with its suffix)"
        )
    return notes


ALSO = 2
"""Other sections a hit names at most: the answer to a question in plain words is often the second
or third best-matching section of a large page (docs/adr/0059)."""
ALSO_SHARE = 0.5
"""A section is named only when it matches at least this share as well as the page's best passage."""
ALSO_HITS = 3
"""Only the first hits name other sections: those an agent reads first (a hit's `also` costs its
reply about 30 to 40 tokens)."""


def other_sections(
    pool: dict[int, list[passages.Best]], best: dict[int, passages.Best], doc_ids: list[int]
) -> dict[int, list[Section]]:
    """doc_id -> up to ALSO sections of that document, other than the one its hit points at, among
    the passages the ranking pooled, best first, for the first ALSO_HITS of `doc_ids` (the hits in
    order). No query of its own: what the pool holds."""
    found: dict[int, list[Section]] = {}
    for doc_id in doc_ids[:ALSO_HITS]:
        pooled = pool.get(doc_id, [])
        if not pooled or doc_id not in best:
            continue
        seen = {best[doc_id].anchor}
        floor = ALSO_SHARE * pooled[0].score
        for passage in pooled:
            if len(seen) > ALSO or passage.score < floor:
                break
            if passage.anchor not in seen:
                seen.add(passage.anchor)
                found.setdefault(doc_id, []).append(Section(passage.section, passage.anchor))
    return found


def why_empty(conn: sqlite3.Connection, compiled: CompiledQuery, prefix: str) -> str:
    """The note of a search that found nothing: an empty index, a prefix matching no path, or words
    no document holds."""
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
