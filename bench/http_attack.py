"""`kbkit serve --http` under a slowloris attack: sockets that send half a request and stall.

The server starts on a small project with the open-file limit it would get from a default shell
(`--soft`/`--hard`, 1,024 both by default), then this script opens `--sockets` connections (1,100)
that each send an unfinished request head and never another byte. It reports, side by side for
every command given (`--command`, repeatable; the installed `kbkit` by default):

- the server's open file descriptors at the peak and at the end (from /proc);
- whether `/healthz` and an authenticated MCP `tools/list` are answered under attack;
- how many stalled sockets the server closed within `--wait` seconds (60);
- the size of its stderr, in bytes and lines.

An older kbkit can be measured from a source tree: `--command "python -m kbkit" --pythonpath DIR`.

    .venv/bin/python -m bench.http_attack [--sockets 1100] [--soft 1024 --hard 1024] [--wait 60]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2

from bench._util import MachineWatch, free_port, print_table, write_project
from tests.helpers.http import TEST_TOKEN
from tests.helpers.serve import kbkit_command

HALF_REQUEST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
MODERN = "2026-07-28"


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def answered(call: Callable[[], httpx2.Response]) -> str:
    try:
        return "yes" if call().status_code == 200 else "no"
    except httpx2.HTTPError as exc:
        return f"no ({type(exc).__name__})"


def tools_list(base: str) -> httpx2.Response:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    }
    return httpx2.post(
        f"{base}/mcp",
        headers={
            "authorization": f"Bearer {TEST_TOKEN}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/list",
        },
        content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
        timeout=10,
    )


def attack(command: list[str], pythonpath: str | None, args: argparse.Namespace) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        write_project(root, "docs")
        (root / "docs" / "a.md").write_text("# A\n\nsome text\n")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MCP_TOKEN": TEST_TOKEN}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        log_path = root / "stderr.log"
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [*command, "serve", "--http", "--root", str(root), "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
                cwd=root,  # `python -m` puts the working folder first on sys.path
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (args.soft, args.hard)),
            )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx2.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    time.sleep(0.1)
            sockets, peak = [], 0
            for _ in range(args.sockets):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    sock.sendall(HALF_REQUEST)
                    sockets.append(sock)
                except OSError:
                    break
                peak = max(peak, fds(server.pid))
            time.sleep(1)  # let the accept loop catch up before measuring the peak
            peak = max(peak, fds(server.pid))
            health = answered(lambda: httpx2.get(f"{base}/healthz", timeout=10))
            mcp = answered(lambda: tools_list(base))
            started = time.monotonic()
            closed: set[int] = set()
            while time.monotonic() - started < args.wait and len(closed) < len(sockets):
                for index, sock in enumerate(sockets):
                    if index in closed:
                        continue
                    sock.setblocking(False)
                    try:
                        if sock.recv(1) == b"":
                            closed.add(index)
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(index)
                time.sleep(0.5)
            end_fds = fds(server.pid)
            for sock in sockets:
                sock.close()
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        stderr = log_path.read_bytes()
        lines = stderr.count(b"\n")
        return [
            shlex.join(command) + (f" (PYTHONPATH={pythonpath})" if pythonpath else ""),
            str(len(sockets)),
            str(peak),
            str(end_fds),
            health,
            mcp,
            f"{len(closed)} of {len(sockets)}",
            f"{len(stderr):,}",
            f"{lines:,}",
        ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sockets", type=int, default=1100)
    parser.add_argument("--soft", type=int, default=1024)
    parser.add_argument("--hard", type=int, default=1024)
    parser.add_argument("--wait", type=float, default=60.0)
    parser.add_argument("--command", action="append", help="how to run kbkit (default: the installed kbkit)")
    parser.add_argument("--pythonpath", action="append", help="PYTHONPATH for the --command of the same rank")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # this script holds every stalled socket
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, args.sockets + 256), hard), hard))
    commands = [shlex.split(c) for c in args.command] if args.command else [kbkit_command()]
    paths = (args.pythonpath or []) + [None] * len(commands)
    watch = MachineWatch()
    rows = [attack(command, path, args) for command, path in zip(commands, paths, strict=False)]
    print_table(
        [
            "server",
            "stalled sockets",
            "fds at peak",
            f"fds after {args.wait:.0f} s",
            "/healthz",
            "MCP tools/list",
            f"closed by the server within {args.wait:.0f} s",
            "stderr bytes",
            "stderr lines",
        ],
        rows,
        title=f"{args.sockets} half-request sockets; open-file limit soft {args.soft}, hard {args.hard}",
    )
    print(f"\n{watch.note()}")


if __name__ == "__main__":
    main()
