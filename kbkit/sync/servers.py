"""The entries of the team's other MCP servers (`[servers.<name>]`), one per server and client.

Every stdio team server runs through `kbkit run <name> --root <root>`: kbkit reads `.env.local`,
substitutes the server's variables and starts its command in the project folder with a clean
environment, so an entry holds no secret and a key rotation changes no file. A remote server
whose URL and headers name no variable is written plainly where the client's file can hold an
HTTP entry; any other remote server runs through the same `kbkit run`, which relays stdio to it
with its own headers. Entries are placed, owned and retracted by the planner exactly as kb's
(docs/adr/0006, 0035). A server that waits for `kbkit trust` with nothing trusted before is
written nowhere, its tools pre-approved nowhere (docs/adr/0063).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbkit.catalog.clients import CLIENTS, START_UP_SECONDS, Client
from kbkit.config import Settings
from kbkit.config.servers import TeamServer
from kbkit.sync.render import render

OWNER_MARK = ":server:"
"""A team entry's owner in the sync state: `<client>:server:<name>` (kb's entry is `<client>`)."""


@dataclass(frozen=True)
class TeamEntry:
    """One team server's entry in one client's file, as it should be now."""

    client: str
    server: str
    path: str
    key: tuple[str, ...]
    entry: dict[str, Any]

    @property
    def owner(self) -> str:
        return owner_of(self.client, self.server)


def owner_of(client: str, server: str) -> str:
    return f"{client}{OWNER_MARK}{server}"


def parse_owner(owner: str) -> tuple[str, str] | None:
    """(client, server) of a team entry's owner; None for any other record."""
    client, mark, server = owner.partition(OWNER_MARK)
    return (client, server) if mark and client in CLIENTS else None


def wired(settings: Settings) -> dict[str, TeamServer]:
    """The team servers written into agents' files: all but those that wait for `kbkit trust` with
    nothing trusted to fall back on (a new server would reach its host, or its tools be
    pre-approved, before the member allowed it: docs/adr/0063)."""
    return {
        name: server
        for name, server in settings.servers.items()
        if (waiting := settings.waiting(f"servers.{name}")) is None or waiting.fallback
    }


def clients_of(settings: Settings, server: TeamServer) -> tuple[str, ...]:
    """The agents that get this server: its own `clients`, else `[sync] clients`."""
    return server.clients or settings.sync_clients


def every_client(settings: Settings) -> list[str]:
    """Every client some entry is written for: `[sync] clients` and each team server's."""
    names = [*settings.sync_clients, *(c for s in settings.servers.values() for c in clients_of(settings, s))]
    return list(dict.fromkeys(names))


def through_kbkit(server: TeamServer, client: Client) -> bool:
    """Whether the entry starts `kbkit run` rather than naming the server itself."""
    return not (server.remote and server.plain and client.http)  # a filtered server is never plain


def render_team_entry(
    client: Client, name: str, server: TeamServer, kbkit: tuple[str, ...], root: Path
) -> dict[str, Any]:
    """The entry of team server `name` in `client`'s shape."""
    context: dict[str, object]
    if through_kbkit(server, client):
        args = [*kbkit[1:], "run", name, "--root", str(root)]
        context = {"transport": "stdio", "command": kbkit[0], "args": args}
    else:
        context = {"transport": "http", "url": server.url, "token_ref": None, "token_var": None}
    entry = render(client, name, context)
    for key, value in client.extra:  # start-up timeouts, in the client's own unit
        if isinstance(value, int) and value % START_UP_SECONDS == 0:
            value = value // START_UP_SECONDS * server.startup_timeout
        entry[key] = value
    approval = client.approval
    if approval is not None and approval.kind == "entry" and server.preapprove:
        entry[approval.key[0]] = [approval.tool_name(name, tool) for tool in server.preapprove]
    return entry | native_filter(client, server)


def native_filter(client: Client, server: TeamServer) -> dict[str, list[str]]:
    """The server's tool filter in the client's own keys, where it has them: the agent then lists
    and offers only those tools by itself, beside kbkit's filter, which every agent gets. A list the
    client has no key for (Kiro only hides tools) is kbkit's alone."""
    keys = client.tool_keys
    if keys is None:
        return {}
    pairs = ((keys.allow, server.tools), (keys.deny, server.exclude_tools))
    return {key: list(tools) for key, tools in pairs if key is not None and tools}


def team_entries(
    settings: Settings, kbkit: tuple[str, ...], only: Iterable[str] | None = None
) -> list[TeamEntry]:
    """Every team server's entry for each of its clients (or those of them in `only`)."""
    allowed = None if only is None else set(only)
    found = []
    for name, server in wired(settings).items():
        for client_name in clients_of(settings, server):
            if allowed is not None and client_name not in allowed:
                continue
            client = CLIENTS[client_name]
            entry = render_team_entry(client, name, server, kbkit, settings.root)
            path = client.path_for(name)
            found.append(TeamEntry(client_name, name, path, (*client.root_key, name), entry))
    return found


def team_paths(settings: Settings) -> list[str]:
    """The files team entries go in that no kb entry names (Continue's file per server)."""
    paths = []
    for name, server in settings.servers.items():
        for client_name in clients_of(settings, server):
            client = CLIENTS[client_name]
            paths.append("/.agents/tool-cfg/" if client.user_level else f"/{client.path_for(name)}")
    return paths


def team_tools(settings: Settings, client: str) -> list[tuple[str, str]]:
    """(server, tool) for each tool a team server pre-approves for this client."""
    return [
        (name, tool)
        for name, server in wired(settings).items()
        if client in clients_of(settings, server)
        for tool in server.preapprove
    ]
