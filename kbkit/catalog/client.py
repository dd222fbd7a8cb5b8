"""What a client row is: the fields every agent's row fills, and the names the rows share (the token
variables, the remote transports, the start-up timeout). The rows are in kbkit/catalog/clients.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

TOKEN_VAR = "MCP_TOKEN"
"""The shared secret of a remote `kbkit serve --http`, named in entries, never written into them."""
PERSONAL_TOKEN_VAR = "KBKIT_TOKEN"
"""A personal token (`kbkit token create`): `kbkit connect` sends it before MCP_TOKEN (docs/adr/0031)."""
RELAY = "relay"
DIRECT_HTTP = "http"
REMOTE_TRANSPORTS = (RELAY, DIRECT_HTTP)
"""`[sync] remote_transport`: how agents reach `[sync] remote_url` (docs/adr/0011)."""

START_UP_SECONDS = 60
"""What kbkit gives a server to start where the client's default is shorter (Codex 10 s, opencode
5 s, Crush 10 s, Kilo 30 s, Qwen Code 30 s): a first start on a large knowledge base indexes
before it lists its tools, and an agent that gives up reports the server as failed."""


@dataclass(frozen=True)
class Approval:
    """Where a client pre-approves tools at project level, and how it names one tool.

    kind: `entry` (a list field of the kb entry itself, Kiro and Roo), `list` (names added to a
    list in a JSON file, kbkit's own names only), `map` (`name: "allow"` members of an object).
    Only tools are ever named, never a whole server: a server-wide rule would approve the memory
    tools, which write.
    """

    kind: str
    key: tuple[str, ...]
    name: str
    """How the client names a tool: `{server}` and `{tool}` are filled in."""
    path: str | None = None
    """The file holding the field; None: the client's own file."""
    sanitize: bool = False
    """Kilo (as opencode) replaces every character outside [A-Za-z0-9_-] with `_` in tool keys."""

    def tool_name(self, server: str, tool: str) -> str:
        if self.sanitize:
            server, tool = (re.sub(r"[^A-Za-z0-9_-]", "_", part) for part in (server, tool))
        return self.name.format(server=server, tool=tool)


@dataclass(frozen=True)
class ToolKeys:
    """A client's own per-server tool filter: the keys of a server entry listing, by the server's
    own tool names, the only tools it offers (`allow`) and those it hides (`deny`); None where the
    client has no such key. sync writes a team server's `tools` and `exclude_tools` there, besides
    kbkit's own filter (which every agent gets): the agent then knows the list itself."""

    allow: str | None = None
    deny: str | None = None


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    path: str
    """Where the config lives, relative to the project root (user-level clients: a ready snippet)."""
    format: str
    """json | jsonc (comments allowed, shared with other settings) | toml | toml-tables (servers as
    an array of tables that name themselves, kbkit/sync/merge.py)"""
    root_key: tuple[str, ...]
    """The object the server entries live in."""
    template: str
    """templates/<template>.j2 renders one entry's shape."""
    env_reference: str | None
    """How the client's file refers to an environment variable ({var} is the name), 'names' when
    it takes variable names only (Codex), or None when it cannot (or kbkit could not confirm that
    it can). Remote entries run `kbkit connect` (which reads the token itself) unless `[sync]
    remote_transport = "http"`; then the clients with a dialect refer to MCP_TOKEN in it, and the
    others still run the relay."""
    user_config: str | None = None
    """For clients with only a user-level config: where the snippet belongs."""
    http: bool = True
    """Whether the client's file can hold an HTTP entry at all."""
    extra: tuple[tuple[str, Any], ...] = ()
    """Keys every entry of this client carries besides its shape: a start-up timeout where the
    client's default is short."""
    approval: Approval | None = None
    tool_keys: ToolKeys | None = None
    caveat: str | None = None
    """The one step the user takes in the agent itself before the kb server works there
    (`{server}` is the server's name)."""
    caveat_when: str = "always"
    """always | http (only for a direct HTTP entry, which names MCP_TOKEN) | preapprove"""
    source: str = ""
    """Where the facts of this row come from (docs/clients.md has the detail)."""
    server_file: str | None = None
    """For a client that keeps one file per server (Continue): where a team server's file goes,
    `{server}` being its name; None: team servers go into `path` beside kb."""
    aliases: tuple[str, ...] = ()
    """Other names `[sync] clients` and `--only` accept for this row: an id it had before a rename."""
    end_of_life: str | None = None
    """What changed for an agent its vendor has stopped or stopped serving for most users, and what
    to move to: the row stays usable and `kbkit doctor` says this line."""

    @property
    def user_level(self) -> bool:
        return self.user_config is not None

    def step(self, server: str) -> str | None:
        """The caveat for a server of this name."""
        return self.caveat.replace("{server}", server) if self.caveat else None

    def path_for(self, server: str) -> str:
        """The file a team server's entry goes in."""
        return self.server_file.replace("{server}", server) if self.server_file else self.path
