"""kbkit started and talked to: the console script, the CLI in process, `kbkit serve` over stdio
(forked) and in memory, with the real `mcp` client."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from tests.peers.launch import forked_kbkit

ERAS = ["legacy", "auto"]
"""`legacy` runs the 2025-11-25 initialize handshake; `auto` discovers and speaks 2026-07-28."""


def kbkit_command() -> list[str]:
    """The installed `kbkit` console script next to this interpreter (as agents run it)."""
    script = Path(sys.executable).parent / "kbkit"
    if script.exists():
        return [str(script)]
    found = shutil.which("kbkit")
    return [found] if found else [sys.executable, "-m", "kbkit"]


def checkout_kbkit(folder: Path) -> list[str]:
    """A `kbkit` console script that runs this checkout's code (the virtualenv's own may import
    another checkout: an editable install points at one), in a virtualenv of its own under
    `folder` (links to this one's interpreter and libraries): `kbkit sync` run through it writes
    entries that start it, as it writes the console script beside its interpreter."""
    venv = folder / "checkout-venv"
    script = venv / "bin" / "kbkit"
    if not script.exists():
        real = Path(sys.prefix)
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
        (venv / "lib").symlink_to(real / "lib")
        (venv / "pyvenv.cfg").write_text((real / "pyvenv.cfg").read_text(encoding="utf-8"), encoding="utf-8")
        checkout = str(Path(__file__).resolve().parents[2])
        script.write_text(
            f"#!{venv / 'bin' / 'python'}\nimport os, sys\nsys.path.insert(0, {checkout!r})\n"
            f"os.environ['PYTHONPATH'] = {checkout!r}\nfrom kbkit.entry import main\nsys.exit(main())\n",
            encoding="utf-8",
        )
        script.chmod(0o755)
    return [str(script)]


def kbkit_in_process(
    *args: str, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`kbkit ARGS` run in this process (typer's CliRunner on kbkit's app, behind the same error
    boundary), returned as `subprocess.run` would return it: exit code, stdout, stderr.

    For what a command prints, exits with and writes, without a process start (about half a second
    of CPU each). The launch itself (the console script, its environment checks) is what the tests
    that run `kbkit_command()` are for. In `env`, None removes a variable for the run."""
    from typer.testing import CliRunner

    from kbkit.cli import app

    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    return subprocess.CompletedProcess(["kbkit", *args], result.exit_code, result.stdout, result.stderr)


def serve_with_no_client(
    root: Path, *args: str, command: Sequence[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`kbkit serve --root ROOT ARGS` whose stdin ends at once: it boots, finds no client and stops,
    leaving its boot lines and exit code. `command` runs kbkit (default: the console script)."""
    return subprocess.run(
        [*(command or kbkit_command()), "serve", "--root", str(root), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@asynccontextmanager
async def serve_stdio(
    root: Path,
    mode: str = "legacy",
    *,
    stderr_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    message_handler: MessageHandlerFnT | None = None,
    exec_script: bool = False,
) -> AsyncIterator[Client]:
    """`kbkit serve --root ROOT` in a process of its own (forked, tests/peers/launch.py), with the
    real mcp client connected to it over stdio. `exec_script` starts the console script instead,
    for a test that looks at the process itself (its memory in /proc, say)."""
    command = kbkit_command() if exec_script else forked_kbkit()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--root", str(root)],
        env={**os.environ, **(env or {})},
    )
    log_path = stderr_path or root / "serve-stderr.log"
    with open(log_path, "w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            mode=mode,
            cache=None,
            read_timeout_seconds=30,
            message_handler=message_handler,
        ) as c:
            yield c


def document_text(result: CallToolResult) -> str:
    """The text a `get_document` result carries: its last text block (the first is the JSON of the rest)."""
    block = result.content[-1]
    assert isinstance(block, TextContent), block
    return block.text


SESSION_BOUND = 60
"""Seconds a test's whole session with the server may take: a hang fails the test instead."""


@asynccontextmanager
async def bounded_session(
    root: Path, mode: str = "legacy", seconds: float = SESSION_BOUND
) -> AsyncIterator[Client]:
    """`serve_in_memory` within `seconds`, start-up scan and all."""
    with anyio.fail_after(seconds):
        async with serve_in_memory(root, mode) as client:
            yield client


@asynccontextmanager
async def serve_in_memory(
    root: Path,
    mode: str = "legacy",
    *,
    message_handler: MessageHandlerFnT | None = None,
) -> AsyncIterator[Client]:
    """The server `kbkit serve --root ROOT` builds, run in this process, with the real mcp client
    connected over the SDK's memory transport: protocol behaviour without a process start.

    Launching, stdio framing and boot lines are `serve_stdio`'s to test."""
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase
    from kbkit.server.factory import create_server

    settings = load_settings(root)
    kb = KnowledgeBase.open(settings)
    try:
        kb.scan()
        server = create_server(kb, watch=settings.watch)
        async with Client(server, mode=mode, cache=None, message_handler=message_handler) as client:
            yield client
    finally:
        kb.close()
