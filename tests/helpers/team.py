"""Team servers in tests: the keys, a project declaring a stdio and a remote team server whose keys
live only in .env.local, and the loopback HTTP peer that checks the bearer."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.trust import trust_project
from tests.helpers.wait import wait_until

PEERS = Path(__file__).resolve().parents[1] / "peers"
STDIO_PEER = PEERS / "team_stdio.py"
HTTP_PEER = PEERS / "team_http.py"
STDIO_KEY = "team-stdio-key-0123456789abcdef"
REMOTE_KEY = "team-remote-bearer-9876543210zyxw"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stdio_server(name: str = "tracker", *flags: str, key: str = STDIO_KEY, var: str = "TRACKER_TOKEN") -> str:
    """A `[servers.NAME]` table starting the stdio peer, its key TEAM_KEY = ${var}."""
    argv = [sys.executable, str(STDIO_PEER), "--expect-sha256", sha256(key), *flags]
    listed = ", ".join(f'"{part}"' for part in argv)
    return f'[servers.{name}]\ncommand = [{listed}]\nenv = {{ TEAM_KEY = "${{{var}}}" }}\n'


def remote_server(url: str, name: str = "wiki", var: str = "WIKI_TOKEN") -> str:
    return f'[servers.{name}]\nurl = "{url}"\nheaders = {{ Authorization = "Bearer ${{{var}}}" }}\n'


@contextmanager
def team_http(folder: Path, key: str = REMOTE_KEY) -> Iterator[str]:
    """The loopback HTTP peer answering only `Bearer <key>`; yields its /mcp URL."""
    folder.mkdir(parents=True, exist_ok=True)
    port_file = folder / "team-http.port"
    process = subprocess.Popen([sys.executable, str(HTTP_PEER), str(port_file), sha256(key)])
    try:
        wait_until(port_file.exists, what="the team HTTP peer to listen")
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def trust_for(root: Path, home: Path) -> None:
    """What `kbkit trust` records, for the user whose HOME is `home` (where an agent's kbkit run looks)."""
    trust_project(root, {"HOME": str(home)})
