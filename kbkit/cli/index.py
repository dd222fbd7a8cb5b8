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
        bool, typer.Option("--skipped", help="List the files that were not indexed, and why.")
    ] = False,
) -> None:
    """Bring the index up to date with the kb folder (incremental)."""
    from kbkit.diagnostics import describe_scan

    _, kb = open_kb(root, deep=True)
    try:
        with _progress() as progress:
            report = kb.scan(progress)
        for repaired in (kb.store.repaired, report.interrupted):
            if repaired:
                typer.echo(f"index repaired: {repaired}")
        typer.echo(describe_scan(report))
        if skipped:
            for path, reason in kb.store.skipped():
                typer.echo(f"  skipped {path}: {reason}")
    finally:
        kb.close()


@contextmanager
def _progress() -> Iterator[ProgressFn]:
    """A progress bar on a terminal (stderr); plain lines, at most one a second, when piped."""
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("indexing", total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    from kbkit.kb.indexer import Progress as Line

    last = {"at": 0.0, "done": -1}

    def line(done: int, total: int) -> None:
        if done != last["done"] and (done in (0, total) or time.monotonic() - last["at"] >= 1):
            last.update(at=time.monotonic(), done=done)
            typer.echo(Line(done, total).line(), err=True)

    yield line
