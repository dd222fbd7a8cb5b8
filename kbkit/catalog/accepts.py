"""What the agents' own CLIs reject or ignore in what a project gives them: one place for these
rules, beside the client table, learnt by running each CLI on what `kbkit sync` writes
(tests/e2e/test_agents.py; docs/clients.md, "Verified with the agents' own CLIs").

`kbkit doctor` checks every client's `kb` entry, and the project's files, against them: a file
that parses and a server that answers are not enough when the agent skips the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EntryRule:
    """A shape of entry an agent refuses."""

    clients: tuple[str, ...]
    """The `[sync] clients` names whose file holds such an entry (a shared `.mcp.json`: both)."""
    agent: str
    """The agent and the version it was seen in."""
    refuses: Callable[[Mapping[str, Any]], bool]
    what: str
    """What the agent does with it."""
    fix: str


@dataclass(frozen=True)
class IgnoredFile:
    """A project file an agent does not read, though its docs or an older kbkit used it."""

    client: str
    path: str
    agent: str
    what: str
    fix: str


def _string_tools(entry: Mapping[str, Any]) -> bool:
    tools = entry.get("tools")
    return isinstance(tools, list) and any(not isinstance(item, dict) for item in tools)


ENTRY_RULES: tuple[EntryRule, ...] = (
    EntryRule(
        ("claude-code", "copilot-cli"),
        "Claude Code 2.1.328",
        _string_tools,
        'skips the whole entry: `"tools"` must hold objects there (`tools.0: expected object, received '
        'string`), then reports `No MCP server named "kb"`',
        'remove `"tools"` from the entry (Copilot CLI offers every tool without it): kbkit sync --force',
    ),
)

IGNORED_FILES: tuple[IgnoredFile, ...] = (
    IgnoredFile(
        "gemini",
        ".gemini/policies",
        "Gemini CLI 0.61.0",
        "ignores workspace policy files (workspace policies are disabled)",
        "kbkit sync pre-approves in .gemini/settings.json (tools.allowed); remove the folder if only "
        "kbkit wrote it",
    ),
)


def refusals(client: str, entry: Mapping[str, Any]) -> list[EntryRule]:
    """The rules this client's `kb` entry breaks."""
    return [rule for rule in ENTRY_RULES if client in rule.clients and rule.refuses(entry)]


def ignored_files(clients: tuple[str, ...] | list[str]) -> list[IgnoredFile]:
    return [rule for rule in IGNORED_FILES if rule.client in clients]
