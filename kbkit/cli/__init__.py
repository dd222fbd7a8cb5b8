"""The `kbkit` command. Thin: parse, call the library, print; one module per command.

Errors are not handled here or in any command: `boundary.KbkitGroup` turns every failure into
one line and the exit code docs/commands.md's table gives (kbkit.errors.ExitCode).
"""

from __future__ import annotations

from typing import Annotated

import typer

from kbkit import __version__
from kbkit.cli import (
    connect,
    doctor,
    evaluate,
    index,
    init,
    run,
    search,
    serve,
    servers,
    skills,
    sync,
    token,
    trust,
)
from kbkit.cli.boundary import KbkitGroup

app = typer.Typer(
    name="kbkit",
    cls=KbkitGroup,
    help="One MCP server entry, `kb`, for your team's knowledge base, and one way to wire agents to it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no <bool> metavars on flags, no box drawing in agents' logs
)
for command in (
    init.init,
    index.index,
    search.search,
    serve.serve,
    sync.sync,
    connect.connect,
    run.run,
    doctor.doctor,
    trust.trust,
):
    app.command()(command)
app.command(name="eval")(evaluate.evaluate)
app.add_typer(skills.app, name="skills")
app.add_typer(token.app, name="token")
app.add_typer(servers.app, name="servers")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kbkit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", envvar="KBKIT_DEBUG", help="Print the traceback of an error (also: KBKIT_DEBUG=1)."
        ),
    ] = False,
) -> None:
    """Options for every command (they go before the command's name)."""


def main() -> None:
    app()
