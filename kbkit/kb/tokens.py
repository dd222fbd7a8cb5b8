"""How big a piece of text is to an agent: the one token estimate every budget uses."""

from __future__ import annotations

import json


def estimate_tokens(value: object) -> int:
    """A cheap, conservative token estimate: about four characters of JSON per token."""
    return len(json.dumps(value, ensure_ascii=False)) // 4 + 1


def longest_within(text: str, max_tokens: int) -> int:
    """The length of the longest prefix of `text` estimated at most `max_tokens` tokens (binary
    search over at most 4 x max_tokens characters: each character is at least one of JSON)."""
    if estimate_tokens(text) <= max_tokens:
        return len(text)
    fits, fails = 0, min(len(text), max_tokens * 4)
    if estimate_tokens(text[:fails]) <= max_tokens:
        return fails
    while fails - fits > 1:
        middle = (fits + fails) // 2
        if estimate_tokens(text[:middle]) <= max_tokens:
            fits = middle
        else:
            fails = middle
    return fits
