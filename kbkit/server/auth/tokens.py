"""Personal tokens: one per person or machine, each revocable on its own (docs/adr/0031).

A token is `kbk_` and 256 random bits; it is shown once, when created, and only its SHA-256 is
kept, in a JSON file outside the kb folder (`.kbkit/tokens.json`, or `[server.http] tokens_file`):

    {"version": 1, "tokens": [{"name": "alice", "sha256": "...", "scope": "memory",
      "created": "2026-12-03T17:00:00Z", "expires": null, "last_used": null}]}

Every writer (`kbkit token ...`, a server saving last-use times) holds an flock on a lock file
beside it and replaces the file atomically with mode 0600. A server re-reads the file when its
inode, size, mtime or mode changes (one stat per request, in a worker thread: a file on a stuck
network share never stalls the event loop), so a revoked token is refused at its next request by
every server on that file. A server saves last-use times best effort: it never waits for the
lock (another writer holding it only delays the save). The file is refused, with the fix, when
it is a symlink, not a regular file, readable or writable by others, or not a tokens file: a
server then accepts no personal token until it is fixed (the shared token and OAuth go on working).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from kbkit.errors import InputError, TokensFileError

PREFIX = "kbk_"
"""How every personal token begins: a reader (and a secret scanner) knows one at sight."""
TOKEN_BYTES = 32
"""Random bytes per token (256 bits, from `secrets`)."""
TOKENS_FILE = "tokens.json"
"""The tokens file's name in the state folder, by default."""
MAX_FILE_BYTES = 4 * 1024 * 1024
LAST_USE_INTERVAL = 60.0
"""Seconds between two saves of last-use times: a request never writes the file by itself."""
MAX_DAYS = 36500
"""The longest `--expires` (100 years): past it a date overflows, so it is refused."""
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}"
Scope = Literal["read", "memory"]
SCOPES: tuple[Scope, ...] = ("read", "memory")
"""`read`: the kb tools and resources. `memory`: those and the session-memory tools."""


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def digest(token: str) -> str:
    """SHA-256 of the token, hex. A token holds 256 random bits: no salt or slow hash is needed
    (nobody can search that space), and the check costs microseconds per request."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_stamp(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a time")
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class TokenRecord:
    """One token as the file keeps it: everything but the token."""

    name: str
    sha256: str
    scope: Scope
    created: datetime
    expires: datetime | None = None
    last_used: datetime | None = None
    paths: tuple[str, ...] = ()
    """Only these kb paths (folders or files) may be read with it; none: what its name's grants allow."""

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and now >= self.expires

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sha256": self.sha256,
            "scope": self.scope,
            "created": _stamp(self.created),
            "expires": _stamp(self.expires) if self.expires else None,
            "last_used": _stamp(self.last_used) if self.last_used else None,
            **({"paths": list(self.paths)} if self.paths else {}),
        }

    def public(self, now: datetime) -> dict[str, Any]:
        """What `kbkit token list` shows: never the token, nor its hash."""
        row = self.to_json()
        del row["sha256"]
        row["state"] = "expired" if self.expired(now) else "active"
        return row

    @classmethod
    def from_json(cls, raw: Any) -> TokenRecord:
        if not isinstance(raw, dict):
            raise ValueError("an entry is not an object")
        name, sha, scope = raw.get("name"), raw.get("sha256"), raw.get("scope")
        if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
            raise ValueError(f"bad name {name!r}")
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ValueError(f"bad sha256 for {name!r}")
        if scope not in SCOPES:
            raise ValueError(f"bad scope {scope!r} for {name!r}")
        created = _parse_stamp(raw.get("created"))
        if created is None:
            raise ValueError(f"no created time for {name!r}")
        paths = raw.get("paths", [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"bad paths for {name!r}")
        return cls(
            name,
            sha,
            scope,
            created,
            _parse_stamp(raw.get("expires")),
            _parse_stamp(raw.get("last_used")),
            tuple(check_paths(paths)),
        )


def check_paths(paths: list[str]) -> list[str]:
    """Paths a token is narrowed to: relative to the kb folder, as the kb's tools name them."""
    for path in paths:
        parts = path.strip("/").split("/")
        if not path.strip("/") or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InputError(
                f"--paths {path!r} is not a path relative to the kb folder",
                fix="give folders or files as search returns them, e.g. --paths public/",
            )
    return [path.strip("/") for path in paths]


def check_name(name: str) -> str:
    if not re.fullmatch(NAME_PATTERN, name):
        raise InputError(
            f"{name!r} is not a token name",
            fix="use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit",
        )
    return name


Signature = tuple[int, int, int, int, int]
"""(dev, inode, size, mtime, mode): a change in any one re-reads the file (chmod changes only the mode)."""
NO_FILE: Signature = (0, 0, 0, 0, 0)


def _signature(info: os.stat_result) -> Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode)


