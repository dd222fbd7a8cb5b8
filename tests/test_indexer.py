"""The index: incremental, WAL-mode SQLite, ignore rules applied, bad files skipped with a reason."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from conftest import make_project

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.parsers import parse_markdown, parse_rst
from kbkit.kb.store import SCHEMA_VERSION


@pytest.fixture
def kb(project: Path):
    base = KnowledgeBase.open(load_settings(project))
    yield base
    base.close()


def paths(kb: KnowledgeBase) -> list[str]:
    return [doc.path for doc in kb.list_servable()]


def test_the_first_scan_indexes_every_supported_file_in_wal_mode(kb: KnowledgeBase) -> None:
    report = kb.scan()
    assert (report.documents, report.added, report.changed, report.removed) == (4, 4, 0, 0)
    assert paths(kb) == ["adr/0001-guards.md", "guide/getting-started.md", "notes.txt", "runbooks/deploy.rst"]
    conn = sqlite3.connect(kb.store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    row = conn.execute(
        "SELECT size, sha256, title, text_size FROM documents WHERE path = 'notes.txt'"
    ).fetchone()
    assert row[0] == (kb.settings.kb_path / "notes.txt").stat().st_size
    assert len(row[1]) == 64 and row[2] == "notes" and row[3] > 0


def test_a_second_scan_with_no_change_writes_nothing(kb: KnowledgeBase) -> None:
    kb.scan()
    watcher = sqlite3.connect(kb.store.path)
    before = watcher.execute("PRAGMA data_version").fetchone()[0]
    report = kb.scan()
    assert (report.added, report.changed, report.removed) == (0, 0, 0)
    assert not report.touched
    assert watcher.execute("PRAGMA data_version").fetchone()[0] == before  # no other connection committed
    (kb.settings.kb_path / "new.md").write_text("# New\n")
    kb.scan()
    assert watcher.execute("PRAGMA data_version").fetchone()[0] != before  # the probe can see a commit


def test_only_changed_files_are_reindexed(kb: KnowledgeBase) -> None:
    kb.scan()
    notes = kb.settings.kb_path / "notes.txt"
    notes.write_text("Now about vacuum and checkpoints.\n")
    report = kb.scan()
    assert (report.added, report.changed, report.removed) == (0, 1, 0)
    assert kb.search("checkpoints").results[0].path == "notes.txt"
    assert kb.search("write-ahead").results == []


def test_a_touched_but_identical_file_is_not_reextracted(kb: KnowledgeBase) -> None:
    kb.scan()
    notes = kb.settings.kb_path / "notes.txt"
    os.utime(notes, ns=(notes.stat().st_atime_ns, notes.stat().st_mtime_ns + 5_000_000_000))
    report = kb.scan()
    assert (report.added, report.changed, report.removed) == (0, 0, 0)
    assert not kb.scan().touched  # the new mtime was recorded


def test_deleted_files_leave_the_index_on_the_next_scan(kb: KnowledgeBase) -> None:
    kb.scan()
    (kb.settings.kb_path / "notes.txt").unlink()
    report = kb.scan()
    assert report.removed == 1
    assert "notes.txt" not in paths(kb)
    assert kb.search("write-ahead").results == []


def test_newly_ignored_files_leave_the_index_and_unignored_ones_return(kb: KnowledgeBase) -> None:
    kb.scan()
    ignore = kb.settings.kb_path / ".kbignore"
    ignore.write_text("# drafts and runbooks are noise\nrunbooks/\n*.txt\n")
    report = kb.scan()
    assert report.removed == 2
    assert paths(kb) == ["adr/0001-guards.md", "guide/getting-started.md"]
    ignore.write_text("")
    assert kb.scan().added == 2


def test_exclude_dirs_match_folder_names_anywhere_and_paths_from_the_kb_root(tmp_path: Path) -> None:
    files = {
        "a.md": "# A\n",
        "node_modules/pkg/readme.md": "# pkg\n",
        "deep/node_modules/x.md": "# x\n",
        "archive/old/z.md": "# z\n",
        "old/keep.md": "# keep\n",
    }
    config = '[kb]\npath = "docs"\nexclude_dirs = ["node_modules", "archive/old"]\n'
    root = make_project(tmp_path / "p", files, config=config)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        assert paths(kb) == ["a.md", "old/keep.md"]
    finally:
        kb.close()


def test_bad_files_are_skipped_with_a_recorded_reason_never_fatal(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "good.md": "# Good\n\nfine\n",
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "latin1.txt": "caf\xe9".encode("latin-1"),
        "broken.pdf": b"%PDF-1.7\n garbage that is not a pdf",
        "empty.md": b"",
    }
    root = make_project(tmp_path / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert report.documents == 2  # good.md and the empty file
        assert report.skip_reasons == {"undecodable": 2, "unparsable": 1}
        reasons = dict(kb.store.reader().execute("SELECT path, reason FROM skipped"))
        assert "NUL" in reasons["binary.md"]
        assert "not valid UTF-8" in reasons["latin1.txt"]
        assert "PDF could not be read" in reasons["broken.pdf"]
        again = kb.scan()  # unchanged skipped files are not retried
        assert (again.added, again.changed, again.removed) == (0, 0, 0)
        (root / "docs" / "latin1.txt").write_text("café\n", encoding="utf-8")
        fixed = kb.scan()
        assert fixed.added == 1 and fixed.skip_reasons == {"undecodable": 1, "unparsable": 1}
    finally:
        kb.close()


def test_files_over_the_size_cap_are_skipped(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"small.md": "# s\n"})
    with open(root / "docs" / "huge.md", "wb") as handle:
        handle.truncate(50 * 1024 * 1024 + 1)  # sparse: fast to make
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert report.skip_reasons == {"too-large": 1}
        assert paths(kb) == ["small.md"]
    finally:
        kb.close()


def test_a_real_pdf_is_indexed_as_text(tmp_path: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_metadata({"/Title": "Quarterly runbook"})
    pdf_path = tmp_path / "blank.pdf"
    with open(pdf_path, "wb") as handle:
        writer.write(handle)
    root = make_project(tmp_path / "p", {"runbook.pdf": pdf_path.read_bytes()})
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        (doc,) = kb.list_servable()
        assert doc.title == "Quarterly runbook"
        assert kb.load("runbook.pdf").media_type == "text/plain"
    finally:
        kb.close()


def test_a_corrupt_index_file_is_rebuilt_and_says_so(project: Path) -> None:
    settings = load_settings(project)
    kb = KnowledgeBase.open(settings)
    kb.scan()
    kb.close()
    settings.index_path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{settings.index_path}{suffix}").unlink(missing_ok=True)
    kb = KnowledgeBase.open(settings)
    try:
        assert kb.store.repaired and "rebuilt" in kb.store.repaired
        assert kb.scan().added == 4
    finally:
        kb.close()


def test_markdown_titles_come_from_front_matter_then_the_first_h1() -> None:
    parsed = parse_markdown(b"---\ntitle: From front matter\nms.date: 2020\n---\n# Heading one\n\n## Two\n")
    assert parsed.title == "From front matter"
    assert parsed.headings == ["Heading one", "Two"]
    assert not parsed.body.startswith("---")
    assert parse_markdown(b"intro\n\n# The H1\n").title == "The H1"
    assert parse_markdown(b"Setext title\n============\n\ntext\n").title == "Setext title"


def test_hashes_inside_code_fences_are_not_headings() -> None:
    parsed = parse_markdown(b"# Real\n\n```bash\n# just a comment\n```\n")
    assert parsed.headings == ["Real"]


def test_broken_front_matter_stays_searchable_text() -> None:
    parsed = parse_markdown(b"---\ntitle: [unclosed\n---\n# T\n")
    assert parsed.title == "T"
    assert "unclosed" in parsed.body


def test_rst_titles_are_underlined_lines() -> None:
    assert parse_rst(b"Deploying\n=========\n\nSub\n---\n").headings == ["Deploying", "Sub"]
