"""`kbkit trust`."""

from __future__ import annotations

import typer

from kbkit.cli.common import RootOption


def trust(root: RootOption = None) -> None:
    """Allow what kbkit.toml asks of this machine (review it first): its [memory] command, its team
    servers, and auth settings that widen who may call `kbkit serve --http`."""
    from kbkit.config import load_settings
    from kbkit.config.trust import (
        auth_trust,
        command_trust,
        trust_auth,
        trust_command,
        trust_path,
        trust_servers,
    )

    settings = load_settings(root)
    for name, state in trust_servers(settings).items():  # the team servers kbkit starts
        if state.tracked:
            verb = "already trusted" if state.trusted else "trusted"
            typer.echo(f"{verb}: [servers.{name}] `{' '.join(state.command)}` for {settings.root}")
    before = command_trust(settings)
    auth = auth_trust(settings)
    if before is None and not auth.current:
        if not settings.servers:
            typer.echo("nothing to trust: kbkit.toml has no [memory] command, team servers or auth settings")
        return
    if before is not None:
        shown = " ".join(before.command)
        if not before.tracked:
            typer.echo(f"nothing to trust: [memory] command `{shown}` comes from kbkit.local.toml (your own)")
        else:
            trust_command(settings)
            verb = "already trusted" if before.trusted else "trusted"
            typer.echo(f"{verb}: `{shown}` for {settings.root} (recorded in {trust_path()})")
            if not before.trusted:
                typer.echo(
                    "restart your agents so kbkit serve starts it; a changed command needs kbkit trust again"
                )
    if auth.current:
        trust_auth(settings)
        keys = ", ".join(key.removeprefix("server.") for key in auth.current)
        if auth.widened:
            typer.echo(f"trusted: kbkit.toml's {keys} for {settings.root} ({'; '.join(auth.widened)})")
            typer.echo("restart kbkit serve --http to apply them; a change that widens access needs it again")
        else:
            typer.echo(f"already trusted: kbkit.toml's {keys}")
