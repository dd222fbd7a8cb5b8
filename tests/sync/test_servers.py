"""`kbkit sync` with team servers (`[servers.<name>]`): each written next to kb for every client it
names, through the same planner (ownership, --check, retraction, the gitignore block), with no
secret in any file and no file changed by a key rotation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbkit.catalog.accepts import refusals
from kbkit.catalog.clients import CLIENTS
from kbkit.config import load_settings
from kbkit.errors import SyncRefused
from kbkit.sync import render
from kbkit.sync.servers import through_kbkit
from tests.helpers.sync import ALL, git_repo, read_entry, run_sync
from tests.helpers.trust import trust_project
from tests.sync.test_sync import ALLOWED_KEYS

STDIO_KEY = "team-stdio-key-0123456789abcdef"
REMOTE_KEY = "team-remote-bearer-9876543210zyxw"
TEAM = """
[servers.tracker]
command = ["tracker-mcp-not-installed-here", "--stdio"]
env = { TEAM_KEY = "${TRACKER_TOKEN}" }
preapprove = ["list_issues"]

[servers.wiki]
url = "https://wiki.example/mcp"
headers = { Authorization = "Bearer ${WIKI_TOKEN}" }

[servers.open]
url = "https://open.example/mcp"
"""
ENV_LOCAL = f"TRACKER_TOKEN={STDIO_KEY}\nWIKI_TOKEN={REMOTE_KEY}\n"


def team_repo(tmp_path: Path, clients: list[str] = ALL, extra: str = TEAM) -> Path:
    root = git_repo(tmp_path, clients, extra)
    (root / ".env.local").write_text(ENV_LOCAL, encoding="utf-8")
    return root


def entry_of(root: Path, client: str, server: str) -> dict:
    row = CLIENTS[client]
    return read_entry(root, client, server, path=row.path_for(server))


def argv_of(entry: dict, template: str) -> list[str]:
    if template == "opencode":
        return entry["command"]
    if template == "vibe":  # Mistral Vibe: the command as a list, then args
        return [*entry["command"], *entry.get("args", [])]
    return [entry["cmd" if template == "goose" else "command"], *entry.get("args", [])]


def written_files(root: Path) -> dict[str, bytes]:
    """Every file kbkit wrote in the project (not the docs, the config, .env.local or git)."""
    skip = {".git", "docs"}
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in skip and rel.name not in (".env.local", "kbkit.toml"):
            out[str(rel)] = path.read_bytes()
    return out


@pytest.mark.git
def test_every_client_gets_each_team_server_next_to_kb_and_no_file_holds_a_key(tmp_path: Path) -> None:
    root = team_repo(tmp_path)
    report = run_sync(root)
    assert not [o for o in report.outcomes if o.action == "conflict"]
    kbkit = render.kbkit_command()
    for name, client in CLIENTS.items():
        tracker = entry_of(root, name, "tracker")
        assert set(tracker) <= ALLOWED_KEYS[client.template] | dict(client.extra).keys(), (name, tracker)
        assert argv_of(tracker, client.template) == [*kbkit, "run", "tracker", "--root", str(root.resolve())]
        assert "env" not in tracker and "environment" not in tracker  # kbkit run reads .env.local
        wiki = entry_of(root, name, "wiki")  # a header names a variable: the relay, through kbkit run
        assert argv_of(wiki, client.template)[-4:] == ["run", "wiki", "--root", str(root.resolve())], name
        open_entry = entry_of(root, name, "open")  # nothing to substitute: a plain URL where possible
        if client.http:
            assert "https://open.example/mcp" in json.dumps(open_entry), name
            assert not through_kbkit(load_settings(root).servers["open"], client)
        else:
            assert argv_of(open_entry, client.template)[-4:-2] == ["run", "open"], name
    for rel, data in written_files(root).items():
        assert STDIO_KEY.encode() not in data and REMOTE_KEY.encode() not in data, rel


@pytest.mark.git
def test_a_command_missing_on_this_machine_is_written_all_the_same(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["claude-code"])
    run_sync(root)
    assert entry_of(root, "claude-code", "tracker")["args"][:2] == ["run", "tracker"]


@pytest.mark.git
def test_claude_code_and_copilot_cli_share_one_working_entry_in_mcp_json(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["claude-code", "copilot-cli"])
    report = run_sync(root)
    servers = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"kb", "tracker", "wiki", "open"}
    actions = {(o.client, o.server): o.action for o in report.outcomes if o.server}
    assert actions[("claude-code", "tracker")] == actions[("copilot-cli", "tracker")] == "created"
    # one agent leaves: the entry stays for the other
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[sync]\nclients = ["copilot-cli"]\n' + TEAM, encoding="utf-8"
    )
    run_sync(root)
    assert set(json.loads((root / ".mcp.json").read_text())["mcpServers"]) == {
        "kb",
        "tracker",
        "wiki",
        "open",
    }
    assert run_sync(root, mode="check").problems == []


@pytest.mark.git
def test_continue_gets_one_file_per_team_server(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["continue"])
    run_sync(root)
    folder = root / ".continue" / "mcpServers"
    assert sorted(p.name for p in folder.iterdir()) == ["kb.json", "open.json", "tracker.json", "wiki.json"]
    assert set(json.loads((folder / "tracker.json").read_text())["mcpServers"]) == {"tracker"}
    gitignore = (root / ".gitignore").read_text()
    assert "/.continue/mcpServers/tracker.json" in gitignore
    out = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".continue" not in out


@pytest.mark.git
def test_a_key_rotation_changes_no_file_and_check_passes(tmp_path: Path) -> None:
    root = team_repo(tmp_path)
    run_sync(root)
    before = written_files(root)
    (root / ".env.local").write_text(
        "TRACKER_TOKEN=rotated-stdio-key-aaaaaaaaaaaa\nWIKI_TOKEN=rotated-remote-bbbbbbbbbbbb\n",
        encoding="utf-8",
    )
    assert run_sync(root, mode="check").failures == []
    report = run_sync(root)
    assert {o.action for o in report.outcomes} == {"unchanged"}
    assert written_files(root) == before


@pytest.mark.git
def test_a_server_removed_from_kbkit_toml_is_taken_out_of_every_file(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["claude-code", "codex", "continue", "kiro"])
    run_sync(root)
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text().replace("[servers.wiki]", "[servers.wiki-gone]"), encoding="utf-8"
    )
    check = run_sync(root, mode="check")
    assert any("out of date" in p for p in check.problems)
    trust_project(root)  # a renamed server is a new one: the member allows it
    report = run_sync(root)
    removed = {(o.client, o.server) for o in report.outcomes if o.action == "removed"}
    assert {("claude-code", "wiki"), ("codex", "wiki"), ("continue", "wiki"), ("kiro", "wiki")} <= removed
    assert "wiki" not in json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert "mcp_servers.wiki]" not in (root / ".codex" / "config.toml").read_text()
    assert not (root / ".continue" / "mcpServers" / "wiki.json").exists()
    assert entry_of(root, "claude-code", "wiki-gone")["args"][:2] == ["run", "wiki-gone"]
    assert run_sync(root, mode="check").failures == []


@pytest.mark.git
def test_a_hand_edited_team_entry_is_a_conflict_and_force_replaces_it(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["cursor"])
    run_sync(root)
    path = root / ".cursor" / "mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["tracker"]["args"].append("--verbose")
    path.write_text(json.dumps(data))
    report = run_sync(root)
    (conflict,) = [o for o in report.outcomes if o.action == "conflict"]
    assert conflict.server == "tracker" and "edited by hand" in (conflict.reason or "")
    run_sync(root, force=True)
    assert "--verbose" not in path.read_text()


@pytest.mark.git
def test_team_tools_are_pre_approved_by_name_and_never_a_whole_server(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["claude-code", "kiro", "gemini", "roo"])
    run_sync(root)
    allow = json.loads((root / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert "mcp__tracker__list_issues" in allow and "mcp__kb__search" in allow
    assert not any(name in ("mcp__tracker", "mcp__wiki") or name.endswith("*") for name in allow)
    assert entry_of(root, "kiro", "tracker")["autoApprove"] == ["list_issues"]
    assert entry_of(root, "roo", "tracker")["alwaysAllow"] == ["list_issues"]
    assert "autoApprove" not in entry_of(root, "kiro", "wiki")
    gemini = json.loads((root / ".gemini" / "settings.json").read_text())
    assert "mcp_tracker_list_issues" in gemini["tools"]["allowed"]
    assert all("trust" not in entry for entry in gemini["mcpServers"].values())
    # the tool dropped from preapprove leaves every grant
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text().replace('preapprove = ["list_issues"]', ""), encoding="utf-8"
    )
    run_sync(root)
    allow = json.loads((root / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert "mcp__tracker__list_issues" not in allow and "mcp__kb__search" in allow
    assert "autoApprove" not in entry_of(root, "kiro", "tracker")


@pytest.mark.git
def test_start_up_timeouts_follow_the_server_s_own_in_each_client_s_unit(tmp_path: Path) -> None:
    root = team_repo(
        tmp_path,
        ["codex", "opencode", "qwen"],
        TEAM.replace("preapprove", "startup_timeout = 90\npreapprove"),
    )
    run_sync(root)
    assert entry_of(root, "codex", "tracker")["startup_timeout_sec"] == 90
    assert entry_of(root, "opencode", "tracker")["timeout"] == 90_000
    assert entry_of(root, "qwen", "tracker")["discoveryTimeoutMs"] == 90_000
    assert entry_of(root, "codex", "wiki")["startup_timeout_sec"] == 60


FILTERED = TEAM.replace(
    'preapprove = ["list_issues"]',
    'preapprove = ["list_issues"]\ntools = ["list_issues", "get_issue"]\nexclude_tools = ["get_issue"]',
)
NATIVE = {
    "gemini": {"includeTools": ["list_issues", "get_issue"], "excludeTools": ["get_issue"]},
    "qwen": {"includeTools": ["list_issues", "get_issue"], "excludeTools": ["get_issue"]},
    "codex": {"enabled_tools": ["list_issues", "get_issue"], "disabled_tools": ["get_issue"]},
    "factory": {"enabledTools": ["list_issues", "get_issue"], "disabledTools": ["get_issue"]},
    "kiro": {"disabledTools": ["get_issue"]},  # Kiro only hides tools: the allow list is kbkit's alone
}
"""The team's filter in each agent's own keys, where it has per-server ones (docs/servers.md)."""


def test_the_clients_with_their_own_tool_filter_are_those_above() -> None:
    assert {name for name, client in CLIENTS.items() if client.tool_keys is not None} == set(NATIVE)


@pytest.mark.git
def test_a_filtered_server_s_tools_are_written_in_each_agent_s_own_filter_too(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ALL, FILTERED)
    report = run_sync(root)
    assert not [o for o in report.outcomes if o.action == "conflict"]
    kbkit = render.kbkit_command()
    for name, client in CLIENTS.items():
        tracker = entry_of(root, name, "tracker")
        keys = client.tool_keys
        native = {key: tracker[key] for key in (keys.allow, keys.deny) if key in tracker} if keys else {}
        assert native == NATIVE.get(name, {}), name
        assert argv_of(tracker, client.template)[-4:] == ["run", "tracker", "--root", str(root.resolve())]
        assert argv_of(tracker, client.template)[0] == kbkit[0]  # kbkit's own filter stays
        assert not refusals(name, tracker), name
        assert not set(NATIVE.get(name, {})) & set(entry_of(root, name, "wiki")), name  # unfiltered
    assert run_sync(root, mode="check").failures == []  # written as sync wants it: nothing stale


@pytest.mark.git
def test_a_server_s_own_clients_list_decides_where_it_goes(tmp_path: Path) -> None:
    extra = TEAM.replace('preapprove = ["list_issues"]', 'clients = ["cursor"]')
    root = team_repo(tmp_path, ["claude-code", "cursor"], extra)
    run_sync(root)
    assert "tracker" not in json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert "tracker" in json.loads((root / ".cursor" / "mcp.json").read_text())["mcpServers"]


@pytest.mark.git
def test_a_literal_secret_from_env_local_in_a_plain_url_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    extra = '[servers.leak]\nurl = "https://leak.example/mcp/team-remote-bearer-9876543210zyxw"\n'
    root = team_repo(tmp_path, ["claude-code"], extra)
    with pytest.raises(SyncRefused, match="WIKI_TOKEN"):
        run_sync(root)
    assert not (root / ".mcp.json").exists()


@pytest.mark.git
def test_dry_run_prints_the_team_entries_and_writes_nothing(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["claude-code"])
    report = run_sync(root, mode="dry-run")
    assert '"tracker"' in report.diffs[".mcp.json"]
    assert not (root / ".mcp.json").exists()


@pytest.mark.git
def test_an_agent_that_approves_each_server_is_told_to_approve_each_team_server(tmp_path: Path) -> None:
    root = team_repo(tmp_path, ["qwen", "amp", "cursor"])
    caveats = run_sync(root).caveats
    assert any("qwen mcp approve kb" in line for line in caveats)
    assert any("qwen mcp approve tracker" in line for line in caveats)
    assert any("amp mcp approve wiki" in line for line in caveats)
    assert not any(line.startswith("Cursor") for line in caveats)
