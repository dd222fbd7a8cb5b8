"""`kbkit sync`: every agent's config from kbkit.toml, merged into real files, with no secret anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from kbkit.catalog.clients import CLIENTS
from kbkit.errors import SyncRefused
from kbkit.sync import jsonc, render
from kbkit.sync.render import token_reference
from tests.helpers.paths import GOLDEN
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.helpers.sync import (
    ALL,
    CODEX_TOML,
    MCP_JSON,
    VSCODE_JSON,
    ZED_SETTINGS,
    git_repo,
    read_entry,
    run_sync,
)

TOKEN = "s3cr3t-token-value-0123456789"

# The keys each entry shape takes (Codex rejects anything else); per client, docs/clients.md.
ALLOWED_KEYS = {
    "typed": {"type", "command", "args", "env", "url", "headers", "tools", "timeout"},
    "plain": {"command", "args", "env", "url", "headers", "autoApprove"},
    "server-url": {"command", "args", "env", "serverUrl", "headers"},
    "roo": {"type", "command", "args", "env", "url", "headers", "alwaysAllow"},
    "gemini": {"command", "args", "env", "cwd", "httpUrl", "url", "headers", "discoveryTimeoutMs"},
    "opencode": {"type", "command", "environment", "url", "headers", "enabled", "timeout"},
    "codex": {
        "command",
        "args",
        "env",
        "env_vars",
        "cwd",
        "url",
        "bearer_token_env_var",
        "env_http_headers",
        "http_headers",
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled",
        "enabled_tools",
        "disabled_tools",
    },
}


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for client in CLIENTS.values():
        path = root / client.path
        if path.exists():
            out[client.path] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


@pytest.mark.git
def test_every_client_gets_a_stdio_entry_that_runs_this_kbkit_with_no_env_block(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    report = run_sync(root)
    assert {o.client: o.action for o in report.outcomes} == {c: "created" for c in ALL}
    for name, client in CLIENTS.items():
        entry = read_entry(root, name)
        assert set(entry) <= ALLOWED_KEYS[client.template], (name, entry)
        one_array = client.template == "opencode"  # opencode, Kilo Code
        argv = entry["command"] if one_array else [entry["command"], *entry["args"]]
        assert argv == [*render.kbkit_command(), "serve", "--root", str(root.resolve())]
        assert Path(argv[0]).is_absolute()
        assert "env" not in entry and "environment" not in entry
    assert read_entry(root, "claude-code")["type"] == "stdio"


@pytest.mark.git
def test_outputs_parse_back_with_each_format_s_real_parser(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    run_sync(root)
    for client in CLIENTS.values():
        text = (root / client.path).read_text()
        if client.format == "toml":
            tomllib.loads(text)
        else:
            json.loads(text)  # kbkit's own files are plain JSON, even where comments are allowed


@pytest.mark.git
def test_a_second_run_changes_nothing_byte_for_byte(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    run_sync(root)
    before = snapshot(root)
    gitignore = (root / ".gitignore").stat().st_mtime_ns
    report = run_sync(root)
    assert {o.action for o in report.outcomes} == {"unchanged"}
    assert report.gitignore == "unchanged"
    assert snapshot(root) == before
    assert (root / ".gitignore").stat().st_mtime_ns == gitignore


@pytest.mark.git
def test_every_output_is_ignored_by_git_and_user_gitignore_lines_are_kept(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    (root / ".gitignore").write_text("# mine\nnode_modules/\n")
    run_sync(root)
    text = (root / ".gitignore").read_text()
    assert text.startswith("# mine\nnode_modules/\n")
    paths = [c.path for c in CLIENTS.values()] + [".kbkit/sync-state.json", ".env.local"]
    result = subprocess.run(["git", "-C", str(root), "check-ignore", *paths], capture_output=True, text=True)
    assert sorted(result.stdout.split()) == sorted(paths)
    tracked = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
    ).stdout
    assert ".mcp.json" not in tracked and ".codex" not in tracked


@pytest.mark.git
def test_merging_keeps_everything_of_the_user_and_a_second_run_is_a_no_op(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "vscode", "zed", "codex"])
    for rel, text in {
        ".mcp.json": MCP_JSON,
        ".vscode/mcp.json": VSCODE_JSON,
        ".zed/settings.json": ZED_SETTINGS,
        ".codex/config.toml": CODEX_TOML,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    report = run_sync(root)
    assert {o.action for o in report.outcomes if o.path != ".claude/settings.local.json"} == {"updated"}
    mcp = json.loads((root / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"github", "postgres", "kb"}
    assert mcp["mcpServers"]["postgres"] == {"command": "pg-mcp", "env": {"PGHOST": "localhost"}}
    assert (
        (root / ".mcp.json").read_text().startswith('{\n    "mcpServers": {\n        "github"')
    )  # 4-space kept
    vscode = json.loads((root / ".vscode/mcp.json").read_text())
    assert vscode["inputs"][0]["id"] == "gh-token" and set(vscode["servers"]) == {"github", "kb"}
    zed = (root / ".zed/settings.json").read_text()
    for kept in ("// Zed settings", "// my theme", "/* fonts */", "// keep me", '"vim_mode": true'):
        assert kept in zed
    assert set(jsonc.loads(zed)["context_servers"]) == {"other", "kb"}
    codex = (root / ".codex/config.toml").read_text()
    assert codex.startswith('# my codex config\nmodel = "o4"  # the model\n')
    parsed = tomllib.loads(codex)
    assert set(parsed["mcp_servers"]) == {"docs", "kb"} and parsed["profiles"]["fast"]["model"] == "o4-mini"
    before = snapshot(root)
    assert {o.action for o in run_sync(root).outcomes} == {"unchanged"}
    assert snapshot(root) == before


@pytest.mark.git
def test_a_removed_client_loses_only_kbkit_s_entry(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "cursor"])
    (root / ".mcp.json").write_text(MCP_JSON)
    run_sync(root)
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n[sync]\nclients = []\n')
    report = run_sync(root)
    assert {(o.client, o.action) for o in report.outcomes} == {
        ("claude-code", "removed"),
        ("cursor", "removed"),
    }
    assert json.loads((root / ".mcp.json").read_text()) == json.loads(MCP_JSON)
    assert not (root / ".cursor/mcp.json").exists()  # kbkit made it, and it held only kbkit's entry


@pytest.mark.git
def test_a_renamed_server_retracts_the_old_entry(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"])
    run_sync(root)
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[server]\nname = "team-kb"\n[sync]\nclients = ["claude-code"]\n'
    )
    run_sync(root)
    assert set(json.loads((root / ".mcp.json").read_text())["mcpServers"]) == {"team-kb"}


@pytest.mark.git
def test_a_file_kbkit_created_is_still_its_own_after_a_rename_and_goes_when_the_client_goes(
    tmp_path: Path,
) -> None:
    root = git_repo(tmp_path, ["cursor"])
    run_sync(root)
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[server]\nname = "team-kb"\n[sync]\nclients = ["cursor"]\n'
    )
    run_sync(root)
    assert set(json.loads((root / ".cursor/mcp.json").read_text())["mcpServers"]) == {"team-kb"}
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n[sync]\nclients = []\n')
    run_sync(root)
    assert not (root / ".cursor/mcp.json").exists()


@pytest.mark.git
def test_a_hand_edited_entry_is_reported_and_left_alone_unless_forced(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"], extra="preapprove = false\n")
    run_sync(root)
    data = json.loads((root / ".mcp.json").read_text())
    data["mcpServers"]["kb"]["args"].append("--verbose")
    (root / ".mcp.json").write_text(json.dumps(data, indent=2))
    edited = (root / ".mcp.json").read_bytes()
    (outcome,) = run_sync(root).outcomes
    assert outcome.action == "conflict" and "edited by hand" in outcome.reason
    assert (root / ".mcp.json").read_bytes() == edited
    assert run_sync(root, mode="check").problems
    (outcome,) = run_sync(root, force=True).outcomes
    assert outcome.action == "updated"
    assert "--verbose" not in (root / ".mcp.json").read_text()


@pytest.mark.git
def test_an_entry_named_kb_that_kbkit_did_not_write_is_not_taken_over(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"], extra="preapprove = false\n")
    (root / ".mcp.json").write_text('{"mcpServers": {"kb": {"command": "my-own-kb"}}}\n')
    (outcome,) = run_sync(root).outcomes
    assert outcome.action == "conflict" and "did not write" in outcome.reason
    assert "my-own-kb" in (root / ".mcp.json").read_text()


@pytest.mark.git
def test_key_rotation_changes_no_file_and_no_output_holds_a_key(tmp_path: Path) -> None:
    root = git_repo(tmp_path, extra='remote_url = "https://kb.example/mcp"\n')
    (root / ".env.local").write_text(f"MCP_TOKEN={TOKEN}\nHINDSIGHT_API_KEY=hsk_old_key_123456\n")
    run_sync(root)
    before = snapshot(root)
    (root / ".env.local").write_text(
        "MCP_TOKEN=rotated-token-abcdef-987654\nHINDSIGHT_API_KEY=hsk_new_key_654321\n"
    )
    assert {o.action for o in run_sync(root).outcomes} == {"unchanged"}
    assert snapshot(root) == before
    for rel, (data, _) in before.items():
        for secret in (TOKEN, "rotated-token", "hsk_old", "hsk_new"):
            assert secret.encode() not in data, rel


@pytest.mark.git
def test_in_remote_mode_every_client_runs_the_relay_which_reads_the_token_itself(tmp_path: Path) -> None:
    root = git_repo(tmp_path, extra='remote_url = "https://kb.example/mcp"\n')
    report = run_sync(root)
    assert report.notes == []
    for name, client in CLIENTS.items():
        entry = read_entry(root, name)
        argv = entry["command"] if client.template == "opencode" else [entry["command"], *entry["args"]]
        assert argv == [
            *render.kbkit_command(),
            "connect",
            "https://kb.example/mcp",
            "--root",
            str(root.resolve()),
        ]
        assert "MCP_TOKEN" not in json.dumps(entry), name


@pytest.mark.git
def test_remote_transport_http_refers_to_the_token_in_each_client_s_own_dialect(tmp_path: Path) -> None:
    root = git_repo(tmp_path, extra='remote_url = "https://kb.example/mcp"\nremote_transport = "http"\n')
    report = run_sync(root)
    assert read_entry(root, "claude-code") == {
        "type": "http",
        "url": "https://kb.example/mcp",
        "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
    }
    assert read_entry(root, "cursor")["headers"]["Authorization"] == "Bearer ${env:MCP_TOKEN}"
    assert read_entry(root, "vscode")["headers"]["Authorization"] == "Bearer ${env:MCP_TOKEN}"
    assert read_entry(root, "opencode")["headers"]["Authorization"] == "Bearer {env:MCP_TOKEN}"
    assert read_entry(root, "gemini")["httpUrl"] == "https://kb.example/mcp"
    assert read_entry(root, "codex") == {
        "url": "https://kb.example/mcp",
        "bearer_token_env_var": "MCP_TOKEN",
        "startup_timeout_sec": 60,
    }
    direct = [name for name, c in CLIENTS.items() if c.http and c.env_reference is not None]
    for name in direct:
        assert token_reference(CLIENTS[name]) in json.dumps(read_entry(root, name)), name
    for name in set(CLIENTS) - set(direct):  # no way to name a variable: still the relay
        assert read_entry(root, name)["args"][0] == "connect", name
    (note,) = report.notes
    assert "MCP_TOKEN" in note and ".env.local" in note and ", ".join(direct) in note


@pytest.mark.git
def test_sync_prints_the_http_note_after_writing_and_an_unknown_transport_is_one_error(
    tmp_path: Path,
) -> None:
    root = git_repo(
        tmp_path, ["cursor"], extra='remote_url = "https://kb.example/mcp"\nremote_transport = "http"\n'
    )
    out = cli(root).stdout.splitlines()
    assert out[-1].startswith('note: remote_transport = "http": cursor read MCP_TOKEN from the environment')
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[sync]\nremote_url = "https://kb.example/mcp"\nremote_transport = "https"\n'
    )
    bad = cli(root)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "[sync.remote_transport]" in bad.stderr and "'relay'" in bad.stderr and "'http'" in bad.stderr


def test_without_a_console_script_beside_the_interpreter_entries_run_it_with_dash_m(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("sys.executable", str(tmp_path / "bin" / "python3"))
    assert render.kbkit_command() == (str(tmp_path / "bin" / "python3"), "-m", "kbkit")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kbkit").write_text("#!/bin/sh\n")
    assert render.kbkit_command() == (str(tmp_path / "bin" / "kbkit"),)


@pytest.mark.git
def test_an_unparsable_file_is_refused_with_line_and_column_and_nothing_is_written(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "cursor"])
    (root / ".mcp.json").write_text('{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}\n')
    broken = (root / ".mcp.json").read_bytes()
    with pytest.raises(SyncRefused, match=r"\.mcp\.json does not parse \(line 4, column 5"):
        run_sync(root)
    assert (root / ".mcp.json").read_bytes() == broken
    assert not (root / ".cursor").exists()
    assert not (root / ".kbkit" / "sync-state.json").exists()


@pytest.mark.git
def test_an_unparsable_toml_file_is_refused_untouched(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["codex"])
    (root / ".codex").mkdir()
    (root / ".codex/config.toml").write_text("[mcp_servers\ncommand = 1\n")
    with pytest.raises(SyncRefused, match=r"config.toml does not parse \(line 1"):
        run_sync(root)
    assert (root / ".codex/config.toml").read_text() == "[mcp_servers\ncommand = 1\n"


@pytest.mark.git
def test_a_token_from_the_real_environment_is_refused_too(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    root = git_repo(tmp_path, ["claude-code"], extra=f'remote_url = "https://kb.example/{TOKEN}/mcp"\n')
    with pytest.raises(SyncRefused, match="MCP_TOKEN"):
        run_sync(root)


@pytest.mark.git
def test_a_literal_secret_is_refused_naming_the_variable_not_the_value(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"], extra=f'remote_url = "https://kb.example/{TOKEN}/mcp"\n')
    (root / ".env.local").write_text(f"MCP_TOKEN={TOKEN}\n")
    with pytest.raises(SyncRefused) as refused:
        run_sync(root)
    assert "MCP_TOKEN" in str(refused.value) and TOKEN not in str(refused.value)
    assert not (root / ".mcp.json").exists()


@pytest.mark.git
def test_an_output_that_a_symlink_carries_outside_the_repo_is_refused(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "cursor"])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / ".cursor").symlink_to(outside)
    with pytest.raises(SyncRefused, match="outside the project"):
        run_sync(root)
    assert list(outside.iterdir()) == []
    assert not (root / ".mcp.json").exists()


@pytest.mark.git
def test_a_tracked_output_is_refused_because_ignoring_cannot_hide_it(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"])
    (root / ".mcp.json").write_text(MCP_JSON)
    (root / ".gitignore").write_text("# mine\n")
    subprocess.run(["git", "-C", str(root), "add", ".mcp.json"], check=True)
    with pytest.raises(SyncRefused, match=r"git tracks \.mcp\.json.*kbkit sync --adopt.*git rm --cached"):
        run_sync(root)
    assert (root / ".mcp.json").read_text() == MCP_JSON
    assert (root / ".gitignore").read_text() == "# mine\n"  # nothing written, the block included


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kbkit_in_process("sync", "--root", str(root), *args)


@pytest.mark.git
def test_check_catches_each_kind_of_drift(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "cursor"])
    missing = cli(root, "--check")
    assert missing.returncode == 1 and ".mcp.json: missing" in missing.stderr
    assert cli(root).returncode == 0
    assert cli(root, "--check").returncode == 0
    (root / ".cursor/mcp.json").unlink()  # an output deleted
    assert ".cursor/mcp.json: missing" in cli(root, "--check").stderr
    cli(root)
    data = json.loads((root / ".mcp.json").read_text())  # a hand edit
    data["mcpServers"]["kb"]["command"] = "/old/venv/bin/kbkit"
    (root / ".mcp.json").write_text(json.dumps(data))
    assert "edited by hand" in cli(root, "--check").stderr
    cli(root, "--force")
    (root / ".gitignore").write_text("")  # the block removed
    stale = cli(root, "--check")
    assert stale.returncode == 1 and ".gitignore: the kbkit block is out of date" in stale.stderr
    cli(root)
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[server]\nname = "docs"\n[sync]\nclients = ["claude-code", "cursor"]\n'
    )
    assert "out of date" in cli(root, "--check").stderr  # the source changed
    assert cli(root).returncode == 0 and cli(root, "--check").returncode == 0


@pytest.mark.git
def test_dry_run_prints_unified_diffs_and_writes_nothing(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"])
    (root / ".mcp.json").write_text(MCP_JSON)
    result = cli(root, "--dry-run")
    assert result.returncode == 0
    assert "--- a/.mcp.json\n+++ b/.mcp.json" in result.stdout
    assert '+        "kb": {' in result.stdout
    assert (root / ".mcp.json").read_text() == MCP_JSON
    assert not (root / ".gitignore").exists()


@pytest.mark.git
def test_the_table_says_what_happened_and_what_to_do_next(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "windsurf"])
    out = cli(root).stdout
    assert "claude-code" in out and "created" in out and "restart Claude Code" in out
    assert ".agents/tool-cfg/windsurf.json" in out and "~/.codeium/windsurf/mcp_config.json" in out
    assert "unchanged" in cli(root).stdout


@pytest.mark.git
def test_json_report_has_a_stable_shape(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"], extra="preapprove = false\n")
    report = json.loads(cli(root, "--json").stdout)
    assert report["version"] == 1
    assert report["clients"] == [
        {
            "client": "claude-code",
            "path": ".mcp.json",
            "action": "created",
            "next_step": "restart Claude Code (or reload its MCP servers)",
        }
    ]
    assert report["gitignore"] == "updated" and report["problems"] == []
    assert report["caveats"] == [
        "Claude Code: trust the folder and approve the project server when Claude Code asks (or in /mcp)"
    ]
    assert report["adopted"] == []


@pytest.mark.git
def test_only_limits_the_run_to_the_named_clients(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code", "cursor"])
    assert cli(root, "--only", "cursor").returncode == 0
    assert (root / ".cursor/mcp.json").exists() and not (root / ".mcp.json").exists()
    bad = cli(root, "--only", "cursr")
    assert bad.returncode == 2 and "unknown client 'cursr'" in bad.stderr


@pytest.mark.git
def test_an_unknown_client_in_kbkit_toml_names_the_nearest(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude_code"])
    result = cli(root)
    assert result.returncode == 2 and "did you mean 'claude-code'" in result.stderr


@pytest.mark.git
def test_file_modes_are_kept(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"])
    (root / ".mcp.json").write_text(MCP_JSON)
    os.chmod(root / ".mcp.json", 0o600)
    run_sync(root)
    assert (root / ".mcp.json").stat().st_mode & 0o777 == 0o600


@pytest.mark.processes
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_without_an_env_dialect_reaches_a_remote_server_through_kbkit_connect(
    tmp_path, mode
) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.helpers.http import TEST_TOKEN, HttpServer
    from tests.helpers.launch import initialize_and_search

    served = make_project(tmp_path / "server")
    server = HttpServer(served).wait_ready()
    try:
        root = git_repo(tmp_path, ["zed"], extra=f'remote_url = "{server.url}"\n')
        (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n")
        run_sync(root)
        entry = read_entry(root, "zed")
        assert TEST_TOKEN not in json.dumps(entry)
        env = {k: v for k, v in os.environ.items() if k != "MCP_TOKEN"}  # the relay reads .env.local itself
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        with open(tmp_path / "relay.log", "w") as log:
            async with Client(
                stdio_client(params, errlog=log), mode=mode, cache=None, read_timeout_seconds=30
            ) as c:
                assert [t.name for t in (await c.list_tools()).tools] == ["search", "get_document"]
                assert (await initialize_and_search(c)).endswith("adr/0001-guards.md")
    finally:
        server.stop()


VARIANTS = {
    "local": "",
    "remote": 'remote_url = "https://kb.example/mcp"\n',
    "remote-http": 'remote_url = "https://kb.example/mcp"\nremote_transport = "http"\n',
}


@pytest.mark.git
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fresh_outputs_match_the_golden_files_byte_for_byte(tmp_path: Path, variant: str) -> None:
    """tests/golden holds each client's file as kbkit writes it into an empty project (/ROOT and
    /VENV/bin/kbkit stand for the machine's paths). A change to any template or table row shows here."""
    root = git_repo(tmp_path, extra=VARIANTS[variant])
    run_sync(root)
    for name, client in CLIENTS.items():
        ext = "toml" if client.format == "toml" else "json"
        text = (root / client.path).read_text()
        text = text.replace(str(root.resolve()), "/ROOT").replace(
            render.kbkit_command()[0], "/VENV/bin/kbkit"
        )
        assert text == (GOLDEN / f"{name}.{variant}.{ext}").read_text(), name


