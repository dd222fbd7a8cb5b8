"""Each principal's fair share of the server's sessions and notification streams, and the streams a
revocation must close (docs/adr/0052).

One member must not be able to lock the others out: `max_sessions` is a pool shared by everyone,
so each principal (a personal token's name, an OAuth subject, `shared`) may hold at most
`max_sessions_per_principal` 2025-11-25 sessions (and at most MAX_LISTEN_PER_PRINCIPAL 2026-07-28
`subscriptions/listen` streams: kbkit/server/notify.py). A principal at its cap that opens another
session ends its own session idle the longest; with none idle it gets 429 naming the limit.
When the whole pool is full, a newcomer ends the session idle the longest of whoever holds the
most (more than the newcomer); only when nobody else holds more is it refused (503 naming
`max_sessions`).

Every long-lived response (a session's GET stream, a listen stream) is filed under the credential
that opened it, so revoking a personal token closes them at once rather than at the next request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio


@dataclass
class _Session:
    owner: str
    user: Any
    """The owner's `scope["user"]`: a session is ended by a DELETE sent as its owner."""
    last_used: float
    in_flight: int = 0


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


class Shares:
    """Who holds which sessions and streams. Used from the event loop only (no locking)."""

    def __init__(
        self,
        *,
        max_sessions: int,
        per_principal: int,
        idle_timeout: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions = max_sessions
        self.per_principal = min(per_principal, max_sessions)
        self.idle_timeout = idle_timeout
        self._monotonic = monotonic
        self._sessions: dict[str, _Session] = {}
        self._streams: dict[str, set[anyio.CancelScope]] = {}

    # --- sessions ---------------------------------------------------------------------------------

    def _prune(self) -> None:
        """Forget sessions the SDK has ended by now (idle past `session_idle_timeout`)."""
        now = self._monotonic()
        for sid, session in list(self._sessions.items()):
            if not session.in_flight and now - session.last_used > self.idle_timeout:
                del self._sessions[sid]

    def held(self, owner: str) -> int:
        return sum(1 for s in self._sessions.values() if s.owner == owner)

    def _oldest_idle(self, owner: str) -> str | None:
        idle = [
            (s.last_used, sid) for sid, s in self._sessions.items() if s.owner == owner and not s.in_flight
        ]
        return min(idle)[1] if idle else None

    def admit(self, owner: str, name: str) -> tuple[list[tuple[str, Any]], Refusal | None]:
        """Room for a new session of `owner`: (sessions to end first, as (id, user)), or a refusal."""
        self._prune()
        ending: list[str] = []
        mine = self.held(owner)
        if mine >= self.per_principal:
            victim = self._oldest_idle(owner)
            if victim is None:
                return [], Refusal(
                    429,
                    f"{name} already holds {mine} sessions, all in use: the most one principal may "
                    f"([server.http] max_sessions_per_principal = {self.per_principal}); end one (DELETE) "
                    "or let one go idle",
                )
            ending.append(victim)
        elif len(self._sessions) >= self.max_sessions:
            counts: dict[str, int] = {}
            for session in self._sessions.values():
                counts[session.owner] = counts.get(session.owner, 0) + 1
            victim = None
            for holder, count in sorted(counts.items(), key=lambda item: -item[1]):
                if count <= mine:
                    break
                victim = self._oldest_idle(holder)
                if victim is not None:
                    break
            if victim is None:
                return [], Refusal(
                    503,
                    f"all {self.max_sessions} sessions are in use ([server.http] max_sessions) and nobody "
                    "holds more than you; retry in a moment",
                )
            ending.append(victim)
        return [(sid, self._sessions.pop(sid).user) for sid in ending], None

    def opened(self, sid: str, owner: str, user: Any) -> None:
        self._sessions[sid] = _Session(owner, user, self._monotonic())

    def begin(self, sid: str, owner: str) -> bool:
        """A request of a session starts (False: not a session this ledger holds for `owner`)."""
        session = self._sessions.get(sid)
        if session is None or session.owner != owner:
            return False
        session.in_flight += 1
        return True

    def end(self, sid: str, gone: bool) -> None:
        """A request of a session ended; `gone`: the session no longer exists (DELETE, 404)."""
        session = self._sessions.get(sid)
        if session is None:
            return
        session.in_flight = max(0, session.in_flight - 1)
        session.last_used = self._monotonic()
        if gone:
            del self._sessions[sid]

    # --- streams a revocation closes --------------------------------------------------------------

    @contextmanager
    def stream(self, credential: str, scope: anyio.CancelScope) -> Iterator[None]:
        """File a long-lived response under the credential that opened it."""
        self._streams.setdefault(credential, set()).add(scope)
        try:
            yield
        finally:
            scopes = self._streams.get(credential)
            if scopes is not None:
                scopes.discard(scope)
                if not scopes:
                    del self._streams[credential]

    def credentials(self) -> list[str]:
        return list(self._streams)

    def close(self, credential: str) -> int:
        """End every stream of `credential`; returns how many."""
        scopes = self._streams.pop(credential, set())
        for scope in scopes:
            scope.cancel()
        return len(scopes)
