"""What of a document is searched, and how much: the FTS5 columns and their text.

Besides the title, headings and body, a document is found by the words of its file name
(`runbooks/rotate-api-key.md` answers "rotate api key") and by its front matter `description`
and `tags`/`keywords`. The indexer calls `write()` for each document it (re)indexes; the search
weighs the columns in the order of `COLUMNS`.
"""

from __future__ import annotations

import re
import sqlite3

from kbkit.kb.documents import Document

COLUMNS = ("title", "name", "description", "tags", "headings", "body")
"""The FTS5 columns, in table order (store.py creates the table from this tuple)."""

INDEX_TEXT_CAP = 4 * 1024 * 1024
"""At most this many bytes (UTF-8) of a document's text are indexed, so search work per document
stays bounded (a 1,000-page manual fits). Longer documents are found by their first 4 MiB, and the
summary line and `kbkit index --skipped` say which (docs/adr/0015)."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NAME_SPLIT = re.compile(r"[-_.\s]+")


def name_words(path: str) -> str:
    """The words of a file name: `rotate-api-key.md` -> "rotate api key".

    Split on `-`, `_`, `.` and case changes; a name with case changes keeps its whole form too
    (`getHTTPClient` -> "getHTTPClient get HTTP Client"), so the joined word still matches."""
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    words: list[str] = []
    for part in _NAME_SPLIT.split(stem):
        if not part:
            continue
        pieces = _CAMEL.split(part)
        words.extend(pieces if len(pieces) == 1 else [part, *pieces])
    return " ".join(words)


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


def write(conn: sqlite3.Connection, doc_id: int, path: str, title: str, doc: Document) -> None:
    """Index one document's searchable text under `doc_id` (the caller deleted any old row)."""
    values = (
        title,
        name_words(path),
        doc.description or lead(doc.text),
        "\n".join(doc.tags),
        "\n".join(doc.headings),
        capped(doc.text),
    )
    conn.execute(
        f"INSERT INTO documents_fts (rowid, {', '.join(COLUMNS)}) VALUES (?{', ?' * len(COLUMNS)})",
        (doc_id, *values),
    )


def partly_indexed_sql(*, count: bool = False) -> str:
    """Documents whose text is longer than what is indexed (for `--skipped` and the boot line)."""
    what = "count(*)" if count else "path, text_size"
    order = "" if count else " ORDER BY path"
    return f"SELECT {what} FROM documents WHERE text_size > {INDEX_TEXT_CAP}{order}"


def describe_cap() -> str:
    """The cap in words, for the boot line and `--skipped`."""
    return f"only the first {INDEX_TEXT_CAP // (1024 * 1024)} MiB of text is searchable"
