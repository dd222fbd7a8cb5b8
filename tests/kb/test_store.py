"""The index's one boundary: SQLite's errors become kbkit's in kbkit/kb/store.py, whoever reads.

A damaged or missing table, met by a search, a resource listing, `kbkit index --skipped` or
`kbkit doctor`, is one IndexUnavailable naming the index file and the fix: never an sqlite3
exception, never a traceback.
"""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.errors import ExitCode, IndexUnavailable
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.schema import SCHEMA_VERSION
from kbkit.kb.store import Peek, SqliteError, Store, index_error
from tests.helpers.project import make_project

SQLITE_CLASSES = sorted(
    (
        cls
        for _, cls in inspect.getmembers(sqlite3, inspect.isclass)
        if issubclass(cls, SqliteError) and cls.__module__ == "sqlite3"
    ),
    key=lambda cls: cls.__name__,
)


def test_the_list_of_sqlite_classes_is_complete() -> None:
    names = {cls.__name__ for cls in SQLITE_CLASSES}
    assert {"Warning", "Error", "InterfaceError", "DatabaseError", "OperationalError"} <= names
    assert {"IntegrityError", "DataError", "InternalError", "ProgrammingError", "NotSupportedError"} <= names


@pytest.mark.parametrize("kind", SQLITE_CLASSES, ids=lambda cls: cls.__name__)
def test_every_sqlite_error_class_becomes_one_index_unavailable(
    kind: type[Exception], tmp_path: Path
) -> None:
    store = Store(tmp_path / "index.db")
    with pytest.raises(IndexUnavailable) as caught, store.translated("cannot read"):
        raise kind("disk I/O error")
    error = caught.value
    assert error.message == f"cannot read {store.path}: disk I/O error"
    assert error.fix and "\n" not in str(error)
    assert index_error(kind("x"), "cannot read", store.path).fix == error.fix


