"""HAProxy (Debian's `haproxy`) started with the shipped deploy/haproxy.cfg, for the `haproxy` tier
and bench/http_load.py.

The configuration is the production file, unchanged: only its environment differs. The listening
socket is bound here (port 0, so no free port is guessed and raced for) and handed over as
`KBKIT_BIND=fd@N`; each replica is a `KBKIT_REPLICA_n`; the runtime API socket
(`KBKIT_HAPROXY_SOCKET`) tells when HAProxy sees a replica up or down."""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from tests.peers.loopback import Loopback

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "deploy" / "haproxy.cfg"
MAX_REPLICAS = 8
"""Server slots in deploy/haproxy.cfg (KBKIT_REPLICA_1 .. KBKIT_REPLICA_8)."""


def haproxy_path() -> str | None:
    """The haproxy executable: on PATH, or where Debian puts it (/usr/sbin, off a user's PATH)."""
    found = shutil.which("haproxy")
    if found:
        return found
    return "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None


def config_env(replicas: Sequence[str], **extra: str) -> dict[str, str]:
    """This environment with the replicas' addresses (and any other KBKIT_ variable) set."""
    assert len(replicas) <= MAX_REPLICAS, replicas
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBKIT_")}
    env.update({f"KBKIT_REPLICA_{n}": address for n, address in enumerate(replicas, 1)})
    return {**env, **extra}


def check_config(executable: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`haproxy -c -f deploy/haproxy.cfg` under `env`."""
    return subprocess.run(
        [executable, "-c", "-f", str(CONFIG)], capture_output=True, text=True, timeout=60, env=env
    )


class Balancer(Loopback):
    """`haproxy -db -f deploy/haproxy.cfg` in front of `replicas` ("HOST:PORT" each), on loopback."""

    def __init__(
        self,
        executable: str,
        replicas: Sequence[str],
        log_path: Path,
        extra: dict[str, str] | None = None,
        config: Path = CONFIG,
    ) -> None:
        """`config`: another file than the shipped one, for an experiment (the tests use the shipped one)."""
        self.replicas = list(replicas)
        self.folder = tempfile.mkdtemp(prefix="kbkit-haproxy-")  # short: a Unix socket path has ~100 bytes
        self.admin = os.path.join(self.folder, "admin.sock")
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port: int = self._listener.getsockname()[1]
        self.log_path = log_path
        self._log: IO[str] = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        fd = self._listener.fileno()
        env = config_env(
            self.replicas, KBKIT_BIND=f"fd@{fd}", KBKIT_HAPROXY_SOCKET=self.admin, **(extra or {})
        )
        self.process = subprocess.Popen(
            [executable, "-db", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=(fd,),
        )

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def command(self, line: str) -> str:
        """One runtime API command's answer ('' while the socket is not there yet)."""
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(10)
                sock.connect(self.admin)
                sock.sendall(line.encode() + b"\n")
                chunks = []
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
        except (FileNotFoundError, ConnectionRefusedError):
            return ""
        return b"".join(chunks).decode()

    def states(self) -> dict[str, str]:
        """Each replica's status as HAProxy sees it: {"r1": "UP", "r2": "DOWN", ...}."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {
            row["svname"]: row["status"].split()[0]
            for row in rows
            if row.get("pxname") == "replicas" and row.get("svname", "").startswith("r")
        }

    def counters(self) -> dict[str, tuple[int, int]]:
        """(retries, redispatches) of the backend and of each replica, from `show stat`."""
        text = self.command("show stat").lstrip("# ")
        return {
            row["svname"] if row["svname"] != "BACKEND" else row["pxname"]: (
                int(row["wretr"] or 0),
                int(row["wredis"] or 0),
            )
            for row in csv.DictReader(io.StringIO(text))
            if row.get("pxname") == "replicas" and row.get("svname") != "FRONTEND"
        }

    def wait(self, want: dict[str, str], timeout: float = 60.0) -> None:
        """Until HAProxy sees each named replica in the wanted state (UP, DOWN); bounded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"haproxy exited {self.process.returncode}: {self.log()}")
            states = self.states()
            if all(states.get(name) == state for name, state in want.items()):
                return
            time.sleep(0.05)
        raise TimeoutError(f"haproxy did not see {want} within {timeout} s: {self.states()}\n{self.log()}")

    def wait_ready(self, timeout: float = 60.0) -> Balancer:
        self.wait({f"r{n}": "UP" for n in range(1, len(self.replicas) + 1)}, timeout)
        return self

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # HAProxy's hard stop: close everything now
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._listener.close()
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        return self.process.returncode
