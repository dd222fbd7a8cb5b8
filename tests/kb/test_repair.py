"""A damaged full-text index is noticed and repaired; a linked index file is never written
through; paths in .env.local are not mistaken for secrets. Each through the commands a user runs."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from kbkit.sync.render import kbkit_command as entry_command
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process as kbkit
from tests.helpers.trust import trust_project

DOCS = {
    f"notes/doc-{n:02}.md": f"# Note {n}\n\nThe guard sequence protects every read, note {n}.\n"
    for n in range(30)
}


def hits(root: Path) -> int:
    done = kbkit("search", "guard sequence", "--root", str(root), "--limit", "100", "--json")
    assert done.returncode == 0, done.stderr
    return len(json.loads(done.stdout)["results"])


def test_a_damaged_full_text_index_is_found_by_doctor_and_repaired_by_index(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS)
    assert kbkit("index", "--root", str(root)).returncode == 0
    assert hits(root) == 30
    conn = sqlite3.connect(root / ".kbkit" / "index.db")
    with (
        conn
    ):  # damage FTS5's shadow tables (documents' and passages') the way a torn write or a bad disk does
        for table in ("documents_fts_data", "passages_fts_data"):
            conn.execute(f"UPDATE {table} SET block = zeroblob(length(block)) WHERE id > 10")
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"  # SQLite's own check sees nothing
    conn.close()
    assert hits(root) == 0  # search silently finds nothing

    doctor = kbkit("doctor", "--root", str(root), "--json")
    index = next(c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "index")
    assert index["status"] == "fail" and "FTS5's integrity check" in index["finding"]
    assert index["fix"].startswith("run kbkit index")

    repaired = kbkit("index", "--root", str(root))
    assert repaired.returncode == 0, repaired.stderr
    assert "index repaired: the full-text index failed FTS5's integrity check" in repaired.stdout
    assert hits(root) == 30
    doctor = kbkit("doctor", "--root", str(root), "--json")
    assert next(c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "index")["status"] == "ok"


def test_a_dangling_index_symlink_is_refused_and_nothing_is_written_where_it_points(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS)
    outside = tmp_path / "outside" / "index.db"
    outside.parent.mkdir()
    (root / ".kbkit").mkdir()
    (root / ".kbkit" / "index.db").symlink_to(outside)
    for command in (["index"], ["search", "guard"]):
        done = kbkit(*command, "--root", str(root))
        assert done.returncode == 3  # an environment problem (docs/adr/0013)
        assert done.stderr.strip().splitlines() == [
            f"kbkit: error: {root.resolve() / '.kbkit' / 'index.db'} is a symbolic link; kbkit writes its "
            f"index only as a plain file: remove the link (rm {root.resolve() / '.kbkit' / 'index.db'}), then rerun"
        ]
    assert list(outside.parent.iterdir()) == []
    doctor = kbkit("doctor", "--root", str(root), "--json")
    index = next(c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "index")
    assert index["status"] == "fail" and "symbolic link" in index["finding"]


@pytest.mark.git
def test_paths_in_env_local_are_not_taken_for_secrets_but_a_secret_still_is(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "repo", config='[kb]\npath = "docs"\n[sync]\nclients = ["claude-code", "codex"]\n'
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    executable = entry_command()[0]
    (root / ".env.local").write_text(
        f"PROJECT_DIR={root.resolve()}\nKBKIT_HOME={Path(executable).parent}\nHOME_DIR={root.resolve().parent}\n"
    )
    done = kbkit("sync", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"]["kb"]["args"][-1] == str(root.resolve())

    (root / ".env.local").write_text("SHARED_SECRET=abcdefgh12345678\n")
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text() + 'remote_url = "https://kb.example/abcdefgh12345678/mcp"\n'
    )
    trust_project(root)  # trusted, so sync would write it: the secret check is what refuses
    refused = kbkit("sync", "--root", str(root))
    assert refused.returncode == 2
    assert "would hold the value of SHARED_SECRET from .env.local" in refused.stderr
    assert "abcdefgh12345678" not in refused.stderr
