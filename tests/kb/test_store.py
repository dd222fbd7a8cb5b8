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
from kbkit.kb.store import SCHEMA_VERSION, Peek, SqliteError, Store, index_error
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
