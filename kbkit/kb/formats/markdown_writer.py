"""Writing Markdown: the text an office file becomes, piece by piece within its budget, and code
fences that hold any content. A writer: Markdown files are read by markdown.py.

Headings are recorded with their offsets as they are written, so the outline (sections, search
hits' `section`) is the converter's own, never guessed back from the text. Tables are cut to the
budget's rows and columns with a line saying how much was left out.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Sequence
from itertools import islice

from kbkit.kb.formats.budget import Meter
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title


class MarkdownWriter:
    """Markdown text and its outline, written within the meter's budget (text, CPU, tables)."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.budget = meter.budget
        self._parts: list[str] = []
        self._size = 0
        self.outline: list[Heading] = []
        self.headings: list[str] = []
        self._in_list = False

    def check(self) -> None:
        """Refuse the file once its CPU budget is spent (called by the converters' loops too)."""
        self.meter.check()

    def _write(self, text: str) -> None:
        self.meter.check()
        self.meter.take(len(text))
        self._size += len(text)
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
        """`rows` as a Markdown table (the first row is its header): at most the budget's table
        rows (no more are taken from `rows`) of its table columns, empty trailing columns left
        out. `total_rows`/`total_columns`, when known, say how many there are in all (`total_rows`
        may be worked out from the rows shown, once read); else a row past the cap says only that
        more follow. Returns the number of cells written."""
        most_rows, most_columns, cell_chars = (
            self.budget.table_rows,
            self.budget.table_columns,
            self.budget.cell_chars,
        )
        shown: list[list[str]] = []
        columns = 0
        cut = False
        for row in rows:
            self.check()
            if len(shown) == most_rows:
                cut = True
                break
            cells = [_cell(value, cell_chars) for value in islice(row, most_columns + 1)]
            filled = max((n + 1 for n, cell in enumerate(cells) if cell), default=0)
            columns = max(columns, filled)
            shown.append(cells)
        width = min(columns, most_columns)
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


def _cell(value: object, chars: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    text = value.isoformat() if isinstance(value, datetime.date | datetime.time) else str(value)
    text = " ".join(text.split())[:chars]
    return text.replace("\\", "\\\\").replace("|", "\\|")


# -- code fences ------------------------------------------------------------------------------------


def fence_for(content: str) -> str:
    """A backtick fence longer than any run of backticks in `content`. The longest run is found
    by doubling and then halving a probe (C-speed `in`), so a run of millions costs a few dozen
    scans, and no list of matches is ever built."""
    width = 3
    while "`" * width in content:
        width *= 2
    if width == 3:
        return "```"
    low, high = width // 2, width  # a run of `low` is in the content, one of `high` is not
    while high - low > 1:
        middle = (low + high) // 2
        if "`" * middle in content:
            low = middle
        else:
            high = middle
    return "`" * high


def fenced(content: str, language: str) -> str:
    """`content` as a fenced code block with `language` as its info string."""
    fence = fence_for(content)
    return f"{fence}{language}\n{content}\n{fence}"
