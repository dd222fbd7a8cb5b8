"""`kbkit connect`."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kbkit.cli.common import RootOption, stderr_line
from kbkit.errors import ExitCode


def connect(
    url: Annotated[
        str, typer.Argument(help="The kb server's streamable HTTP URL, e.g. https://kb.internal/mcp.")
    ],
    root: RootOption = None,
) -> None:
    """Relay stdio to a remote kb server, sending KBKIT_TOKEN (your personal token), else MCP_TOKEN
    (the team's shared one), each from the environment, else .env.local."""
    from kbkit.server.relay import run

    # The relay is its own process boundary: every failure is one stderr line and an exit code.
    code = run(url, root, stderr_line)
    if code != ExitCode.OK:
        raise typer.Exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    # The agent closed stdin and nothing is left to do: skip the interpreter's teardown of the SDK's
    # type models, which on a busy machine takes longer than an agent waits for a server to go.
    os._exit(0)
