"""What every format reader shares: the text it returns, the shape of a reader, text decoding, and
the wrapper that turns any failure of one file into a refusal of that file alone.

Below every reader and the registry; it imports none of them.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from kbkit.catalog.filetypes import LIBRARIES
from kbkit.errors import DocumentRefused
from kbkit.kb.formats.budget import Budget
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title


@dataclass(frozen=True)
class ParsedText:
    """A file as text: what the index stores, search ranks and reads serve."""

    title: str | None
    body: str
    headings: list[str] = field(default_factory=list)
    outline: tuple[Heading, ...] = ()
    """Where each heading (or PDF page) starts in `body`: the sections search and reads use."""
    description: str | None = None
    """Front matter `description` (or `summary`): searched as its own field."""
    tags: tuple[str, ...] = ()
    """Front matter `tags` and `keywords`: searched as their own field."""


class Reader(Protocol):
    """A format's reader: a file's bytes -> its text, within `budget`, or DocumentRefused."""

    def __call__(self, data: bytes, budget: Budget = ...) -> ParsedText: ...


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM is dropped), or UTF-16 when a byte-order mark says so (editors on Windows
    save it); anything else is refused with the reason, never guessed."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")  # the mark picks the byte order and is dropped
        except UnicodeDecodeError as exc:
            raise DocumentRefused(
                "undecodable",
                f"not UTF-8/UTF-16 text: it starts with a UTF-16 byte-order mark but is not valid "
                f"UTF-16 ({exc.reason} at byte {exc.start}); save it as UTF-8",
            ) from None
    elif b"\x00" in data:
        raise DocumentRefused("undecodable", "the file holds binary data (NUL bytes), not UTF-8/UTF-16 text")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentRefused(
                "undecodable",
                f"not UTF-8/UTF-16 text: the file is not valid UTF-8 (bad byte at offset {exc.start}) "
                "and has no UTF-16 byte-order mark; save it as UTF-8",
            ) from None
    if "\x00" in text:
        raise DocumentRefused(
            "undecodable", "the file holds binary data (NUL characters), not UTF-8/UTF-16 text"
        )
    return text


TITLE_CHARS = 500
"""A document's title (from its metadata, first heading or first line) is cut here."""


def meta_title(value: object) -> str | None:
    """A title from metadata or a heading: white space folded, cut at TITLE_CHARS; None when empty."""
    if isinstance(value, str | int | float) and str(value).strip():
        return " ".join(str(value).split())[:TITLE_CHARS]
    return None


DISTRIBUTIONS = {module: dist for pairs in LIBRARIES.values() for module, dist in pairs}
"""Import name -> the name pip installs (python-docx for `docx`)."""


def guarded(read: Callable[[], ParsedText]) -> ParsedText:
    """The reader's result; a missing library, or any failure it did not name itself, becomes
    DocumentRefused (the indexer skips a file for that and nothing else)."""
    try:
        return read()
    except DocumentRefused:
        raise
    except ImportError as exc:
        raise library_missing(exc) from None
    except Exception as exc:
        raise unreadable("file", exc) from None


def unreadable(kind: str, exc: BaseException) -> DocumentRefused:
    """The one line for a file a library failed on: damaged files raise many kinds of error."""
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return DocumentRefused("unparsable", f"the {kind} could not be read ({reason})")


def library_missing(exc: ImportError) -> DocumentRefused:
    """The refusal for a file whose reader needs a library that is not installed, with the fix."""
    name = (exc.name or "").split(".")[0]
    package = DISTRIBUTIONS.get(name, name) or str(exc)
    return DocumentRefused(
        "parser-missing",
        f"{package} is not installed; run: pip install {package} (or drop the type from [parsers] enabled)",
    )


def outline_of_headings(found: list[tuple[int, int, str]]) -> tuple[Heading, ...]:
    """(start, level, raw text) of each heading, in order -> the outline (empty titles left out),
    at most MAX_OUTLINE headings: the rest of the text belongs to the last section."""
    headings = (Heading(start, level, clean_title(text)) for start, level, text in found)
    return tuple(islice((heading for heading in headings if heading.title), MAX_OUTLINE))
