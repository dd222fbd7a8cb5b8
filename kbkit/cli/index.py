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
            typer.echo(f"search: hybrid, {embedded.total} of {report.documents} documents embedded")
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
