"""Snippets: the stretch of a hit's best passage holding the most distinct query words, marked.

Snippets are found in Python with one C-level regex over a bounded window of the hit's best
passage. FTS5's snippet() was most of the search time on long pages (docs/benchmarks.md), and its
highlight() is quadratic in the number of matches in a document (49 s for a 1 MiB page made of the
query word)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from itertools import islice

from kbkit.kb import passages, segment
from kbkit.kb.formats.markdown import plain_inline
from kbkit.kb.formats.markup import rst_plain
from kbkit.kb.formats.registry import Registry
from kbkit.kb.search.query import rough_stem
from kbkit.kb.search.ranking import Ranked

SNIPPET_SCAN_CHARS = 64 * 1024
"""At most this many characters of a hit's passage are scanned for its snippet window, so a page
dense with the query word costs no more than any other."""
MAX_MARKS = 4096
"""At most this many matched words of a hit are weighed when choosing its snippet window."""
SNIPPET_CHARS = 160
EDGE_CHARS = 40
"""A snippet's edges move at most this far to fall between words."""
_FALLBACK_SQL = "SELECT rowid, title, description FROM documents_fts WHERE rowid IN ({ids})"


def marker(terms: tuple[str, ...], runs: tuple[str, ...] = ()) -> re.Pattern[str]:
    """A pattern finding the words of a text that match the query's terms (or other forms of them).
    A spaced word is marked from its start to its end; a piece of unspaced script (a bigram) or a
    run of it the query holds whole (`runs`) is marked as it stands, the longest first. A query
    with none of those gets the plain word pattern (three times faster on long English passages)."""
    spaced = {rough_stem(term) for term in terms if not segment.has_unspaced(term)}
    unspaced = {piece for term in (*terms, *runs) for piece in term.split() if segment.has_unspaced(piece)}
    if not unspaced:
        stems = sorted(spaced, key=len, reverse=True)
        return re.compile(r"\b(?:" + "|".join(re.escape(stem) for stem in stems) + r")\w*", re.IGNORECASE)
    letter = segment.SPACED_LETTER
    choices = [(stem, f"(?<!{letter}){re.escape(stem)}{letter}*") for stem in spaced]
    choices += [(piece, re.escape(piece)) for piece in unspaced]
    choices.sort(key=lambda choice: len(choice[0]), reverse=True)
    return re.compile("(?:" + "|".join(pattern for _, pattern in choices) + ")", re.IGNORECASE)


Plain = Callable[[str], str]
"""What a reader of the built page sees of a stretch of a document's text."""


def snippet_window(
    text: str | None, pattern: re.Pattern[str], fallback: str, plain: Plain = plain_inline
) -> str:
    """The stretch of `text` holding the most distinct matched words, as plain text (`plain`: the
    Markdown's own emphasis and attribute lists, the site generator's syntax left out), marked **so**.

    `text` is at most SNIPPET_SCAN_CHARS long and at most MAX_MARKS matches are weighed; with no
    match in it (the words were in the title or file name), the page's opening or `fallback`
    stands in."""
    text = text or ""
    marks = [(m.start(), m.end(), m.group(0).lower()) for m in islice(pattern.finditer(text), MAX_MARKS)]
    if not marks:
        opening = " ".join(plain(text[: SNIPPET_CHARS * 2]).split())
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
    if begin:  # at a space near there; text without spaces (Chinese, Thai) is cut where it stands
        space = text.rfind(" ", max(0, begin - EDGE_CHARS), begin)
        begin = space + 1 if space >= 0 else begin
    stop = min(len(text), begin + SNIPPET_CHARS + 30)
    end = text.find(" ", stop, stop + EDGE_CHARS)
    end = stop if end < 0 else end
    window = " ".join(marked(plain(text[begin:end]), pattern).split())
    return ("…" if begin else "") + window + ("…" if end < len(text) else "")


def marked(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with each match of `pattern` marked **so** (`text` is a snippet's plain window: no
    `**` of its own, so every pair is a mark). Matches that touch share one mark (two bigrams of
    one Japanese word: `**アップロード**`, never `**アップ****ロード**`)."""
    parts: list[str] = []
    pos = 0
    for match in islice(pattern.finditer(text), MAX_MARKS):
        if match.end() == match.start():
            continue
        if parts and match.start() == pos:
            parts[-1:] = [match.group(0), "**"]
        else:
            parts += [text[pos : match.start()], "**", match.group(0), "**"]
        pos = match.end()
    parts.append(text[pos:])
    return "".join(parts)


def plain_reading(registry: Registry, ext: str) -> Plain:
    """How a snippet of a document of extension `ext` is made plain: as reStructuredText when the
    registry reads it so (`.rst`, a Sphinx site's `.txt`), else as Markdown in the site's syntax."""
    if registry.reads_rst(ext):
        return rst_plain
    markup = registry.markup
    return lambda text: plain_inline(text, markup)


def snippets(
    conn: sqlite3.Connection,
    hits: list[Ranked],
    best: dict[int, passages.Best],
    pattern: re.Pattern[str],
    registry: Registry | None = None,
) -> dict[int, str]:
    """doc_id -> the snippet of each hit, from its best passage (its description or title when the
    words matched only there), read as the registry reads its file type."""
    if not hits:
        return {}
    registry = registry or Registry()
    exts = {hit.doc_id: hit.ext for hit in hits}
    shown = [best[hit.doc_id].passage_id for hit in hits if hit.doc_id in best]
    texts = passages.texts(conn, shown, SNIPPET_SCAN_CHARS)
    sql = _FALLBACK_SQL.format(ids=",".join(str(hit.doc_id) for hit in hits))
    out = {}
    for rowid, title, description in conn.execute(sql):
        found = best.get(rowid)
        text = texts.get(found.passage_id) if found is not None else None
        plain = plain_reading(registry, exts.get(rowid, ""))
        out[rowid] = snippet_window(text, pattern, description or title, plain)
    return out
