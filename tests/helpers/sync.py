"""`kbkit sync` in tests: a git project listing clients, a sync run in process, kb's entry as a client
file holds it, and agents' config files as users keep them (servers and comments of their own)."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import Any

from kbkit.catalog.clients import CLIENTS, Client
from kbkit.config import load_settings
from kbkit.sync import jsonc
from kbkit.sync.planner import SyncReport, sync
from tests.helpers.project import make_project

ALL = list(CLIENTS)

MCP_JSON = """{
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"]
        },
        "postgres": {
            "command": "pg-mcp",
            "env": {"PGHOST": "localhost"}
        }
    }
}
"""


VSCODE_JSON = """{
  "inputs": [
    {"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}
  ],
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${input:gh-token}"}}
  }
}
"""


ZED_SETTINGS = """// Zed settings
{
  "theme": "One Dark", // my theme
  /* fonts */
  "buffer_font_size": 15,
  "context_servers": {
    "other": {"command": "other-mcp", "args": []}, // keep me
  },
  "vim_mode": true,
}
"""


CODEX_TOML = """# my codex config
model = "o4"  # the model

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "1"]

[profiles.fast]
model = "o4-mini"
"""


def git_repo(tmp_path: Path, clients: list[str] = ALL, extra: str = "") -> Path:
    listed = ", ".join(f'"{c}"' for c in clients)
    root = make_project(
        tmp_path / "repo", config=f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n{extra}'
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def run_sync(root: Path, **options: Any) -> SyncReport:
    return sync(load_settings(root), **options)


def argv_of(client: Client, entry: dict[str, Any]) -> list[str]:
    """The argv a stdio entry runs: one array (opencode, Kilo Code; Mistral Vibe's `command` list
    and `args`), `cmd` and `args` (Goose), or `command` and `args`."""
    if client.template == "opencode":
        return list(entry["command"])
    if client.template == "vibe":
        return [*entry["command"], *entry["args"]]
    return [entry["cmd" if client.template == "goose" else "command"], *entry["args"]]


def read_entry(root: Path, client: str, server: str = "kb", *, path: str | None = None) -> Any:
    """A server's entry (kb's by default) as the client's file holds it, parsed with that format's
    parser; `path`: the file, when not the client's own (Continue's file per server)."""
    spec = CLIENTS[client]
    text = (root / (path or spec.path)).read_text()
    data = tomllib.loads(text) if spec.format.startswith("toml") else jsonc.loads(text)
    for key in spec.root_key:
        data = data[key]
    if spec.format == "toml-tables":  # an array of tables, each naming itself (Mistral Vibe)
        return next(item for item in data if item["name"] == server)
    return data[server]
