"""The SQLite index: one file, WAL mode, a documents table and an FTS5 table beside it.

Readers (every server process, every request thread) open their own connection; one writer at
a time (the indexer) changes it. A missing, corrupt or older-schema file is rebuilt on open,
and the store says so, so the boot line can.

This is the index's boundary: nothing outside kbkit/kb/ imports sqlite3 or holds SQL (checked by
tests/project/test_layering.py), and SQLite's errors become kbkit's here, once (`index_error`).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kbkit.errors import IndexUnavailable
from kbkit.fsutil import private_folder
from kbkit.kb.fields import (
    partly_indexed_sql,
)
from kbkit.kb.schema import MIGRATIONS, REREAD, RESEGMENTED, SCHEMA_VERSION, schema

RETRY_FIX = "retry; if it persists, run kbkit index to rebuild the index"
SQLITE_FIXES: dict[type[BaseException], str] = {
    sqlite3.OperationalError: (
        "check that the .kbkit folder is writable and its disk is not full; otherwise delete "
        "the index file (it holds nothing but the index) and run kbkit index"
    ),
    sqlite3.DatabaseError: "run kbkit index: it rebuilds a damaged index from the documents",
    sqlite3.ProgrammingError: RETRY_FIX,
}
"""What to do about each kind of SQLite error (the nearest class in its MRO decides). Locked,
busy, read-only, full and I/O errors are OperationalError; a damaged file is DatabaseError or one of
its subclasses (IntegrityError, DataError, InternalError, NotSupportedError). A closed connection
(ProgrammingError, also a DatabaseError) and the rest (InterfaceError, Warning) get RETRY_FIX."""

SqliteError = (sqlite3.Error, sqlite3.Warning)
"""Everything sqlite3 raises of its own (Warning is not an Error subclass)."""


def index_error(exc: sqlite3.Error | sqlite3.Warning, doing: str, path: Path) -> IndexUnavailable:
    """The one translation of an SQLite error into kbkit's: what failed, on which file, and the fix."""
    fix = next((SQLITE_FIXES[kind] for kind in type(exc).__mro__ if kind in SQLITE_FIXES), RETRY_FIX)
    return IndexUnavailable(f"{doing} {path}: {exc}", fix=fix)


class Deadline:
    """Interrupts the SQLite work done on `conn` inside the block once `seconds` have passed.

    A progress handler, checked every few thousand virtual-machine steps, so one request over its
    budget ends with an error instead of holding a worker thread (and the index) for minutes."""

    STEPS = 4096

    def __init__(self, conn: sqlite3.Connection, seconds: float) -> None:
        self._conn = conn
        self._ends = time.monotonic() + seconds
        self.expired = False

    def _check(self) -> int:
        self.expired = time.monotonic() >= self._ends
        return 1 if self.expired else 0  # non-zero interrupts the running statement

    def __enter__(self) -> Deadline:
        self._conn.set_progress_handler(self._check, self.STEPS)
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.set_progress_handler(None, 0)


FTS_TABLES = ("documents_fts", "passages_fts")
"""The full-text tables FTS5's integrity check reads."""
LOCK_WAIT_SECONDS = 120.0
"""How long a process waits for another one's indexing before giving up on its own scan."""
BUSY_TIMEOUT_MS = 10_000
RECLAIM_SHARE = 0.25
"""Free pages past this share of the file are given back to the file system after a scan."""
RECLAIM_MIN_BYTES = 1024 * 1024
"""...in a file at least this large: a small index is not rewritten for a few pages."""
PEEK_SECONDS = 0.25
"""The most a server start spends counting the documents an index already holds (`Store.peek`)
before it answers: counting is linear in the index (about 4 ms for 10,000 documents)."""


@dataclass(frozen=True)
class Peek:
    """What an index file holds before it is opened (`Store.peek`)."""

    documents: int | None
    """How many documents it holds; None when they were not counted (`problem` says why)."""
    problem: str | None = None
    """Why not: "new" (no index yet), or a sentence (a damaged or foreign file, which opening it
    rebuilds; a count over PEEK_SECONDS)."""


T = TypeVar("T")

