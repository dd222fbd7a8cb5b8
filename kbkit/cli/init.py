"""`kbkit init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def init(
    root: Annotated[Path, typer.Option("--root", help="Project folder (default: here).")] = Path("."),
    kb_path: Annotated[
        str | None,
        typer.Option(
            "--kb-path",
            help="The docs folder, relative to the root (default: docs, or the pages folder of the "
            "site generator found: Hugo's content, mdBook's src, ...).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing kbkit.toml.")] = False,
) -> None:
    """Write a commented starter kbkit.toml, the kb folder and the managed .gitignore block."""
    from kbkit.scaffold import NEXT_STEPS, init_project

    result = init_project(root, kb_path=kb_path, force=force)
    if result.config_written:
        typer.echo(f"wrote {result.config_path}")
    elif force:
        typer.echo(f"{result.config_path} unchanged (it already holds the starter file)")
    else:
        typer.echo(f"kept the existing {result.config_path} (--force overwrites it)")
    if result.kb_folder_created:
        typer.echo(f"created the kb folder {result.kb_folder}")
    if result.outside:
        typer.echo(
            f"note: the kb folder {result.kb_folder} is outside the project: agents of people who "
            "clone it find no documents there unless that folder exists on their machine too"
        )
    if result.found is not None:
        typer.echo(f"kb folder: {result.found.folder} ({result.found.why}): {_count(result.documents)} found")
    else:
        typer.echo(f"kb folder: {_count(result.documents)} found")
    if result.suggestion is not None:
        hint = result.suggestion
        typer.echo(
            f"note: {hint.folder} looks like the documentation ({hint.why}, {_count(hint.documents)}); "
            f"to index it instead: kbkit init --force --kb-path {hint.folder}"
        )
    typer.echo(".gitignore: managed block " + ("updated" if result.gitignore_changed else "already current"))
    typer.echo("next:")
    steps = NEXT_STEPS[1:] if result.documents else NEXT_STEPS  # documents there: no need to ask for them
    for number, step in enumerate(steps, 1):
        typer.echo(f"  {number}. {step}")


def _count(documents: int) -> str:
    return f"{documents} document{'s' * (documents != 1)}"
