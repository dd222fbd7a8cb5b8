"""Incremental indexing: a stat scan finds what changed; only that is hashed and re-extracted.

Every file is read through the guard sequence (`read_guarded`), so the index never holds a
document that a read would refuse at the time it was indexed.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kbkit.errors import DocumentRefused
from kbkit.kb import fields
from kbkit.kb.documents import FILE_SIZE_CAP, extract, read_guarded
from kbkit.kb.formats.markup import MDBOOK
from kbkit.kb.formats.registry import Registry, extension_of
from kbkit.kb.ignore import KBIGNORE, IgnoreRules
from kbkit.kb.schema import READ_AGAIN
from kbkit.kb.sites import book_of, template_folders
from kbkit.kb.store import SqliteError, Store, index_error

BATCH_SIZE = 500
"""Documents written per transaction: large enough to be fast, small enough that readers
see progress and a killed indexer loses little."""
_MARKER = "scan_in_progress"
"""meta row present while a scan with work runs: who started it and when (a killed scan leaves it)."""
_PROGRESS = "scan_progress"
"""meta row beside the marker: "done/total" files, updated in each batch's own commit."""


@dataclass
class ScanReport:
    documents: int = 0
    """Documents in the index after the scan."""
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    """Files with a registered extension that are not indexed (see `skip_reasons`)."""
    skip_reasons: Counter[str] = field(default_factory=Counter)
    partial: int = 0
    """Documents longer than fields.INDEX_TEXT_CAP: only their first part is searchable."""
    seconds: float = 0.0
    interrupted: str | None = None
    """Set when this scan found (and finished) an earlier scan that was killed midway."""
    stopped: bool = False
    """Set when the scan was told to stop: what it did is committed, the next scan does the rest."""
    excluded: Counter[str] = field(default_factory=Counter)
    """What `.kbignore` and `[kb] exclude_dirs` kept out: "folders" (not looked into) and "files"
    (with a registered extension), and the site theme folders passed by ("theme folders",
    kb/sites.py), so `kbkit index --skipped` can say what the rules took."""

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def changes(self) -> str:
        return f"{self.added} added, {self.changed} changed, {self.removed} removed"

    def skipped_summary(self) -> str | None:
        """'3 skipped (2 undecodable, 1 too-large; ...)', or None when nothing was skipped."""
        if not self.skipped:
            return None
        top = ", ".join(f"{count} {reason}" for reason, count in self.skip_reasons.most_common(3))
        return f"{self.skipped} skipped ({top}; `kbkit index --skipped` lists them)"


@dataclass(frozen=True)
class Progress:
    """How far a running scan has got, as any process reading the index sees it."""

    done: int
    total: int

    def line(self) -> str:
        return f"indexing: {self.done:,} of {self.total:,} documents"


@dataclass(frozen=True)
class _Seen:
    path: str
    size: int
    mtime_ns: int


ProgressFn = Callable[[int, int], None]
"""Called with (done, total) once the work is known and after each batch is committed."""


def scan(
    store: Store,
    kb_root: Path,
    registry: Registry,
    rules: IgnoreRules,
    *,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
) -> ScanReport:
    """Bring the index in line with the folder. Safe to run repeatedly; a no-change run writes nothing.

    `stop`, when set, ends the scan at the next document with its work so far committed.
    """
    started = time.perf_counter()
    report = ScanReport()
    conn = store.connect()
    try:
        marker = conn.execute("SELECT value FROM meta WHERE key = ?", (_MARKER,)).fetchone()
        if marker is not None:
            report.interrupted = (
                f"an earlier indexing run ({marker[0]}) was cut off; its committed batches were kept"
            )
        known, skipped = store.stats(conn)
        seen = list(walk(kb_root, registry, rules, report.excluded))
        work, gone_docs, gone_skips = stale(seen, known, skipped)
        report.unchanged = len(seen) - len(work)
        if work or gone_docs or gone_skips or marker is not None:
            _apply(conn, kb_root, registry, work, known, gone_docs, gone_skips, report, progress, stop)
            if gone_docs or work:
                store.reclaim(conn, removed=report.removed, before=len(known))  # much freed: give it back
        report.documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        for reason, count in conn.execute("SELECT reason_code, count(*) FROM skipped GROUP BY reason_code"):
            report.skip_reasons[reason] = count
        report.skipped = sum(report.skip_reasons.values())
        report.partial = conn.execute(fields.partly_indexed_sql(count=True)).fetchone()[0]
    except SqliteError as exc:
        raise index_error(exc, "indexing failed in", store.path) from None
    finally:
        conn.close()
    report.seconds = time.perf_counter() - started
    return report


