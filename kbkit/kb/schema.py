"""The index's tables, and the steps that bring an older file up to date without a rescan.

kbkit/kb/store.py opens, creates and repairs the file; this module says what is in it."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable

from kbkit.catalog.filetypes import READERS
from kbkit.kb import passages, segment
from kbkit.kb.fields import (
    COLUMNS,
    FTS_COLUMNS,
    capped,
    count_references,
    insert,
    record_references,
    references,
    remove,
)
from kbkit.kb.formats.registry import outline_of

SCHEMA_VERSION = 9
"""3: file-name, description and tags columns; the embeddings table. 4: the mentions table (the
file names each document refers to) and the referenced table (how many documents refer to each).
5: the passages and passages_fts tables (each document's sections). 6: each vector row's start
offset and token hash (`embeddings.start`, `embeddings.key`). 7: the segmented columns and the
tokenizer keeping combining marks (kbkit/kb/segment.py: Chinese, Japanese, Korean, Thai). 8: no
table changed; Markdown, HTML and notebook documents are read again by the next scan (heading
attribute lists and templates, docs/adr/0056). 9: no table changed; the mentions name a link's
target by its folder and name (docs/adr/0075). Older files are upgraded (MIGRATIONS) or rebuilt."""
RESEGMENTED = (
    "the full-text index was rebuilt from the stored text to find words in Chinese, Japanese, "
    "Korean and Thai (once, after an upgrade)"
)
READ_AGAIN = -1
"""The mtime a document is marked with when the next scan must extract it again though its bytes
did not change (no file has it): an upgrade whose readers make something else of the same file."""
REREAD_EXTENSIONS = tuple(
    ext for ext, reader in READERS.items() if reader.partition(".")[0] in ("markdown", "html", "notebook")
)
"""The file types whose readers schema 8 changed (heading attribute lists, templates)."""
REREAD = (
    "Markdown, HTML and notebook documents are read again by this scan: headings without their "
    "{ #id } attribute lists, site templates no longer indexed as pages (once, after an upgrade; "
    "vectors kept)"
)
_MENTIONS = """
CREATE TABLE IF NOT EXISTS mentions (
    doc_id      INTEGER PRIMARY KEY,
    names       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS referenced (
    name        TEXT PRIMARY KEY,
    documents   INTEGER NOT NULL
) WITHOUT ROWID;
"""


def _statements(conn: sqlite3.Connection, script: str) -> None:
    """Run each statement of `script` inside the caller's transaction (executescript would commit it)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _add_mentions(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: the mentions and referenced tables, filled from the indexed text (vectors and
    all else kept)."""
    _statements(conn, _MENTIONS)
    _fill_mentions(conn)


def _fill_mentions(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT d.id, d.path, f.body FROM documents d JOIN documents_fts f ON f.rowid = d.id")
    counts: Counter[str] = Counter()
    for doc_id, path, body in rows.fetchall():
        record_references(conn, doc_id, references(path, body or ""), counts)
    count_references(conn, counts)


def _links_by_path(conn: sqlite3.Connection) -> None:
    """Schema 8 -> 9: the references found again from the indexed text, links by the folder and
    name they resolve to, not by file name alone (docs/adr/0075; vectors and all else kept)."""
    conn.execute("DELETE FROM mentions")
    conn.execute("DELETE FROM referenced")
    _fill_mentions(conn)


def _add_passages(conn: sqlite3.Connection) -> None:
    """Schema 4 -> 5: the passages of every document, found again from its indexed text (vectors
    kept). A PDF's page breaks are not in its text: PDFs are dropped, and the next scan adds them
    back as new documents."""
    _statements(conn, passages.schema())
    passages.clear(conn)
    counts: Counter[str] = Counter()
    rows = conn.execute("SELECT d.id, d.ext, f.body FROM documents d JOIN documents_fts f ON f.rowid = d.id")
    for doc_id, ext, body in rows.fetchall():
        outline = outline_of(ext, body or "")
        if outline is None:
            remove(conn, doc_id, counts)
            conn.execute("DELETE FROM embeddings WHERE doc_id = ?", (doc_id,))
            conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        else:
            passages.write(conn, doc_id, capped(body or ""), outline)
    count_references(conn, counts)


_EMBEDDING_KEYS = "CREATE INDEX IF NOT EXISTS embeddings_key ON embeddings (key)"


def _add_chunk_offsets(conn: sqlite3.Connection) -> None:
    """Schema 5 -> 6: where each embedded chunk starts and the hash of its tokens. The rows kept
    are of the older text view: the next embedding pass replaces them."""
    conn.execute("ALTER TABLE embeddings ADD COLUMN start INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE embeddings ADD COLUMN key BLOB")
    conn.execute(_EMBEDDING_KEYS)


def _resegment(conn: sqlite3.Connection) -> None:
    """Schema 6 -> 7: both full-text tables made again with the new tokenizer and the segmented
    columns, from the text the documents table's FTS row stores (passages and vectors kept)."""
    rows = conn.execute(f"SELECT rowid, {', '.join(COLUMNS)} FROM documents_fts").fetchall()
    conn.execute("DROP TABLE documents_fts")
    conn.execute("DROP TABLE passages_fts")
    _statements(conn, _fts_schema() + passages.schema())
    for doc_id, *values in rows:
        insert(conn, doc_id, tuple(value or "" for value in values))
        passages.reindex(conn, doc_id, values[-1] or "")


def _read_pages_again(conn: sqlite3.Connection) -> None:
    """Schema 7 -> 8: the documents whose readers changed are marked for the next scan, which
    extracts them again (a file's bytes, hence its vectors, are unchanged)."""
    marks = ", ".join("?" * len(REREAD_EXTENSIONS))
    conn.execute(
        f"UPDATE documents SET mtime_ns = ? WHERE ext IN ({marks})", (READ_AGAIN, *REREAD_EXTENSIONS)
    )


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    3: _add_mentions,
    4: _add_passages,
    5: _add_chunk_offsets,
    6: _resegment,
    7: _read_pages_again,
    8: _links_by_path,
}
"""Schema version -> the step to the next one, for changes that need no rebuild (or re-embedding);
a step may mark documents for the next scan to read again (READ_AGAIN)."""


def _fts_schema() -> str:
    return f"""
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    {", ".join(FTS_COLUMNS)},
    tokenize = "{segment.tokenizer()}"
);
"""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    ext         TEXT NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    title       TEXT NOT NULL,
    text_size   INTEGER NOT NULL,
    indexed_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skipped (
    path        TEXT PRIMARY KEY,
    ext         TEXT NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    reason_code TEXT NOT NULL,
    reason      TEXT NOT NULL
);
{fts}
{mentions}
{passages}
CREATE TABLE IF NOT EXISTS embeddings (
    doc_id      INTEGER NOT NULL,
    chunk       INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    model       TEXT NOT NULL,
    vector      BLOB NOT NULL,
    start       INTEGER NOT NULL DEFAULT 0,
    key         BLOB,
    PRIMARY KEY (doc_id, chunk)
);
{keys};
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
PRAGMA user_version = {version};
"""


def schema() -> str:
    return _SCHEMA.format(
        fts=_fts_schema(),
        mentions=_MENTIONS,
        passages=passages.schema(),
        keys=_EMBEDDING_KEYS,
        version=SCHEMA_VERSION,
    )
