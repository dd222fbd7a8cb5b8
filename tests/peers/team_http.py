"""A tiny streamable-HTTP MCP server on loopback standing in for a team's remote server
(standard library only). It checks the bearer: only `Authorization: Bearer <key>` whose SHA-256
is the one given is answered; anything else is HTTP 401. JSON replies, no sessions.

    python team_http.py PORT_FILE EXPECTED_SHA256 [PORT]

It binds 127.0.0.1 on PORT (default: a free one) and writes the port to PORT_FILE once it listens.
"""

from __future__ import annotations

import hashlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOOLS = [{"name": "wiki_search", "description": "Search the wiki.", "inputSchema": {"type": "object"}}]


class Handler(BaseHTTPRequestHandler):
    expected = ""

    def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads results
        pass

    def _send(self, status: int, body: dict[str, object] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(405)

    def do_DELETE(self) -> None:
        self._send(200)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if hashlib.sha256(bearer.encode()).hexdigest() != self.expected:
            self._send(401, {"error": "unauthorized"})
            return
        request = json.loads(body)
        if "id" not in request:
            self._send(202)
            return
        method = request.get("method")
        if method == "initialize":
            version = (request.get("params") or {}).get("protocolVersion", "2025-11-25")
            result: object = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "team-http", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "the bearer is right"}], "isError": False}
        else:
            result = {}
        self._send(200, {"jsonrpc": "2.0", "id": request["id"], "result": result})


def main() -> int:
    port_file, Handler.expected = Path(sys.argv[1]), sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.replace(port_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
