"""The Markdown an office file becomes, written piece by piece within the text and CPU budgets.

Headings are recorded with their offsets as they are written, so the outline (sections, search
hits' `section`) is the converter's own, never guessed back from the text. Tables are cut to
TABLE_MAX_ROWS x TABLE_MAX_COLUMNS with a line saying how much was left out.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import islice

from kbkit.errors import DocumentRefused
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title

MAX_TEXT_CHARS = 16 * 1024 * 1024
"""Converted text beyond this: the file is skipped, conversion stops there (as PDF_MAX_TEXT_CHARS)."""
CPU_SECONDS = 15.0
"""CPU time (this thread's) one conversion may take, checked at every block written: with
opening the file, any one file stays within 20 s."""
TABLE_MAX_ROWS = 200
"""Rows of one table (a sheet's included) written; the rest are counted in a closing line."""
TABLE_MAX_COLUMNS = 30
"""Columns of one table written; a line says how many were left out."""
CELL_CHARS = 500
"""A table cell's text is cut to this many characters."""
MAX_SLIDES = 2_000
"""More slides than this: the deck is skipped before any slide is read (as PDF_MAX_PAGES)."""


def check_slides(count: int, deck: str) -> None:
    """Refuse a deck (`deck`: what the message calls it) of more than MAX_SLIDES slides, unread."""
    if count > MAX_SLIDES:
        raise DocumentRefused(
            "over-budget", f"{deck} has {count:,} slides, over the {MAX_SLIDES:,}-slide budget"
        )


class MarkdownWriter:
    """Markdown text and its outline, refused once over MAX_TEXT_CHARS or CPU_SECONDS."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._parts: list[str] = []
        self._size = 0
        self.outline: list[Heading] = []
        self.headings: list[str] = []
        self._in_list = False
        self._started = time.thread_time()

    def check(self) -> None:
        """Refuse the file once its CPU budget is spent (called by the converters' loops too)."""
        if time.thread_time() - self._started > CPU_SECONDS:
            raise DocumentRefused(
                "over-budget", f"converting the {self.kind} took over {CPU_SECONDS:.0f} s; stopped"
            )

    def _write(self, text: str) -> None:
        self.check()
        self._size += len(text)
        if self._size > MAX_TEXT_CHARS:
            raise DocumentRefused(
                "over-budget",
                f"the {self.kind}'s text is over {MAX_TEXT_CHARS:,} characters; split it or save it as text",
            )
        self._parts.append(text)

    def _close_list(self) -> None:
        if self._in_list:
            self._in_list = False
            self._write("\n")

    def heading(self, level: int, text: str) -> None:
        title = " ".join(text.split())
        if not title:
            return
        self._close_list()
        level = min(max(level, 1), 6)
        if len(self.outline) < MAX_OUTLINE:
            self.outline.append(Heading(self._size, level, clean_title(title)))
        self.headings.append(title)
        self._write(f"{'#' * level} {title}\n\n")

    def paragraph(self, text: str) -> None:
        text = text.strip()
        if text:
            self._close_list()
            self._write(_escape_block(text) + "\n\n")

    def list_item(self, text: str, depth: int = 0, ordered: bool = False) -> None:
        text = " ".join(text.split())
        if text:
            marker = "1." if ordered else "-"
            self._in_list = True
            self._write(f"{'  ' * min(max(depth, 0), 8)}{marker} {text}\n")

    def table(
        self,
        rows: Iterable[Sequence[object]],
        total_rows: int | Callable[[int], int | None] | None = None,
        total_columns: int | None = None,
    ) -> int:
        """`rows` as a Markdown table (the first row is its header): at most TABLE_MAX_ROWS rows
        (no more are taken from `rows`) of TABLE_MAX_COLUMNS cells, empty trailing columns left
        out. `total_rows`/`total_columns`, when known, say how many there are in all (`total_rows`
        may be worked out from the rows shown, once read); else a row past the cap says only that
        more follow. Returns the number of cells written."""
        shown: list[list[str]] = []
        columns = 0
        cut = False
        for row in rows:
            self.check()
            if len(shown) == TABLE_MAX_ROWS:
                cut = True
                break
            cells = [_cell(value) for value in islice(row, TABLE_MAX_COLUMNS + 1)]
            filled = max((n + 1 for n, cell in enumerate(cells) if cell), default=0)
            columns = max(columns, filled)
            shown.append(cells)
        width = min(columns, TABLE_MAX_COLUMNS)
        if not shown or width == 0:
            return 0
        self._close_list()
        lines = ["| " + " | ".join((cells + [""] * width)[:width]) + " |" for cells in shown]
        lines.insert(1, "|" + " --- |" * width)
        notes = []
        if callable(total_rows):
            total_rows = total_rows(len(shown)) if cut else None
        if total_rows is not None and total_rows > len(shown):
            notes.append(f"… {total_rows - len(shown):,} more rows")
        elif cut:
            notes.append("… more rows")
        more_columns = (total_columns or columns) - width
        if more_columns > 0:
            notes.append(f"… {more_columns:,} more columns")
        tail = "\n" + "; ".join(notes) + " not shown\n\n" if notes else "\n"
        self._write("\n".join(lines) + "\n" + tail)
        return width * len(shown)

    def text(self) -> str:
        self._close_list()
        return "".join(self._parts)


def _escape_block(text: str) -> str:
    """A paragraph that would read as a heading, list, quote or table line is escaped."""
    if text[0] in "#>|-+*" or text.startswith(("```", "~~~")):
        return "\\" + text
    return text


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    text = value.isoformat() if isinstance(value, datetime.date | datetime.time) else str(value)
    text = " ".join(text.split())[:CELL_CHARS]
    return text.replace("\\", "\\\\").replace("|", "\\|")
