"""A tiny stdio MCP server standing in for a team's own server (standard library only: it starts in
milliseconds, and its behaviour is all here to read).

    python team_stdio.py [--junk] [--hang] [--expect-sha256 HEX]

It offers two tools. `key_check` answers whether the variable TEAM_KEY it was started with has the
SHA-256 given (the test knows the hash, never writes the key into anything), and `env_names`
lists the names of the variables it got (never their values). `--junk` writes a line that is not
JSON-RPC to stdout before anything else; `--hang` never answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

KEY_VARIABLE = "TEAM_KEY"
TOOLS = [
    {
        "name": "key_check",
        "description": "Whether TEAM_KEY is the expected key.",
        "inputSchema": {"type": "object"},
    },
    {"name": "env_names", "description": "The variables this server got.", "inputSchema": {"type": "object"}},
]


def answer(request: dict[str, object], expected: str | None) -> dict[str, object] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    result: object
    if method == "initialize":
        params = request.get("params") or {}
        version = params.get("protocolVersion", "2025-11-25") if isinstance(params, dict) else "2025-11-25"
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "team-stdio", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = request.get("params") or {}
        name = params.get("name") if isinstance(params, dict) else None
        if name == "key_check":
            got = os.environ.get(KEY_VARIABLE, "")
            ok = bool(got) and hashlib.sha256(got.encode()).hexdigest() == expected
            text = "the key is right" if ok else ("no key" if not got else "a wrong key")
        else:
            text = json.dumps(sorted(os.environ))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> int:
    args = sys.argv[1:]
    expected = args[args.index("--expect-sha256") + 1] if "--expect-sha256" in args else None
    if "--junk" in args:
        sys.stdout.write("starting up, please wait...\n")
        sys.stdout.flush()
    if "--hang" in args:
        while True:
            time.sleep(60)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        reply = answer(request, expected) if isinstance(request, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
