"""The prose of a page as a sentence model should read it: Markdown markup, URLs, link targets and
lines of code left out (a third of the tokens, and not what a question is phrased like), with a
map back to where each piece kept came from in the page's text.
"""

from __future__ import annotations

import bisect
import re
import sys

# Markdown that carries no meaning for a sentence model but costs tokens (WordPiece makes every
# bracket, brace and slash a token): left out of the embedded text. "gap" parts become a space,
# "join" characters nothing (`[c]reate` -> create, `{{path}}` -> path).
_CODE = (
    r"(?P<code>^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?:.*?\n)??[ \t]{0,3}(?P=fence)[ \t]*$"
    r"|^[ \t]*(?:[-*+][ \t]+)?`[^`\n]+`[ \t]*$)|"
)
_NOISE = (
    r"(?P<gap>^[ \t]*(?:`{3,}|~{3,})[^\n]*$"  # a fence line (when code is kept)
    r"|<?(?:https?|ftp)://[^\s<>()\]]+>?"  # a URL
    r"|</?[A-Za-z][^<>\n]{0,200}>"  # an HTML tag
    r"|^[ \t]*(?:#{1,6}|>+|[-*+]|\d{1,3}[.)])(?=[ \t])"  # heading, quote, list markers
    r"|[|]|-{3,}|={3,}"  # tables and rules
    r"|:[ \t]*$"  # a colon ending a line (before a command line left out): a token saying nothing
    r"|\s+)"
    r"|(?P<join>\]\([^()\s]*\)|[\[\]{}`*~]+)"  # a link's target; brackets, braces, emphasis
)
_PROSE = re.compile(_CODE + _NOISE, re.MULTILINE | re.DOTALL)
_MARKUP = re.compile(_NOISE, re.MULTILINE | re.DOTALL)


def prose(text: str, *, code: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The words of a Markdown (or plain) text as a sentence model should read them: markup, URLs,
    link targets and (unless `code`) fenced blocks and lines that are only code left out, runs of
    space made one. Returns that text and its map back to `text`: (position in the result,
    position in `text`) at the start of each piece kept, in order (`source_offset` reads it)."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    kept = 0
    for match in (_MARKUP if code else _PROSE).finditer(text):
        if match.start() > kept:
            spans.append((length, kept))
            out.append(text[kept : match.start()])
            length += match.start() - kept
        kept = match.end()
        if match.lastgroup != "join" and out and not out[-1].endswith(" "):
            out.append(" ")
            length += 1
    if kept < len(text):
        spans.append((length, kept))
        out.append(text[kept:])
    return "".join(out).rstrip(), spans


def source_offset(spans: list[tuple[int, int]], position: int) -> int:
    """Where `position` of a `prose()` result comes from in the original text."""
    index = bisect.bisect_right(spans, (position, sys.maxsize)) - 1
    if index < 0:
        return 0
    at, source = spans[index]
    return source + (position - at)
