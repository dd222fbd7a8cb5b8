"""The client table as users meet it: docs/sync.md and docs/clients.md written from it, start-up
timeouts where agents give up early, one `.mcp.json` entry for two agents, and each agent's own
remaining step said by `kbkit sync` and repeated by `kbkit doctor`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kbkit.catalog.clients import CLIENTS, DEFAULT_CLIENTS, START_UP_SECONDS, clients_table, tool_keys_table
from kbkit.config import load_settings
from kbkit.sync.planner import sync
from tests.helpers.paths import REPO
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.helpers.sync import read_entry
from tests.helpers.trust import trust_project

TIMEOUTS = {
    "codex": ("startup_timeout_sec", 1),
    "opencode": ("timeout", 1000),
    "kilo": ("timeout", 1000),
    "crush": ("timeout", 1),
    "qwen": ("discoveryTimeoutMs", 1000),
}
"""Agents whose start-up wait is shorter than a first index of a large kb: field, units per second."""


def repo(tmp_path: Path, clients: list[str], sync_extra: str = "") -> Path:
    listed = ", ".join(f'"{c}"' for c in clients)
    config = f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n{sync_extra}'
    root = make_project(tmp_path / "repo", config=config)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kbkit_in_process(*args, "--root", str(root))


def test_the_sync_page_s_client_table_is_the_client_table() -> None:
    readme = (REPO / "docs" / "sync.md").read_text()
    block = re.search(r"<!-- clients:start -->\n(.*?)<!-- clients:end -->", readme, re.DOTALL)
    assert block is not None and block.group(1) == clients_table()
    assert len(CLIENTS) >= 35


def test_the_servers_page_s_tool_filter_table_is_the_client_table_s() -> None:
    page = (REPO / "docs" / "servers.md").read_text()
    block = re.search(r"<!-- tool-keys:start -->\n(.*?)<!-- tool-keys:end -->", page, re.DOTALL)
    assert block is not None and block.group(1) == tool_keys_table()


def test_docs_clients_cites_a_source_for_every_agent() -> None:
    text = (REPO / "docs" / "clients.md").read_text()
    sources = text[text.index("## Sources, per agent") :]
    for client in CLIENTS.values():
        if client.name in ("cursor", "vscode", "junie", "claude-desktop", "devin-desktop", "cline"):
            continue  # unchanged rows: their source is the table's own `source` column
        assert f"- **{client.title}**:" in sources, client.title
        assert client.source, client.name


@pytest.mark.git
def test_agents_that_give_up_early_get_at_least_a_minute_to_start(tmp_path: Path) -> None:
    for remote in ("", 'remote_url = "https://kb.example/mcp"\n'):
        root = repo(tmp_path / str(bool(remote)), list(TIMEOUTS), remote)
        sync(load_settings(root))
        for client, (key, per_second) in TIMEOUTS.items():
            assert read_entry(root, client)[key] >= START_UP_SECONDS * per_second >= 60 * per_second, client


@pytest.mark.git
def test_claude_code_and_copilot_cli_share_one_mcp_json_entry(tmp_path: Path) -> None:
    root = repo(tmp_path, ["claude-code", "copilot-cli"], "preapprove = false\n")
    report = sync(load_settings(root))
    assert [(o.client, o.action) for o in report.outcomes] == [
        ("claude-code", "created"),
        ("copilot-cli", "created"),
    ]
    kb = read_entry(root, "claude-code")
    assert kb["type"] == "stdio" and "tools" not in kb  # Claude Code skips an entry whose tools are strings
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[sync]\nclients = ["copilot-cli"]\npreapprove = false\n'
    )
    report = sync(load_settings(root))
    assert read_entry(root, "copilot-cli") == kb  # still wanted by Copilot CLI: not removed
    assert {o.action for o in report.outcomes} == {"unchanged"}
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n[sync]\nclients = []\n')
    sync(load_settings(root))
    assert not (root / ".mcp.json").exists()


@pytest.mark.git
def test_sync_says_each_agent_s_own_step_once_and_doctor_repeats_it(tmp_path: Path) -> None:
    root = repo(tmp_path, ["amp", "warp", "trae", "claude-code", "cursor", "roo", "kiro"])
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml")
        .read_text()
        .replace('path = "docs"\n', 'path = "docs"\n[server]\nname = "docs"\n')
    )
    result = cli(root, "sync")
    assert result.returncode == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if line.startswith("step in the agent: ")]
    assert steps == [
        "step in the agent: Amp: run `amp mcp approve docs` (again after kbkit sync changes the entry, as "
        "the approval is bound to it): Amp starts a workspace server only after approval",
        f"step in the agent: Warp: {CLIENTS['warp'].step('docs')}",
        f"step in the agent: Trae: {CLIENTS['trae'].caveat}",
        f"step in the agent: Claude Code: {CLIENTS['claude-code'].caveat}",
        f"step in the agent: Roo Code: {CLIENTS['roo'].caveat}",  # it pre-approves, so the switch matters
    ]  # Cursor needs no step; Kiro's is about a token that a local entry does not name
    assert "step in the agent" not in cli(root, "sync", "--check").stdout  # said after writing
    doctor = json.loads(cli(root, "doctor", "--json").stdout)
    said = [
        c["finding"] for c in doctor["checks"] if c["check"] == "sync" and c["finding"].startswith("step")
    ]
    assert said == steps

    (root / "kbkit.toml").write_text((root / "kbkit.toml").read_text() + "preapprove = false\n")
    steps = [line for line in cli(root, "sync").stdout.splitlines() if line.startswith("step in the agent: ")]
    assert not [step for step in steps if "Roo Code" in step]


@pytest.mark.git
def test_a_direct_http_entry_says_where_its_token_must_come_from(tmp_path: Path) -> None:
    remote = 'remote_url = "https://kb.example/mcp"\n'
    root = repo(tmp_path, ["kiro", "vscode", "zed"], remote)
    said = "\n".join(sync(load_settings(root)).caveats)
    assert "MCP_TOKEN" not in said  # the relay reads the token itself: nothing to do in the agent
    assert "Zed: trust the project" in said
    (root / "kbkit.toml").write_text((root / "kbkit.toml").read_text() + 'remote_transport = "http"\n')
    said = "\n".join(sync(load_settings(root)).caveats)
    for name in ("kiro", "vscode"):
        assert "url" in read_entry(root, name)
        assert f"{CLIENTS[name].title}: {CLIENTS[name].caveat}" in said


@pytest.mark.git
def test_a_renamed_agent_s_old_id_still_selects_its_row_and_keeps_the_file_it_wrote(tmp_path: Path) -> None:
    """Windsurf is Devin Desktop now: `windsurf` in kbkit.toml or `--only` is the same row, and an
    entry an older kbkit recorded under the old id is still kbkit's own (updated, not refused)."""
    root = repo(tmp_path, ["windsurf"])
    assert load_settings(root).sync_clients == ("devin-desktop",)
    state = root / ".kbkit" / "sync-state.json"
    sync(load_settings(root))
    state.write_text(state.read_text().replace('"devin-desktop"', '"windsurf"'))  # as an older kbkit wrote it
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text() + 'remote_url = "https://kb.example/mcp"\n'
    )
    trust_project(root)
    report = sync(load_settings(root), only=["windsurf"])
    assert [(o.client, o.action) for o in report.outcomes] == [("devin-desktop", "updated")]
    assert read_entry(root, "devin-desktop")["args"][0] == "connect"
    result = cli(root, "sync", "--only", "devin-desktp")
    assert result.returncode != 0 and "unknown client 'devin-desktp'" in result.stderr


def test_the_default_clients_leave_out_agents_at_end_of_life() -> None:
    assert not [name for name in DEFAULT_CLIENTS if CLIENTS[name].end_of_life]
    assert "gemini" not in DEFAULT_CLIENTS and CLIENTS["gemini"].end_of_life
