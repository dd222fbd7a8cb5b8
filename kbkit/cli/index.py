"""`kbkit index`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kbkit.cli.common import RootOption, open_kb, progress_shown

if TYPE_CHECKING:
    from kbkit.kb.semantic import EmbedReport


def index(
    root: RootOption = None,
    skipped: Annotated[
        bool,
        typer.Option("--skipped", help="List the files that were not indexed (or only in part), and why."),
    ] = False,
) -> None:
    """Bring the index up to date with the kb folder (incremental); with hybrid search on, embed too."""
    from kbkit.diagnostics import describe_excluded, describe_scan
    from kbkit.kb.fields import describe_cap

    _, kb = open_kb(root, deep=True)
    try:
        with progress_shown() as progress:
            report = kb.scan(progress)
        embedded = None
        if kb.hybrid is not None:
            with progress_shown("embedding") as progress:
                embedded = kb.embed(progress)
        for repaired in (kb.store.repaired, report.interrupted):
            if repaired:
                typer.echo(f"index repaired: {repaired}")
        typer.echo(describe_scan(report))
        if embedded is not None:
            typer.echo(describe_vectors(embedded, report.documents))
        if skipped:
            listed = 0
            for path, reason in kb.store.skipped():
                typer.echo(f"  skipped {path}: {reason}")
                listed += 1
            for path, size in kb.store.partly_indexed():
                typer.echo(f"  indexed in part {path}: {size} bytes of text, {describe_cap()}")
                listed += 1
            if not listed:
                typer.echo("  nothing skipped: every file of a registered type is indexed whole")
            typer.echo(f"  {describe_excluded(report)}")
    finally:
        kb.close()


def describe_vectors(embedded: EmbedReport, documents: int) -> str:
    """The embedding pass's own line: its time apart from the index's (it is most of the work)."""
    if embedded.embedded:
        reused = f", {embedded.reused} reused" if embedded.reused else ""
        line = (
            f"vectors: {embedded.embedded} document{'s' * (embedded.embedded != 1)} embedded "
            f"({embedded.chunks} chunks{reused}) in {embedded.seconds:.2f} s"
        )
    else:
        line = f"vectors: up to date ({embedded.seconds:.2f} s)"
    left = documents - embedded.total
    return line + (f"; {left} of {documents} documents still wait for vectors" if left > 0 else "")
