"""The one error tree of kbkit, and the exit code each kind of error means.

    KbkitError                  anything kbkit refuses; message + fix          exit 2 unless below
    ├── InputError              bad input or config                            exit 2
    │   ├── ConfigError         kbkit.toml / kbkit.local.toml / .env.local / --root (file, key, fix)
    │   ├── UnreadableFile      a config or text file that is a folder, a FIFO, a dangling link,
    │   │                       not UTF-8, or too large (fsutil.read_text_file)
    │   ├── DocumentRefused     the guard sequence said no (carries a machine-readable reason)
    │   ├── QueryError          a search request that cannot be run as given
    │   └── SyncRefused         `kbkit sync` will not write (unparsable file, secret, unignorable path)
    ├── EnvironmentProblem      the machine, not the input: a missing dependency, an unwritable
    │   │                       or unreadable folder, a busy port, an unsupported platform      exit 3
    │   └── IndexUnavailable    the SQLite index cannot be opened or written
    └── RemoteError             a remote server refused or could not be reached                exit 4

A check that finds problems (`doctor`, `sync --check`, `skills check`) is not an error: the
command prints them and exits 1.

Every error carries what to do about it: `fix` (or, in older messages, the text after "; ").
`str(error)` is one line, "what is wrong; what to do". Callers catch `KbkitError`: the CLI
turns it into that line and `exit_code` (kbkit/cli/boundary.py, the one place), the server into a
tool error or a JSON-RPC error. Errors of dependencies (sqlite3, tomllib, pydantic, pypdf) are
translated into these at the one place that calls them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """What `kbkit`'s exit status means, for every command (docs/commands.md's table is written from this)."""

    OK = 0, "success; for `doctor`, `sync --check` and `skills check`: nothing to fix"
    CHECK_FAILED = (
        1,
        "a check found something to fix: `doctor` (a warning or a failure), `sync --check`, `skills check`",
    )
    BAD_INPUT = (
        2,
        "bad input or config: kbkit.toml, kbkit.local.toml, .env.local, a client config file, an option",
    )
    ENVIRONMENT = 3, "the environment: a missing dependency, a file or folder kbkit cannot use, a busy port"
    REMOTE = 4, "a remote server refused the request or could not be reached"
    INTERNAL = 70, "an unexpected error (a bug in kbkit): one line; `kbkit --debug ...` prints the traceback"
    INTERRUPTED = 130, "stopped with Ctrl-C"

    meaning: str

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


class KbkitError(Exception):
    """Base of every error kbkit raises on purpose: a message, the fix, and the exit code it means."""

    exit_code: ClassVar[ExitCode] = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(f"{message}; {fix}" if fix else message)
        self.message = message
        self.fix = fix


class InputError(KbkitError):
    """The input is wrong: a file, a key, an argument. The user fixes it and reruns."""


class ConfigError(InputError):
    """The configuration is missing or wrong; the message names the file, the key and the fix."""

    def __init__(
        self, message: str, *, file: str | None = None, key: str | None = None, fix: str | None = None
    ) -> None:
        where = file or ""
        if key:
            where = f"{where}: [{key}]" if where else f"[{key}]"
        super().__init__(f"{where}: {message}" if where else message, fix=fix)
        self.file = file
        self.key = key


class UnreadableFile(InputError):
    """A small config or text file kbkit must read is not a readable UTF-8 file (fsutil.read_text_file)."""

    def __init__(self, path: str, problem: str, *, fix: str) -> None:
        super().__init__(f"{path} {problem}", fix=fix)
        self.path = path


class DocumentRefused(InputError):
    """A read the guard sequence refused.

    `reason` is a short stable code (for tests and logs); the message is for people.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class QueryError(InputError):
    """A search request that cannot be run (empty query, bad limit, unknown prefix)."""


class SyncRefused(InputError):
    """`kbkit sync` refused to write anything; the message names the file and the fix."""


class EnvironmentProblem(KbkitError):
    """The machine is in the way (a dependency, permissions, a port), not the user's input."""

    exit_code = ExitCode.ENVIRONMENT


class IndexUnavailable(EnvironmentProblem):
    """The index database cannot be opened, created or written."""


class RemoteError(KbkitError):
    """A remote server (a shared kb server, a memory service, a git source) refused or is unreachable."""

    exit_code = ExitCode.REMOTE
