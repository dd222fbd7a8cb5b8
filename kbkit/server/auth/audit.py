"""Who did what: one line per MCP request on stderr, as text or JSON for log shippers.

A line holds the time, the principal and how it signed in, the JSON-RPC method (and the tool's
name for tools/call), the HTTP status, the reply's bytes and the duration. Never a token, an
argument (a query's text), or anything of a reply. Names a client sent are kept only when they
are plain identifiers ([A-Za-z0-9_./-], at most 128): anything else is logged as "?".

Requests refused before a principal is known (401, 403) are logged too, but at most
REFUSED_INTERVAL apart per status, with a count of those held back: a storm of bad tokens cannot
fill the disk. A known principal's requests are all logged.
"""

from __future__ import annotations

import json
import re
import sys
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

    def record(self, entry: Entry) -> None:
        if entry.auth == "-":  # refused before anyone was known
            now = self._monotonic()
            since, held = self._refused.get(entry.status, (-REFUSED_INTERVAL, 0))
            if now - since < REFUSED_INTERVAL:
                self._refused[entry.status] = (since, held + 1)
                return
            self._refused[entry.status] = (now, 0)
            self._write(self.format(entry, held))
            return
        self._write(self.format(entry))

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
        if self.log_format == "json":
            return json.dumps({"event": "mcp_request", **fields}, separators=(",", ":"))
        what = f"{entry.method}:{entry.tool}" if entry.tool else entry.method
        line = (
            f"[kbkit] audit {stamp} {entry.principal} ({entry.auth}) {what} {entry.status} "
            f"{entry.reply_bytes}B {fields['duration_ms']}ms"
        )
        return line + (f" (+{held} refused not logged)" if held else "")


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