def walk(
    kb_root: Path, registry: Registry, rules: IgnoreRules, excluded: Counter[str] | None = None
) -> Iterator[_Seen]:
    """Every file the index should hold: registered extension, not ignored, not a link, in size,
    not in a site's template folder, not a file an mdBook's SUMMARY.md leaves out (kb/sites.py).
    `excluded` counts what the ignore rules kept out ("folders", "files"), the theme folders passed
    by ("theme folders") and the book's unlisted files ("unlisted chapters")."""
    extensions = set(registry.extensions)
    themes: set[str] = set()
    book = book_of(kb_root) if registry.markup.generator == MDBOOK else None
    stack = [("", str(kb_root))]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            continue  # an unreadable folder is skipped; get_document will say why if asked
        themes.update(_theme_folders(entries, rel_dir))
        for entry in entries:
            if not _is_utf8(entry.name):
                continue  # a name that is not UTF-8 cannot be a path in the index or a URI
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if rel in themes:
                    if excluded is not None:
                        excluded["theme folders"] += 1
                elif not rules.skips_dir(rel, entry.name):
                    stack.append((rel, entry.path))
                elif excluded is not None:
                    excluded["folders"] += 1
            elif stat.S_ISREG(info.st_mode) and extension_of(entry.name) in extensions:
                if book is not None and not book.lists(rel):
                    if excluded is not None:
                        excluded["unlisted chapters"] += 1
                elif not rules.admits(rel):
                    continue  # another partition's file: not even counted
                elif not rules.skips_file(rel):
                    yield _Seen(rel, info.st_size, info.st_mtime_ns)
                elif excluded is not None and rel != KBIGNORE:
                    excluded["files"] += 1


def _theme_folders(entries: list[os.DirEntry[str]], rel_dir: str) -> list[str]:
    """The template folders the site configs among `entries` name (kb/sites.py)."""
    if not entries:
        return []
    return template_folders(Path(entries[0].path).parent, {entry.name for entry in entries}, rel_dir)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.scandir hands undecodable bytes over as lone surrogates
        return False
    return True


def _apply(
    conn: sqlite3.Connection,
    kb_root: Path,
    registry: Registry,
    work: list[_Seen],
    known: dict[str, tuple[int, int, int]],
    gone_docs: list[str],
    gone_skips: list[str],
    report: ScanReport,
    progress: ProgressFn | None,
    stop: threading.Event | None,
) -> None:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    total = len(work)
    conn.executemany(  # a killed indexer leaves these behind; the next scan says so and finishes the work
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [(_MARKER, f"pid {os.getpid()}, {now}"), (_PROGRESS, f"0/{total}")],
    )
    if progress:
        progress(0, total)
    conn.execute("BEGIN IMMEDIATE")
    try:
        counts: Counter[str] = Counter()  # changes in how many documents refer to each name
        for path in gone_docs:
            _delete(conn, known[path][2], counts)
            report.removed += 1
        conn.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in gone_skips])
        done = 0
        for item in work:
            if stop is not None and stop.is_set():
                report.stopped = True
                break
            _index_one(conn, kb_root, registry, item, known.get(item.path), now, report, counts)
            done += 1
            if done % BATCH_SIZE == 0:
                fields.count_references(conn, counts)
                _set_progress(conn, done, total)
                conn.execute("COMMIT")
                if progress:
                    progress(done, total)
                conn.execute("BEGIN IMMEDIATE")
        fields.count_references(conn, counts)
        conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (_MARKER, _PROGRESS))
        conn.execute("COMMIT")
        if progress:
            progress(done, total)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _set_progress(conn: sqlite3.Connection, done: int, total: int) -> None:
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (f"{done}/{total}", _PROGRESS))


