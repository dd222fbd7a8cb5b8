"""Run a command in a private network namespace that has only loopback, optionally beside a
`kbkit serve --http` started in the same namespace (the agents tier, tests/e2e/test_agents.py).

    unshare -n -- python -I offline.py [--serve ROOT PORT] -- ARGV...

A new network namespace starts with `lo` down and nothing else: the command can reach 127.0.0.1
and no other address, so an agent's CLI cannot phone home, update itself or reach a model. A server
the agent's entry points at must live in the same namespace (the test's own loopback is another
one), so `--serve` starts it here, on a fixed port (nothing else binds in a fresh namespace), and
waits for its /healthz before the command runs. Prints the command's output, exits with its code.
Standard library only.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

READY_DEADLINE = 120.0
"""A bound on the server's start, so a hang fails instead of stalling; not a target."""


def wait_healthy(server: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + READY_DEADLINE
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"offline.py: kbkit serve --http exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("offline.py: kbkit serve --http did not answer /healthz")


def main(args: list[str]) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    server = None
    if options[:1] == ["--serve"]:
        kbkit, root, port = options[1:4]
        server = subprocess.Popen(
            [kbkit, "serve", "--http", "--root", root, "--port", port],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_healthy(server, int(port))
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
