"""Writing Markdown from untrusted text: code fences that hold any content, found in bounded work."""

from __future__ import annotations


def fence_for(content: str) -> str:
    """A backtick fence longer than any run of backticks in `content`. The longest run is found
    by doubling and then halving a probe (C-speed `in`), so a run of millions costs a few dozen
    scans, and no list of matches is ever built."""
    width = 3
    while "`" * width in content:
        width *= 2
    if width == 3:
        return "```"
    low, high = width // 2, width  # a run of `low` is in the content, one of `high` is not
    while high - low > 1:
        middle = (low + high) // 2
        if "`" * middle in content:
            low = middle
        else:
            high = middle
    return "`" * high


def fenced(content: str, language: str) -> str:
    """`content` as a fenced code block with `language` as its info string."""
    fence = fence_for(content)
    return f"{fence}{language}\n{content}\n{fence}"
