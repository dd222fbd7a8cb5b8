"""Shared test fixtures: real projects on disk, and the real `mcp` client talking to `kbkit serve`."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ERAS = ["legacy", "auto"]
"""`legacy` runs the 2025-11-25 initialize handshake; `auto` discovers and speaks 2026-07-28."""

SAMPLE_DOCS: dict[str, str | bytes] = {
    "guide/getting-started.md": "---\ntitle: Getting started\n---\n# Getting started\n\n"
    "Install kbkit, then run the indexer over the docs folder.\n\n## Troubleshooting\n\nRead the boot lines.\n",
    "adr/0001-guards.md": "# One guard sequence\n\nEvery read of a document goes through the guard sequence.\n",
    "runbooks/deploy.rst": "Deploying\n=========\n\nRoll out the service with the blue green strategy.\n",
    "notes.txt": "Plain text notes about SQLite write-ahead logging (WAL).\n",
}


def write_files(base: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_project(
    root: Path, files: Mapping[str, str | bytes] | None = None, config: str = '[kb]\npath = "docs"\n'
) -> Path:
    """A project folder with kbkit.toml and a docs/ folder holding `files`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kbkit.toml").write_text(config, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    write_files(root / "docs", SAMPLE_DOCS if files is None else files)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def kbkit_command() -> list[str]:
    """The installed `kbkit` console script next to this interpreter (as agents run it)."""
    script = Path(sys.executable).parent / "kbkit"
    if script.exists():
        return [str(script)]
    found = shutil.which("kbkit")
    return [found] if found else [sys.executable, "-m", "kbkit"]


@asynccontextmanager
async def serve_stdio(
    root: Path, mode: str = "legacy", *, stderr_path: Path | None = None, env: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """`kbkit serve --root ROOT` in a subprocess, with the real mcp client connected over stdio."""
    command = kbkit_command()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--root", str(root)],
        env={**os.environ, **(env or {})},
    )
    log_path = stderr_path or root / "serve-stderr.log"
    with open(log_path, "w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode=mode, cache=None, read_timeout_seconds=30
        ) as c:
            yield c
