"""`kbkit trust`."""

from __future__ import annotations

import typer

from kbkit.cli.common import RootOption


def trust(root: RootOption = None) -> None:
    """Allow this project's [memory] command and team servers from kbkit.toml to run here (review first)."""
    from kbkit.config import load_settings
    from kbkit.config.trust import command_trust, trust_command, trust_path, trust_servers

    settings = load_settings(root)
    for name, state in trust_servers(settings).items():  # the team servers kbkit starts
        if state.tracked:
            verb = "already trusted" if state.trusted else "trusted"
            typer.echo(f"{verb}: [servers.{name}] `{' '.join(state.command)}` for {settings.root}")
    before = command_trust(settings)
    if before is None:
        if not settings.servers:
            typer.echo("nothing to trust: kbkit.toml has no [memory] command")
        return
    shown = " ".join(before.command)
    if not before.tracked:
        typer.echo(f"nothing to trust: [memory] command `{shown}` comes from kbkit.local.toml (your own)")
        return
    trust_command(settings)
    verb = "already trusted" if before.trusted else "trusted"
    typer.echo(f"{verb}: `{shown}` for {settings.root} (recorded in {trust_path()})")
    if not before.trusted:
        typer.echo("restart your agents so kbkit serve starts it; a changed command needs kbkit trust again")
