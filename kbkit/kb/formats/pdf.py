"""PDF files as their pages' text, one section a page, read with pypdf within the budget.

A PDF is a program: a 2 KB file can ask for 600,000 form drawings. Pages, draws, content
operators, text and CPU time are counted against the budget (budget.py, docs/adr/0018); pypdf's
own limits are tightened so that the work it does before kbkit's checks can run is bounded too.
"""

from __future__ import annotations

import functools
import io
import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypedDict

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.base import ParsedText, meta_title
from kbkit.kb.formats.budget import BUDGET, Budget, Meter
from kbkit.kb.sections import Heading

if TYPE_CHECKING:
    import pypdf

PAGE_SEPARATOR = "\n\n"


def parse_pdf(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """Each page's text, joined by a blank line; the title from the metadata or the first line."""
    try:
        import pypdf  # imported only when a PDF is met: it is slow to import and rarely needed
    except ImportError:
        raise DocumentRefused(
            "parser-missing", "pypdf is not installed; run: pip install pypdf (or disable pdf in [parsers])"
        ) from None
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        with pypdf.apply_configuration(**_pypdf_limits(budget)):
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise DocumentRefused("unparsable", "the PDF is encrypted; kbkit reads only unencrypted PDFs")
            pages = pages_within_budget(reader, budget)
            title = reader.metadata.title if reader.metadata else None
    except DocumentRefused:
        raise
    except pypdf.errors.LimitReachedError as exc:
        raise DocumentRefused(
            "over-budget", f"the PDF is over kbkit's parsing budget ({exc}); split it or convert it to text"
        ) from None
    except Exception as exc:  # pypdf raises many kinds on damaged files; all mean "unreadable"
        raise DocumentRefused(
            "unparsable", f"the PDF could not be read ({type(exc).__name__}: {exc})"
        ) from None
    body, outline = _paged(page.strip() for page in pages)
    first_line = next((line.strip() for line in body.splitlines() if line.strip()), None)
    return ParsedText(title=meta_title(title) or meta_title(first_line), body=body, outline=outline)


def _paged(pages: Iterable[str]) -> tuple[str, tuple[Heading, ...]]:
    """The pages joined by a blank line, and where each starts: one section a page, `page N`."""
    outline, offset, texts = [], 0, []
    for number, text in enumerate(pages, start=1):
        if number > 1:
            offset += len(PAGE_SEPARATOR)
        outline.append(Heading(offset, 1, f"page {number}"))
        texts.append(text)
        offset += len(text)
    return PAGE_SEPARATOR.join(texts), tuple(outline)


class _PypdfLimits(TypedDict):
    stream_parsing_work_maximum_count: int
    zlib_maximum_output_length: int
    xform_maximum_invocations_per_extraction: int


def _pypdf_limits(budget: Budget) -> _PypdfLimits:
    """pypdf's own limits, tightened: they bound the work it does before kbkit's checks can run."""
    return {
        "stream_parsing_work_maximum_count": budget.pdf_stream_operations,
        "zlib_maximum_output_length": budget.pdf_stream_bytes,
        # forms drawn per page (pypdf: 5,000, past which it leaves their text out without
        # failing): above kbkit's draw budget, so a file is skipped whole, not indexed in part
        "xform_maximum_invocations_per_extraction": budget.pdf_draws + 1,
    }


def pages_within_budget(reader: pypdf.PdfReader, budget: Budget) -> list[str]:
    """Each page's text, or DocumentRefused("over-budget") once the PDF is over the budget."""
    meter = budget.meter("PDF")
    meter.at_most(len(reader.pages), budget.pdf_pages, "pages")
    _watch_forms_left_out()
    _extraction.work = work = _Work(meter)
    try:
        pages: list[str] = []
        for page in reader.pages:
            meter.check()  # before each page too, even one with no operator
            text = page.extract_text(visitor_operand_before=work.on_operator) or ""
            meter.check()  # a refusal raised inside a form, which pypdf swallowed and read on
            meter.take(len(text), f" by page {len(pages) + 1}")
            pages.append(text)
        return pages
    finally:
        _extraction.work = None


class _Work:
    """The content operators and draws one extraction has run, against the budget."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.operators = 0
        self.draws = 0

    def on_operator(self, operator: bytes, *_: object) -> None:
        budget = self.meter.budget
        self.operators += 1
        self.draws += operator == b"Do"
        if self.draws > budget.pdf_draws:
            self.meter.refuse(
                f"the PDF draws forms or images over {budget.pdf_draws:,} times (one form drawn over "
                "and over is a bomb); split it or convert it to text"
            )
        if self.operators > budget.pdf_operators:
            self.meter.refuse(
                f"the PDF's pages run over {budget.pdf_operators:,} content operators (forms counted "
                "each time they are drawn); split it or convert it to text"
            )
        self.meter.check()


_extraction = threading.local()
"""`work`: the _Work of the extraction running in this thread, if any."""


class _FormsLeftOut(logging.Handler):
    """pypdf logs a form it could not read and leaves its text out. One over a pypdf limit (a
    content stream over the operation budget, parsed again at every draw) makes the extraction
    in this thread refuse the file, instead of spending its CPU budget and indexing the rest."""

    def emit(self, record: logging.LogRecord) -> None:
        import pypdf

        work = getattr(_extraction, "work", None)
        failure = record.args.get("exception") if isinstance(record.args, dict) else None
        if work is not None and isinstance(failure, pypdf.errors.LimitReachedError):
            work.meter.refuse(
                f"a form in the PDF is over kbkit's parsing budget ({failure}); "
                "split it or convert it to text"
            )


@functools.cache
def _watch_forms_left_out() -> None:
    """pypdf's text extraction reports the forms it leaves out on this logger (kept off the
    console, as all of pypdf's warnings)."""
    logger = logging.getLogger("pypdf._page")
    logger.addHandler(_FormsLeftOut(logging.WARNING))
    logger.setLevel(logging.WARNING)
    logger.propagate = False
