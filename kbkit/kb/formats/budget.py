"""What one file may cost to read (docs/adr/0018, 0033, 0034): every limit defined once, and the
one meter that holds a reading to them.

A file is a program its author wrote: a 2 KB PDF can ask for 600,000 form drawings, a 200 KB zip
can unpack to 64 GiB. Each reader takes a `Budget` (the shipped one unless a caller passes
another: tests pass small ones) and opens a `Meter` on it; over any limit the file is skipped
with reason "over-budget" and one line saying which.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NoReturn

from kbkit.errors import DocumentRefused

MIB = 1024 * 1024


@dataclass(frozen=True)
class Budget:
    """The limits one file's reading is held to. Counts stop a bomb at the same point on any
    machine; the CPU limit is the backstop that keeps any one file within about 20 s."""

    # -- every format ------------------------------------------------------------------------
    text_chars: int = 16 * MIB
    """Text a file may become (a PDF's pages, the Markdown a page, notebook or office file turns
    into): past it the file is skipped and reading stops there."""
    cpu_seconds: float = 15.0
    """CPU time (the reading thread's) one file may take: with opening it, within 20 s."""
    heading_chars: int = 2_000
    """A heading's text is read this far (its title is cut at sections.TITLE_CHARS anyway)."""

    # -- tables (office files, HTML pages) ----------------------------------------------------
    table_rows: int = 200
    """Rows of one table (a sheet's included) written; the rest are counted in a closing line."""
    table_columns: int = 30
    """Columns of one table written; past them, a note (office files) or the last column (HTML)."""
    cell_chars: int = 500
    """A table cell's text is cut to this many characters."""
    workbook_cells: int = 60_000
    """Cells written for a whole workbook or spreadsheet; past it, sheets are listed by name only."""
    sheet_rows_read: int = 10_000
    """Rows of one Excel sheet looked at (empty ones included) while looking for rows to show."""
    slides: int = 2_000
    """More slides than this: the deck is skipped before any slide is read."""
    group_depth: int = 8
    """PowerPoint shapes grouped deeper than this are left out (each level is a recursion)."""
    odf_nesting: int = 16
    """OpenDocument sections, frames and lists nested deeper than this are left out (recursion)."""

    # -- zip containers (office files) --------------------------------------------------------
    zip_members: int = 10_000
    """Entries in a zip's directory, read from its end record before zipfile lists them (a 50 MiB
    zip of empty entries is 600,000 of them: about 300 MB of zipfile's bookkeeping)."""
    zip_member_bytes: int = 32 * MIB
    """The declared uncompressed size of any one member (an XML part is parsed whole)."""
    zip_total_bytes: int = 160 * MIB
    """The declared uncompressed size of all members together."""
    zip_parsed_bytes: int = 32 * MIB
    """The declared size of the XML members a library parses whole (trees and their text take 9
    to 10 times their XML: 37 MiB of slides peaked at 369 MB), so about 320 MB at most."""
    zip_ratio: int = 500
    """Uncompressed over compressed size, for members over `zip_ratio_floor_bytes`: ordinary XML
    stays under 50, a sheet of one repeated value reaches 400; deflate's ceiling, a bomb's, ~1,000."""
    zip_ratio_floor_bytes: int = MIB
    """Members smaller than this are not held to `zip_ratio` (an empty sheet compresses 300-fold)."""

    # -- PDF ----------------------------------------------------------------------------------
    pdf_pages: int = 2_000
    """More pages than this: skipped before any page is read."""
    pdf_draws: int = 10_000
    """`Do` operators (a form or an image drawn) in the whole file, forms' own included: each form
    drawn is its content extracted again, so one form drawn over and over is the cheapest bomb."""
    pdf_operators: int = 1_000_000
    """Content operators in the whole file, forms' own counted each time a form is drawn."""
    pdf_stream_operations: int = 250_000
    """pypdf's content operations per stream (its default: 2,000,000), bounding its work before
    kbkit's checks can run."""
    pdf_stream_bytes: int = 32 * MIB
    """Bytes one compressed PDF stream may expand to (pypdf's zlib limit)."""

    # -- HTML pages and notebooks -------------------------------------------------------------
    html_nodes: int = 500_000
    """Start tags and their attributes a page may hold, counted on the raw bytes before parsing:
    libxml2 keeps about 280 bytes for each, so this bounds the tree near 150 MB."""
    html_attributes: int = 256
    """Attributes one tag may have: libxml2 checks each against all before it, so one tag of
    100,000 attributes (a 700 KB file) took 50 s."""
    html_nesting: int = 8
    """Lists, list items and quotes open at once beyond this are written flat: each re-indents
    all the text inside it when it closes, so this bounds that work to 8 copies."""
    notebook_json_values: int = 2_000_000
    """Commas, `[` and `{` in a notebook (an upper bound on its JSON values): Python keeps 40-80
    bytes per value, so this bounds the parse near 160 MB."""

    def meter(self, kind: str) -> Meter:
        """A fresh meter for reading one file; `kind` names the file in messages ("PDF", "page")."""
        return Meter(self, kind)


BUDGET = Budget()
"""The budget kbkit reads every file within."""


def amount(chars: int) -> str:
    """A text limit as a message says it: whole MiB as such, anything else in characters."""
    return f"{chars // MIB} MiB" if chars >= MIB and chars % MIB == 0 else f"{chars:,} characters"


class Meter:
    """What one file's reading has spent against its budget: CPU time and text, in one place.

    A refusal is kept and raised again at the next check: pypdf catches what is raised while it
    reads a form, leaves that form out and reads on, so the reading must still stop."""

    def __init__(self, budget: Budget, kind: str) -> None:
        self.budget = budget
        self.kind = kind
        self.chars = 0
        self.refused: DocumentRefused | None = None
        self._started = time.thread_time()

    def refuse(self, reason: str) -> NoReturn:
        """Stop the reading: the file is over budget for `reason` (kept, see above)."""
        self.refused = self.refused or DocumentRefused("over-budget", reason)
        raise self.refused

    def check(self) -> None:
        """Refuse once a refusal is pending or the CPU budget is spent; readers call it in their loops."""
        if self.refused is not None:
            raise self.refused
        if time.thread_time() - self._started > self.budget.cpu_seconds:
            self.refuse(f"reading the {self.kind} took over {self.budget.cpu_seconds:g} s; stopped")

    def take(self, chars: int, where: str = "") -> None:
        """Count `chars` more characters of text; refuse past the text budget (`where`: " by page 3")."""
        self.chars += chars
        self.within_text(self.chars, where)

    def within_text(self, chars: int, where: str = "") -> None:
        """Refuse when `chars` (a text's size, counted by the caller) is over the text budget."""
        if chars > self.budget.text_chars:
            self.refuse(f"the {self.kind}'s text is over {amount(self.budget.text_chars)}{where}; split it")

    def at_most(self, count: int, limit: int, what: str) -> None:
        """Refuse when the file holds `count` of `what` (a plural: "slides"), over `limit`."""
        if count > limit:
            self.refuse(f"the {self.kind} has {count:,} {what}, over the {limit:,}-{what.rstrip('s')} budget")
