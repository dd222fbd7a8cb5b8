"""What several commands share: the --root option, stderr status lines, opening the knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kbkit.config import Settings
    from kbkit.kb.base import KnowledgeBase

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
