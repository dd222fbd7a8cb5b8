"""Names split into the words people search for: `rotate-api-key` -> rotate api key,
`CDC::GetTextAlign` -> CDC::GetTextAlign CDC::Get Text Align.

FTS5's tokenizer keeps `GetTextAlign` as one word, so a question about "text align" would not
match it; file names (kbkit/kb/fields.py) and heading paths (kbkit/kb/passages.py) are searched
in this split form.
"""

from __future__ import annotations

import functools
import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[-_.\s]+")


@functools.lru_cache(maxsize=4096)  # a page's passages repeat their sections' heading paths
def split_words(text: str) -> str:
    """Split on `-`, `_`, `.`, spaces and case changes; a part with case changes keeps its whole
    form too (`getHTTPClient` -> "getHTTPClient get HTTP Client"), so the joined word still matches."""
    words: list[str] = []
    for part in _SPLIT.split(text):
        if not part:
            continue
        pieces = _CAMEL.split(part)
        words.extend(pieces if len(pieces) == 1 else [part, *pieces])
    return " ".join(words)
