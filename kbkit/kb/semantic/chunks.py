"""How a document is cut into the pieces embedded (the chunk layout, `TEXT_VIEW`).

A page gets up to MAX_CHUNKS windows of its opening, led by its title (rows `chunk` 0 ..
MAX_CHUNKS - 1), and, when it has more than one passage (`passages`), one window of each passage
led by its heading path (rows MAX_CHUNKS and up, at most MAX_PAGE_CHUNKS). Each window is at most
CHUNK_TOKENS tokens of the page's prose (`prose.prose()`), with the offset in the document's text
where it starts, and a hash of its tokens (`chunk_key`): a chunk seen before takes the stored
vector instead of a model run.
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass
from typing import Any

from kbkit.kb.sections import SEPARATOR
from kbkit.kb.semantic.prose import prose, source_offset

CHUNK_TOKENS = 128
"""Tokens per chunk, the length the default model was trained on."""
MAX_CHUNKS = 4
"""Windows of a page's opening embedded (its first ~500 tokens of prose): what the page is about."""
MAX_PAGE_CHUNKS = 256
"""At most this many passage windows a document, its first passages' (docs/benchmarks.md has the
measurement behind the number): work and vectors per document stay bounded; BM25 reads all of it."""
LEAD_TOKENS = 32
"""At most this many tokens of the heading path (or title) lead each chunk."""
TEXT_VIEW = "passages-3"
"""What is embedded (`prose()` and the chunk layout): stored with the model's identity, so a change
here recomputes every vector."""
_CHARS_PER_CHUNK = CHUNK_TOKENS * 12
"""Text read per chunk before tokenizing (tokens are rarely over 12 characters): bounds tokenizer work."""
_MIN_PROSE_WORDS = 3
"""A page with less prose than this (a page of code) is embedded with its code."""


@dataclass(frozen=True)
class Chunk:
    """One embedded piece of a document."""

    start: int
    """Where its text starts in the document's indexed text (characters), so a chunk can be placed
    in the section holding it."""
    ids: tuple[int, ...]
    """The token ids the model reads: the special tokens, the title, then the text."""
    key: bytes
    """A hash of `ids`: chunks with the same key have the same vector."""
    number: int = 0
    """Its row's `chunk`: 0 .. MAX_CHUNKS - 1 for the page's opening windows, MAX_CHUNKS and up
    for its passages' windows (a page of more than one passage)."""


@dataclass(frozen=True)
class Section:
    """A passage as the embedding reads it (a row of `passages`)."""

    start: int
    length: int
    path: str
    """Its heading path ("" for none)."""


def _lead(title: str, path: str) -> str:
    """What leads a passage's windows: its heading path, the title first when the path lacks it,
    parts joined by ": " (one token where " > " is one more)."""
    parts = [part for part in path.split(SEPARATOR) if part]
    if title and (not parts or parts[0].lower() != title.lower()):
        parts.insert(0, title)
    return ": ".join(parts)


def _repeat(text: str, lead: str, title: str) -> int:
    """How much of a passage's prose repeats what its lead already says (the page's own `# Title`,
    the passage's heading): left out of the window."""
    for said in (lead.rsplit(": ", 1)[-1], title):
        if said and text[: len(said)].lower() == said.lower():
            return len(said)
    return 0


def stored_model(identity: str) -> str:
    """What every vector row stores as `model`: the model's identity and TEXT_VIEW, so vectors of
    another model or text view are recomputed, and counted as waiting until they are."""
    return f"{identity}#{TEXT_VIEW}"


def chunk_key(ids: tuple[int, ...]) -> bytes:
    """The hash of a chunk's tokens its stored vector is found again by."""
    return hashlib.blake2b(array("i", ids).tobytes(), digest_size=16).digest()


class Chunker:
    """The chunk layout over one tokenizer (a `tokenizers` Tokenizer, no padding or truncation)."""

    def __init__(self, tokenizer: Any, prefix: tuple[int, ...], suffix: tuple[int, ...]) -> None:
        self._tokenizer = tokenizer
        self._prefix = prefix
        """The special tokens a model input starts ([CLS]) and ends ([SEP]) with."""
        self._suffix = suffix

    def chunks(self, title: str, body: str, sections: list[Section] | None = None) -> list[Chunk]:
        """The pieces embedded for a document: up to MAX_CHUNKS windows of the page's prose
        (`prose()`) from its start, led by its title; and for a page of more than one passage, one
        window of each passage (at most MAX_PAGE_CHUNKS), led by its heading path. Each has the
        offset in `body` where its text starts. A passage that is only its heading gets none."""
        title_ids = self._lead_ids(title)
        chunks = self._windows(title_ids, title, title, body, 0, len(body), MAX_CHUNKS, 0)
        if not chunks:  # nothing but headings (or nothing): the title stands for the page
            row = (*self._prefix, *title_ids, *self._suffix)
            chunks.append(Chunk(0, row, chunk_key(row)))
        if sections is None or len(sections) < 2:
            return chunks
        number = MAX_CHUNKS
        leads: dict[str, tuple[int, ...]] = {}
        for part in sections:
            lead = _lead(title, part.path)
            if lead not in leads:
                leads[lead] = self._lead_ids(lead)
            found = self._windows(leads[lead], lead, title, body, part.start, part.length, 1, number)
            chunks += found
            number += len(found)
            if number - MAX_CHUNKS == MAX_PAGE_CHUNKS:
                break
        return chunks

    def _windows(
        self,
        lead_ids: tuple[int, ...],
        lead: str,
        title: str,
        body: str,
        start: int,
        length: int,
        limit: int,
        number: int,
    ) -> list[Chunk]:
        """Up to `limit` windows of the prose of body[start : start + length], numbered from `number`."""
        text, spans = prose(body[start : start + min(length, limit * _CHARS_PER_CHUNK)])
        if len(text.split()) < _MIN_PROSE_WORDS:
            text, spans = prose(body[start : start + min(length, limit * _CHARS_PER_CHUNK)], code=True)
        skip = _repeat(text, lead, title)
        if not text[skip:].strip():
            return []
        room = CHUNK_TOKENS - len(self._prefix) - len(self._suffix) - len(lead_ids)
        encoding = self._tokenizer.encode(text[skip:], add_special_tokens=False)
        ids, offsets = encoding.ids, encoding.offsets
        windows: list[Chunk] = []
        for first in range(0, len(ids), room):
            if len(windows) == limit:
                break
            row = (*self._prefix, *lead_ids, *ids[first : first + room], *self._suffix)
            at = start + source_offset(spans, skip + offsets[first][0])
            windows.append(Chunk(at, row, chunk_key(row), number + len(windows)))
        return windows

    def _lead_ids(self, lead: str) -> tuple[int, ...]:
        return tuple(self._tokenizer.encode(lead, add_special_tokens=False).ids[:LEAD_TOKENS])
