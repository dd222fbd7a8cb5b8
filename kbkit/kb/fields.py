"""What of a document is searched, and how much: the FTS5 columns and their text.

Besides the title, headings and body, a document is found by the words of its file name
(`runbooks/rotate-api-key.md` answers "rotate api key") and by its front matter `description`
and `tags`/`keywords`. The indexer calls `write()` for each document it (re)indexes and
`remove()` for each it drops; the search weighs the columns in the order of `COLUMNS`. Its
passages (kbkit/kb/passages.py) are written and dropped with it.

Each document's references to others (`name` code spans and Markdown link targets, by file
name) are kept too: how many documents refer to a hit is the search's reference prior
(docs/adr/0024).
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter

from kbkit.kb import passages, segment
from kbkit.kb.documents import Document
from kbkit.kb.words import split_words

COLUMNS = ("title", "name", "description", "tags", "headings", "body")
"""The fields searched, in table order."""
SEGMENTED = tuple(f"{name}_seg" for name in COLUMNS)
"""Each field's words in the scripts written without spaces (kbkit/kb/segment.py), after them."""
FTS_COLUMNS = COLUMNS + SEGMENTED
"""The FTS5 columns, in table order (store.py creates the table from this tuple)."""

INDEX_TEXT_CAP = 4 * 1024 * 1024
"""At most this many bytes (UTF-8) of a document's text are indexed, so search work per document
stays bounded (a 1,000-page manual fits). Longer documents are found by their first 4 MiB, and the
summary line and `kbkit index --skipped` say which (docs/adr/0015)."""


def stem(path: str) -> str:
    """A file name without its folder and extension: `runbooks/rotate-api-key.md` -> rotate-api-key."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name


def name_words(path: str) -> str:
    """The words of a file name: `rotate-api-key.md` -> "rotate api key" (words.split_words)."""
    return split_words(stem(path))


LEAD_CHARS = 300
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t][^\n]*)?$|^[=\-]{3,}[ \t]*$", re.MULTILINE)


def lead(text: str) -> str:
    """A document's opening prose (its first LEAD_CHARS characters after headings): what the page
    is about, in the author's words, for pages without a front matter description."""
    head = _HEADING_LINE.sub(" ", text[: LEAD_CHARS * 4])
    return " ".join(head.split())[:LEAD_CHARS]


def capped(text: str) -> str:
    """`text` cut to INDEX_TEXT_CAP bytes of UTF-8 (never inside a character)."""
    if len(text) <= INDEX_TEXT_CAP // 4:  # fewer characters than cap/4 cannot exceed it
        return text
    data = text.encode("utf-8")
    return text if len(data) <= INDEX_TEXT_CAP else data[:INDEX_TEXT_CAP].decode("utf-8", "ignore")


MAX_REFERENCES = 1000
"""At most this many distinct names a document refers to are kept (a page of links counts once each)."""
_CODE_NAME = re.compile(r"`([\w.+-]{1,64})`")
_LINK_TARGET = re.compile(r"\]\(\s*<?([^()\s<>]{1,512})")


def references(path: str, text: str) -> set[str]:
    """The file names (stems, lower-cased) of the documents `text` refers to: a code span that is a
    single name (`chmod`, `rotate-api-key`) or the target of a relative Markdown link
    (`[how](../runbooks/rotate-api-key.md#steps)`). Links with a scheme point outside the kb and
    are left out, as is the document's own name. One regex pass over the indexed text: linear."""
    body = capped(text)
    found = {name.lower() for name in set(_CODE_NAME.findall(body))}
    for target in set(_LINK_TARGET.findall(body)):
        target = target.split("#", 1)[0].split("?", 1)[0]
        if target and ":" not in target:
            found.add(stem(target.rstrip("/")).lower())
    found.discard(stem(path).lower())
    found.discard("")
    return set(sorted(found)[:MAX_REFERENCES])


def write(
    conn: sqlite3.Connection, doc_id: int, path: str, title: str, doc: Document, counts: Counter[str]
) -> None:
    """Index one document's searchable text and references under `doc_id` (after `remove()`). The
    names it refers to are added to `counts`, which `count_references()` writes once per batch."""
    body = capped(doc.text)
    values = (
        title,
        name_words(path),
        doc.description or lead(body),
        "\n".join(doc.tags),
        "\n".join(doc.headings),
        body,
    )
    insert(conn, doc_id, values)
    record_references(conn, doc_id, references(path, body), counts)
    passages.write(conn, doc_id, body, doc.outline)


def insert(conn: sqlite3.Connection, doc_id: int, values: tuple[str, ...]) -> None:
    """Index the fields' `values` (in COLUMNS order) under `doc_id`, each with its segmented words."""
    row = (*values, *(segment.segmented(value) for value in values))
    conn.execute(
        f"INSERT INTO documents_fts (rowid, {', '.join(FTS_COLUMNS)}) VALUES (?{', ?' * len(FTS_COLUMNS)})",
        (doc_id, *row),
    )


def record_references(conn: sqlite3.Connection, doc_id: int, names: set[str], counts: Counter[str]) -> None:
    """Store the names `doc_id` refers to (one row) and add them to the batch's `counts`."""
    if names:
        conn.execute("INSERT INTO mentions (doc_id, names) VALUES (?, ?)", (doc_id, "\n".join(sorted(names))))
        counts.update(names)


def remove(conn: sqlite3.Connection, doc_id: int, counts: Counter[str]) -> None:
    """Drop what `write()` indexed for `doc_id`; the names it referred to are taken off `counts`."""
    passages.remove(conn, doc_id)  # first: it reads the text it indexed
    conn.execute("DELETE FROM documents_fts WHERE rowid = ?", (doc_id,))
    row = conn.execute("SELECT names FROM mentions WHERE doc_id = ?", (doc_id,)).fetchone()
    if row is not None:
        counts.subtract(row[0].split("\n"))
        conn.execute("DELETE FROM mentions WHERE doc_id = ?", (doc_id,))


def count_references(conn: sqlite3.Connection, counts: Counter[str]) -> None:
    """Apply a batch's changes in how many documents refer to each name (one write per name, not
    one per reference), then clear them."""
    changed = [(delta, name) for name, delta in counts.items() if delta]
    conn.executemany(
        "INSERT INTO referenced (name, documents) VALUES (?2, ?1) "
        "ON CONFLICT (name) DO UPDATE SET documents = documents + ?1",
        changed,
    )
    conn.executemany("DELETE FROM referenced WHERE name = ? AND documents <= 0", [(n,) for _, n in changed])
    counts.clear()


def reference_counts(conn: sqlite3.Connection, names: list[str]) -> dict[str, int]:
    """name -> how many documents refer to that file name (kept by write/remove: one lookup each)."""
    counts: dict[str, int] = {}
    for start in range(0, len(names), 500):
        part = names[start : start + 500]
        sql = f"SELECT name, documents FROM referenced WHERE name IN ({', '.join('?' * len(part))})"
        counts.update(conn.execute(sql, part))
    return counts


def partly_indexed_sql(*, count: bool = False) -> str:
    """Documents whose text is longer than what is indexed (for `--skipped` and the boot line)."""
    what = "count(*)" if count else "path, text_size"
    order = "" if count else " ORDER BY path"
    return f"SELECT {what} FROM documents WHERE text_size > {INDEX_TEXT_CAP}{order}"


def describe_cap() -> str:
    """The cap in words, for the boot line and `--skipped`."""
    return f"only the first {INDEX_TEXT_CAP // (1024 * 1024)} MiB of text is searchable"
