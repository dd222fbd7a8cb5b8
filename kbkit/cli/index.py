"""`kbkit index`."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from kbkit.cli.common import RootOption, open_kb

if TYPE_CHECKING:
    from kbkit.kb.indexer import ProgressFn
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
        with _progress() as progress:
            report = kb.scan(progress)
        embedded = None
        if kb.hybrid is not None:
            with _progress("embedding") as progress:
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


@contextmanager
def _progress(label: str = "indexing") -> Iterator[ProgressFn]:
    """A progress bar on a terminal (stderr); plain lines, at most one a second, when piped."""
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(label, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    from kbkit.kb.indexer import Progress as Line

    last = {"at": 0.0, "done": -1}

    def line(done: int, total: int) -> None:
        if done != last["done"] and (done in (0, total) or time.monotonic() - last["at"] >= 1):
            last.update(at=time.monotonic(), done=done)
            typer.echo(Line(done, total).line().replace("indexing", label, 1), err=True)

    yield line
