"""The memory tools as kbkit offers them: the allowed upstream tools beside the kb tools, each
call forwarded with its own timeout, and every answer bounded, redacted and in plain words.

The kb side never waits on the upstream: a call that finds it away asks the connection for an
attempt at once, and fails with a clear tool error when there is still none.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp.shared.exceptions import MCPError

from kbkit.config import MemorySettings
from kbkit.errors import describe, leaves
from kbkit.server.memory.bounds import ReplyTooLarge, bounded, too_large, too_large_notice
from kbkit.server.memory.connection import Connection
from kbkit.server.memory.declarations import declared
from kbkit.server.memory.keys import key_problem, not_configured
from kbkit.server.memory.redaction import Redactor, redacted
from kbkit.server.tools import tool_error

CLASH_PREFIX = "memory_"


def offered_names(settings: MemorySettings, reserved: Iterable[str] = ()) -> dict[str, str]:
    """Published name -> upstream name for each allowed tool (a clash with a kb tool is prefixed)."""
    names = {}
    for tool in settings.tools:
        published = settings.prefix + tool
        names[CLASH_PREFIX + published if published in reserved else published] = tool
    return names


@dataclass(frozen=True)
class MemoryStatus:
    state: str
    """off | connecting | on | unavailable"""
    detail: str

    def line(self) -> str:
        return f"memory: {self.state} ({self.detail})"


class MemoryProxy:
    def __init__(
        self,
        settings: MemorySettings,
        root: Path | None,
        *,
        environ: Mapping[str, str] | None = None,
        reserved_names: Iterable[str] = (),
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        report: Callable[[str], None] | None = None,
        waiting: str | None = None,
    ) -> None:
        """`waiting`: why `[memory]` may not be used yet (it waits for `kbkit trust`)."""
        self.settings = settings
        self._waiting = waiting
        self._reserved = set(reserved_names)
        self._on_tools_changed = on_tools_changed
        self._report = report or (lambda line: None)
        self._redact = Redactor()
        self._root = root
        self._connection = Connection(settings, root, self._redact, environ)
        self._tools: dict[str, types.Tool] = {}
        self._upstream_names: dict[str, str] = {}
        self._read_only: set[str] = set()
        self._said: tuple[str, str] | None = None
        self.status = self._initial_status()

    # -- what the server asks ---------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        has_key = self._connection.credential.value is not None
        return self.settings.configured and self._waiting is None and has_key

    @property
    def tools(self) -> list[types.Tool]:
        return list(self._tools.values())

    def owns(self, name: str) -> bool:
        """A tool this proxy answers for: offered now, or named by the configuration while the
        upstream is away (the call then asks for a reconnection at once)."""
        return name in self._tools or (self.enabled and name in offered_names(self.settings, self._reserved))

    def why_absent(self, name: str) -> str | None:
        """Why a memory tool the configuration names is not offered now (None: not one of them)."""
        if name not in offered_names(self.settings, self._reserved):
            return None
        status = self.status
        return f"{name} is a session-memory tool, and session memory is {status.state}: {status.detail}"

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        connection = self._connection
        if connection.client is None:
            await connection.attempt_now()
        client = connection.client
        if client is None or name not in self._upstream_names:
            return self._error(
                f"{name}: session memory is unavailable right now ({self.status.detail}). The kb tools "
                "still work; kbkit retries in the background and at the next memory call."
            )
        writes = name not in self._read_only
        unknown = (
            " The outcome is unknown: the memory service may or may not have applied the call; "
            "check (e.g. with a recall) before you retry."
            if writes
            else " Try again shortly."
        )
        try:
            with anyio.fail_after(self.settings.timeout):
                result = await client.call_tool(self._upstream_names[name], arguments or {})
        except TimeoutError:
            connection.probe_soon()
            return self._error(
                f"{name}: the memory service did not answer within {self.settings.timeout} s.{unknown}"
            )
        except MCPError as exc:
            if too_large(exc.message):
                return self._error(too_large_notice(name))
            status = connection.last_status
            if status in (401, 403):  # the key was revoked or rotated under a live connection
                connection.lost(f"the key was rejected (HTTP {status})")
                return self._error(
                    f"{name}: the memory service rejected the key (HTTP {status}); check "
                    f"{connection.credential.hint()}. kbkit reads it again at the next call, no restart "
                    "needed."
                )
            if exc.code != types.CONNECTION_CLOSED:  # the upstream answered with an error: it is alive
                return self._error(f"{name}: the memory service refused the call: {exc.message}")
            connection.lost(f"the connection closed during a call ({exc.message})")
            return self._error(
                f"{name}: the connection to the memory service closed during the call.{unknown}"
            )
        except Exception as exc:  # the connection broke: reconnect in the background
            if any(isinstance(leaf, ReplyTooLarge) for leaf in leaves(exc, causes=True)):
                return self._error(too_large_notice(name))
            connection.lost(f"the connection broke during a call ({describe(exc)})")
            return self._error(
                f"{name}: the connection to the memory service broke mid-call ({describe(exc)}).{unknown}"
            )
        return redacted(bounded(reported_errors_as_errors(result)), self._redact)

    # -- the connection's life --------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, probe, reconnect: until cancelled with the server."""
        await self._connection.run(self._install, self._unavailable, task_status=task_status)

    async def wait_first_attempt(self) -> None:
        await self._connection.wait_first_attempt()

    async def _install(self, upstream_tools: list[types.Tool], elapsed: float | None) -> None:
        by_name = {tool.name: tool for tool in upstream_tools}
        offered: dict[str, types.Tool] = {}
        names: dict[str, str] = {}
        for published, upstream in offered_names(self.settings, self._reserved).items():
            if upstream in by_name:
                tool = declared(by_name[upstream], upstream, self.settings.descriptions)
                offered[published] = tool.model_copy(update={"name": published})
                names[published] = upstream
        changed = [t.model_dump() for t in offered.values()] != [t.model_dump() for t in self._tools.values()]
        self._tools, self._upstream_names = offered, names
        self._read_only = {
            name for name, tool in offered.items() if tool.annotations and tool.annotations.read_only_hint
        }
        missing = sorted(set(self.settings.tools) - set(by_name))
        reason = f"{len(offered)} tools from {self.settings.endpoint}"
        if missing:
            reason += f"; not offered upstream: {', '.join(missing)}"
        took = f" in {elapsed * 1000:.0f} ms" if elapsed is not None else ""
        self._say("on", reason, took)
        if changed and self._on_tools_changed is not None:
            await self._on_tools_changed()

    def _unavailable(self, reason: str) -> None:
        self._say("unavailable", reason)

    # -- what the proxy says ----------------------------------------------------------------

    def _initial_status(self) -> MemoryStatus:
        if not self.settings.configured:
            what, fix, _ = not_configured(self.settings, self._root)
            return MemoryStatus("off", f"{what}: {fix}")
        if self._waiting is not None:
            return MemoryStatus("off", self._waiting)
        credential = self._connection.credential
        if credential.value is None:
            return MemoryStatus("off", key_problem(credential))
        return MemoryStatus("connecting", f"to {self.settings.endpoint}")

    def _say(self, state: str, reason: str, timing: str = "") -> None:
        """Set the status; report it on stderr only when the state or its reason changed."""
        reason = self._redact(reason)
        retry = "; kbkit retries in the background" if state == "unavailable" else ""
        self.status = MemoryStatus(state, reason + timing + retry)
        if self._said != (state, reason):
            self._said = (state, reason)
            self._report(self.status.line())

    def _error(self, message: str) -> types.CallToolResult:
        return tool_error(self._redact(message))


def reported_errors_as_errors(result: types.CallToolResult) -> types.CallToolResult:
    """Hindsight reports some failures as ordinary results; make them tool errors."""
    if result.is_error:
        return result
    payload = result.structured_content
    if payload is None:
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        try:
            payload = json.loads(texts[0]) if len(texts) == 1 and len(texts[0]) < 65536 else None
        except ValueError:
            payload = None
    if isinstance(payload, dict) and (payload.get("status") == "error" or "error" in payload):
        return result.model_copy(update={"is_error": True})
    return result
