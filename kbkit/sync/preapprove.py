"""Pre-approval of the read-only kb tools, in each agent's own project-level field.

Agents ask before every MCP tool call unless told otherwise. kbkit names the kb tools that only
read (`search`, `get_document`, as far as `[server] tools` offers them) and never a memory tool
(they write) nor a whole server (`mcp__kb`, `*`, `trust: true` would approve the memory tools
too). `[sync] preapprove = false` turns it off. Kiro and Roo approve in the entry itself (see
render.py); the grants here live elsewhere and are owned like entries (docs/adr/0019):

- `list`: names added to a list (Claude Code and Devin `permissions.allow`, Crush
  `permissions.allowed_tools`); kbkit records the names it added and removes only those.
- `map`: `"<name>": "allow"` members (Kilo `permission`); a user's own value for a name is theirs.

Earlier kbkit versions wrote Gemini CLI a workspace policy file, `.gemini/policies/kbkit.toml`,
which Gemini CLI 0.61 ignores; a recorded one is taken away (the pre-approval is now
`tools.allowed` in `.gemini/settings.json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbkit.catalog.clients import CLIENTS, Client
from kbkit.config import KB_TOOL_NAMES, Settings
from kbkit.sync.merge import ConfigText
from kbkit.sync.servers import team_tools
from kbkit.sync.state import Owned, entry_hash

READ_ONLY_KB_TOOLS = frozenset(KB_TOOL_NAMES)
"""The kb tools, all of which only read (readOnlyHint). Anything else is never pre-approved."""
ALLOW = "allow"


def approved_tools(settings: Settings) -> tuple[str, ...]:
    """The kb tools to pre-approve: the read-only ones offered, minus any name a memory tool has."""
    if not settings.sync.preapprove:
        return ()
    memory = {settings.memory.prefix + tool for tool in settings.memory.tools}
    return tuple(t for t in settings.server_tools if t in READ_ONLY_KB_TOOLS and t not in memory)


@dataclass(frozen=True)
class Grant:
    """One pre-approval outside the entry, as it should be now."""

    client: str
    kind: str
    """list | map"""
    path: str
    key: tuple[str, ...]
    names: tuple[str, ...]

    @property
    def owner(self) -> str:
        """Its name in the sync state, beside the client's own entry."""
        return owner_of(self.client)

    format = "json"


def recorded_format(previous: Owned) -> str:
    """The format of a recorded pre-approval's file: a policy file (no key) is TOML."""
    return "json" if previous.key else "toml"


def owner_of(client: str) -> str:
    return f"{client}:preapprove"


def client_of(owner: str) -> str | None:
    """The client a state record's pre-approval belongs to (None for an entry's record)."""
    name, _, kind = owner.partition(":")
    return name if kind == "preapprove" else None


def grant_for(
    client: Client, server: str, tools: tuple[str, ...], team: Sequence[tuple[str, str]] = ()
) -> Grant | None:
    """The client's grant: kb's tools, then each team server's own (`team`: (server, tool) pairs)."""
    approval = client.approval
    if approval is None or approval.kind == "entry" or not (tools or team):
        return None
    names = tuple(approval.tool_name(server, tool) for tool in tools)
    names += tuple(approval.tool_name(name, tool) for name, tool in team)
    path = approval.path or client.path
    return Grant(client.name, approval.kind, path, approval.key, tuple(dict.fromkeys(names)))


def grants(settings: Settings, selected: list[str], team: Sequence[str] = ()) -> list[Grant]:
    """The grants of the `selected` clients (kb's tools and team servers'), and of the `team`
    clients that get only team servers (their team servers' tools)."""
    tools = approved_tools(settings)
    found = [
        grant_for(CLIENTS[name], settings.server_name, tools, team_tools(settings, name)) for name in selected
    ]
    found += [
        grant_for(CLIENTS[name], settings.server_name, (), team_tools(settings, name))
        for name in dict.fromkeys(team)
        if name not in selected
    ]
    return [grant for grant in found if grant is not None]


# -- placing and retracting ----------------------------------------------------------------------


def place(
    grant: Grant, config: ConfigText, previous: Owned | None, created_file: bool, force: bool
) -> tuple[Owned | None, str | None]:
    """Bring `config` in line with `grant`; the new ownership record, or a reason it was left alone."""
    mine = (
        previous
        if previous is not None and (previous.path, previous.key) == (grant.path, grant.key)
        else None
    )
    current = config.get(grant.key)
    container: type = list if grant.kind == "list" else dict
    if current is not None and not isinstance(current, container):
        kind = "a list" if grant.kind == "list" else "an object"
        return None, f"{'.'.join(grant.key)} is not {kind}; left as it is"
    created_key = (
        mine.created_key if mine else (_missing_prefix(config, grant.key) if current is None else ())
    )
    added_before = set(mine.items) if mine else set()
    if grant.kind == "list":
        items = list(current) if isinstance(current, list) else []
        stale = added_before - set(grant.names)
        kept = [name for name in items if name not in stale]
        added = tuple(n for n in grant.names if n in added_before or n not in items)
        new: Any = kept + [n for n in grant.names if n not in kept]
        if new != items:
            config.set(grant.key, new)
    else:
        members = dict(current) if isinstance(current, dict) else {}
        for name in added_before - set(grant.names):
            if members.get(name) == ALLOW:
                config.delete((*grant.key, name))
        added = tuple(n for n in grant.names if n in added_before or n not in members)
        for name in grant.names:
            if name not in members:
                config.set((*grant.key, name), ALLOW)
    owned = Owned(grant.path, grant.key, entry_hash(list(added)), created_file, added, created_key)
    return owned, None


def retract(previous: Owned, config: ConfigText, force: bool) -> str | None:
    """Take kbkit's names (or its policy file) out again; a reason when something is left alone."""
    if not previous.key:  # a policy file an earlier kbkit wrote whole
        if not config.text:
            return None
        if entry_hash(config.text) != previous.sha256 and not force:
            return "kbkit's policy file was edited by hand; left in place (remove it, or --force)"
        config.text = ""
        return None
    current = config.get(previous.key)
    if isinstance(current, list):
        config.set(previous.key, [name for name in current if name not in previous.items])
    elif isinstance(current, dict):
        for name in previous.items:
            if current.get(name) == ALLOW:
                config.delete((*previous.key, name))
    if previous.created_key and _holds_nothing(config.get(previous.created_key)):
        config.delete(previous.created_key)
    if previous.created_file and config.holds_nothing_but(()):
        config.text = ""
    return None


def _missing_prefix(config: ConfigText, key: tuple[str, ...]) -> tuple[str, ...]:
    """The outermost part of `key` that does not exist yet (what placing creates)."""
    for depth in range(1, len(key) + 1):
        if config.get(key[:depth]) is None:
            return key[:depth]
    return ()


def _holds_nothing(value: Any) -> bool:
    """An empty container, or objects that hold nothing but empty containers."""
    if isinstance(value, dict):
        return all(_holds_nothing(item) for item in value.values())
    return isinstance(value, list) and not value
