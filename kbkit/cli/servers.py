"""`kbkit servers`: the team's other MCP servers (`[servers.<name>]` in kbkit.toml)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kbkit.cli.common import RootOption
from kbkit.errors import ExitCode

app = typer.Typer(
    help="The team's other MCP servers, declared in kbkit.toml and wired by kbkit sync.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("import")
def import_servers(
    root: RootOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would change; write nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Do it without asking (needed without a terminal).")
    ] = False,
) -> None:
    """Take the servers in the agents' files into kbkit.toml, their secrets into .env.local, then sync."""
    from kbkit.config import load_settings
    from kbkit.sync.importer import apply_import, plan_import
    from kbkit.sync.planner import sync as run_sync

    settings = load_settings(root)
    plan = plan_import(settings)
    for line in plan.skipped:
        typer.echo(f"left as it is: {line}", err=True)
    if not plan.servers:
        typer.echo("nothing to import: no server in the agents' files that kbkit.toml lacks")
        return
    typer.echo(plan.diff(), nl=False)
    names = ", ".join(plan.servers)
    if dry_run:
        typer.echo(f"would import {names}; rerun without --dry-run to do it")
        return
    if not yes:
        if not sys.stdin.isatty():
            typer.echo("not done: rerun with --yes to import without a terminal to confirm at", err=True)
            raise typer.Exit(ExitCode.CHECK_FAILED)
        if not typer.confirm(f"Import {names}?", default=False, err=True):
            raise typer.Exit(ExitCode.CHECK_FAILED)
    after = apply_import(settings, plan)
    typer.echo(f"imported {names} into kbkit.toml" + (", secrets into .env.local" if plan.variables else ""))
    report = run_sync(after)
    for outcome in report.outcomes:
        if outcome.server is not None and outcome.action != "unchanged":
            typer.echo(f"{outcome.client} [{outcome.server}]  {outcome.path}  {outcome.action}")
    for outcome in report.outcomes:
        if outcome.action == "conflict":
            typer.echo(f"problem: {outcome.path}: {outcome.reason}", err=True)
