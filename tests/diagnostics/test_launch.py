"""`kbkit doctor --launch`: every entry kbkit wrote, started as its agent starts it, and each broken
kind named for what it is (a missing command, a variable the agent lacks, another agent's variable
syntax, a refused token, a server too slow to start)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kbkit.catalog.clients import CLIENTS
from tests.helpers.http import TEST_TOKEN, HttpServer
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process

pytestmark = pytest.mark.processes


def synced(root: Path, config: str, env_local: str = "") -> Path:
    make_project(root, config=config)
    if env_local:
        (root / ".env.local").write_text(env_local, encoding="utf-8")
    done = kbkit_in_process("sync", "--root", str(root))
    assert done.returncode == 0, done.stderr
    return root


def launched(root: Path) -> tuple[int, dict[tuple[str, str], dict[str, Any]]]:
    done = kbkit_in_process("doctor", "--launch", "--json", "--root", str(root))
    rows = json.loads(done.stdout)["entries"]
    return done.returncode, {(row["agent"], row["server"]): row for row in rows}


def clients(*names: str) -> str:
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def test_every_client_rows_entry_answers_as_its_agent_starts_it(tmp_path: Path) -> None:
    names = [name for name, client in CLIENTS.items() if not client.user_level]
    root = synced(tmp_path / "p", f'[kb]\npath = "docs"\n[sync]\nclients = {clients(*names)}\n')
    code, rows = launched(root)
    assert code == 0, rows
    assert {agent for agent, _ in rows} == set(names)
    assert all(row["ok"] and row["detail"] == "2 tools" for row in rows.values())
    assert sum(row["same_as"] is None for row in rows.values()) < len(rows)  # one start per launch


def test_a_missing_command_and_a_server_too_slow_to_start_are_named(tmp_path: Path) -> None:
    slow = json.dumps([sys.executable, "-c", "import time; time.sleep(120)"])
    config = f'[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\n[servers.slow]\ncommand = {slow}\n'
    root = synced(tmp_path / "p", config + "startup_timeout = 2\n")
    entries = json.loads((root / ".mcp.json").read_text())
    entries["mcpServers"]["kb"]["command"] = "/nonexistent/bin/kbkit"
    (root / ".mcp.json").write_text(json.dumps(entries))
    code, rows = launched(root)
    assert code == 1
    assert "command not found: /nonexistent/bin/kbkit" in rows["claude-code", "kb"]["detail"]
    assert "within 2 s" in rows["claude-code", "slow"]["detail"]
    text = kbkit_in_process("doctor", "--launch", "--root", str(root)).stdout
    assert "claude-code  FAIL" in text and "fix: write its absolute path" in text


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory):
    server = HttpServer(make_project(tmp_path_factory.mktemp("served") / "project")).wait_ready()
    yield server
    server.stop()


def test_a_token_the_agent_lacks_and_another_agents_syntax_are_named(
    tmp_path: Path, shared: HttpServer
) -> None:
    config = (
        f'[kb]\npath = "docs"\n[sync]\nclients = ["claude-code", "cursor"]\nremote_url = "{shared.url}"\n'
    )
    root = synced(tmp_path / "p", config + 'remote_transport = "http"\n', f"MCP_TOKEN={TEST_TOKEN}\n")
    entries = json.loads((root / ".mcp.json").read_text())
    entries["mcpServers"]["kb"]["headers"] = {"Authorization": "Bearer ${env:MCP_TOKEN}"}  # Cursor's form
    (root / ".mcp.json").write_text(json.dumps(entries))
    code, rows = launched(root)
    assert code == 1
    assert "MCP_TOKEN not set in the agent's environment" in rows["cursor", "kb"]["detail"]
    assert "${env:MCP_TOKEN} is another agent's variable syntax" in rows["claude-code", "kb"]["detail"]


def test_a_refused_token_is_named_with_where_it_came_from(tmp_path: Path, shared: HttpServer) -> None:
    config = f'[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\nremote_url = "{shared.url}"\n'
    root = synced(tmp_path / "p", config, "MCP_TOKEN=" + "w" * 32 + "\n")
    code, rows = launched(root)
    assert code == 1
    detail = rows["claude-code", "kb"]["detail"]
    assert "refused the token" in detail and ".env.local" in detail
    (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n")
    code, rows = launched(root)
    assert code == 0 and rows["claude-code", "kb"]["transport"] == "stdio"
