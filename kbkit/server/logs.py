"""stderr logging for `kbkit serve --http`: one line per record, repeated kinds rate-limited.

Every warning of the HTTP stack (uvicorn, asyncio, the MCP SDK, kbkit's own connection guard)
goes through one handler. A flood of one kind (a client sending garbage in a loop, the process
out of file descriptors) becomes one line per kind per interval: the first record is printed, the
rest are counted, and once the interval is over (or the server stops) the last of them is
printed with the count, so stderr stays small whatever a client does.

A kind is a logger and a message template. Libraries often log client text already formatted in
(`Invalid Origin header: <the header>`), which would make every record its own kind: a record
without arguments is keyed by its text up to the first colon, digits folded. And no line carries
more than MAX_MESSAGE characters of a message, so a 16 KiB header never reaches the log whole.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

REPEAT_INTERVAL = 10.0
"""Seconds during which further records of one kind are counted instead of printed."""
MAX_KINDS = 1000
"""Kinds (a logger and a message template) remembered at once; past that the oldest are forgotten."""
MAX_MESSAGE = 256
"""Characters of one message printed; the rest is counted, not shown."""
_DIGITS = re.compile(r"\d+")


def kind_of(record: logging.LogRecord) -> tuple[str, str]:
    """(logger, template): what the rate limit counts together."""
    template = str(record.msg)
    if not record.args:
        template = _DIGITS.sub("#", template.split(":", 1)[0][:MAX_MESSAGE])
    return record.name, template


class _Kind:
    __slots__ = ("since", "held", "last")

    def __init__(self, since: float) -> None:
        self.since = since
        self.held = 0
        self.last: logging.LogRecord | None = None


class RateLimitedHandler(logging.StreamHandler[TextIO]):
    """A stream handler that prints a kind of record at most once per `interval`, with a count."""

    def __init__(
        self,
        stream: TextIO | None = None,
        interval: float = REPEAT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(stream if stream is not None else sys.stderr)
        self.interval = interval
        self.clock = clock
        self._kinds: dict[tuple[str, str], _Kind] = {}
        self.setFormatter(OneLineFormatter())

    def handle(self, record: logging.LogRecord) -> bool:
        if not self.filter(record):
            return False
        with self._held_lock():  # an RLock: emit() takes it again
            now = self.clock()
            self._release(now)
            key = kind_of(record)
            kind = self._kinds.get(key)
            if kind is not None:
                kind.held += 1
                kind.last = record
                return False
            if len(self._kinds) >= MAX_KINDS:
                self._kinds.pop(next(iter(self._kinds)))
            self._kinds[key] = _Kind(now)
            self.emit(record)
            return True

    def _held_lock(self) -> threading.RLock:
        # Handler.__init__ always creates the lock; the stubs type it as optional.
        assert self.lock is not None
        return self.lock

    def close(self) -> None:
        with self._held_lock():
            self._release(None)
        super().close()

    def _release(self, now: float | None) -> None:
        """Print the count held back for each kind whose interval is over (every kind when `now` is None)."""
        for key, kind in list(self._kinds.items()):
            if now is not None and now - kind.since < self.interval:
                continue
            del self._kinds[key]
            if kind.last is not None:
                elapsed = (now if now is not None else self.clock()) - kind.since
                kind.last.held_back = f" [{kind.held} more like this in the last {elapsed:.0f} s]"
                self.emit(kind.last)


class OneLineFormatter(logging.Formatter):
    """`[kbkit] (logger) message (exception)`: a traceback would turn one event into a dozen lines.
    With `log_format` "json", the same line as a `status_line` JSON object."""

    def __init__(self, log_format: str = "text") -> None:
        super().__init__()
        self.log_format = log_format

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f" ({record.exc_info[1]!r})"
        if len(message) > MAX_MESSAGE:
            message = f"{message[:MAX_MESSAGE]}... ({len(message) - MAX_MESSAGE} more characters)"
        source = "" if record.name.startswith("kbkit") else f"({record.name}) "
        line = f"{source}{message}{getattr(record, 'held_back', '')}".replace("\n", " ")
        return status_line(line, self.log_format)


def install_stderr_log(level: int = logging.WARNING, log_format: str = "text") -> logging.Handler:
    """Route every warning in the process to stderr through the rate limit. The caller removes and
    closes the handler when serving ends (closing prints what was still held back)."""
    handler = RateLimitedHandler()
    handler.setFormatter(OneLineFormatter(log_format))
    handler.setLevel(level)
    logging.getLogger().addHandler(handler)
    return handler


def status_line(line: str, log_format: str = "text") -> str:
    """One of `kbkit serve`'s own lines (boot, status, stop) as stderr shows it: `[kbkit] line`,
    or with `--log-format json` one JSON object, as the audit lines are, so a log shipper reads
    every line the server writes."""
    if log_format != "json":
        return f"[kbkit] {line}"
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"event": "status", "time": stamp, "message": line}, separators=(",", ":"))


def status_writer(log_format: str = "text") -> Callable[[str], None]:
    """Writes `status_line`s to stderr, each flushed at once (a supervisor reads them live)."""

    def write(line: str) -> None:
        sys.stderr.write(status_line(line, log_format) + "\n")
        sys.stderr.flush()

    return write
