"""What of a document is searched, and how much: the FTS5 columns and their text.

Besides the title, headings and body, a document is found by the words of its file name
(`runbooks/rotate-api-key.md` answers "rotate api key") and by its front matter `description`
and `tags`/`keywords`. The indexer calls `write()` for each document it (re)indexes and
`remove()` for each it drops; the search weighs the columns in the order of `COLUMNS`. Its
passages (kbkit/kb/passages.py) are written and dropped with it.

Each document's references to others are kept too (`name` code spans by file name, Markdown
links by the folder and name they resolve to): how many documents refer to a hit is the search's
reference prior (docs/adr/0024, 0075).
"""

from __future__ import annotations

import functools
import posixpath
import re
import sqlite3
from collections import Counter
from collections.abc import Callable

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
INDEX_NAMES = frozenset(("_index", "index", "readme"))
"""File names (without extension, any case) that stand for their folder: `collector/install/_index.md`
is named "install", and a link to `collector/install/` is to it."""


def called(path: str) -> tuple[list[str], str]:
    """A page's folders and the name it goes by: its file name without extension, or an
    INDEX_NAMES file's folder (`docs/demo/_index.md`: (["docs"], "demo"))."""
    *folders, name = path.split("/")
    name = stem(name)
    if name.lower() in INDEX_NAMES and folders:
        name = folders.pop()
    return folders, name


def reference_keys(path: str) -> tuple[str, ...]:
    """What references to the document at `path` name it by (lower case): its name, as a code span
    does (`instrumentation`), and where a link resolves to, its folder and name
    (`java/instrumentation`), or `/name` at the kb's top."""
    folders, name = called(path.lower())
    return (name, f"{folders[-1] if folders else ''}/{name}")


def link_key(path: str, target: str) -> str | None:
    """The document a Markdown link in the document at `path` is to, as `reference_keys` names it;
    None for a link outside the kb (a scheme) or to the page itself (an anchor). A relative link
    is resolved against the linking file's folder, or when it ends in `/` against the page's own
    address, which is then a folder (Hugo's `../install/` in `collector/quick-start.md` is
    `collector/install/`); an absolute one against the kb's top, whose first folders a site's
    addresses may leave out (`/docs/demo/` for `en/docs/demo/_index.md`): only its last folder is
    compared. A link that climbs above the kb, or an absolute one without a folder, names a file
    name alone, as a code span does."""
    return _links_from(path)(target)


def _links_from(path: str) -> Callable[[str], str | None]:
    """`link_key` for the links of the document at `path`: where they are resolved from, found once."""
    folder, _, file = path.rpartition("/")
    name = stem(file)
    page = folder if name.lower() in INDEX_NAMES else f"{folder}/{name}" if folder else name

    def key(target: str) -> str | None:
        target = target.split("#", 1)[0].split("?", 1)[0]
        if not target or ":" in target:
            return None
        base = "" if target.startswith("/") else page if target.endswith("/") else folder
        return _resolved(base, target)

    return key


@functools.lru_cache(maxsize=1 << 14)
def _resolved(base: str, target: str) -> str | None:
    """`target` (no anchor, no scheme) resolved against the folder `base`, as `link_key` names it.
    Kept by both: the pages of a folder link to the same pages."""
    absolute = target.startswith("/")
    joined = posixpath.normpath(posixpath.join(base, target.strip("/")))
    parts = [part for part in joined.split("/") if part not in ("", ".", "..")]
    if not parts:
        return None
    folders, name = called("/".join(parts).lower())
    if joined.startswith("..") or (absolute and not folders):
        return name  # its folder is not known
    return f"{folders[-1] if folders else ''}/{name}"


def references(path: str, text: str) -> set[str]:
    """What `text` (the document at `path`) refers to, as `reference_keys` names documents: a code
    span that is a single name (`chmod`, `rotate-api-key`), by that name, and the target of a
    relative Markdown link (`[how](../runbooks/rotate-api-key.md#steps)`), by the folder and name
    it resolves to (`link_key`). Links with a scheme point outside the kb and are left out, as is
    the document itself. One regex pass over the indexed text: linear."""
    body = capped(text)
    found = {name.lower() for name in set(_CODE_NAME.findall(body))}
    link = _links_from(path)
    found.update(key for target in set(_LINK_TARGET.findall(body)) if (key := link(target)))
    found.difference_update(reference_keys(path))
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
    """name -> how many documents refer to it (`reference_keys`; kept by write/remove: one lookup each)."""
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
