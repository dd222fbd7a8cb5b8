"""Where a test reaches an MCP endpoint on this machine: kbkit's HTTP server (tests/helpers/http.py)
or HAProxy in front of it (tests/peers/haproxy.py), both on 127.0.0.1 with MCP at /mcp."""

from __future__ import annotations


class Loopback:
    """A listener on 127.0.0.1:`port` serving MCP at /mcp; `port` is set by the subclass."""

    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"
