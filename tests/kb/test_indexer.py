"""The index: incremental, WAL-mode SQLite, ignore rules applied, bad files skipped with a reason."""

from __future__ import annotations

import codecs
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats.markdown import parse_markdown
from kbkit.kb.formats.rst import parse_rst
from kbkit.kb.schema import SCHEMA_VERSION
from tests.helpers.project import make_project
from tests.peers.launch import forked_kbkit


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


def test_utf16_with_a_byte_order_mark_and_utf8_with_a_bom_are_read_as_text(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "windows-le.md": "# Notes from Windows\n\nThe café opens at nine.\n".encode("utf-16"),  # BOM + LE
        "windows-be.txt": codecs.BOM_UTF16_BE + "Big-endian words about zeppelins.\n".encode("utf-16-be"),
        "bom.md": codecs.BOM_UTF8 + b"---\ntitle: Marked UTF-8\n---\nbody about lanterns\n",
    }
    root = make_project(tmp_path / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert (report.added, report.skipped) == (3, 0)
        assert [doc.title for doc in kb.list_servable()] == [
            "Marked UTF-8",
            "windows-be",
            "Notes from Windows",
        ]
        assert kb.search("café").results[0].path == "windows-le.md"
        assert kb.search("zeppelins").results[0].path == "windows-be.txt"
        assert kb.load("windows-le.md").text == "# Notes from Windows\n\nThe café opens at nine.\n"
        assert kb.load("bom.md").text == "body about lanterns\n"  # the BOM is not text: front matter is found
    finally:
        kb.close()


@pytest.mark.processes
def test_undecodable_files_are_listed_by_index_skipped_with_the_reason(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "good.md": "# Good\n",
        "latin1.md": "# Café\n\nrésumé\n".encode("latin-1"),
        "utf16-no-mark.txt": "no byte-order mark".encode("utf-16-le"),
        "utf16-cut.txt": "cut in half".encode("utf-16")[:-1],
        "utf32.txt": "four bytes a character".encode("utf-32"),
    }
    root = make_project(tmp_path / "p", files)
    result = subprocess.run(
        [*forked_kbkit(), "index", "--skipped", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "4 skipped (4 undecodable" in result.stdout
    listed = {
        line.split(":", 1)[0].removeprefix("  skipped "): line.split(":", 1)[1]
        for line in result.stdout.splitlines()
        if line.startswith("  skipped ")
    }
    assert sorted(listed) == ["latin1.md", "utf16-cut.txt", "utf16-no-mark.txt", "utf32.txt"]
    assert all("UTF-8/UTF-16 text" in reason for reason in listed.values()), listed
    assert "not valid UTF-8 (bad byte at offset 5)" in listed["latin1.md"]
    assert "not valid UTF-16" in listed["utf16-cut.txt"]


@pytest.mark.processes
def test_index_prints_plain_progress_lines_when_stderr_is_piped(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {f"d/{i}.md": f"# {i}\n" for i in range(30)})
    result = subprocess.run(
        [*forked_kbkit(), "index", "--root", str(root)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["indexing: 0 of 30 documents", "indexing: 30 of 30 documents"]
    assert result.stdout.startswith("index: 30 documents (30 added")
    again = subprocess.run(
        [*forked_kbkit(), "index", "--root", str(root)], capture_output=True, text=True, timeout=60
    )
    assert again.stderr == ""  # nothing to index, nothing to show


@pytest.mark.processes
def test_index_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    import pty

    root = make_project(tmp_path / "p", {f"d/{i}.md": f"# {i}\n" for i in range(30)})
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [*forked_kbkit(), "index", "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closes when the process ends
                break
            if not chunk:
                break
            shown += chunk
        stdout, _ = process.communicate(timeout=60)
    finally:
        os.close(controller)
    assert process.returncode == 0
    text = shown.decode(errors="replace")
    assert "indexing" in text and "30/30" in text  # rich's bar: label, bar, done/total
    assert "\x1b[" in text  # drawn and redrawn in place with terminal control codes
    assert stdout.startswith("index: 30 documents (30 added")
