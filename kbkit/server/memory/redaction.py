"""Keys out of every text kbkit says or passes on about the memory service (docs/adr/0018): an
upstream may echo the key it was sent, escaped, URL-encoded or cut short."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import mcp.types as types

MIN_SECRET = 8
"""A run of this many characters of a key (or longer) is redacted wherever it appears."""


class Redactor:
    """Takes every form of each key it was given out of a text: raw, repr- and JSON-escaped,
    URL-encoded, and any run of MIN_SECRET or more of its first characters (a cut message)."""

    def __init__(self) -> None:
        self._forms: set[str] = set()

    def add(self, *secrets: str | None) -> None:
        for secret in secrets:
            if not secret:
                continue
            forms = {
                secret,
                secret.strip(),
                repr(secret)[1:-1],
                json.dumps(secret)[1:-1],
                quote(secret, safe=""),
                quote(secret),
                quote_plus(secret),
            }
            self._forms |= {form for form in forms if len(form) >= MIN_SECRET}

    def __call__(self, text: str) -> str:
        heads = {form[:MIN_SECRET] for form in self._forms}
        out: list[str] = []
        start = 0
        while True:
            found = [(at, head) for head in heads if (at := text.find(head, start)) != -1]
            if not found:
                return "".join(out) + text[start:]
            at = min(found)[0]
            length = max(_common_prefix(text, at, form) for form in self._forms)
            out += [text[start:at], "***"]
            start = at + length


def _common_prefix(text: str, at: int, form: str) -> int:
    """How many characters of `form` appear in `text` from `at` on (0 when under MIN_SECRET)."""
    length = 0
    while length < len(form) and at + length < len(text) and text[at + length] == form[length]:
        length += 1
    return length if length >= MIN_SECRET else 0


def redacted(result: types.CallToolResult, redact: Redactor) -> types.CallToolResult:
    """The upstream's own words pass through the redactor too: an upstream may echo the key."""
    content = [
        block.model_copy(update={"text": redact(block.text)})
        if isinstance(block, types.TextContent)
        else block
        for block in result.content
    ]
    structured = result.structured_content
    if structured is not None:
        try:
            structured = json.loads(redact(json.dumps(structured)))
        except ValueError:
            structured = None
    return result.model_copy(update={"content": content, "structured_content": structured})
