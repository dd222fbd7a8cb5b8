"""The one error tree of kbkit, and the exit code each kind of error means.

    KbkitError                   anything kbkit refuses: a message and its fix
    ├── InputError               bad input or config: the user fixes it and reruns           exit 2
    │   ├── ConfigError          kbkit.toml, kbkit.local.toml, .env.local, --root (file, key, fix)
    │   ├── UnreadableFile       a config or text file that is a folder, a FIFO, a dangling link,
    │   │                        not UTF-8, or too large (fsutil.read_text_file)
    │   ├── DocumentRefused      the guard sequence or a format's budget said no (a stable reason)
    │   ├── QueryError           a search request that cannot be run as given
    │   ├── UnknownAgent         an agent name that is neither an id nor an alias
    │   ├── SyncRefused          `kbkit sync` will not write (unparsable file, secret, unignorable path)
    │   │   └── AdoptionNeeded   client files git tracks: `--adopt` carries out the plan
    │   ├── JsoncError           a JSON/JSONC client config kbkit cannot read or edit (line, column)
    │   ├── TomlEditError        a TOML entry kbkit cannot place without changing something else
    │   ├── SkillError           a skill or skill source that cannot be used (no SKILL.md, bad
    │   │                        frontmatter, an unknown name, a path that leaves the source)
    │   └── HashMismatch         a skill's source no longer matches what skills-lock.json pinned
    ├── EnvironmentProblem       the machine, not the input (a dependency, a folder, a port)  exit 3
    │   ├── IndexUnavailable     the SQLite index cannot be opened or written
    │   ├── SemanticUnavailable  hybrid search cannot run: the `semantic` extra or its model is
    │   │                        missing or cannot be loaded
    │   ├── ToolMissing          a program kbkit runs is not installed (git, for git and GitHub sources)
    │   └── TokensFileError      the HTTP server's tokens file cannot be trusted or read
    └── RemoteError              a remote server refused or could not be reached             exit 4
        └── FetchFailed          a skill source's repository could not be fetched (git fetch)

Each class exits with the code of the branch it is drawn in (its `exit_code`; README's table is
written from ExitCode). A check that finds problems (`doctor`, `sync --check`, `skills check`) is
not an error: the command prints them and exits 1.

Every error carries what to do about it: `fix` (or, in older messages, the text after "; ").
`str(error)` is one line, "what is wrong; what to do". Callers catch `KbkitError`: the CLI
turns it into that line and `exit_code` (kbkit/cli/boundary.py, the one place), the server into a
tool error or a JSON-RPC error. Errors of dependencies (sqlite3, tomllib, pydantic, pypdf, git)
are translated into these at the one place that calls them.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """What `kbkit`'s exit status means, for every command (docs/commands.md's table is written from this)."""

    OK = 0, "success; for `doctor`, `sync --check` and `skills check`: nothing to fix"
    CHECK_FAILED = (
        1,
        "a check found something to fix: `doctor` (a warning or a failure), `sync --check`, `skills check`, "
        "`eval` (below a threshold of its questions file)",
    )
    BAD_INPUT = (
        2,
        "bad input or config: kbkit.toml, kbkit.local.toml, .env.local, a client config file, an option, "
        "a skill (or a skill source that no longer matches skills-lock.json)",
    )
    ENVIRONMENT = (
        3,
        "the environment: a missing dependency (git, the `semantic` extra or its model), "
        "a file or folder kbkit cannot use, a busy port",
    )
    REMOTE = (
        4,
        "a remote server refused the request or could not be reached: a shared kb, a memory service, "
        "a skill source's repository",
    )
    INTERNAL = 70, "an unexpected error (a bug in kbkit): one line; `kbkit --debug ...` prints the traceback"
    INTERRUPTED = 130, "stopped with Ctrl-C (SIGINT), `serve` and `serve --http` included"
    CLOSED_PIPE = 141, "stdout closed early (piped into `head -1`, say): output stops quietly, as with git"

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


class UnknownAgent(InputError):
    """A name that is neither an agent id nor an alias; the message names the nearest."""


class SyncRefused(InputError):
    """`kbkit sync` refused to write anything; the message names the file and the fix."""


class AdoptionNeeded(SyncRefused):
    """Client files git tracks; the message is the plan `--adopt` carries out (kbkit/sync/adopt.py)."""

    def __init__(self, plan: str, paths: list[str]) -> None:
        super().__init__(plan, fix="rerun with kbkit sync --adopt to do it")
        self.paths = paths


class JsoncError(InputError, ValueError):
    """A JSON/JSONC text kbkit cannot read or edit; `line` and `column` (1-based) point into it.
    A ValueError too, as the json module's own decode error is."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


class TomlEditError(InputError):
    """A TOML entry cannot be placed without changing something else; the message says where."""


class SkillError(InputError):
    """A skill that cannot be used: no SKILL.md, broken frontmatter, a name or description off
    spec, or a source that does not hold what was asked for."""


class HashMismatch(InputError):
    """A skill's source no longer matches the hash skills-lock.json pinned: it is not installed
    until the user reviews it and accepts it with `kbkit skills update`."""


class EnvironmentProblem(KbkitError):
    """The machine is in the way (a dependency, permissions, a port), not the user's input."""

    exit_code = ExitCode.ENVIRONMENT


class IndexUnavailable(EnvironmentProblem):
    """The index database cannot be opened, created or written."""


class SemanticUnavailable(EnvironmentProblem):
    """Hybrid search cannot run: the `semantic` extra is missing or its model cannot be found or loaded."""


class ToolMissing(EnvironmentProblem):
    """A program kbkit runs is not installed or cannot be started (git)."""


class TokensFileError(EnvironmentProblem):
    """The tokens file cannot be trusted or read; the message says how to fix it."""


class RemoteError(KbkitError):
    """A remote server (a shared kb server, a memory service, a git source) refused or is unreachable."""

    exit_code = ExitCode.REMOTE


class FetchFailed(RemoteError):
    """A remote repository (a git or GitHub skill source) could not be fetched: unreachable,
    refused, no such ref, or too slow."""


# -- what went wrong inside a group ---------------------------------------------------------------


def leaves(exc: BaseException, *, causes: bool = False) -> Iterator[BaseException]:
    """The exceptions inside an exception group, depth first (with `causes`, each one's chain of
    causes after it): what actually went wrong under the groups anyio and the MCP SDK raise."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner, causes=causes)
    else:
        yield exc
        if causes and exc.__cause__ is not None:
            yield from leaves(exc.__cause__, causes=True)


def describe(exc: BaseException) -> str:
    """One exception in a few words for a status line: its type, and its message if it has one."""
    message = str(exc).strip()
    return (f"{type(exc).__name__}: {message}" if message else type(exc).__name__)[:300]
