"""What several commands share: the --root option, stderr status lines, opening the knowledge base,
the progress of a long pass."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kbkit.config import Settings
    from kbkit.kb.base import KnowledgeBase
    from kbkit.kb.indexer import ProgressFn

RootOption = Annotated[
    Path | None,
    typer.Option("--root", help="Project folder holding kbkit.toml (default: the nearest one above here)."),
]


def stderr_line(line: str) -> None:
    typer.echo(f"[kbkit] {line}", err=True)


def open_kb(
    root: Path | None, *, deep: bool = False, deferred: bool = False
) -> tuple[Settings, KnowledgeBase]:
    """`deep`: also check (and repair) the full-text index itself, as `kbkit index` does.
    `deferred`: leave opening the index file to `KnowledgeBase.prepare()` (the server's background)."""
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase

    settings = load_settings(root)
    return settings, KnowledgeBase.open(settings, deep=deep, deferred=deferred)


@contextmanager
def progress_shown(label: str = "indexing") -> Iterator[ProgressFn]:
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
