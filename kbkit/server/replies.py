"""Every reply fits the transport: sizes are measured as the wire encodes them (docs/adr/0017).

The MCP SDK's HTTP client refuses a server-sent event over 1 MiB, and one event carries one whole
JSON-RPC message. JSON escaping grows text: a control character takes six bytes, and the
2026-07-28 HTTP path escapes every non-ASCII character (six bytes, twelve outside the BMP). So a
cut counted on the text is not a cut on the reply; these functions count the reply, escaped the
strictest way any transport writes it, which bounds what every era actually sends.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

REPLY_LIMIT = 1024 * 1024
"""The largest JSON-RPC message a reply may be: the MCP SDK's HTTP client refuses larger SSE events."""
ENVELOPE_ROOM = 1024
"""Room for what wraps a result on the wire: `{"jsonrpc","id","result"}` and the SSE fields."""
RESULT_LIMIT = REPLY_LIMIT - ENVELOPE_ROOM
"""The largest a result may be, encoded."""


def encoded_size(value: Any) -> int:
    """Bytes `value` takes as compact JSON with every non-ASCII character escaped (the largest form)."""
    return len(json.dumps(value, separators=(",", ":")))


def result_size(result: BaseModel) -> int:
    """Bytes an MCP result takes on the wire, at most."""
    return encoded_size(result.model_dump(by_alias=True, mode="json", exclude_none=True))


def fit_text(text: str, budget: int) -> str:
    """The longest prefix of `text` whose JSON string (quotes included) takes at most `budget` bytes."""
    if encoded_size(text) <= budget:
        return text
    fits, fails = 0, min(len(text), max(budget, 0))  # `budget` characters take at least budget + 2 bytes
    while fails - fits > 1:  # prefix `fits` fits, prefix `fails` does not
        middle = (fits + fails) // 2
        if encoded_size(text[:middle]) <= budget:
            fits = middle
        else:
            fails = middle
    return text[:fits]


def longest_fitting(count: int, size_of: Any, budget: int = RESULT_LIMIT) -> int:
    """The largest n <= count with size_of(n) <= budget (size_of grows with n); 0 when none fits."""
    if size_of(count) <= budget:
        return count
    fits, fails = 0, count
    while fails - fits > 1:
        middle = (fits + fails) // 2
        if size_of(middle) <= budget:
            fits = middle
        else:
            fails = middle
    return fits
