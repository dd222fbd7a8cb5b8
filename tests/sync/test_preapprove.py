"""Pre-approval: the read-only kb tools run without asking, in each agent's own project field;
never a memory tool, never a whole server; the user's own rules stay; off with one key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbkit.catalog.clients import CLIENTS
from kbkit.config import load_settings
from kbkit.sync import jsonc
from kbkit.sync.planner import sync
from kbkit.sync.preapprove import grants
from kbkit.sync.render import kbkit_command
from kbkit.sync.state import entry_hash
from tests.helpers.paths import GOLDEN
from tests.helpers.project import make_project

pytestmark = pytest.mark.git

APPROVING = ["claude-code", "kiro", "roo", "kilo", "gemini", "devin", "crush"]
MEMORY = '[memory]\nurl = "https://memory.example/mcp/{bank}/"\n'
MEMORY_TOOLS = ("retain", "recall", "reflect")
WHOLE_SERVER = ("*", "mcp__kb", "mcp_kb_*", "kb_*", "kb")
"""Rules that would approve every tool of the server, the memory tools (which write) included."""


def repo(tmp_path: Path, clients: list[str] = APPROVING, sync_extra: str = "", extra: str = "") -> Path:
    listed = ", ".join(f'"{c}"' for c in clients)
    config = f'[kb]\npath = "docs"\n{extra}[sync]\nclients = [{listed}]\n{sync_extra}'
    root = make_project(tmp_path / "repo", config=config)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def run(root: Path, **options):
    return sync(load_settings(root), **options)


def read_json(root: Path, rel: str):
    return jsonc.loads((root / rel).read_text())


def set_config(root: Path, clients: list[str], sync_extra: str = "", extra: str = "") -> None:
    listed = ", ".join(f'"{c}"' for c in clients)
    (root / "kbkit.toml").write_text(
        f'[kb]\npath = "docs"\n{extra}[sync]\nclients = [{listed}]\n{sync_extra}'
    )


def written(root: Path) -> dict[str, str]:
    paths = {CLIENTS[c].path for c in CLIENTS} | {
        ".claude/settings.local.json",
        ".devin/config.local.json",
    }
    return {rel: (root / rel).read_text() for rel in sorted(paths) if (root / rel).exists()}


def test_each_agent_gets_exactly_the_read_only_kb_tools_in_its_own_field(tmp_path: Path) -> None:
    root = repo(tmp_path, extra=MEMORY)
    run(root)
    assert read_json(root, ".claude/settings.local.json") == {
        "permissions": {"allow": ["mcp__kb__search", "mcp__kb__get_document"]}
    }
    assert read_json(root, ".devin/config.local.json")["permissions"]["allow"] == [
        "mcp__kb__search",
        "mcp__kb__get_document",
    ]
    assert read_json(root, ".crush.json")["permissions"]["allowed_tools"] == [
        "mcp_kb_search",
        "mcp_kb_get_document",
    ]
    assert read_json(root, ".kilo/kilo.json")["permission"] == {
        "kb_search": "allow",
        "kb_get_document": "allow",
    }
    assert read_json(root, ".kiro/settings/mcp.json")["mcpServers"]["kb"]["autoApprove"] == [
        "search",
        "get_document",
    ]
    assert read_json(root, ".roo/mcp.json")["mcpServers"]["kb"]["alwaysAllow"] == ["search", "get_document"]
    assert read_json(root, ".gemini/settings.json")["tools"]["allowed"] == [
        "mcp_kb_search",
        "mcp_kb_get_document",
    ]
    assert not (root / ".gemini/policies").exists()  # Gemini CLI 0.61 ignores workspace policies
    approvals = [
        *read_json(root, ".claude/settings.local.json")["permissions"]["allow"],
        *read_json(root, ".devin/config.local.json")["permissions"]["allow"],
        *read_json(root, ".crush.json")["permissions"]["allowed_tools"],
        *read_json(root, ".kilo/kilo.json")["permission"],
        *read_json(root, ".kiro/settings/mcp.json")["mcpServers"]["kb"]["autoApprove"],
        *read_json(root, ".roo/mcp.json")["mcpServers"]["kb"]["alwaysAllow"],
        *read_json(root, ".gemini/settings.json")["tools"]["allowed"],
    ]
    assert not set(approvals) & set(WHOLE_SERVER)
    for rel, text in written(root).items():
        assert '"trust"' not in text, rel
        for tool in MEMORY_TOOLS:
            assert tool not in text, (rel, tool)


def test_names_follow_the_server_name_and_the_tool_allowlist(tmp_path: Path) -> None:
    server = '[server]\nname = "team.kb"\ntools = ["search"]\n'
    root = repo(tmp_path, extra=server)
    run(root)
    assert read_json(root, ".claude/settings.local.json")["permissions"]["allow"] == ["mcp__team.kb__search"]
    assert read_json(root, ".crush.json")["permissions"]["allowed_tools"] == ["mcp_team.kb_search"]
    assert read_json(root, ".kilo/kilo.json")["permission"] == {"team_kb_search": "allow"}  # Kilo sanitizes
    assert read_json(root, ".roo/mcp.json")["mcpServers"]["team.kb"]["alwaysAllow"] == ["search"]
    assert read_json(root, ".gemini/settings.json")["tools"]["allowed"] == ["mcp_team.kb_search"]


def test_a_memory_tool_named_like_a_kb_tool_is_never_pre_approved(tmp_path: Path) -> None:
    root = repo(tmp_path, ["claude-code"], extra=MEMORY + 'tools = ["search"]\n')
    run(root)
    assert read_json(root, ".claude/settings.local.json")["permissions"]["allow"] == ["mcp__kb__get_document"]


def test_the_user_s_own_rules_stay_and_turning_it_off_removes_only_kbkit_s_names(tmp_path: Path) -> None:
    root = repo(tmp_path, ["claude-code", "kilo"])
    mine = {
        "permissions": {"allow": ["Bash(npm test)", "mcp__kb__search"], "deny": ["Read(.env)"]},
        "model": "opus",
    }
    (root / ".claude").mkdir()
    (root / ".claude/settings.local.json").write_text(json.dumps(mine, indent=2) + "\n")
    (root / ".kilo").mkdir()
    (root / ".kilo/kilo.json").write_text(
        '{\n  // mine\n  "permission": {"kb_search": "ask", "bash": "ask"}\n}\n'
    )
    run(root)
    settings = read_json(root, ".claude/settings.local.json")
    assert settings["permissions"]["allow"] == ["Bash(npm test)", "mcp__kb__search", "mcp__kb__get_document"]
    assert settings["permissions"]["deny"] == ["Read(.env)"] and settings["model"] == "opus"
    kilo = (root / ".kilo/kilo.json").read_text()
    assert "// mine" in kilo
    assert jsonc.loads(kilo)["permission"] == {"kb_search": "ask", "bash": "ask", "kb_get_document": "allow"}

    set_config(root, ["claude-code", "kilo"], "preapprove = false\n")
    report = run(root)
    assert ("claude-code", "removed") in {(o.client, o.action) for o in report.outcomes}
    assert read_json(root, ".claude/settings.local.json") == mine  # the user's equal name is theirs
    kilo = jsonc.loads((root / ".kilo/kilo.json").read_text())
    assert kilo["permission"] == {"kb_search": "ask", "bash": "ask"} and "kb" in kilo["mcp"]


def test_off_from_the_start_writes_nothing_and_on_then_off_leaves_nothing_behind(tmp_path: Path) -> None:
    root = repo(tmp_path, sync_extra="preapprove = false\n")
    run(root)
    assert not (root / ".claude").exists() and "tools" not in read_json(root, ".gemini/settings.json")
    assert "permission" not in read_json(root, ".kilo/kilo.json")
    assert "autoApprove" not in read_json(root, ".kiro/settings/mcp.json")["mcpServers"]["kb"]
    off = written(root)

    set_config(root, APPROVING)
    run(root)
    assert (root / ".claude/settings.local.json").exists() and "tools" in read_json(
        root, ".gemini/settings.json"
    )
    set_config(root, APPROVING, "preapprove = false\n")
    run(root)
    assert written(root) == off  # kbkit's files gone, its keys gone, byte for byte as before


def test_a_renamed_server_moves_the_names_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path)
    run(root)
    set_config(root, APPROVING, extra='[server]\nname = "docs"\n')
    run(root)
    assert read_json(root, ".claude/settings.local.json")["permissions"]["allow"] == [
        "mcp__docs__search",
        "mcp__docs__get_document",
    ]
    assert read_json(root, ".kilo/kilo.json")["permission"] == {
        "docs_search": "allow",
        "docs_get_document": "allow",
    }
    before = written(root)
    report = run(root)
    assert {o.action for o in report.outcomes} == {"unchanged"}
    assert written(root) == before


def test_the_policy_file_an_earlier_kbkit_wrote_for_gemini_is_taken_away(tmp_path: Path) -> None:
    """Gemini CLI 0.61 ignores workspace policies: the pre-approval moves to tools.allowed."""
    root = repo(tmp_path, ["gemini"])
    run(root)
    state = json.loads((root / ".kbkit/sync-state.json").read_text())
    policy = '[[rule]]\nmcpName = "kb"\ntoolName = "search"\ndecision = "allow"\npriority = 100\n'
    (root / ".gemini/policies").mkdir(parents=True)
    (root / ".gemini/policies/kbkit.toml").write_text(policy)
    state["entries"]["gemini:preapprove"] = {
        "path": ".gemini/policies/kbkit.toml",
        "key": [],
        "sha256": entry_hash(policy),
        "created_file": True,
        "items": ["search"],
    }
    (root / ".kbkit/sync-state.json").write_text(json.dumps(state))
    run(root)
    assert not (root / ".gemini/policies/kbkit.toml").exists()
    assert read_json(root, ".gemini/settings.json")["tools"]["allowed"] == [
        "mcp_kb_search",
        "mcp_kb_get_document",
    ]


def test_a_field_of_the_wrong_type_is_reported_and_left_as_it_is(tmp_path: Path) -> None:
    root = repo(tmp_path, ["claude-code"])
    (root / ".claude").mkdir()
    (root / ".claude/settings.local.json").write_text('{"permissions": {"allow": "everything"}}\n')
    report = run(root)
    conflict = next(o for o in report.outcomes if o.path == ".claude/settings.local.json")
    assert conflict.action == "conflict" and "not a list" in conflict.reason
    assert (root / ".claude/settings.local.json").read_text() == '{"permissions": {"allow": "everything"}}\n'


def test_every_pre_approval_file_is_kept_out_of_git(tmp_path: Path) -> None:
    root = repo(tmp_path)
    run(root)
    paths = [".claude/settings.local.json", ".devin/config.local.json", ".gemini/settings.json"]
    result = subprocess.run(["git", "-C", str(root), "check-ignore", *paths], capture_output=True, text=True)
    assert sorted(result.stdout.split()) == sorted(paths)


def test_pre_approval_files_match_the_golden_files(tmp_path: Path) -> None:
    """tests/golden/<client>.preapprove.* hold the files a pre-approval has to itself (the ones
    in a client's own file are part of that client's golden file)."""
    root = repo(tmp_path, list(CLIENTS))
    run(root)
    separate = [g for g in grants(load_settings(root), list(CLIENTS)) if g.path != CLIENTS[g.client].path]
    assert {g.client for g in separate} == {"claude-code", "devin"}
    for grant in separate:
        ext = "json"
        text = (root / grant.path).read_text()
        text = text.replace(str(root.resolve()), "/ROOT").replace(kbkit_command()[0], "/VENV/bin/kbkit")
        assert text == (GOLDEN / f"{grant.client}.preapprove.{ext}").read_text(), grant.client


def test_dropping_every_client_takes_away_every_file_kbkit_created(tmp_path: Path) -> None:
    root = repo(tmp_path)
    run(root)
    assert written(root)
    set_config(root, [])
    report = run(root)
    assert {o.action for o in report.outcomes} == {"removed"}
    assert written(root) == {}
