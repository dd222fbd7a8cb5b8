"""`kbkit trust`."""

from __future__ import annotations

from typing import Annotated

import typer

from kbkit.cli.common import RootOption


def trust(
    parts: Annotated[
        list[str] | None,
        typer.Argument(
            help="Only these parts (e.g. memory, servers.wiki, sync.remote_url, skills); default: all."
        ),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Show what changed since you trusted it; allow nothing.")
    ] = False,
    root: RootOption = None,
) -> None:
    """Review and allow what the repository asks of this machine: team servers, [memory], the remote
    kb URL, skill sources, a kb folder outside the project, and who may call `kbkit serve --http`.
    Shows what changed since you last trusted each part; allows all of it, or the parts you name."""
    from kbkit.config import load_settings
    from kbkit.config.trust import trust_path
    from kbkit.diagnostics.trust import allow, review

    settings = load_settings(root, as_written=True)
    waiting = review(settings)
    if not waiting:
        typer.echo("nothing waits: what the repository asks of this machine is trusted, or your own")
        return
    named = set(parts or ())
    for item in waiting:
        if named and item.key not in named:
            continue
        typer.echo(f"{item.key}: {item.heading}")
        for line in item.lines:
            typer.echo(line)
    if show:
        keys = " ".join(item.key for item in waiting)
        typer.echo(f"to allow: kbkit trust (all), or kbkit trust PART ... (parts: {keys})")
        return
    done = allow(settings, waiting, parts or ())
    typer.echo(
        f"trusted: {', '.join(item.key for item in done)} for {settings.root} (recorded in {trust_path()})"
    )
    typer.echo("restart your agents; run `kbkit sync` so their files have what was left out until now")
