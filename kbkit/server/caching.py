"""What a host may keep of a result, and whether it may share it (2026-07-28 `ttlMs` / `cacheScope`).

A result every principal would get alike (the tool list without memory tools, the templates, the
skills, a document outside every restricted folder) is `public`: a host may reuse it for anyone.
A result the caller's grants or scopes shaped (a listing of a server with restricted folders, a
restricted document, the tool list where the memory tools depend on the token) is `private`. The
times are short where the content changes under the host: a change notification
(`list_changed`, `resources/updated`) tells it sooner, and a document's `_meta` carries its
version (the indexed content's hash), so a host can tell a stale copy from a current one.
Legacy (2025-11-25) results carry neither field: the SDK leaves them out of that wire.
"""

from __future__ import annotations

from typing import TypeVar

import mcp.types as types

CHANGING_MS = 60_000
"""Listings and documents: the kb changes while it is served (notifications cut this short)."""
FIXED_MS = 3_600_000
"""What changes only with a new kbkit: the resource templates."""
VERSION_KEY = "kbkit/version"
"""The `_meta` key of a document resource's version: its indexed content's SHA-256, first 16 digits."""

R = TypeVar("R", bound=types.CacheableResult)


def hinted(result: R, *, everyone: bool, ttl_ms: int = CHANGING_MS) -> R:
    """`result` with its hints: `public` only when `everyone` would get the same result."""
    return result.model_copy(update={"ttl_ms": ttl_ms, "cache_scope": "public" if everyone else "private"})


def version_meta(sha256: str) -> dict[str, str]:
    return {VERSION_KEY: sha256[:16]}
