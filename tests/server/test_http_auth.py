"""Personal tokens, scopes, session owners and the audit line over real HTTP (docs/adr/0031)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx2
import pytest

from kbkit.server.auth.tokens import create, revoke
from tests.helpers.http import INITIALIZE, JSON_HEADERS, STOPPED, HttpServer, http_client
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS
from tests.helpers.wait import wait_until
from tests.peers.launch import forked_kbkit

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

QUERY = "runbook for the quarterly failover"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def init_body() -> dict:
    return dict(INITIALIZE)


@pytest.mark.parametrize("mode", ERAS)
async def test_personal_tokens_name_who_searched_and_a_revoke_needs_no_restart(
    tmp_path: Path, mode: str
) -> None:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    alice = create(tokens, "alice", "memory", None)
    bob = create(tokens, "bob", "read", 7)
    server = HttpServer(root, token=None, args=("--log-format", "json")).wait_ready()
    try:
        assert "auth: personal tokens from" in server.stderr()
        for token in (alice, bob):
            async with http_client(server.url, mode, bearer(token)) as client:
                await client.call_tool("search", {"query": QUERY})
        lines = [json.loads(line) for line in server.stderr().splitlines() if line.startswith('{"event"')]
        searched = [(line["principal"], line["auth"]) for line in lines if line.get("tool") == "search"]
        assert ("alice", "token") in searched and ("bob", "token") in searched
        log = server.stderr()
        assert QUERY not in log and alice not in log and bob not in log
        revoke(tokens, "bob")
        refused = httpx2.post(
            server.url, headers={**JSON_HEADERS, **bearer(bob)}, json=init_body(), timeout=30
        )
        assert refused.status_code == 401
        allowed = httpx2.post(
            server.url, headers={**JSON_HEADERS, **bearer(alice)}, json=init_body(), timeout=30
        )
        assert allowed.status_code == 200
    finally:
        assert server.stop() == STOPPED


async def test_a_session_answers_only_the_principal_that_opened_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    alice = create(tokens, "alice", "read", None)
    mallory = create(tokens, "mallory", "read", None)
    server = HttpServer(root, token=None).wait_ready()
    try:
        opened = httpx2.post(
            server.url, headers={**JSON_HEADERS, **bearer(alice)}, json=init_body(), timeout=30
        )
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        stolen = httpx2.post(
            server.url, headers={**JSON_HEADERS, **session, **bearer(mallory)}, json=listing, timeout=30
        )
        assert stolen.status_code == 404
        own = httpx2.post(
            server.url, headers={**JSON_HEADERS, **session, **bearer(alice)}, json=listing, timeout=30
        )
        assert own.status_code == 200
    finally:
        assert server.stop() == STOPPED


async def test_a_read_token_gets_403_for_a_memory_tool_and_the_refusal_is_logged(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    bob = create(root / ".kbkit" / "tokens.json", "bob", "read", None)
    server = HttpServer(root, token=None).wait_ready()
    try:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "retain", "arguments": {}},
        }
        answer = httpx2.post(server.url, headers={**JSON_HEADERS, **bearer(bob)}, json=call, timeout=30)
        assert (
            answer.status_code == 403 and 'error="insufficient_scope"' in answer.headers["www-authenticate"]
        )
        wait_until(lambda: "bob (token) tools/call:retain 403" in server.stderr(), what="the audit line")
    finally:
        assert server.stop() == STOPPED


@pytest.mark.parametrize("problem", ["world-readable", "symlink", "corrupt"])
def test_a_tokens_file_that_cannot_be_trusted_stops_the_start_with_the_fix(
    tmp_path: Path, problem: str
) -> None:
    root = make_project(tmp_path / "project")
    tokens = root / ".kbkit" / "tokens.json"
    create(tokens, "alice", "read", None)
    if problem == "world-readable":
        tokens.chmod(0o644)
        fix = "chmod 600"
    elif problem == "symlink":
        real = tmp_path / "elsewhere.json"
        tokens.rename(real)
        tokens.symlink_to(real)
        fix = "symlink"
    else:
        tokens.write_text("{not json")
        fix = "move it aside"
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_TOKEN", "MCP_ALLOW_ANONYMOUS")}
    result = subprocess.run(
        [*forked_kbkit(), "serve", "--http", "--root", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 3, result.stderr
    assert fix in result.stderr and result.stderr.count("kbkit: error:") == 1


async def test_the_shared_token_still_works_as_the_principal_shared(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    server = HttpServer(root).wait_ready()  # MCP_TOKEN only
    try:
        async with http_client(server.url, "auto") as client:
            await client.call_tool("search", {"query": QUERY})
        wait_until(lambda: "shared (shared) tools/call:search 200" in server.stderr(), what="the audit line")
    finally:
        assert server.stop() == STOPPED