_PEEK_COUNT = "SELECT count(*) FROM (SELECT 1 FROM documents LIMIT 1000000000)"


class Store:
    """A handle on `.kbkit/index.db`; cheap to share, hands out per-thread connections."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repaired: str | None = None
        """Why the file was rebuilt on open (None when it was fine or new)."""
        self.prepared = False
        """Set once `prepare` has checked (and if need be created or rebuilt) the file."""
        self.failure: str | None = None
        """Why `prepare` could not open the file: every read says so instead of a vaguer error."""
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._probe: sqlite3.Connection | None = None

    @classmethod
    def open(cls, path: Path, *, deep: bool = False) -> Store:
        """The index at `path`, created or rebuilt as needed; `deep` also runs FTS5's own integrity
        check (a full read of the full-text index: `kbkit index` pays it, a server start does not)."""
        store = cls(path)
        store.prepare(deep=deep)
        return store

    def connect(self, *, new: bool = False) -> sqlite3.Connection:
        """A new connection in autocommit mode; callers BEGIN their own transactions. `new`: the
        file is being created, and is made with incremental vacuum on (`reclaim` needs it, and
        SQLite takes it only before the first table, and before the switch to WAL)."""
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if new:
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        except SqliteError as exc:
            raise index_error(exc, "cannot open the index", self.path) from None
        return conn

    def reader(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        if self.failure is not None:
            raise IndexUnavailable(self.failure)
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def translated(self, doing: str) -> Iterator[None]:
        """Run a read or write of the index; an SQLite error leaves as IndexUnavailable("<doing> <path>")."""
        try:
            yield
        except SqliteError as exc:
            raise index_error(exc, doing, self.path) from None

    def count_documents(self) -> int:
        """How many documents the index holds (servable or not)."""
        with self.translated("cannot count the documents of"):
            return int(self.reader().execute("SELECT count(*) FROM documents").fetchone()[0])

    def peek(self, seconds: float = PEEK_SECONDS) -> Peek:
        """How many documents the file holds now, read before `prepare` opens it (`glance`)."""
        # Counted row by row (a LIMIT keeps SQLite from its one-step count, which no deadline can
        # stop), so the deadline holds whatever the index's size.
        count, problem = self.glance(lambda conn: int(conn.execute(_PEEK_COUNT).fetchone()[0]), seconds)
        return Peek(count, problem)

    def glance(
        self, read: Callable[[sqlite3.Connection], T], seconds: float = PEEK_SECONDS
    ) -> tuple[T | None, str | None]:
        """(what `read` found, None) or (None, why not), read before `prepare` opens the file:
        nothing is created, written or repaired (`mode=rw` never creates a file; a connection opened
        that way removes the empty write-ahead log it leaves, where `mode=ro` cannot), and bounded:
        at most `seconds` of SQLite's work and of waiting for another process's lock. "new": no
        index yet."""
        if link := self._link_problem():
            return None, link
        if not self.path.exists() or self.path.stat().st_size == 0:
            return None, "new"
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=rw", uri=True, timeout=seconds)
        except SqliteError as exc:
            return None, f"the index cannot be opened: {exc}"
        try:
            with Deadline(conn, seconds) as deadline:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version != SCHEMA_VERSION and version not in MIGRATIONS:
                    return None, f"the index has schema {version}, this kbkit uses {SCHEMA_VERSION}"
                return read(conn), None
        except SqliteError as exc:
            if deadline.expired:
                return None, f"counting took over {seconds} s"
            return None, f"the index is unreadable: {exc}"
        finally:
            conn.close()

    def skipped(self) -> list[tuple[str, str]]:
        """(path, why) for every file the last scan left out, in path order."""
        with self.translated("cannot read the skipped files of"):
            return list(self.reader().execute("SELECT path, reason FROM skipped ORDER BY path"))

    def partly_indexed(self) -> list[tuple[str, int]]:
        """(path, text size) of every document whose text is longer than what is indexed."""
        with self.translated("cannot read the partly indexed documents of"):
            return list(self.reader().execute(partly_indexed_sql()))

    def stats(
        self, conn: sqlite3.Connection | None = None
    ) -> tuple[dict[str, tuple[int, int, int]], dict[str, tuple[int, int]]]:
        """What stale detection compares against the folder: path -> (size, mtime_ns, id) of each
        indexed document, path -> (size, mtime_ns) of each skipped file (on `conn`, the indexer's
        own connection, or this thread's reader)."""
        with self.translated("cannot read"):
            conn = conn or self.reader()
            known = {
                row[0]: (row[1], row[2], row[3])
                for row in conn.execute("SELECT path, size, mtime_ns, id FROM documents")
            }
            skipped = {
                row[0]: (row[1], row[2]) for row in conn.execute("SELECT path, size, mtime_ns FROM skipped")
            }
        return known, skipped

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                with suppress(*SqliteError):
                    conn.close()
            self._connections.clear()
            self._probe = None
        self._local = threading.local()

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    @contextmanager
    def writer(
        self, *, log: Callable[[str], None] | None = None, stop: threading.Event | None = None
    ) -> Iterator[None]:
        """The one-writer-at-a-time lock across processes (flock: a crashed holder releases it).

        Readers never take it: WAL lets them answer from the last committed state meanwhile.
        `stop` ends a wait for another process's lock at once (a server shutting down).
        """
        with open(self.lock_path, "a+b") as handle:
            started = time.monotonic()
            told = False
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - started
                    if waited > LOCK_WAIT_SECONDS:
                        raise IndexUnavailable(
                            f"another kbkit has been indexing {self.path} for {waited:.0f} s; try again later"
                        ) from None
                    if not told and waited > 1 and log is not None:
                        log("index: another kbkit process is indexing; waiting for it")
                        told = True
                    if stop is None:
                        time.sleep(0.05)
                    elif stop.wait(0.05):
                        raise IndexUnavailable("stopped while waiting for another kbkit's indexing") from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def writer_busy(self) -> bool:
        """Whether some process (this one included) holds the writer lock now. A probe: take the
        lock shared without waiting and let go at once; a writer that meanwhile wants it retries."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing the descriptor also drops a lock taken on it
        return False

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap way to notice other writers.

        Asked on one dedicated connection, since the value is per connection.
        """
        with self._lock:
            if self._probe is None:
                self._probe = self.connect()
                self._connections.append(self._probe)
            with self.translated("cannot read"):
                return int(self._probe.execute("PRAGMA data_version").fetchone()[0])

    def prepare(self, *, deep: bool = False) -> None:
        """Check the file; create it when new, rebuild it when broken (`repaired` says why). `open`
        does this at once; a server does it in the background, after it has started answering.
        Once done, it does nothing; when it fails, every read repeats why (`failure`)."""
        if self.prepared:
            return
        try:
            self._prepare(deep=deep)
        except IndexUnavailable as exc:
            self.failure = str(exc)
            raise
        self.prepared = True

    def _prepare(self, *, deep: bool) -> None:
        if link := self._link_problem():
            raise IndexUnavailable(link)
        try:
            private_folder(self.path.parent)
        except OSError as exc:
            raise IndexUnavailable(
                f"cannot create {self.path.parent} ({exc.strerror}); make the project folder writable"
            ) from None
        if not deep and self.problem() is None:
            return  # usable: no lock needed, so a start never waits for another process's indexing
        # Under the writer lock: several servers starting at once on a new project must not see
        # each other's half-created file as broken and delete it.
        with self.writer():
            problem = self.problem()
            if problem == "new":
                self._create()
            elif problem == "older":
                self._migrate()
            elif problem:
                self.repaired = f"{problem}; it was rebuilt"
                self._start_over()
            elif deep and (damage := self.fts_problem()):
                self.repaired = f"{damage}; the full-text index was rebuilt"
                self._rebuild_fts()

    def problem(self) -> str | None:
        """'new' for no file, 'older' for a schema MIGRATIONS brings up to date, a sentence for a
        file that must be rebuilt, None when it is usable."""
        if link := self._link_problem():
            return link
        if not self.path.exists() or self.path.stat().st_size == 0:
            return "new"
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                check = conn.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            return f"the index was unreadable ({exc})"
        if check != "ok":
            return f"the index failed its integrity check ({check})"
        if version in MIGRATIONS:
            return "older"
        if version != SCHEMA_VERSION:
            return f"the index has schema {version}, this kbkit uses {SCHEMA_VERSION}"
        return None

    def fts_problem(self) -> str | None:
        """FTS5's own integrity check: damage in the full-text index's shadow tables, which
        `PRAGMA quick_check` does not see and which makes search silently find nothing. It takes the
        write lock for a moment and writes nothing."""
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
            try:
                for table in FTS_TABLES:
                    conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            return f"the full-text index failed FTS5's integrity check ({exc})"
        return None

    def _rebuild_fts(self) -> None:
        """FTS5 'rebuild' from the stored text; when that text is damaged too, or the damage is in
        the passages (contentless: nothing to rebuild them from), the whole file."""
        conn = self.connect()
        try:
            conn.execute("INSERT INTO documents_fts(documents_fts) VALUES('rebuild')")
        except sqlite3.DatabaseError:
            pass
        finally:
            conn.close()
        if self.fts_problem():
            self._start_over()

    def _migrate(self) -> None:
        """Bring an older schema up to date in place, in one transaction (all steps or none)."""
        conn = self.connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            notes = [note for since, note in ((6, RESEGMENTED), (7, REREAD)) if version <= since]
            self.repaired = "; ".join(notes) or None
            while version in MIGRATIONS:
                MIGRATIONS[version](conn)
                version += 1
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except SqliteError as exc:
            raise index_error(exc, "cannot upgrade the index", self.path) from None
        finally:
            conn.close()

    def _start_over(self) -> None:
        """A new, empty index in place of a broken one; the next scan fills it from the documents."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._create()

    def _link_problem(self) -> str | None:
        """The index and its side files are written only as plain files: a link (even a dangling
        one) would carry kbkit's writes somewhere else."""
        for suffix in ("", "-wal", "-shm", ".lock"):
            path = Path(f"{self.path}{suffix}")
            if path.is_symlink():
                return (
                    f"{path} is a symbolic link; kbkit writes its index only as a plain file: "
                    f"remove the link (rm {path}), then rerun"
                )
        return None

    def reclaim(self, conn: sqlite3.Connection, *, removed: int = 0, before: int = 0) -> bool:
        """Shrink the file once much of it is no longer used: SQLite keeps freed pages, and FTS5
        keeps a removed document's entries in its segments until they are merged, so an index that
        went from 1,660 documents to 155 stayed at its old size. When RECLAIM_SHARE of the file is
        free, or of the `before` documents `removed` left: merge the FTS5 segments, then give the
        free pages back (incremental vacuum; a file made before that was the default is rewritten
        once by VACUUM). On the writer's connection, under the writer lock, outside a transaction.
        True when it reclaimed."""

        def pages() -> tuple[int, int, int]:
            size, count, free = (
                int(conn.execute(f"PRAGMA {name}").fetchall()[0][0])  # fetchall: no statement left open
                for name in ("page_size", "page_count", "freelist_count")
            )
            return size, count, free

        page_size, count, free = pages()
        many_gone = before > 0 and removed >= before * RECLAIM_SHARE
        if count * page_size < RECLAIM_MIN_BYTES or not (many_gone or free >= count * RECLAIM_SHARE):
            return False
        for table in FTS_TABLES:  # a merge drops the removed documents' entries: more pages free
            conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        page_size, count, free = pages()
        if free * page_size < RECLAIM_MIN_BYTES / 4:
            return False
        if int(conn.execute("PRAGMA auto_vacuum").fetchall()[0][0]) == 2:  # incremental
            conn.executescript("PRAGMA incremental_vacuum;")  # stepped to the end (one step frees one page)
        else:
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # VACUUM applies it: next time, no rewrite
            conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # the file itself shrinks here
        return True

    def _create(self) -> None:
        conn = self.connect(new=True)
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{schema()}\nCOMMIT;")  # all of it or none
        except SqliteError as exc:
            raise index_error(exc, "cannot create the index", self.path) from None
        finally:
            conn.close()
