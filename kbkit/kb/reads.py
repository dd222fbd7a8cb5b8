"""Bounded reads: from an offset, the section that starts there, cut to the caller's token budget.

An agent that found a passage reads from the result's `offset` and gets that section (its
subsections included) and no more; a read from 0 or from the middle of a section goes on to the
end of the text. Either way the reply is at most `max_tokens` (estimated as every budget in kbkit
is), cut before a subsection, else after a blank line, else after a line break, and it always
holds the start of what was asked for (docs/adr/0026).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Literal

from kbkit.kb.sections import Layout, boundary
from kbkit.kb.tokens import longest_within

DEFAULT_MAX_TOKENS = 8000
MAX_MAX_TOKENS = 20_000
"""A read's hard upper bound, well under the 25,000 tokens some agents refuse in one tool result."""
MIN_MAX_TOKENS = 50

Stop = Literal["end", "section", "max_tokens"]
"""Why a read ended: the text's end, the end of the section it started at, or the budget."""


@dataclass(frozen=True)
class Read:
    start: int
    end: int
    stop: Stop
    section: str
    """The heading path at `start` ("" before the first heading)."""


def bounded(text: str, layout: Layout, offset: int, max_tokens: int) -> Read:
    """What a read of `text` from `offset` returns, in at most `max_tokens` tokens."""
    end = layout.read_end(offset)
    stop: Stop = "end" if end >= len(text) else "section"
    fits = offset + longest_within(text[offset:end], max_tokens)
    if fits < end:
        end, stop = _cut(text, layout, offset, fits), "max_tokens"
    return Read(offset, end, stop, layout.path_at(offset))


def _cut(text: str, layout: Layout, offset: int, fits: int) -> int:
    """The best cut in (offset, fits]: before the last subsection that starts in its second half,
    else at a paragraph or line boundary there, else at `fits` (never before `offset` + 1)."""
    low = offset + (fits - offset) // 2
    starts = layout.starts
    index = bisect.bisect_right(starts, fits) - 1
    if index >= 0 and starts[index] > low:
        return starts[index]
    return max(boundary(text, low, fits), offset + 1) if fits > offset else offset + 1
