"""A document's sections and passages: where each part of the served text starts and what it is called.

Parsers give an outline (each heading's offset, level and title, in the characters of the text
`get_document` serves). From it come the sections (a heading's span, its subsections included,
and its heading path: `CWnd Class > CWnd::SetWindowPos`) and the passages search matches one by
one: a section small enough becomes one passage with its subsections, a larger one gives its own
text (split at paragraph boundaries) and then its subsections. A passage also names where a
result should point (its anchor): the outermost section around it that one default read returns
whole, so reading from a result's offset gives the whole member, not only its "Remarks"
(docs/adr/0026). Pure functions: no SQL, no I/O.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

PASSAGE_CHARS = 3000
"""A passage is at most about this long (a section's own text is split at paragraph boundaries)."""
ANCHOR_CHARS = 12_000
"""A result points at the outermost section around its passage that is at most this long (about
3,000 tokens, well inside one default read), else at the passage itself."""
MAX_OUTLINE = 10_000
"""At most this many headings of a document are sections (cpp-docs' largest page has 1,390): a
page of a million headings costs a read or an index no more than one of ten thousand."""
MAX_PASSAGES = 2000
"""At most this many passages a document (thousands of tiny sections are merged up to this)."""
TITLE_CHARS = 200
"""A heading's title is cut to this many characters in a heading path."""
SEPARATOR = " > "


@dataclass(frozen=True)
class Heading:
    start: int
    """Where the heading's line starts, in characters of the served text."""
    level: int
    """1 for a top-level heading (`#`, a page), deeper levels below it."""
    title: str


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    """Where the section ends: the next heading of the same or a higher level, or the text's end."""
    own_end: int
    """Where its own text ends: the next heading (its first subsection), or `end`."""
    path: str
    parent: int
    """The index of the enclosing section in the list `sections()` returns (-1 for none)."""


@dataclass(frozen=True)
class Passage:
    start: int
    end: int
    path: str
    """The heading path of the section the passage is in ("" before the first heading)."""
    anchor: int
    """Where a search result for this passage points (a section start, or `start`)."""
    anchor_path: str
    """The heading path at `anchor`."""


def clean_title(raw: str) -> str:
    """A heading's text (already plain: each reader reduces its own markup, formats/markup.py) with
    its spaces collapsed, cut to TITLE_CHARS. A `<T>` in it is text (`RefCell<T>`)."""
    return " ".join(raw.split())[:TITLE_CHARS]


def sections(size: int, outline: tuple[Heading, ...]) -> list[Section]:
    """Each heading's section, in document order (`outline` is sorted by start). Linear."""
    ends = [size] * len(outline)
    parents = [-1] * len(outline)
    paths: list[str] = []
    stack: list[int] = []
    for index, heading in enumerate(outline):
        while stack and outline[stack[-1]].level >= heading.level:
            ends[stack.pop()] = heading.start
        parents[index] = stack[-1] if stack else -1
        paths.append(f"{paths[stack[-1]]}{SEPARATOR}{heading.title}" if stack else heading.title)
        stack.append(index)
    return [
        Section(
            heading.start,
            ends[index],
            outline[index + 1].start if index + 1 < len(outline) else size,
            paths[index],
            parents[index],
        )
        for index, heading in enumerate(outline)
    ]


class Layout:
    """A text's sections, looked up by offset (each lookup a binary search)."""

    def __init__(self, size: int, outline: tuple[Heading, ...]) -> None:
        self.size = size
        self.spans = sections(size, outline)
        self.starts = [section.start for section in self.spans]

    def innermost(self, offset: int) -> int:
        """The index of the innermost section holding `offset`, or -1."""
        index = bisect.bisect_right(self.starts, offset) - 1
        while index >= 0 and self.spans[index].end <= offset:
            index = self.spans[index].parent
        return index

    def path_at(self, offset: int) -> str:
        """The heading path at `offset` ("" before any heading)."""
        index = self.innermost(offset)
        return self.spans[index].path if index >= 0 else ""

    def read_end(self, offset: int) -> int:
        """Where a read from `offset` ends: the end of the section that starts there (its
        subsections included), or the text's end when `offset` is 0 or inside a section."""
        index = bisect.bisect_left(self.starts, offset)
        if offset and index < len(self.spans) and self.starts[index] == offset:
            return self.spans[index].end
        return self.size


def passages(text: str, outline: tuple[Heading, ...]) -> list[Passage]:
    """The text cut into passages (whitespace-only pieces left out), each with its anchor."""
    layout = Layout(len(text), outline)
    pieces: list[tuple[int, int, str]] = []
    if len(text) <= PASSAGE_CHARS:
        pieces.append((0, len(text), layout.path_at(0)))
    else:
        first = layout.spans[0].start if layout.spans else len(text)
        pieces += [(start, end, "") for start, end in split(text, 0, first)]
        covered = first
        for section in layout.spans:
            if section.start < covered:
                continue  # inside a section already taken whole
            if section.end - section.start <= PASSAGE_CHARS:
                pieces.append((section.start, section.end, section.path))
                covered = section.end
            else:
                own = text[section.start : section.own_end].strip()
                if section.own_end == section.end or "\n" in own:  # not only a heading over subsections
                    pieces += [(s, e, section.path) for s, e in split(text, section.start, section.own_end)]
                covered = section.own_end
    pieces = [piece for piece in pieces if text[piece[0] : piece[1]].strip()]
    if len(pieces) > MAX_PASSAGES:
        pieces = _merged(pieces, len(text))
    return [_anchored(start, end, path, layout) for start, end, path in pieces]


def _merged(pieces: list[tuple[int, int, str]], size: int) -> list[tuple[int, int, str]]:
    """Neighbouring passages joined (the first one's path kept) until there are few enough."""
    cap = max(PASSAGE_CHARS, -(-size // (MAX_PASSAGES // 2)))
    merged = [pieces[0]]
    for start, end, path in pieces[1:]:
        first_start, _, first_path = merged[-1]
        if end - first_start <= cap:
            merged[-1] = (first_start, end, first_path)
        else:
            merged.append((start, end, path))
    return merged[:MAX_PASSAGES]


def _anchored(start: int, end: int, path: str, layout: Layout) -> Passage:
    """The passage with its anchor: the outermost section holding it that is at most
    ANCHOR_CHARS long (the whole text when that is), else the passage's own start."""
    if layout.size <= ANCHOR_CHARS:
        return Passage(start, end, path, 0, layout.path_at(0))
    anchor: Section | None = None
    index = layout.innermost(start)
    while index >= 0:
        section = layout.spans[index]
        if section.end >= end and section.end - section.start <= ANCHOR_CHARS:
            anchor = section
        index = section.parent
    if anchor is None:
        return Passage(start, end, path, start, path)
    return Passage(start, end, path, anchor.start, anchor.path)


_IN_PAGE_LINK = re.compile(r"\]\(#[^)\s]*\)")


def is_contents(text: str) -> bool:
    """Whether a passage is the page's own table of contents: at least three lines, and most of its
    lines, link to anchors in the same page (a class's member table). It names every section in a
    line each, so it would match a question about any of them better than the section that
    answers it; search matches it by its heading only (kbkit/kb/passages.py)."""
    if text.count("](#") < 3:  # most passages: no need to look at their lines
        return False
    lines = [line for line in text.splitlines() if line.strip()]
    linking = sum(1 for line in lines if _IN_PAGE_LINK.search(line))
    return linking >= 3 and linking * 2 >= len(lines)


def split(text: str, start: int, end: int, cap: int = PASSAGE_CHARS) -> list[tuple[int, int]]:
    """[start, end) in pieces of at most `cap` characters, cut after a blank line, else after a
    line break, else anywhere: linear in the span."""
    pieces = []
    while end - start > cap:
        cut = boundary(text, start + cap // 2, start + cap)
        pieces.append((start, cut))
        start = cut
    if end > start:
        pieces.append((start, end))
    return pieces


def boundary(text: str, low: int, high: int) -> int:
    """Where to cut in (low, high]: after the last blank line, else after the last line break,
    else at `high`."""
    para = text.rfind("\n\n", low, high)
    if para >= 0:
        return para + 2
    line = text.rfind("\n", low, high)
    return line + 1 if line >= 0 else high
