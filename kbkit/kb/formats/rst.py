"""reStructuredText files (Sphinx's sources, `.rst` or whatever `source_suffix` names): the text as
written, its sections from underlined (and overlined) titles, each title as the page shows it."""

from __future__ import annotations

import re

from kbkit.kb.formats.base import ParsedText, decode_text, meta_title, outline_of_headings
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markup import PLAIN, Markup, rst_plain
from kbkit.kb.sections import Heading

_RST_HEADING = re.compile(r"^([^\s][^\n]*)\n([=\-~^\"'`#*+:.<>_])\2+[ \t]*$", re.MULTILINE)
_EXPLICIT = re.compile(r"\.\.(?:\s|$)")
"""An explicit markup line (`.. _label:`, `.. note::`): never a title, whatever follows it."""


def parse_rst(data: bytes, budget: Budget = BUDGET, *, markup: Markup = PLAIN) -> ParsedText:
    """The file's text; its first title is its title (bounded by the guard's file size cap)."""
    text = decode_text(data)
    found = rst_headings(text)
    headings = [" ".join(raw.split()) for _, _, raw in found]
    title = meta_title(next((heading for heading in headings if heading), None))
    return ParsedText(title=title, body=text, headings=headings, outline=outline_of_headings(found))


def rst_headings(text: str) -> list[tuple[int, int, str]]:
    """(start, level, text) of every title, as the page shows it. In reStructuredText the order in
    which adornment styles first appear sets the levels; a title overlined and underlined is
    another style than one underlined with the same character (Django's `====` pages)."""
    levels: dict[tuple[str, bool], int] = {}
    found = []
    for m in _RST_HEADING.finditer(text):
        line = m.group(1)
        if _EXPLICIT.match(line) or set(line.rstrip()) == {m.group(2)}:
            continue  # a directive or target line, or an overline read as a title
        before = text.rfind("\n", 0, max(0, m.start() - 1))
        overline = text[before + 1 : max(0, m.start() - 1)].rstrip()
        over = bool(m.start()) and len(overline) >= 2 and set(overline) == {m.group(2)}
        start = before + 1 if over else m.start()
        level = levels.setdefault((m.group(2), over), len(levels) + 1)
        found.append((start, level, rst_plain(line).strip()))
    return found


def outline(body: str) -> tuple[Heading, ...]:
    """The outline of a reStructuredText text, found again from the text alone."""
    return outline_of_headings(rst_headings(body))
