"""Passages in the index: each document's sections, stored and matched one by one.

`write()` stores a document's passages (sections.passages over its indexed text) in `passages`,
and indexes their heading path and text in the FTS5 table `passages_fts` (rowid = passages.id);
`remove()` drops them. `passages_fts` is contentless: a passage's text is a slice of the document's
text already stored in `documents_fts`, so it is not stored twice (on cpp-docs a third less disk
and about a fifth less indexing time), and its tokens are removed by giving FTS5 that slice again.
`pooled()` ranks passages for a query and keeps each document's among them, best first: search
combines the best one with the document's own score and points its result at one of them
(docs/adr/0026).

A passage is keyed by (doc_id, ord) as well as by its id, so per-passage vectors can later be
stored beside it the way `embeddings` stores per-chunk ones.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from kbkit.kb import segment
from kbkit.kb.sections import Heading, is_contents, passages
from kbkit.kb.words import split_words

PASSAGE_WEIGHTS = {"heading": 2.0, "body": 1.0, "heading_seg": 2.0, "body_seg": 1.0}
"""BM25 weights of a passage's heading (its heading path and summary line) and its text, and of
their segmented words (kbkit/kb/segment.py)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    id          INTEGER PRIMARY KEY,
    doc_id      INTEGER NOT NULL,
    ord         INTEGER NOT NULL,
    start       INTEGER NOT NULL,
    length      INTEGER NOT NULL,
    anchor      INTEGER NOT NULL,
    heading     TEXT NOT NULL,
    section     TEXT NOT NULL,
    UNIQUE (doc_id, ord)
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    heading, body, heading_seg, body_seg, content = '',
    tokenize = "{tokenizer}"
);
"""
"""`start`, `length` and `anchor` count characters of the served text (get_document's offsets);
`heading` is what the heading column indexed: the passage's own heading path (in words.split_words
form) and, for a passage that starts at a heading, its summary line; `section` is the heading path
at `anchor` (reported)."""


def schema() -> str:
    """The passages tables' CREATE statements (the tokenizer's marks are made on first use)."""
    return SCHEMA.format(tokenizer=segment.tokenizer())


@dataclass(frozen=True)
class Best:
    """A document's best-matching passage."""

    doc_id: int
    passage_id: int
    start: int
    length: int
    anchor: int
    section: str
    score: float


