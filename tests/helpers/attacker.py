"""An attacker's host on loopback: an HTTP listener that records every request it gets (method,
path, headers) and refuses it, so a test can prove a secret never reached it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Attacker:
    url: str
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def saw(self, secret: str) -> bool:
        """Whether `secret` reached this host anywhere: path, query or a header."""
        return any(
            secret in path or any(secret in v for v in headers.values()) for _, path, headers in self.requests
        )


@contextmanager
def attacker_host() -> Iterator[Attacker]:
    """A listener on 127.0.0.1 for the block's duration; its `requests` say what reached it."""
    seen = Attacker("")

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            seen.requests.append((self.command, self.path, dict(self.headers.items())))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _record

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    seen.url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()
