"""Who did what: one line per MCP request on stderr, as text or JSON for log shippers.

A line holds the time, the principal and how it signed in, the JSON-RPC method (and the tool's
name for tools/call), the HTTP status, the reply's bytes and the duration. Never a token, an
argument (a query's text), or anything of a reply. Names a client sent are kept only when they
are plain identifiers ([A-Za-z0-9_./-], at most 128): anything else is logged as "?".

Requests refused before a principal is known (401, 403) are logged too, but at most one line per
status per REFUSED_INTERVAL: a storm of bad tokens cannot fill the disk. The count held back is
never lost: the next line of that status carries it, or, when no refusal follows, a line of its
own once the interval is over (a timer) and at shutdown (`close`). A known principal's requests
are all logged.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
REFUSED_INTERVAL = 10.0
_PLAIN = re.compile(r"[A-Za-z0-9_./-]{1,128}")


def plain(value: object) -> str:
    """`value` if it is a plain identifier, else "?" (client text never reaches the log as is)."""
    return value if isinstance(value, str) and _PLAIN.fullmatch(value) else "?"


@dataclass(frozen=True)
class Entry:
    principal: str
    auth: str
    """How the principal signed in: shared, token, oauth, anonymous, or - when refused."""
    method: str
    tool: str | None
    status: int
    reply_bytes: int
    duration_ms: float
    denied: tuple[str, ...] = ()
    """Restricted folders this request tried to read without the grant (never a path or a text)."""


class Audit:
    """Writes entries to `write` (stderr by default), one line each."""

    def __init__(
        self,
        log_format: LogFormat = "text",
        write: Callable[[str], None] | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log_format = log_format
        self._write = write or _stderr
        self._monotonic = monotonic
        self._refused: dict[int, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def record(self, entry: Entry) -> None:
        if entry.auth == "-":  # refused before anyone was known
            with self._lock:
                now = self._monotonic()
                since, held = self._refused.get(entry.status, (-REFUSED_INTERVAL, 0))
                if now - since < REFUSED_INTERVAL:
                    self._refused[entry.status] = (since, held + 1)
                    if self._timer is None:  # said when the interval is over, if no refusal says it first
                        self._timer = threading.Timer(REFUSED_INTERVAL - (now - since) + 0.1, self._due)
                        self._timer.daemon = True
                        self._timer.start()
                    return
                self._refused[entry.status] = (now, 0)
            self._write(self.format(entry, held))
            return
        self._write(self.format(entry))

    def close(self) -> None:
        """At shutdown: the refusals still held back, counted (nothing more comes to carry them)."""
        self._release(everything=True)

    def _due(self) -> None:
        self._release(everything=False)

    def _release(self, *, everything: bool) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            now = self._monotonic()
            due = [
                (status, held, now - since)
                for status, (since, held) in self._refused.items()
                if held and (everything or now - since >= REFUSED_INTERVAL)
            ]
            for status, _, _ in due:
                self._refused[status] = (self._refused[status][0], 0)
            if not everything and any(held for _, held in self._refused.values()):
                self._timer = threading.Timer(REFUSED_INTERVAL / 2, self._due)
                self._timer.daemon = True
                self._timer.start()
        for status, held, seconds in due:
            self._write(self.held_back(status, held, seconds))

    def held_back(self, status: int, held: int, seconds: float) -> str:
        """The line for refusals of `status` that were counted, not logged."""
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self.log_format == "json":
            fields = {"event": "mcp_refused_not_logged", "time": stamp, "status": status, "count": held}
            return json.dumps({**fields, "seconds": round(seconds)}, separators=(",", ":"))
        return f"[kbkit] audit {stamp} {held} more refused ({status}) not logged in the last {seconds:.0f} s"

    def format(self, entry: Entry, held: int = 0) -> str:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        fields: dict[str, object] = {
            "time": stamp,
            "principal": entry.principal,
            "auth": entry.auth,
            "method": entry.method,
            "tool": entry.tool,
            "status": entry.status,
            "bytes": entry.reply_bytes,
            "duration_ms": round(entry.duration_ms, 1),
        }
        if held:
            fields["refused_before_not_logged"] = held
        if entry.denied:
            fields["denied"] = list(entry.denied)
        if self.log_format == "json":
            return json.dumps({"event": "mcp_request", **fields}, separators=(",", ":"))
        what = f"{entry.method}:{entry.tool}" if entry.tool else entry.method
        line = (
            f"[kbkit] audit {stamp} {entry.principal} ({entry.auth}) {what} {entry.status} "
            f"{entry.reply_bytes}B {fields['duration_ms']}ms"
        )
        if entry.denied:
            line += f" denied: no grant for {', '.join(f'[restricted.{name}]' for name in entry.denied)}"
        return line + (f" (+{held} refused not logged)" if held else "")


DENIED = "kbkit.denied"
"""The ASGI scope key where the server notes the restricted folders a request was refused."""


def note_denied(request: object, folder: str) -> None:
    """Say on this request's audit line that it asked for restricted folder `folder` without the grant."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        denied = scope.setdefault(DENIED, [])
        if folder not in denied:
            denied.append(folder)


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
