"""The scopes the gate grants a caller, and what they let a caller see (docs/adr/0031).

The gate hands each request's principal to the SDK as `scope["user"]` with these scopes; the
server's `tools/list` reads them back so a `read` caller is not offered tools it would be refused.
Standard library only: the stdio server imports this too.
"""

from __future__ import annotations

from typing import Any

READ = "read"
MEMORY = "memory"
"""Reaches the session-memory tools as well as the kb tools."""


def granted(memory: bool) -> list[str]:
    return [READ, MEMORY] if memory else [READ]


def may_use_memory(request: Any) -> bool:
    """Whether the caller behind an HTTP request (a Starlette request, or None over stdio) may call
    the memory tools. No gate, no user (stdio, or a loopback server without auth): yes."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    scopes = getattr(user, "scopes", None)
    return scopes is None or MEMORY in scopes
