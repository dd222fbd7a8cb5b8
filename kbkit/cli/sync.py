"""`kbkit sync`."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from kbkit.cli.common import RootOption
from kbkit.errors import ExitCode


def sync(
    root: RootOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the diffs; write nothing.")] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help=(
                "Write nothing; exit 1 when a client config is missing, out of date or edited by hand, "
                "the .gitignore block is out of date, a generated file is not ignored by git, "
                "or a skill is missing or changed (skills: what kbkit skills check finds)."
            ),
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    only: Annotated[list[str] | None, typer.Option("--only", help="Only this client (repeatable).")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace hand-edited or foreign kb entries.")
    ] = False,
    adopt: Annotated[
        bool, typer.Option("--adopt", help="Take client files that git tracks out of git (git rm --cached).")
    ] = False,
) -> None:
    """Write every agent's config for the kb server from kbkit.toml (rerun after a clone or key rotation)."""
    from kbkit.config import load_settings
    from kbkit.sync.planner import sync as run_sync

    mode = "check" if check else "dry-run" if dry_run else "write"
    report = run_sync(
        load_settings(root),
        only=only,
        force=force,
        mode=mode,
        adopt=adopt,
        confirm=_ask if sys.stdin.isatty() else None,
    )
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        if mode == "dry-run":
            for diff in report.diffs.values():
                typer.echo(diff, nl=False)
        labels = [o.client + (f" [{o.server}]" if o.server else "") for o in report.outcomes]
        width = max([len(label) for label in labels] + [6])
        path_width = max([len(o.path) for o in report.outcomes] + [4])
        for label, outcome in zip(labels, report.outcomes, strict=True):
            about = [outcome.what] if outcome.what and not (outcome.reason or "").startswith("pre-") else []
            about += [outcome.reason] if outcome.reason else []  # what the line is about, and why
            action = outcome.action + (f" ({'; '.join(about)})" if about else "")
            step = f"  -> {outcome.next_step}" if outcome.next_step else ""
            typer.echo(f"{label:<{width}}  {outcome.path:<{path_width}}  {action}{step}")
        typer.echo(f".gitignore: kbkit block {report.gitignore}")
        for note in report.notes:
            typer.echo(f"note: {note}")
        for path in report.adopted:
            typer.echo(f"{path}: taken out of git (git rm --cached); commit the removal and .gitignore")
        for step in report.caveats if mode == "write" else []:
            typer.echo(f"step in the agent: {step}")
        for problem in report.failures:
            typer.echo(f"problem: {problem}", err=True)
    if check and report.failures:
        raise typer.Exit(code=ExitCode.CHECK_FAILED)


def _ask(plan: str) -> bool:
    """At a terminal, the adoption plan and a yes/no question (no means: refused, as without one)."""
    return typer.confirm(f"{plan}\nDo it now?", default=False, err=True)
