"""What hybrid search says about itself: the line the boot lines and the doctor print, and the
lines a serving process logs while it embeds in the background.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Protocol

from kbkit.kb.semantic.chunks import stored_model
from kbkit.kb.semantic.embedding import GROUP_DOCUMENTS, EmbedReport, ProgressFn, waiting_count
from kbkit.kb.semantic.model import ModelFiles

PROGRESS_SECONDS = 10.0
"""A serving process logs how far its embedding pass has got at most this often."""


class HybridState(Protocol):
    """What `describe` reads of a `Hybrid`: its model, and whether its last pass failed."""

    @property
    def files(self) -> ModelFiles: ...

    @property
    def last_error(self) -> str | None: ...


def waiting(conn: sqlite3.Connection, files: ModelFiles) -> tuple[int, int]:
    """(documents waiting for vectors of this model, documents in the index)."""
    total: int = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    return waiting_count(conn, stored_model(files.identity)), total


def describe(
    hybrid: HybridState | None, off_reason: str | None, counted: tuple[int, int] | None
) -> tuple[bool, str]:
    """(fine, the line the boot lines and the doctor print): is hybrid on, with which model, how
    many documents still wait for vectors (`counted`, from `waiting`; nothing said when none do),
    or why it is off."""
    if hybrid is None:
        if off_reason == "[search] semantic = false":
            return True, "search: BM25 (hybrid off: [search] semantic = false)"
        return False, f"search: BM25 only; hybrid is on in kbkit.toml but cannot run: {off_reason}"
    line = f"search: hybrid, BM25 + {hybrid.files.shown}"
    if counted is None:  # no index yet, or not counted in time: a server embeds once it is indexed
        return True, f"{line}; vectors are computed in the background once the index is up to date"
    left, total = counted
    if left:
        line += (
            f"; {left:,} of {total:,} document{'s' * (total != 1)} wait for vectors "
            "(computed in the background while serving, or by `kbkit index`)"
        )
    if hybrid.last_error:
        return False, f"{line}; the last embedding pass failed: {hybrid.last_error}"
    return not left, line


def finished_line(report: EmbedReport) -> str:
    """The line said when a pass with work is over."""
    reused = f", {report.reused} reused" if report.reused else ""
    return (
        f"search: embedded {report.embedded} documents ({report.chunks} chunks{reused}) "
        f"in {report.seconds:.1f} s; {report.total} have vectors"
    )


def progress_lines(log: Callable[[str], None], every: float = PROGRESS_SECONDS) -> ProgressFn:
    """A progress callback that logs 'search: embedding 1,200 of 7,425 documents' when a pass has
    more than one group of work (not for an edit or two), then at most every `every` seconds."""
    last = {"at": 0.0}

    def line(done: int, total: int) -> None:
        now = time.monotonic()
        if total > GROUP_DOCUMENTS and done < total and (done == 0 or now - last["at"] >= every):
            last["at"] = now
            log(f"search: embedding {done:,} of {total:,} documents")

    return line
