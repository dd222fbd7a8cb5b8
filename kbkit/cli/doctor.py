"""`kbkit doctor`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kbkit.cli.common import RootOption
from kbkit.errors import ExitCode


def doctor(
    root: RootOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    launch: Annotated[
        bool,
        typer.Option(
            "--launch",
            help="Start every server entry kbkit wrote on this machine as its agent would (the agent's "
            "environment, dialect and folder), do the handshake, list its tools, stop it.",
        ),
    ] = False,
) -> None:
    """Check everything kbkit depends on, with a fix for each problem (exit 0 all ok, 1 anything to fix)."""
    from kbkit.diagnostics import doctor_report, run_checks, worst_status

    if launch:
        _launch(root, as_json)
        return

    findings = run_checks(root)
    if as_json:
        typer.echo(json.dumps(doctor_report(findings), indent=2))
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for finding in findings:
            typer.echo(f"{marks[finding.status]}  {finding.check}: {finding.finding}")
            if finding.fix and finding.status != "ok":
                typer.echo(f"      fix: {finding.fix}")
    if worst_status(findings) != "ok":
        raise typer.Exit(code=ExitCode.CHECK_FAILED)


def _launch(root: RootOption, as_json: bool) -> None:
    import tempfile
    from pathlib import Path

    import anyio

    from kbkit.config import load_settings
    from kbkit.diagnostics.launch import agent_environment, grid, launch_all, written_entries

    settings = load_settings(root)
    entries = written_entries(settings)
    if not entries:
        typer.echo("no entries to start: kbkit sync has written none on this machine (run kbkit sync)")
        raise typer.Exit(code=ExitCode.CHECK_FAILED)
    with tempfile.TemporaryDirectory(prefix="kbkit-launch-") as logs:
        results = anyio.run(launch_all, settings, entries, agent_environment(), Path(logs))
    failed = {entry: result for entry, result in results.items() if not result.ok}
    if as_json:
        rows = [
            {"agent": e.client, "server": e.server, "file": e.path, **vars(r)} for e, r in results.items()
        ]
        typer.echo(json.dumps({"entries": rows}, indent=2))
    else:
        for line in grid(results):
            typer.echo(line)
        for entry, result in results.items():
            if result.sign_in:
                typer.echo(f"{entry.client} / {entry.server}: {result.detail}: sign in from the agent")
        said: dict[tuple[str, str], list[str]] = {}
        for entry, result in failed.items():  # one line per failure, naming every agent it hits
            said.setdefault((entry.server, result.detail), []).append(entry.client)
        for (server, detail), agents in said.items():
            fix = next(r.fix for e, r in failed.items() if e.server == server and r.detail == detail)
            typer.echo(f"{server} for {', '.join(agents)}: {detail}")
            if fix:
                typer.echo(f"      fix: {fix}")
    if failed:
        raise typer.Exit(code=ExitCode.CHECK_FAILED)
