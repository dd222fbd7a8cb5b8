"""`kbkit sync --adopt`: a repository that commits a client file is taken over only when asked,
saying exactly what will happen, and nothing of the user's is lost."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from kbkit.sync import jsonc
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.peers.launch import forked_kbkit

MCP_JSON = """{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
    "postgres": {"command": "pg-mcp", "env": {"PGHOST": "localhost"}}
  }
}
"""
ZED = """// team settings
{
  "tab_size": 2, // ours
  "context_servers": {"docs": {"command": "docs-mcp", "args": []}}
}
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def committed_repo(tmp_path: Path, files: dict[str, str], clients: list[str]) -> Path:
    listed = ", ".join(f'"{c}"' for c in clients)
    root = make_project(tmp_path / "repo", config=f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n')
    git(root, "init", "-q")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    (root / ".gitignore").write_text("node_modules/\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "team configs")
    return root


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kbkit_in_process("sync", "--root", str(root), *args)  # stdin is not a terminal


@pytest.mark.git
def test_without_the_flag_sync_says_exactly_what_adopt_would_do_and_changes_nothing(tmp_path: Path) -> None:
    root = committed_repo(tmp_path, {".mcp.json": MCP_JSON}, ["claude-code"])
    result = cli(root)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    for said in ("git tracks .mcp.json", "git rm --cached -- .mcp.json", ".gitignore", "every other server"):
        assert said in line, said
    assert line.endswith("rerun with kbkit sync --adopt to do it") and "Traceback" not in result.stderr
    assert (root / ".mcp.json").read_text() == MCP_JSON
    assert (root / ".gitignore").read_text() == "node_modules/\n"
    assert git(root, "status", "--porcelain") == ""
    assert ".mcp.json" in git(root, "ls-files")


@pytest.mark.git
def test_with_the_flag_the_file_leaves_git_and_keeps_every_other_server(tmp_path: Path) -> None:
    root = committed_repo(tmp_path, {".mcp.json": MCP_JSON}, ["claude-code"])
    result = cli(root, "--adopt")
    assert result.returncode == 0, result.stderr
    assert ".mcp.json: taken out of git (git rm --cached)" in result.stdout
    assert ".mcp.json" not in git(root, "ls-files")
    assert "D  .mcp.json" in git(root, "status", "--porcelain")  # staged for the user to commit
    servers = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"github", "postgres", "kb"}
    assert servers["postgres"] == {"command": "pg-mcp", "env": {"PGHOST": "localhost"}}
    assert git(root, "check-ignore", ".mcp.json").strip() == ".mcp.json"
    assert (root / ".gitignore").read_text().startswith("node_modules/\n")
    again = cli(root)
    assert again.returncode == 0 and "taken out of git" not in again.stdout


@pytest.mark.git
def test_a_committed_zed_settings_file_keeps_its_comments(tmp_path: Path) -> None:
    root = committed_repo(tmp_path, {".zed/settings.json": ZED}, ["zed"])
    assert cli(root, "--adopt").returncode == 0
    text = (root / ".zed/settings.json").read_text()
    assert "// team settings" in text and "// ours" in text
    assert set(jsonc.loads(text)["context_servers"]) == {"docs", "kb"}
    assert ".zed/settings.json" not in git(root, "ls-files")


@pytest.mark.git
def test_a_file_un_ignored_by_a_rule_is_refused_even_with_the_flag(tmp_path: Path) -> None:
    root = committed_repo(tmp_path, {}, ["cursor", "claude-code"])
    assert cli(root).returncode == 0
    with (root / ".gitignore").open("a") as gitignore:
        gitignore.write("!/.cursor/mcp.json\n")  # after kbkit's block, so it wins
    ignore = (root / ".gitignore").read_text()
    (root / ".mcp.json").unlink()
    result = cli(root, "--adopt")
    assert result.returncode == 2 and "a '!' rule" in result.stderr and "Traceback" not in result.stderr
    assert not (root / ".mcp.json").exists()  # refused before anything was written
    assert (root / ".gitignore").read_text() == ignore


def _at_a_terminal(root: Path, answer: bytes) -> tuple[int, str]:
    """`kbkit sync` with its stdin on a terminal, answering the question it asks there."""
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        [*forked_kbkit(), "sync", "--root", str(root)],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    try:
        prompt = b""
        deadline = time.monotonic() + 60
        while b"Do it now?" not in prompt and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], 1)
            if ready:
                chunk = os.read(process.stderr.fileno(), 4096)
                if not chunk:
                    break
                prompt += chunk
        assert b"Do it now?" in prompt, prompt
        os.write(controller, answer)
        stdout, stderr = process.communicate(timeout=60)
        return process.returncode, stdout.decode() + (prompt + stderr).decode()
    finally:
        process.kill()
        os.close(controller)


@pytest.mark.processes
def test_at_a_terminal_it_asks_and_does_it_only_on_yes(tmp_path: Path) -> None:
    root = committed_repo(tmp_path, {".mcp.json": MCP_JSON}, ["claude-code"])
    code, output = _at_a_terminal(root, b"n\n")
    assert code == 2 and ".mcp.json" in git(root, "ls-files")
    assert (root / ".mcp.json").read_text() == MCP_JSON
    code, output = _at_a_terminal(root, b"y\n")
    assert code == 0, output
    assert ".mcp.json" not in git(root, "ls-files") and '"kb"' in (root / ".mcp.json").read_text()
