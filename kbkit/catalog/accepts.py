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


def _env_reference(entry: Mapping[str, Any]) -> bool:
    return "{env:" in repr(entry)


def _unnamed(entry: Mapping[str, Any]) -> bool:
    return not isinstance(entry.get("name"), str)


def _untyped(entry: Mapping[str, Any]) -> bool:
    return "type" not in entry


def _untyped_url(entry: Mapping[str, Any]) -> bool:
    return "url" in entry and "type" not in entry


def _url_and_command(entry: Mapping[str, Any]) -> bool:
    return "serverUrl" in entry and "command" in entry


def _split_command(entry: Mapping[str, Any]) -> bool:
    command = entry.get("command")
    return isinstance(command, str) and any(space in command for space in " \t")


def _goose_without_cmd(entry: Mapping[str, Any]) -> bool:
    return entry.get("type") == "stdio" and "cmd" not in entry


ENTRY_RULES: tuple[EntryRule, ...] = (
    EntryRule(
        ("claude-code", "copilot-cli"),
        "Claude Code 2.1.328",
        _string_tools,
        'skips the whole entry: `"tools"` must hold objects there (`tools.0: expected object, received '
        'string`), then reports `No MCP server named "kb"`',
        'remove `"tools"` from the entry (Copilot CLI offers every tool without it): kbkit sync --force',
    ),
    EntryRule(
        ("kilo",),
        "Kilo CLI 7.7.7",
        _env_reference,
        "skips the whole project file when an entry uses `{env:VAR}` (it reports `No MCP servers "
        "configured`): environment references work only in its global config",
        'kbkit sync --force writes an entry that runs the relay (`remote_transport = "http"` no longer '
        "applies to Kilo Code)",
    ),
    EntryRule(
        ("grok-cli",),
        "Grok CLI 0.0.34",
        _unnamed,
        'finds servers by the `"name"` inside each entry (dist/commands/mcp.js), so an entry without one is '
        "`Server kb not found`",
        "kbkit sync --force (kbkit's entry names itself)",
    ),
    EntryRule(
        ("crush",),
        "Crush 0.96.1",
        _untyped,
        'requires `"type"` (stdio, sse or http) in every entry (internal/config/config.go)',
        "kbkit sync --force",
    ),
    EntryRule(
        ("roo",),
        "Roo Code",
        _untyped_url,
        'refuses a `"url"` entry without `"type"` (src/services/mcp/McpHub.ts)',
        'kbkit sync --force (kbkit writes `"type": "streamable-http"`)',
    ),
    EntryRule(
        ("antigravity-cli",),
        "Antigravity CLI 1.1.26",
        _url_and_command,
        'connects to `"serverUrl"` and ignores `"command"` when an entry has both (as measured by '
        "stbenjam/skillsaw)",
        "keep one of them: kbkit sync --force",
    ),
    EntryRule(
        ("mistral-vibe",),
        "Mistral Vibe 3.0.3",
        _split_command,
        'splits a string `"command"` like a shell (vibe/core/config/models.py), so a path with a space '
        "runs another program",
        "kbkit sync --force (kbkit writes the command as a list)",
    ),
    EntryRule(
        ("goose",),
        "Goose",
        _goose_without_cmd,
        'starts a stdio extension from `"cmd"`, not `"command"` (documentation/docs/guides/config-files.md)',
        "copy the entry from .agents/tool-cfg/goose.json again",
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
