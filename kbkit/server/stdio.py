"""The stdio transport: stdout carries the protocol and nothing else.

stdin is read by a daemon thread of our own, not by the SDK's reader: the SDK reads stdin in a
worker thread that a cancelled task waits for, so Ctrl-C (or SIGINT from a supervisor) left
`kbkit serve` waiting for a line that never comes, and the interpreter's exit joined that thread
too. Here a stop ends serving at once; the blocked read dies with the process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.from_thread
from anyio.abc import ObjectSendStream
from mcp.server import Server
from mcp.server.stdio import stdio_server

_LINE_LIMIT = 64 * 1024 * 1024
"""A line (one JSON-RPC message) longer than this is cut; the SDK answers it as a parse error."""


class _Lines:
    """An async iterator over the lines of a file descriptor, fed by a daemon thread."""

    def __init__(self, receive: anyio.abc.ObjectReceiveStream[str]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def _pump(fd: int, send: ObjectSendStream[str], token: anyio.lowlevel.EventLoopToken) -> None:
    """Read lines from `fd` and hand each to the event loop; EOF (or the loop gone) ends it."""
    try:
        with os.fdopen(fd, "rb", closefd=True) as raw:
            for line in iter(lambda: raw.readline(_LINE_LIMIT), b""):
                anyio.from_thread.run(send.send, line.decode("utf-8", errors="replace"), token=token)
        anyio.from_thread.run(send.aclose, token=token)
    except (anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return  # the server stopped first: nothing waits for these lines any more


@asynccontextmanager
async def _stdin_lines() -> AsyncIterator[Any]:
    """stdin as lines, read from a private copy of fd 0 while fd 0 itself points at /dev/null (as
    the SDK does: a child process or a stray read must not take the protocol's bytes)."""
    private = os.dup(0)
    os.set_inheritable(private, False)
    saved = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    send, receive = anyio.create_memory_object_stream[str](0)
    token = anyio.lowlevel.current_token()
    thread = threading.Thread(target=_pump, args=(private, send, token), name="kbkit stdin", daemon=True)
    thread.start()
    try:
        async with receive:
            yield _Lines(receive)
    finally:
        with suppress(OSError):
            os.dup2(saved, 0)
        os.close(saved)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve until stdin ends (exit 0) or the task is cancelled (SIGINT: the caller exits 130)."""
    try:
        sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # no real stdin (embedded): the SDK's own reader
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    async with _stdin_lines() as lines, stdio_server(stdin=lines) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
