"""Cache hints (2026-07-28 `ttlMs` / `cacheScope`) and each document's version (kbkit/server/caching.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kbkit.server.caching import CHANGING_MS, FIXED_MS, VERSION_KEY
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory

pytestmark = pytest.mark.anyio

FILES = {"guide.md": "# Guide\n\nHow we deploy.\n", "runbooks/failover.md": "# Failover\n\nSwitch over.\n"}


def indexed_version(root: Path, path: str) -> str:
    return hashlib.sha256((root / "docs" / path).read_bytes()).hexdigest()[:16]


async def test_a_kb_every_principal_reads_alike_is_public_with_short_times_and_versions(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", FILES)
    async with serve_in_memory(root, "auto") as client:
        listed = await client.list_resources()
        assert (listed.cache_scope, listed.ttl_ms) == ("public", CHANGING_MS)
        versions = {str(r.uri): (r.meta or {}).get(VERSION_KEY) for r in listed.resources}
        assert versions["kb://doc/guide.md"] == indexed_version(root, "guide.md")
        read = await client.read_resource("kb://doc/guide.md")
        assert (read.cache_scope, read.ttl_ms) == ("public", CHANGING_MS)
        assert (read.contents[0].meta or {})[VERSION_KEY] == versions["kb://doc/guide.md"]
        templates = await client.list_resource_templates()
        assert (templates.cache_scope, templates.ttl_ms) == ("public", FIXED_MS)
        tools = await client.list_tools()
        assert tools.cache_scope == "public"


async def test_a_legacy_session_carries_the_version_and_no_cache_fields(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", FILES)
    async with serve_in_memory(root, "legacy") as client:
        listed = await client.list_resources()
        resource = next(r for r in listed.resources if str(r.uri) == "kb://doc/guide.md")
        assert (resource.meta or {})[VERSION_KEY] == indexed_version(root, "guide.md")
        assert "ttl_ms" not in listed.model_fields_set and "cache_scope" not in listed.model_fields_set
