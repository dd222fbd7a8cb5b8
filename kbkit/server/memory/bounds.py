"""How much of the memory service's replies kbkit reads and passes on (docs/adr/0018).

Over MAX_REPLY_BYTES the upstream is not read further and the call fails with a notice; text over
RESULT_TEXT_CAP is cut, and the cut is said, so the agent never takes part of an answer for all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp.types as types

MAX_REPLY_BYTES = 8 * 1024 * 1024
"""Bytes of one upstream reply kbkit reads; past this it stops reading and says so."""
RESULT_TEXT_CAP = 512 * 1024
"""Bytes (UTF-8) of text one memory result may pass on to the agent; the rest is cut, with a notice."""


class ReplyTooLarge(httpx2.StreamError):
    """The upstream's reply passed MAX_REPLY_BYTES; kbkit stopped reading it. A stream error, so the
    SDK answers the one call with an error and keeps the connection."""


def bounded(result: types.CallToolResult) -> types.CallToolResult:
    """Text over RESULT_TEXT_CAP is cut, and the cut is said; the agent never gets part as all."""
    sizes = [len(b.text.encode()) for b in result.content if isinstance(b, types.TextContent)]
    total = sum(sizes)
    if total <= RESULT_TEXT_CAP:
        return result
    room, content = RESULT_TEXT_CAP, []
    for block in result.content:
        if isinstance(block, types.TextContent):
            kept = block.text.encode()[:room].decode("utf-8", "ignore")
            room -= len(kept.encode())
            if kept:
                content.append(block.model_copy(update={"text": kept}))
    content.append(
        types.TextContent(
            text=f"[kbkit: the memory service returned {total:,} bytes of text; only the first "
            f"{RESULT_TEXT_CAP:,} are shown. Ask for less: a narrower query or a lower max_tokens.]"
        )
    )
    return result.model_copy(update={"content": content, "structured_content": None})


def too_large(message: str) -> bool:
    """An SDK error message that says a reply passed the bound (the SDK's SSE limit, or ours)."""
    return "exceeded the" in message and "byte limit" in message or ReplyTooLarge.__name__ in message


def too_large_notice(name: str) -> str:
    return (
        f"{name}: the memory service's reply was over {MAX_REPLY_BYTES // (1024 * 1024)} MiB; kbkit stopped "
        "reading it. Ask for less: a narrower query or a lower max_tokens."
    )


class CappedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose JSON replies stop at MAX_REPLY_BYTES (SSE events are capped by the SDK;
    an SSE stream as a whole may be long-lived, so only JSON bodies are counted)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("application/json"):
            response.stream = _CappedStream(response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > MAX_REPLY_BYTES:
                raise ReplyTooLarge(f"{ReplyTooLarge.__name__}: over {MAX_REPLY_BYTES} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
