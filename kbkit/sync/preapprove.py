"""Pre-approval of the read-only kb tools, in each agent's own project-level field.

Agents ask before every MCP tool call unless told otherwise. kbkit names the kb tools that only
read (`search`, `get_document`, as far as `[server] tools` offers them) and never a memory tool
(they write) nor a whole server (`mcp__kb`, `*`, `trust: true` would approve the memory tools
too). `[sync] preapprove = false` turns it off. Kiro and Roo approve in the entry itself (see
render.py); the grants here live elsewhere and are owned like entries (docs/adr/0019):

- `list`: names added to a list (Claude Code and Devin `permissions.allow`, Crush
  `permissions.allowed_tools`); kbkit records the names it added and removes only those.
- `map`: `"<name>": "allow"` members (Kilo `permission`); a user's own value for a name is theirs.
- `policy`: a Gemini policy file that kbkit writes whole, refused when another file is in the way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kbkit.catalog.clients import CLIENTS, Client
from kbkit.config import KB_TOOL_NAMES, Settings
from kbkit.sync.merge import ConfigText
from kbkit.sync.state import Owned, entry_hash

READ_ONLY_KB_TOOLS = frozenset(KB_TOOL_NAMES)
"""The kb tools, all of which only read (readOnlyHint). Anything else is never pre-approved."""
ALLOW = "allow"
POLICY_PRIORITY = 100


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
    """list | map | policy"""
    path: str
    key: tuple[str, ...]
    names: tuple[str, ...]
    text: str = ""
    """The policy file's whole text (kind policy)."""

    @property
    def owner(self) -> str:
        """Its name in the sync state, beside the client's own entry."""
        return owner_of(self.client)

    @property
    def format(self) -> str:
        return "toml" if self.kind == "policy" else "json"


def owner_of(client: str) -> str:
    return f"{client}:preapprove"


def client_of(owner: str) -> str | None:
    """The client a state record's pre-approval belongs to (None for an entry's record)."""
    name, _, kind = owner.partition(":")
    return name if kind == "preapprove" else None


def grant_for(client: Client, server: str, tools: tuple[str, ...]) -> Grant | None:
    approval = client.approval
    if approval is None or approval.kind == "entry" or not tools:
        return None
    names = tuple(approval.tool_name(server, tool) for tool in tools)
    path = approval.path or client.path
    if approval.kind == "policy":
        return Grant(client.name, "policy", path, approval.key, names, policy_text(server, names))
    return Grant(client.name, approval.kind, path, approval.key, names)


def grants(settings: Settings, selected: list[str]) -> list[Grant]:
    tools = approved_tools(settings)
    found = (grant_for(CLIENTS[name], settings.server_name, tools) for name in selected)
    return [grant for grant in found if grant is not None]


def policy_text(server: str, tools: tuple[str, ...]) -> str:
    """A Gemini CLI workspace policy allowing exactly these tools of this server (one rule each)."""
    lines = [
        "# Written by kbkit sync: the read-only kb tools run without asking. kbkit owns this file;",
        "# set [sync] preapprove = false in kbkit.toml to remove it.",
    ]
    for tool in tools:
        lines += [
            "",
            "[[rule]]",
            f"mcpName = {_toml_string(server)}",
            f"toolName = {_toml_string(tool)}",
            f'decision = "{ALLOW}"',
            f"priority = {POLICY_PRIORITY}",
        ]
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


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
    if grant.kind == "policy":
        return _place_policy(grant, config, mine, force)
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
    if not previous.key:  # a policy file kbkit wrote whole
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


def _place_policy(
    grant: Grant, config: ConfigText, mine: Owned | None, force: bool
) -> tuple[Owned | None, str | None]:
    """The policy file is kbkit's whole: written when absent or unchanged since kbkit wrote it."""
    if config.text and not force:
        if mine is None and config.text != grant.text:
            return None, "a policy file kbkit did not write is in the way; rename it, or rerun with --force"
        if mine is not None and entry_hash(config.text) != mine.sha256:
            return None, "kbkit's policy file was edited by hand; left as it is (--force overwrites it)"
    config.text = grant.text
    return Owned(grant.path, (), entry_hash(grant.text), True, grant.names), None


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
