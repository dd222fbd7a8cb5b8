"""What the agents refuse or ignore (kbkit/catalog/accepts.py): kbkit never writes it, and
`kbkit doctor` names it when a file holds it (an older kbkit's entry, a hand edit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbkit.catalog.accepts import ENTRY_RULES, IGNORED_FILES, refusals
from kbkit.catalog.clients import CLIENTS, DIRECT_HTTP, RELAY
from kbkit.config import load_settings
from kbkit.diagnostics import Context
from kbkit.diagnostics.sync import check_client_entries
from kbkit.sync.render import EntrySource, render_entry
from tests.helpers.project import make_project


def test_every_rule_names_clients_of_the_table() -> None:
    for rule in ENTRY_RULES:
        assert set(rule.clients) <= set(CLIENTS), rule.agent
    for ignored in IGNORED_FILES:
        assert ignored.client in CLIENTS, ignored.agent


@pytest.mark.parametrize(
    "remote", [None, (RELAY, "https://kb.example/mcp"), (DIRECT_HTTP, "https://kb.example/mcp")]
)
def test_no_entry_kbkit_renders_is_one_its_agent_refuses(
    tmp_path: Path, remote: tuple[str, str] | None
) -> None:
    transport, url = remote or (RELAY, None)
    source = EntrySource("kb", tmp_path, ("/venv/bin/kbkit",), url, transport, ("search", "get_document"))
    for client in CLIENTS.values():
        assert not refusals(client.name, render_entry(client, source)), client.name


def project(tmp_path: Path, clients: list[str]) -> Path:
    listed = ", ".join(f'"{name}"' for name in clients)
    return make_project(tmp_path / "project", config=f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n')


def findings(root: Path) -> list[tuple[str, str]]:
    return [(f.status, f.finding) for f in check_client_entries(Context(root, load_settings(root)))]


def test_doctor_names_an_mcp_json_entry_claude_code_skips_once(tmp_path: Path) -> None:
    root = project(tmp_path, ["claude-code", "copilot-cli"])
    entry = {"type": "http", "url": "https://kb.example/mcp", "tools": ["*"]}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"kb": entry}}))
    (found,) = check_client_entries(Context(root, load_settings(root)))
    assert found.status == "fail" and found.finding.startswith(
        ".mcp.json: Claude Code 2.1.328 skips the whole entry"
    )
    assert found.fix is not None and "--force" in found.fix
    entry.pop("tools")
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"kb": entry}}))
    assert findings(root) == [("ok", "every entry has a shape its agent accepts")]


def test_doctor_warns_of_a_gemini_policy_folder_gemini_cli_ignores(tmp_path: Path) -> None:
    root = project(tmp_path, ["gemini"])
    (root / ".gemini/policies").mkdir(parents=True)
    ((status, finding),) = [f for f in findings(root) if "end of life" not in f[1]]
    assert status == "warn" and "Gemini CLI 0.61.0 ignores workspace policy files" in finding


def test_doctor_says_which_selected_agents_are_at_end_of_life_and_still_checks_them(tmp_path: Path) -> None:
    root = project(tmp_path, ["gemini", "roo", "continue", "claude-code"])
    said = findings(root)
    assert [status for status, _ in said] == ["warn"] * 3
    assert [finding.split(" is at end of life")[0] for _, finding in said] == [
        "Gemini CLI",
        "Roo Code",
        "Continue",
    ]
    assert "2026-06-18" in said[0][1] and '"antigravity-cli"' in said[0][1]
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\n')
    assert [status for status, _ in findings(root)] == ["ok"]


BROKEN = {
    "mistral-vibe": (
        "mistral-vibe",
        ".vibe/config.toml",
        {"name": "kb", "transport": "stdio", "command": "/home/a b/.venv/bin/kbkit", "args": []},
    ),
    "kilo": (
        "kilo",
        ".kilo/kilo.json",
        {"type": "remote", "url": "https://x/mcp", "headers": {"Authorization": "Bearer {env:MCP_TOKEN}"}},
    ),
    "grok-cli": ("grok-cli", ".grok/settings.json", {"command": "kbkit", "args": []}),
    "crush": ("crush", ".crush.json", {"command": "kbkit", "args": []}),
    "roo": ("roo", ".roo/mcp.json", {"url": "https://kb.example/mcp"}),
    "antigravity-cli": (
        "antigravity-cli",
        ".agents/mcp_config.json",
        {"serverUrl": "https://x/mcp", "command": "k"},
    ),
    "goose": ("goose", ".agents/tool-cfg/goose.json", {"type": "stdio", "command": "kbkit", "args": []}),
}
"""Per rule, an entry its agent refuses, as a hand edit or an older tool would leave it."""


@pytest.mark.parametrize("client", list(BROKEN))
def test_doctor_fails_an_entry_its_agent_reads_another_way(tmp_path: Path, client: str) -> None:
    name, path, entry = BROKEN[client]
    root = project(tmp_path, [name])
    key = CLIENTS[name].root_key[0]
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    if CLIENTS[name].format == "toml-tables":  # Mistral Vibe: [[mcp_servers]]
        (root / path).write_text(
            f"[[{key}]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in entry.items())
        )
    else:
        (root / path).write_text(json.dumps({key: {"kb": entry}}))
    ((status, finding),) = [f for f in findings(root) if "end of life" not in f[1]]
    assert status == "fail" and finding.startswith(f"{path}: "), finding
