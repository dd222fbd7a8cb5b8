"""`kbkit search` from a terminal: a fresh index is searched as it is, scores say something."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

import pytest

from tests.helpers.project import make_project
from tests.peers.launch import forked_kbkit

pytestmark = pytest.mark.processes


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*forked_kbkit(), *args], capture_output=True, text=True, timeout=60)


def test_a_fresh_index_is_searched_without_a_rescan_even_while_another_process_indexes(project: Path) -> None:
    assert run("index", "--root", str(project)).returncode == 0
    lock = project / ".kbkit" / "index.db.lock"
    with open(lock, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # as a long indexing run elsewhere would
        result = run("search", "guard sequence", "--root", str(project))
    assert result.returncode == 0, result.stderr
    assert "One guard sequence  (adr/0001-guards.md, score 1.00)" in result.stdout


def test_files_changed_since_indexing_are_indexed_before_searching(project: Path) -> None:
    assert run("index", "--root", str(project)).returncode == 0
    (project / "docs" / "new.md").write_text("# Airships\n\nThe zeppelin hangar runbook.\n", encoding="utf-8")
    result = run("search", "zeppelin", "--root", str(project))
    assert "Airships  (new.md, score 1.00)" in result.stdout


def test_scores_descend_from_one_each_hit_names_its_section_and_folded_copies_are_named(
    tmp_path: Path,
) -> None:
    page = (
        "# df\n\n> Show free disk space of the mounted file systems, as a table of sizes.\n\n"
        "- Show every file system with its size, its used and free space in human units:\n\n`df -h`\n\n"
        "- Show the file system holding a given path and its free space:\n\n`df {0}`\n"
    )
    files = {
        "common/df.md": page.format("path/to/file"),
        "linux/df.md": page.format("path/to/dir"),
        "du.md": "# du\n\ndisk use\n",
    }
    root = make_project(tmp_path / "p", files)
    result = run("search", "free disk space", "--root", str(root))
    lines = result.stdout.splitlines()
    assert lines[0] == " 1. df  (common/df.md, score 1.00)"
    assert lines[1] == "    section: df (offset 0)"
    assert lines[3] == "    also in: linux/df.md"
    assert lines[4].startswith(" 2. du  (du.md, score 0.")
    assert "1 near-copies" in result.stdout