def test_each_kind_gets_its_own_fix(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    fix = {kind: index_error(kind("x"), "reading", path).fix for kind in SQLITE_CLASSES}
    assert "writable" in fix[sqlite3.OperationalError]  # locked, read-only, full, I/O
    assert (
        "rebuilds" in fix[sqlite3.DatabaseError] and fix[sqlite3.IntegrityError] == fix[sqlite3.DatabaseError]
    )
    assert "retry" in fix[sqlite3.ProgrammingError] and fix[sqlite3.Warning] == fix[sqlite3.ProgrammingError]


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """An indexed project whose index then lost its tables behind kbkit's back."""
    root = make_project(tmp_path / "project")
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    kb.close()
    conn = sqlite3.connect(root / ".kbkit" / "index.db")
    conn.executescript("DROP TABLE documents_fts; DROP TABLE skipped; DROP TABLE documents;")
    conn.close()
    return root


def test_reads_of_a_broken_index_are_index_unavailable(broken: Path) -> None:
    kb = KnowledgeBase(load_settings(broken), Store(broken / ".kbkit" / "index.db"))
    try:
        for read in (
            lambda: kb.search("guard"),
            lambda: kb.list_servable(),
            lambda: kb.servable("notes.txt"),
            kb.store.count_documents,
            kb.store.skipped,
            kb.store.stats,
        ):
            with pytest.raises(IndexUnavailable, match="index.db: no such table"):
                read()
    finally:
        kb.close()


def test_kbkit_index_meets_a_broken_index_with_one_line_and_exit_3(tmp_path: Path) -> None:
    """A table gone that the checks on open do not look for (they rebuild a damaged full-text index)."""
    broken = make_project(tmp_path / "project")
    assert CliRunner().invoke(app, ["index", "--root", str(broken)]).exit_code == 0
    conn = sqlite3.connect(broken / ".kbkit" / "index.db")
    conn.execute("DROP TABLE skipped")
    conn.close()
    result = CliRunner().invoke(app, ["index", "--skipped", "--root", str(broken)])
    assert result.exit_code == ExitCode.ENVIRONMENT, result.output
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("kbkit: error: ") and "no such table" in line and "run kbkit index" in line
    assert str(broken / ".kbkit" / "index.db") in line


def index_bytes(root: Path) -> int:
    """The index's size on disk: the file and its write-ahead log."""
    state = root / ".kbkit"
    return sum(path.stat().st_size for path in state.glob("index.db*") if path.is_file())


def test_the_index_file_shrinks_after_most_documents_are_removed(tmp_path: Path) -> None:
    """SQLite keeps freed pages and FTS5 keeps a removed document's entries until its segments
    merge: without reclaiming, an index that lost most of its documents stays at its largest."""
    words = [f"term{n:05d}" for n in range(20_000)]
    files = {
        f"pages/page{n:03d}.md": f"# Page {n}\n\n"
        + " ".join(words[(n * 37 + k) % len(words)] for k in range(900))
        for n in range(400)
    }
    root = make_project(tmp_path / "project", files)
    invoke = CliRunner().invoke
    assert invoke(app, ["index", "--root", str(root)]).exit_code == 0
    full = index_bytes(root)
    for name in list(files)[40:]:
        (root / "docs" / name).unlink()
    shrunk = invoke(app, ["index", "--root", str(root)])
    assert shrunk.exit_code == 0 and "360 removed" in shrunk.stdout, shrunk.output
    after = index_bytes(root)
    fresh_root = make_project(tmp_path / "fresh", dict(list(files.items())[:40]))
    assert invoke(app, ["index", "--root", str(fresh_root)]).exit_code == 0
    fresh = index_bytes(fresh_root)
    assert after < full / 3, (full, after, fresh)
    assert after <= 2 * fresh, (full, after, fresh)  # about what building it anew takes
    search = invoke(app, ["search", "term00037", "--root", str(root), "--json"])
    assert search.exit_code == 0 and '"results": [' in search.stdout  # still a working index


def test_an_index_that_lost_few_documents_is_not_rewritten(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", {f"p{n}.md": f"# Page {n}\n\nText {n}.\n" for n in range(50)})
    invoke = CliRunner().invoke
    assert invoke(app, ["index", "--root", str(root)]).exit_code == 0
    inode = (root / ".kbkit" / "index.db").stat().st_ino
    (root / "docs" / "p0.md").unlink()
    assert invoke(app, ["index", "--root", str(root)]).exit_code == 0
    with sqlite3.connect(root / ".kbkit" / "index.db") as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental, from creation
    assert (root / ".kbkit" / "index.db").stat().st_ino == inode


def files_of(folder: Path) -> dict[str, int]:
    """name -> mtime_ns of each file in `folder` (none when it does not exist)."""
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.is_dir() else {}


def test_peeking_counts_the_documents_and_creates_or_changes_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    settings = load_settings(root)
    before = files_of(settings.index_path.parent)
    assert Store(settings.index_path).peek() == Peek(None, "new")
    assert files_of(settings.index_path.parent) == before  # no index, no folder, no lock made
    kb = KnowledgeBase.open(settings)
    try:
        documents = kb.scan().documents
    finally:
        kb.close()
    indexed = files_of(settings.index_path.parent)
    assert KnowledgeBase.open(settings, deferred=True).peek() == Peek(documents)
    assert documents == 4 and files_of(settings.index_path.parent) == indexed  # no WAL left behind either


def test_peeking_at_a_damaged_or_foreign_index_says_why(tmp_path: Path) -> None:
    store = Store(tmp_path / "index.db")
    store.path.write_bytes(b"not an index " * 1000)
    assert store.peek() == Peek(None, "the index is unreadable: file is not a database")
    store.path.unlink()
    Store.open(store.path).close()
    conn = sqlite3.connect(store.path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    assert store.peek() == Peek(None, f"the index has schema 99, this kbkit uses {SCHEMA_VERSION}")
    store.path.unlink()
    store.path.symlink_to(tmp_path / "elsewhere.db")
    assert store.peek().problem == Store(store.path)._link_problem()
    assert not (tmp_path / "elsewhere.db").exists()


def test_peeking_at_a_large_index_stops_at_its_budget(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "index.db")
    store.close()
    conn = sqlite3.connect(store.path)
    conn.executemany(
        "INSERT INTO documents (path, ext, size, mtime_ns, sha256, title, text_size, indexed_at) "
        "VALUES (?, 'md', 1, 1, '', '', 1, '')",
        ((f"page-{i}.md",) for i in range(20_000)),
    )
    conn.commit()
    conn.close()
    assert store.peek(seconds=0.0) == Peek(None, "counting took over 0.0 s")
    assert store.peek() == Peek(20_000)