def write(conn: sqlite3.Connection, doc_id: int, text: str, outline: tuple[Heading, ...]) -> None:
    """Store the passages of `text` (a document's indexed text) under `doc_id` (after `remove()`).
    Their ids follow the largest one so far: consecutive, and written in two statements."""
    inside = tuple(heading for heading in outline if heading.start < len(text))
    starts = {heading.start for heading in inside[1:]}  # not the first: that is the page's title
    first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM passages").fetchone()[0]
    rows, indexed = [], []
    for ord_, passage in enumerate(passages(text, inside)):
        heading = split_words(passage.path)
        if passage.start in starts:
            heading = f"{heading} {summary(text, passage.start, passage.end)}"
        length = passage.end - passage.start
        rows.append(
            (first + ord_, doc_id, ord_, passage.start, length, passage.anchor, heading, passage.anchor_path)
        )
        indexed.append(_indexed(first + ord_, heading, _searched(text[passage.start : passage.end])))
    conn.executemany(
        "INSERT INTO passages (id, doc_id, ord, start, length, anchor, heading, section) "
        "VALUES (?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.executemany(_INSERT, indexed)


_INSERT = "INSERT INTO passages_fts (rowid, heading, body, heading_seg, body_seg) VALUES (?, ?, ?, ?, ?)"


def _stored(rows: list[tuple[int, int, int, str]], text: str) -> list[tuple[int, str, str, str, str]]:
    """passages_fts rows for stored passages (id, start, length, heading) of a document's `text`."""
    return [_indexed(id_, head, _searched(text[start : start + length])) for id_, start, length, head in rows]


def _indexed(passage_id: int, heading: str, body: str) -> tuple[int, str, str, str, str]:
    """A passages_fts row: the heading and text, and their segmented words."""
    return (passage_id, heading, body, segment.segmented(heading), segment.segmented(body))


SUMMARY_CHARS = 200


def summary(text: str, start: int, end: int) -> str:
    """The first sentence of prose under a heading: a reference page's one-line summary of a member
    ("Removes all elements."), searched with the heading, so it tells a page's sections apart (a
    page's own summary is already its description field)."""
    for line in text[start:end].splitlines()[1:8]:
        line = line.strip()
        if line and not line.startswith(("```", "~~~", "#", "|", ">", "-", "=")):
            return line[: line.find(". ") + 1 or SUMMARY_CHARS][:SUMMARY_CHARS]
    return ""


def _searched(text: str) -> str:
    """A passage's text as indexed: none for a table of contents (sections.is_contents)."""
    return "" if is_contents(text) else text


def remove(conn: sqlite3.Connection, doc_id: int) -> None:
    """Drop what `write()` stored for `doc_id` (before its text leaves `documents_fts`: the
    contentless index is told each passage's heading and text again to take their tokens out)."""
    row = conn.execute("SELECT body FROM documents_fts WHERE rowid = ?", (doc_id,)).fetchone()
    text = (row[0] if row else None) or ""
    rows = conn.execute(
        "SELECT id, start, length, heading FROM passages WHERE doc_id = ?", (doc_id,)
    ).fetchall()
    conn.executemany(
        "INSERT INTO passages_fts (passages_fts, rowid, heading, body, heading_seg, body_seg) "
        "VALUES ('delete', ?, ?, ?, ?, ?)",
        _stored(rows, text),
    )
    conn.execute("DELETE FROM passages WHERE doc_id = ?", (doc_id,))


def reindex(conn: sqlite3.Connection, doc_id: int, text: str) -> None:
    """Index the stored passages of `doc_id` again (a new passages_fts): `text` is its indexed text."""
    rows = conn.execute(
        "SELECT id, start, length, heading FROM passages WHERE doc_id = ?", (doc_id,)
    ).fetchall()
    conn.executemany(_INSERT, _stored(rows, text))


def clear(conn: sqlite3.Connection) -> None:
    """Drop every passage (before they are written again from the indexed text)."""
    conn.execute("INSERT INTO passages_fts (passages_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM passages")


def pooled(conn: sqlite3.Connection, match: str, limit: int, *, prefix: str = "") -> dict[int, list[Best]]:
    """doc_id -> its passages among the `limit` best-matching passages of the whole index (under
    `prefix`), best first. Ranked in the full-text table alone, then joined: joining every match
    first costs twice as much on common words."""
    weights = ", ".join(f":w_{name}" for name in PASSAGE_WEIGHTS)
    if prefix:
        ranked = (
            f"SELECT passages_fts.rowid AS id, -bm25(passages_fts, {weights}) AS score FROM passages_fts "
            "JOIN passages p ON p.id = passages_fts.rowid JOIN documents d ON d.id = p.doc_id "
            "WHERE passages_fts MATCH :match AND substr(d.path, 1, :prefix_len) = :prefix "
            "ORDER BY score DESC LIMIT :limit"
        )
    else:
        ranked = (
            f"SELECT rowid AS id, -bm25(passages_fts, {weights}) AS score FROM passages_fts "
            "WHERE passages_fts MATCH :match ORDER BY score DESC LIMIT :limit"
        )
    sql = (
        "SELECT p.doc_id, p.id, p.start, p.length, p.anchor, p.section, r.score "
        f"FROM ({ranked}) r JOIN passages p ON p.id = r.id ORDER BY r.score DESC, p.id"
    )
    params: dict[str, object] = {f"w_{name}": weight for name, weight in PASSAGE_WEIGHTS.items()}
    params |= {"match": match, "limit": limit, "prefix": prefix, "prefix_len": len(prefix)}
    found: dict[int, list[Best]] = {}
    for row in conn.execute(sql, params):
        found.setdefault(row[0], []).append(Best(*row))
    return found


def best_in(conn: sqlite3.Connection, match: str, doc_ids: list[int]) -> dict[int, Best]:
    """doc_id -> its best-matching passage, or its first one (score 0) when none matches. One
    ranged query a document: its passages' ids are consecutive (written in one go)."""
    sql = (
        "SELECT p.doc_id, p.id, p.start, p.length, p.anchor, p.section, "
        f"-bm25(passages_fts, {', '.join(f':w_{name}' for name in PASSAGE_WEIGHTS)}) AS score "
        "FROM passages_fts JOIN passages p ON p.id = passages_fts.rowid "
        "WHERE passages_fts MATCH :match AND passages_fts.rowid BETWEEN :low AND :high AND p.doc_id = :doc "
        "ORDER BY score DESC LIMIT 1"
    )
    params: dict[str, object] = {f"w_{name}": weight for name, weight in PASSAGE_WEIGHTS.items()}
    found: dict[int, Best] = {}
    for doc_id in doc_ids:
        low, high = conn.execute(
            "SELECT min(id), max(id) FROM passages WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        if low is None:
            continue
        row = conn.execute(sql, params | {"match": match, "low": low, "high": high, "doc": doc_id}).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT doc_id, id, start, length, anchor, section, 0.0 FROM passages WHERE id = ?", (low,)
            ).fetchone()
        found[doc_id] = Best(*row)
    return found


def scored(conn: sqlite3.Connection, match: str, doc_id: int) -> tuple[list[Best], list[tuple[int, int]]]:
    """Every passage of `doc_id` matching `match`, best first, and (start, id) of all its passages
    in order (to place a window in the passage holding it). One ranged query: a document's
    passages' ids are consecutive."""
    rows = starts(conn, doc_id)
    if not rows:
        return [], []
    sql = (
        "SELECT p.doc_id, p.id, p.start, p.length, p.anchor, p.section, "
        f"-bm25(passages_fts, {', '.join(f':w_{name}' for name in PASSAGE_WEIGHTS)}) AS score "
        "FROM passages_fts JOIN passages p ON p.id = passages_fts.rowid "
        "WHERE passages_fts MATCH :match AND passages_fts.rowid BETWEEN :low AND :high "
        "ORDER BY score DESC, p.id"
    )
    params: dict[str, object] = {f"w_{name}": weight for name, weight in PASSAGE_WEIGHTS.items()}
    params |= {"match": match, "low": rows[0][1], "high": rows[-1][1]}
    return [Best(*row) for row in conn.execute(sql, params)], rows


def starts(conn: sqlite3.Connection, doc_id: int) -> list[tuple[int, int]]:
    """(start, id) of every passage of `doc_id`, in order."""
    rows = conn.execute("SELECT start, id FROM passages WHERE doc_id = ? ORDER BY id", (doc_id,))
    return [(start, id_) for start, id_ in rows]


def by_id(conn: sqlite3.Connection, passage_id: int) -> Best | None:
    """A passage by its id, score 0."""
    row = conn.execute(
        "SELECT doc_id, id, start, length, anchor, section, 0.0 FROM passages WHERE id = ?", (passage_id,)
    ).fetchone()
    return Best(*row) if row is not None else None


def holding(conn: sqlite3.Connection, doc_id: int, offset: int) -> Best | None:
    """The passage of `doc_id` holding `offset` (the one starting last at or before it), score 0."""
    row = conn.execute(
        "SELECT doc_id, id, start, length, anchor, section, 0.0 FROM passages "
        "WHERE doc_id = ? AND start <= ? ORDER BY start DESC LIMIT 1",
        (doc_id, offset),
    ).fetchone()
    return Best(*row) if row is not None else None


def texts(conn: sqlite3.Connection, passage_ids: list[int], chars: int) -> dict[int, str]:
    """passage id -> the first `chars` characters of its text (a slice of its document's)."""
    if not passage_ids:
        return {}
    sql = (
        f"SELECT p.id, substr(f.body, p.start + 1, min(p.length, {int(chars)})) "
        "FROM passages p JOIN documents_fts f ON f.rowid = p.doc_id "
        f"WHERE p.id IN ({', '.join('?' * len(passage_ids))})"
    )
    return dict(conn.execute(sql, passage_ids))
