"""`kbkit search`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kbkit.cli.common import RootOption, open_kb


def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    root: RootOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most hits to show (1-100).")] = 10,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Only paths starting with this.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON (as the tool returns it).")
    ] = False,
) -> None:
    """Search the knowledge base from the terminal, exactly as agents do."""
    _, kb = open_kb(root)
    try:
        if kb.stale():  # a fresh index is searched as it is: no lock, no rescan
            kb.scan()
        result = kb.search(query, limit=limit, path_prefix=prefix, max_tokens=None)
    finally:
        kb.close()
    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return
    for number, hit in enumerate(result.results, 1):
        typer.echo(f"{number:>2}. {hit.title}  ({hit.path}, score {hit.score:.2f})")
        if hit.section:
            typer.echo(f"    section: {hit.section} (offset {hit.offset})")
        typer.echo(f"    {hit.snippet[:200]}")
        if hit.folded:
            typer.echo(f"    also in: {', '.join(hit.folded)}")
    if result.note:
        typer.echo(result.note)
