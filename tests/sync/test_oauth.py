"""`[sync] remote_auth = "oauth"`: agents that sign in by themselves get a plain URL entry (no header,
no token); the others run the relay with a personal token; each agent's note says how (docs/adr/0032)."""

from __future__ import annotations

import json

import pytest

from kbkit.catalog.clients import CLIENTS, SIGN_IN
from tests.helpers.sync import git_repo, read_entry, run_sync

URL = "https://kb.example/mcp"


@pytest.mark.git
def test_signing_in_agents_get_a_plain_url_and_the_others_the_relay(tmp_path) -> None:  # noqa: ANN001
    root = git_repo(tmp_path, extra=f'remote_url = "{URL}"\nremote_auth = "oauth"\n')
    report = run_sync(root)
    assert read_entry(root, "claude-code") == {
        "type": "http",
        "url": URL,
    }  # no `tools` key: Claude Code skips such an entry
    assert read_entry(root, "cursor") == {"url": URL}
    assert read_entry(root, "codex") == {"url": URL, "startup_timeout_sec": 60}
    assert read_entry(root, "gemini") == {"httpUrl": URL}
    signing_files = {CLIENTS[name].path for name in SIGN_IN}
    for name in CLIENTS:
        entry = json.dumps(read_entry(root, name))
        assert "MCP_TOKEN" not in entry and "Authorization" not in entry, name
        if CLIENTS[name].path not in signing_files:  # Copilot CLI shares Claude Code's .mcp.json entry
            assert '"connect"' in entry and URL in entry, name  # the relay, in the client's own shape
    for name in SIGN_IN:
        assert any(note.startswith(f"{CLIENTS[name].title}: sign in: ") for note in report.notes), name
    assert any("KBKIT_TOKEN" in note for note in report.notes)