def read_tokens(path: Path) -> tuple[list[TokenRecord], Signature]:
    """The records in `path` and the file's signature, or
    TokensFileError naming the problem and the fix. A missing file holds no tokens (signature 0s)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):  # no file, or no state folder yet: no tokens
        return [], NO_FILE
    except OSError as exc:
        if os.path.islink(path):
            raise TokensFileError(
                f"the tokens file {path} is a symlink, which kbkit refuses (it could point anywhere)",
                fix="replace it with the file itself, or set [server.http] tokens_file to the real path",
            ) from None
        raise TokensFileError(
            f"the tokens file {path} cannot be read ({exc.strerror})", fix="check its permissions"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise TokensFileError(f"the tokens file {path} is not a regular file", fix="move it aside")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise TokensFileError(
                f"the tokens file {path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})",
                fix=f"chmod 600 {path}",
            )
        data = handle.read(MAX_FILE_BYTES + 1)
    problem = "it is over 4 MiB" if len(data) > MAX_FILE_BYTES else None
    records: list[TokenRecord] = []
    if problem is None:
        try:
            document = json.loads(data.decode("utf-8"))
            if not isinstance(document, dict) or document.get("version") != 1:
                raise ValueError("no version 1")
            entries = document.get("tokens")
            if not isinstance(entries, list):
                raise ValueError("no token list")
            records = [TokenRecord.from_json(entry) for entry in entries]
            if len({r.name for r in records}) != len(records):
                raise ValueError("a name appears twice")
        except (ValueError, UnicodeDecodeError) as exc:
            problem = str(exc).splitlines()[0][:200]
    if problem is not None:
        raise TokensFileError(
            f"the tokens file {path} is not a kbkit tokens file ({problem})",
            fix="restore it from a backup, or move it aside and create tokens anew (`kbkit token create`)",
        )
    return records, _signature(info)


def write_tokens(path: Path, records: list[TokenRecord]) -> None:
    """Replace the file atomically; a new file (and its folder) is private to its owner."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = json.dumps({"version": 1, "tokens": [r.to_json() for r in records]}, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Busy(Exception):
    """Another writer holds the tokens file's lock (raised by `locked(..., wait=False)`)."""


