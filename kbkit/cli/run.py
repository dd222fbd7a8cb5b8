"""`kbkit run`."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kbkit.cli.common import RootOption, stderr_line
from kbkit.errors import ExitCode


def run(
    name: Annotated[str, typer.Argument(help="The team server's name: its [servers.NAME] in kbkit.toml.")],
    root: RootOption = None,
) -> None:
    """Start a team server from kbkit.toml with its variables from .env.local (what agents' entries run)."""
    from kbkit.config import load_settings
    from kbkit.server.team import run as run_server

    stdio = (sys.stdin.buffer, sys.stdout.buffer)
    code = run_server(load_settings(root), name, stderr_line, stdio)  # a stdio server replaces this process
    if code != ExitCode.OK:
        raise typer.Exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as kbkit connect: the relay is done, skip the interpreter's slow teardown
