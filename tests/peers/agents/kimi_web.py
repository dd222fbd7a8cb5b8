"""Kimi Code CLI's own report on one MCP server, offline and with no model (tests/e2e/test_agents.py).

    python kimi_web.py KIMI SERVER

Kimi Code has no command that reads its MCP files; its local server does (`kimi web`, REST API in
MoonshotAI/kimi-code docs/en/reference/server-api.md). Run in the project folder, in the test's
network namespace, this starts `KIMI web` on loopback, registers the folder as a workspace,
trusts it (what its trust prompt records: project MCP files load only in a trusted workspace),
creates a session (its servers start with it, each listed once started), then asks
`GET /api/v1/mcp/servers` until SERVER is listed and no longer `connecting`. Prints `SERVER: connected (N tools)` and exits 0, or what Kimi Code
said and exits 1. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

PORT = 18111
"""Kimi Code's server port in the test's own network namespace (kb's is 18080, the team's 18090)."""
DEADLINE = 120.0
"""A bound on its start and on a server's start, so a hang fails instead of stalling; not a target."""
API = f"http://127.0.0.1:{PORT}/api/v1"


def call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"content-type": "application/json"}  # no body, no type: it refuses
    request = urllib.request.Request(API + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            answer = json.load(reply)
    except urllib.error.HTTPError as error:
        answer = {"status": error.code, "body": error.read().decode(errors="replace")[:500]}
    if answer.get("code") != 0:
        raise SystemExit(f"kimi web: {method} {path}: {answer}")
    return answer["data"]


def until(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise SystemExit(f"kimi web: {what} within {DEADLINE:.0f} s")
    time.sleep(0.2)


def report(name: str) -> str:
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            call("GET", "/meta")
            break
        except OSError:
            until(deadline, "did not answer")
    workspace = call("POST", "/workspaces", {"root": os.getcwd()})
    call("POST", f"/workspaces/{workspace['id']}/trust")
    call("POST", "/sessions", {"workspace_id": workspace["id"]})
    deadline = time.monotonic() + DEADLINE
    while True:
        servers = {server["name"]: server for server in call("GET", "/mcp/servers")["servers"]}
        server = servers.get(name)
        if server is None:  # listed once it starts, one after another
            if time.monotonic() > deadline:
                return f"{name}: not among Kimi Code's servers ({', '.join(servers) or 'none'})"
        elif server["status"] == "connected":
            return f"{name}: connected ({server['tool_count']} tools)"
        elif server["status"] != "connecting":
            return f"{name}: {server['status']}: {server.get('last_error', '')}"
        until(deadline, f"{name} still connecting")


def main(kimi: str, name: str) -> int:
    server = subprocess.Popen(
        # no bearer token: the server is alone in a private network namespace with only loopback
        [kimi, "web", "--no-open", "--dangerous-bypass-auth", "--port", str(PORT)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        line = report(name)
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(line)  # noqa: T201
    return 0 if ": connected (" in line else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
