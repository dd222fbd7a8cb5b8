"""Plain text files (.txt, and a skill's own scripts and references): the text as it is."""

from __future__ import annotations

from kbkit.kb.formats.base import ParsedText, decode_text
from kbkit.kb.formats.budget import BUDGET, Budget


def parse_plain(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """UTF-8 or UTF-16 text, no title (bounded by the guard's file size cap)."""
    return ParsedText(title=None, body=decode_text(data))
