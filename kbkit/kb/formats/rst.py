"""reStructuredText files: the text as written, its sections from underlined titles."""

from __future__ import annotations

import re

from kbkit.kb.formats.base import ParsedText, decode_text, meta_title, outline_of_headings
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.sections import Heading

_RST_HEADING = re.compile(r"^([^\s][^\n]*)\n([=\-~^\"'`#*+:.<>_])\2+[ \t]*$", re.MULTILINE)


def parse_rst(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """The file's text; its first title is its title (bounded by the guard's file size cap)."""
    text = decode_text(data)
    found = rst_headings(text)
    headings = [" ".join(raw.split()) for _, _, raw in found]
    title = meta_title(headings[0] if headings else None)
    return ParsedText(title=title, body=text, headings=headings, outline=outline_of_headings(found))


def rst_headings(text: str) -> list[tuple[int, int, str]]:
    """(start, level, raw text) of every underlined title; in reStructuredText the order in which
    adornment characters first appear sets the levels."""
    levels: dict[str, int] = {}
    return [
        (m.start(), levels.setdefault(m.group(2), len(levels) + 1), m.group(1))
        for m in _RST_HEADING.finditer(text)
    ]


def outline(body: str) -> tuple[Heading, ...]:
    """The outline of a reStructuredText text, found again from the text alone."""
    return outline_of_headings(rst_headings(body))