@pytest.mark.git
def test_outside_a_git_work_tree_sync_says_so_and_what_that_means_for_the_generated_files(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "plain", config='[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\n')
    done = cli(root)
    assert done.returncode == 0, done.stderr
    (note,) = [line for line in done.stdout.splitlines() if "git" in line and line.startswith("note: ")]
    assert "not a git work tree" in note and "out of commits once this folder is in a git repository" in note
    assert "ignored by git" not in done.stdout
    inside = cli(git_repo(tmp_path, ["claude-code"]))
    assert "not a git work tree" not in inside.stdout


@pytest.mark.git
def test_the_line_for_a_tool_pre_approval_says_it_is_one(tmp_path: Path) -> None:
    """Claude Code's entry and its pre-approval are two lines; the second says what it is."""
    root = git_repo(tmp_path, ["claude-code"])
    lines = cli(root).stdout.splitlines()
    entry, grant = (line for line in lines if line.startswith("claude-code "))
    assert ".mcp.json" in entry and "pre-approval" not in entry
    assert ".claude/settings.local.json" in grant and "created (tool pre-approval)" in grant
    again = [line for line in cli(root).stdout.splitlines() if ".claude/settings.local.json" in line]
    assert again == [again[0]] and "unchanged (tool pre-approval)" in again[0]
    report = json.loads(cli(root, "--json").stdout)
    assert [client.get("what") for client in report["clients"]] == [None, "tool pre-approval"]
