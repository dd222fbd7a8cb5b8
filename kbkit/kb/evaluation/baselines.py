"""Plain SQLite FTS5 over the same files: the baseline kbkit's ranking has to beat.

What anyone writes in twenty lines: one row per file (a title: the front matter's `title`, else
the first heading, else the file name; and the file's text), `bm25()` with FTS5's defaults, and
the query's words each quoted and OR-joined so that no word is read as FTS5 syntax. Three
tokenizers: `unicode61` as SQLite ships it, with `porter` stemming, and `trigram`, which is how
plain FTS5 finds words in Chinese or Japanese text that has no spaces (a run of 3 characters or
more; shorter words cannot be looked up and are dropped).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import PurePosixPath

UNICODE61 = "unicode61"
PORTER = "porter unicode61"
TRIGRAM = "trigram"
_FRONT_MATTER = re.compile(r"\A(?:---|\+\+\+)\s*\n(.*?)\n(?:---|\+\+\+)\s*(?:\n|\Z)", re.DOTALL)
_TITLE_KEY = re.compile(r"^title\s*[:=]\s*(.+?)\s*$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_RST_TITLE = re.compile(r"^([^\s=\-~^*#.:][^\n]*)\n([=\-~^*#])\2{2,}[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    body: str


def page(path: str, text: str) -> Page:
    """The row a plain script makes of one file's text."""
    body = text
    title = None
    if front := _FRONT_MATTER.match(text):
        body = text[front.end() :]
        if key := _TITLE_KEY.search(front.group(1)):
            title = key.group(1).strip("'\"")
    if not title and (heading := _HEADING.search(body) or _RST_TITLE.search(body)):
        title = heading.group(1).strip()
    return Page(path, title or PurePosixPath(path).stem, body)


def safe_query(query: str, *, shortest: int = 1) -> str | None:
    """The query's words, each a quoted FTS5 string, OR-joined; None when no word is left (words
    under `shortest` characters are dropped: the trigram tokenizer cannot look them up)."""
    words = [word for word in query.split() if len(word) >= shortest]
    if not words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in dict.fromkeys(words))


class Fts5Baseline:
    """An in-memory FTS5 table of pages under one tokenizer."""

    def __init__(self, pages: Iterable[Page], tokenizer: str = UNICODE61) -> None:
        self.tokenizer = tokenizer
        self._conn = sqlite3.connect(":memory:")
        self._conn.execute(
            f"CREATE VIRTUAL TABLE pages USING fts5(path UNINDEXED, title, body, tokenize='{tokenizer}')"
        )
        self._conn.executemany(
            "INSERT INTO pages (path, title, body) VALUES (?, ?, ?)",
            ((p.path, p.title, p.body) for p in pages),
        )

    def rank(self, query: str, depth: int = 10) -> list[str]:
        """The paths of the best `depth` pages for `query`, best first."""
        match = safe_query(query, shortest=3 if self.tokenizer == TRIGRAM else 1)
        if match is None:
            return []
        try:
            with closing(
                self._conn.execute(
                    "SELECT path FROM pages WHERE pages MATCH ? ORDER BY bm25(pages) LIMIT ?", (match, depth)
                )
            ) as rows:
                return [path for (path,) in rows]
        except sqlite3.OperationalError:  # a word that is all punctuation, say: nothing to look up
            return []

    def close(self) -> None:
        self._conn.close()
