"""Socket-level limits of `kbkit serve --http`: how many connections, and how long one may stall.

uvicorn alone keeps a connection that sent half a request for ever (its keep-alive timer runs only
between requests, and any byte received cancels it), and it accepts until the process runs out of
file descriptors, after which nothing at all is served. Here:

- every connection must deliver a whole request (head and body) within `client_timeout` of the
  moment the server starts waiting for it; a reply left unread that long also closes it;
- at most `max_connections` are open. A newcomer past the limit makes room by closing the oldest
  connection that is still waiting for a request (the ones a stalling client holds); when every
  connection is busy serving a request, the newcomer gets a 503 and is closed;
- on shutdown, notification streams (a 2025-11-25 session's GET stream, a 2026-07-28
  `subscriptions/listen`) are closed at once, while requests in flight run to completion.

Every drop is logged through the `kbkit.http` logger, which `kbkit.server.logs` rate-limits.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger("kbkit.http")

ACCEPT_BACKLOG = 64
"""The listen queue, which is also how many sockets asyncio accepts in one go, before the guard
has seen any of them: a burst can overshoot max_connections by a few times this."""
FD_RESERVE = 64 + 3 * ACCEPT_BACKLOG
"""File descriptors kept for everything but client sockets (the index, the watcher, the memory
upstream), and for the overshoot of an accept burst."""

_REFUSAL = b"the server is at its connection limit; retry in a moment\n"
_REFUSAL_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\n"
    b"connection: close\r\n"
    b"content-length: " + str(len(_REFUSAL)).encode() + b"\r\n\r\n" + _REFUSAL
)


def open_file_limit() -> tuple[int, int]:
    """(soft, hard) RLIMIT_NOFILE; (0, 0) where the platform has none."""
    try:
        import resource
    except ImportError:  # not POSIX
        return 0, 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, hard


def usable_file_limit() -> int:
    """The soft open-file limit once `raise_open_file_limit` has run: the hard limit where finite."""
    soft, hard = open_file_limit()
    try:
        import resource
    except ImportError:
        return soft
    return soft if hard == resource.RLIM_INFINITY else max(soft, hard)


def raise_open_file_limit() -> int:
    """Lift the soft open-file limit to the hard one (no privilege needed); returns the limit in force."""
    try:
        import resource
    except ImportError:
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = usable_file_limit()
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # e.g. a hard limit above the kernel's nr_open
            return soft
    return target


def connection_budget(configured: int, file_limit: int) -> int:
    """`max_connections`, lowered so client sockets can never exhaust the open-file limit."""
    if file_limit <= 0:
        return configured
    return max(1, min(configured, file_limit - FD_RESERVE))


@dataclass
class ConnectionGuard:
    """What every connection of one server shares: the limits, and who is waiting for a request."""

    max_connections: int
    client_timeout: float

    def __post_init__(self) -> None:
        self.waiting: dict[GuardedH11Protocol, None] = {}
        """Connections waiting for (the rest of) a request, oldest first."""

    def protocol_class(self) -> type[H11Protocol]:
        """uvicorn's h11 protocol with this guard's limits (pass as `uvicorn.Config(http=...)`)."""
        return type("KbkitH11Protocol", (GuardedH11Protocol,), {"guard": self})

    def make_room(self, newcomer: GuardedH11Protocol) -> bool:
        for victim in self.waiting:
            if victim is not newcomer:
                logger.warning(
                    "http: %d connections open (max_connections): closed the oldest one still waiting "
                    "for a request",
                    self.max_connections,
                )
                victim.drop()
                return True
        return False


class GuardedH11Protocol(H11Protocol):
    """One HTTP connection, under a `ConnectionGuard`. Hooks only where uvicorn changes state."""

    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._stalled: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.guard.max_connections and not self.guard.make_room(self):
            logger.warning(
                "http: all %d connections are serving requests (max_connections): refused a new one with 503",
                self.guard.max_connections,
            )
            transport.write(_REFUSAL_RESPONSE)
            transport.close()
            return
        self._track()

    def handle_events(self) -> None:
        super().handle_events()
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client stopped reading: give it `client_timeout` to resume before closing."""
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.guard.client_timeout, self._unread)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def shutdown(self) -> None:
        """Graceful shutdown: a notification stream never ends by itself, so end it now; a request in
        flight gets its response (uvicorn then closes the connection)."""
        if self._serving_listener():
            self.drop()
            return
        super().shutdown()

    def drop(self) -> None:
        """Close at once, unsent bytes and all: used only on connections that broke a limit."""
        self._stop_waiting()
        self.transport.abort()

    def _track(self) -> None:
        """Waiting for a request (none yet, the last one answered, or its body still coming): the
        deadline runs from when the wait began; a request read in full stops it."""
        if self.transport is None or self.transport.is_closing():
            self._stop_waiting()
            return
        cycle = self.cycle
        reading = cycle is None or cycle.response_complete or cycle.more_body
        if reading and self._deadline is None:
            self._deadline = self.loop.call_later(self.guard.client_timeout, self._expired)
            self.guard.waiting[self] = None
        elif not reading:
            self._stop_waiting()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.guard.waiting.pop(self, None)

    def _expired(self) -> None:
        self._deadline = None
        self._too_slow("sent no whole request within")

    def _unread(self) -> None:
        self._stalled = None
        self._too_slow("left its reply unread for")

    def _too_slow(self, what: str) -> None:
        """A client slower than `client_timeout`: one warning line, then the connection closes."""
        logger.warning(
            "http: closed a connection that %s %d s (client_timeout)", what, self.guard.client_timeout
        )
        self.drop()

    def _serving_listener(self) -> bool:
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return False
        headers = cycle.scope["headers"]
        if cycle.scope["method"] == "GET":
            return any(name == b"accept" and b"text/event-stream" in value for name, value in headers)
        return (b"mcp-method", b"subscriptions/listen") in headers