def read_progress(conn: sqlite3.Connection) -> Progress | None:
    """The progress row of a scan with work, or None. A killed scan leaves its row: callers check
    that a writer still holds the lock (`Store.writer_busy`) before they believe it."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_PROGRESS,)).fetchone()
    if row is None:
        return None
    done, _, total = str(row[0]).partition("/")
    if not (done.isdigit() and total.isdigit()):
        return None
    return Progress(int(done), int(total))


def _index_one(
    conn: sqlite3.Connection,
    kb_root: Path,
    registry: Registry,
    item: _Seen,
    previous: tuple[int, int, int] | None,
    now: str,
    report: ScanReport,
    counts: Counter[str],
) -> None:
    ext = extension_of(item.path)
    try:
        if item.size > FILE_SIZE_CAP:
            raise DocumentRefused("too-large", f"over the {FILE_SIZE_CAP // (1024 * 1024)} MiB cap")
        raw = read_guarded(kb_root, item.path, registry)
        digest = hashlib.sha256(raw.data).hexdigest()
        if previous is not None and previous[1] != READ_AGAIN:
            old_sha = conn.execute("SELECT sha256 FROM documents WHERE id = ?", (previous[2],)).fetchone()
            if old_sha and old_sha[0] == digest:  # touched, not changed: no re-extraction
                conn.execute(
                    "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?",
                    (raw.size, raw.mtime_ns, previous[2]),
                )
                report.unchanged += 1
                return
        doc = extract(raw, registry, text_cap=None)
    except DocumentRefused as refused:
        if previous is not None:
            _delete(conn, previous[2], counts)
            report.removed += 1
        conn.execute(
            "INSERT OR REPLACE INTO skipped (path, ext, size, mtime_ns, reason_code, reason) "
            "VALUES (?,?,?,?,?,?)",
            (item.path, ext, item.size, item.mtime_ns, refused.reason, str(refused)),
        )
        return
    title = doc.title or Path(item.path).stem
    conn.execute("DELETE FROM skipped WHERE path = ?", (item.path,))
    if previous is not None:
        doc_id: int = previous[2]
        conn.execute(
            "UPDATE documents SET ext=?, size=?, mtime_ns=?, sha256=?, title=?, text_size=?, indexed_at=? "
            "WHERE id=?",
            (ext, raw.size, raw.mtime_ns, digest, title, doc.text_size, now, doc_id),
        )
        fields.remove(conn, doc_id, counts)
        report.changed += 1
    else:
        inserted = conn.execute(
            "INSERT INTO documents (path, ext, size, mtime_ns, sha256, title, text_size, indexed_at) "
            "VALUES (?,?,?,?,?,?,?,?)",
            (item.path, ext, raw.size, raw.mtime_ns, digest, title, doc.text_size, now),
        ).lastrowid
        assert inserted is not None  # typed Optional; an INSERT always sets it
        doc_id = inserted
        report.added += 1
    fields.write(conn, doc_id, item.path, title, doc, counts)


def _delete(conn: sqlite3.Connection, doc_id: int, counts: Counter[str]) -> None:
    fields.remove(conn, doc_id, counts)
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def stale(
    seen: list[_Seen], known: dict[str, tuple[int, int, int]], skipped: dict[str, tuple[int, int]]
) -> tuple[list[_Seen], list[str], list[str]]:
    """The one stale test: files whose (size, mtime_ns) differ from what the index recorded for
    them (indexed or skipped), and indexed or skipped paths no longer on disk."""
    work = [
        item
        for item in seen
        if known.get(item.path, (None, None))[:2] != (item.size, item.mtime_ns)
        and skipped.get(item.path) != (item.size, item.mtime_ns)
    ]
    on_disk = {item.path for item in seen}
    return work, [p for p in known if p not in on_disk], [p for p in skipped if p not in on_disk]


def count_stale(store: Store, kb_root: Path, registry: Registry, rules: IgnoreRules) -> int:
    """Files a scan would add, reindex or drop (by stat only: nothing is read or written)."""
    known, skipped = store.stats()
    work, gone_docs, _ = stale(list(walk(kb_root, registry, rules)), known, skipped)
    return len(work) + len(gone_docs)
