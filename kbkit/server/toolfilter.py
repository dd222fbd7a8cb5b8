"""A team server's tools as the team allows them (`[servers.<name>] tools`, `exclude_tools`): one
filter for every agent, applied by kbkit between the agent and the server, over stdio (`kbkit run`
proxies the server instead of becoming it) and over HTTP (the relay).

It works on JSON-RPC messages as dicts: a `tools/list` answer keeps only the allowed tools (the
agent's context holds no other), and a `tools/call` of any other tool is answered with an error
without reaching the server. Every other message passes untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REFUSED = -32602
"""JSON-RPC `invalid params`: the tool named is not one this server offers."""


class ToolFilter:
    def __init__(self, name: str, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> None:
        self.name = name
        self.allow = frozenset(allow)
        self.deny = frozenset(deny)
        self._lists: set[Any] = set()
        """The ids of `tools/list` requests whose answers are still to come."""

    def allowed(self, tool: object) -> bool:
        return isinstance(tool, str) and (not self.allow or tool in self.allow) and tool not in self.deny

    def from_agent(self, message: Any) -> dict[str, Any] | None:
        """The error to answer instead of forwarding `message`, or None to forward it."""
        if not isinstance(message, dict) or "id" not in message:
            return None
        method = message.get("method")
        if method == "tools/list":
            self._lists.add(_key(message["id"]))
        elif method == "tools/call":
            params = message.get("params")
            tool = params.get("name") if isinstance(params, dict) else None
            if not self.allowed(tool):
                text = f"{tool!r} is not a tool of {self.name} here: the team's kbkit.toml leaves it out"
                return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": REFUSED, "message": text}}
        return None

    def from_server(self, message: Any) -> bool:
        """Filter a `tools/list` answer in place; True when `message` was changed."""
        if not isinstance(message, dict) or _key(message.get("id")) not in self._lists or "method" in message:
            return False
        self._lists.discard(_key(message["id"]))
        result = message.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return False
        tools = result["tools"]
        kept = [tool for tool in tools if isinstance(tool, dict) and self.allowed(tool.get("name"))]
        result["tools"] = kept
        return len(kept) != len(tools)


def _key(request_id: Any) -> Any:
    return (type(request_id).__name__, request_id)
