"""Waits with a generous deadline, never timing assertions; a port that refuses connections."""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, step: float = 0.05, what: str = "") -> T:
    """Poll `predicate` until it returns something truthy; fail after a generous deadline.

    The deadline is a bound on a hang, never a timing assertion: on a loaded machine it is simply
    reached later."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what or predicate}")
        time.sleep(step)
    return result


async def eventually(
    predicate: Callable[[], Awaitable[T]], timeout: float = 60.0, step: float = 0.1, what: str = ""
) -> T:
    """`wait_until` for an async predicate."""
    import anyio

    deadline = time.monotonic() + timeout
    while not (result := await predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what or predicate}")
        await anyio.sleep(step)
    return result


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs.

    The socket is bound but never listens: nothing else can take the port meanwhile, and a
    connection to it is refused at once (no free-port race)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