@contextlib.contextmanager
def locked(path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold the writers' lock of `path` (an flock on `<path>.lock`); with `wait=False`, raise _Busy
    instead of waiting for another holder."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _Busy(f"{path}.lock is held by another writer") from None
        yield
    finally:
        os.close(fd)


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def create(
    path: Path,
    name: str,
    scope: Scope,
    days: int | None,
    now: datetime | None = None,
    *,
    paths: tuple[str, ...] = (),
) -> str:
    """Add a token named `name` and return it (the only time it exists outside the caller's hands).
    `paths`: it reads only these, of what its name may read (a token narrower than its owner)."""
    check_name(name)
    paths = tuple(check_paths(list(paths)))
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise InputError(
            f"--expires {days} is not a number of days kbkit accepts",
            fix=f"give 1 to {MAX_DAYS} (100 years), or leave it out for a token that never expires",
        )
    moment = now or now_utc()
    token = new_token()
    with locked(path):
        records, _ = read_tokens(path)
        if any(r.name == name for r in records):
            raise InputError(
                f"a token named {name!r} exists",
                fix=f"revoke it first (`kbkit token revoke {name}`) or pick another name",
            )
        expires = moment + timedelta(days=days) if days is not None else None
        records.append(TokenRecord(name, digest(token), scope, moment, expires, paths=paths))
        write_tokens(path, records)
    return token


def revoke(path: Path, name: str) -> None:
    with locked(path):
        records, _ = read_tokens(path)
        kept = [r for r in records if r.name != name]
        if len(kept) == len(records):
            known = ", ".join(r.name for r in records) or "none"
            raise InputError(
                f"no token named {name!r} in {path}", fix=f"`kbkit token list` shows them (known: {known})"
            )
        write_tokens(path, kept)


@dataclass(frozen=True)
class Holder:
    """Whom a personal token belongs to, as the server sees it."""

    name: str
    scope: Scope
    sha256: str = field(default="", compare=False)
    """The token's digest: what its open streams are filed under, so a revoke can close them."""
    paths: tuple[str, ...] = ()
    """The token reads only these kb paths (none: all its name may read)."""


class TokenStore:
    """The server's view of the tokens file: re-read when it changes, last-use times saved in batches.

    `check` costs one stat and one SHA-256; the file is read only after it changed. Thread-safe,
    and meant to be called from a worker thread (the gate does): a stat on a stuck network share
    may block. Last-use times are kept per token (two tokens of one name are told apart); a token's
    first use is saved at once, later ones at most every `interval`, never waiting for the lock."""

    def __init__(
        self,
        path: Path,
        *,
        report: Callable[[str], None] = lambda line: None,
        clock: Callable[[], datetime] = now_utc,
        monotonic: Callable[[], float] = time.monotonic,
        interval: float = LAST_USE_INTERVAL,
    ) -> None:
        self.path = path
        self._report = report
        self._clock = clock
        self._monotonic = monotonic
        self._interval = interval
        self._lock = threading.Lock()
        self._signature: Signature | None = None
        self._by_digest: dict[str, TokenRecord] = {}
        self._problem: str | None = None
        self._used: dict[str, datetime] = {}
        """Token digest -> its last use not yet saved."""
        self._seen: set[str] = set()
        """Digests whose use has been saved (or tried) since the start: later uses wait for the interval."""
        self._saved_at = monotonic()
        self._busy_said = False

    @property
    def problem(self) -> str | None:
        """Why no personal token is accepted now (the file is refused), or None."""
        self._refresh()
        return self._problem

    @property
    def count(self) -> int:
        self._refresh()
        return len(self._by_digest)

    def valid(self) -> frozenset[str]:
        """The digests of the tokens accepted now (re-reading the file if it changed)."""
        self._refresh()
        now = self._clock()
        with self._lock:
            return frozenset(d for d, r in self._by_digest.items() if not r.expired(now))

    def _refresh(self) -> None:
        try:
            signature = _signature(os.lstat(self.path))
        except FileNotFoundError:
            signature = NO_FILE
        except OSError:
            signature = (-1, 0, 0, 0, 0)
        with self._lock:
            if signature == self._signature:
                return
            try:
                records, signature = read_tokens(self.path)
            except TokensFileError as exc:
                if self._problem != str(exc):
                    self._report(f"personal tokens refused until fixed: {exc}")
                self._problem, self._by_digest = str(exc), {}
            else:
                if self._problem is not None:
                    self._report(f"personal tokens accepted again: {self.path} reads well")
                self._problem = None
                self._by_digest = {r.sha256: r for r in records}
            self._signature = signature

    def check(self, token: str) -> Holder | None:
        """The holder of `token`, or None (unknown, revoked, expired: the caller cannot tell which)."""
        self._refresh()
        wanted = digest(token)
        record = self._by_digest.get(wanted)
        # The dict is keyed by a digest of 256 random bits: its timing says nothing about a token.
        if record is None or not hmac.compare_digest(record.sha256, wanted):
            return None
        now = self._clock()
        if record.expired(now):
            return None
        with self._lock:
            self._used[record.sha256] = now
            due = record.sha256 not in self._seen or self._monotonic() - self._saved_at >= self._interval
        if due:
            self.save_last_use()
        return Holder(record.name, record.scope, record.sha256, record.paths)

    def save_last_use(self) -> None:
        """Write the last-use times gathered since the last save (one write for any number of uses).

        Best effort: when another writer holds the lock, the times are kept for the next save."""
        with self._lock:
            used, self._used = self._used, {}
            self._saved_at = self._monotonic()
            self._seen.update(used)
        if not used:
            return
        try:
            with locked(self.path, wait=False):
                records, _ = read_tokens(self.path)
                changed = [replace(r, last_used=used[r.sha256]) if r.sha256 in used else r for r in records]
                write_tokens(self.path, changed)
            self._busy_said = False
        except _Busy:
            with self._lock:
                for key, moment in used.items():
                    self._used[key] = max(moment, self._used.get(key, moment))
            if not self._busy_said:
                self._busy_said = True
                self._report(f"last-use times not saved yet: {self.path}.lock is held by another writer")
        except (OSError, TokensFileError) as exc:
            self._report(f"could not save last-use times to {self.path}: {exc}")
