"""The one error tree of kbkit.

    KbkitError                 anything kbkit refuses, with a message that says what to do
    ├── ConfigError            kbkit.toml / kbkit.local.toml / --root problems (names file, key, fix)
    ├── DocumentRefused        the guard sequence said no (carries a machine-readable reason)
    ├── QueryError             a search request that cannot be run as given
    ├── IndexUnavailable       the SQLite index cannot be opened or written
    └── SyncRefused            `kbkit sync` will not write (unparsable file, secret, unignorable path)

Callers catch `KbkitError`; the CLI turns it into one line on stderr and exit code 2, the
server turns it into a tool error or a JSON-RPC error. Errors of dependencies (sqlite3,
tomllib, pypdf) are translated into these at the one place that calls them.
"""

from __future__ import annotations


class KbkitError(Exception):
    """Base of every error kbkit raises on purpose."""


class ConfigError(KbkitError):
    """The configuration is missing or wrong; the message names the file, the key and the fix."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None) -> None:
        where = file or ""
        if key:
            where = f"{where}: [{key}]" if where else f"[{key}]"
        super().__init__(f"{where}: {message}" if where else message)
        self.file = file
        self.key = key


class DocumentRefused(KbkitError):
    """A read the guard sequence refused.

    `reason` is a short stable code (for tests and logs); the message is for people.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class QueryError(KbkitError):
    """A search request that cannot be run (empty query, bad limit, unknown prefix)."""


class IndexUnavailable(KbkitError):
    """The index database cannot be opened, created or written."""


class SyncRefused(KbkitError):
    """`kbkit sync` refused to write anything; the message names the file and the fix."""
