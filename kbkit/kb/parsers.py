"""The parser registry: file extension -> media type and text extraction.

One parser per extension. `[parsers] enabled` narrows the registry by extension name; the
guard sequence refuses any extension the active registry does not cover.
"""

from __future__ import annotations

import codecs
import functools
import io
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, NoReturn, TypedDict

from kbkit.catalog.filetypes import FILE_TYPES
from kbkit.errors import DocumentRefused
from kbkit.kb.formats.extractors import CONVERTED_EXTRACTORS
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title

if TYPE_CHECKING:
    import pypdf


@dataclass(frozen=True)
class ParsedText:
    title: str | None
    body: str
    headings: list[str] = field(default_factory=list)
    outline: tuple[Heading, ...] = ()
    """Where each heading (or PDF page) starts in `body`: the sections search and reads use."""
    description: str | None = None
    """Front matter `description` (or `summary`): searched as its own field."""
    tags: tuple[str, ...] = ()
    """Front matter `tags` and `keywords`: searched as their own field."""


@dataclass(frozen=True)
class Parser:
    name: str
    """The extension without its dot, as written in `[parsers] enabled`."""
    media_type: str
    """What a resource read or get_document reports for the extracted text."""
    extract: Callable[[bytes], ParsedText]


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM is dropped), or UTF-16 when a byte-order mark says so (editors on Windows
    save it); anything else is refused with the reason, never guessed."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")  # the mark picks the byte order and is dropped
        except UnicodeDecodeError as exc:
            raise DocumentRefused(
                "undecodable",
                f"not UTF-8/UTF-16 text: it starts with a UTF-16 byte-order mark but is not valid "
                f"UTF-16 ({exc.reason} at byte {exc.start}); save it as UTF-8",
            ) from None
    elif b"\x00" in data:
        raise DocumentRefused("undecodable", "the file holds binary data (NUL bytes), not UTF-8/UTF-16 text")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentRefused(
                "undecodable",
                f"not UTF-8/UTF-16 text: the file is not valid UTF-8 (bad byte at offset {exc.start}) "
                "and has no UTF-16 byte-order mark; save it as UTF-8",
            ) from None
    if "\x00" in text:
        raise DocumentRefused(
            "undecodable", "the file holds binary data (NUL characters), not UTF-8/UTF-16 text"
        )
    return text


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+([^\n]*))?$", re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _fence_close(char: str, width: int) -> re.Pattern[str]:
    return re.compile(rf"^ {{0,3}}{re.escape(char)}{{{width},}}[ \t]*$", re.MULTILINE)


def _outside_fences(text: str) -> list[tuple[int, int]]:
    """The spans of `text` outside fenced code blocks, in one pass (an unclosed fence runs to the
    end, as in CommonMark)."""
    spans, pos = [], 0
    while match := _FENCE_OPEN.search(text, pos):
        fence = match.group(1)
        spans.append((pos, match.start()))
        close = _fence_close(fence[0], len(fence)).search(text, match.end())
        if close is None:
            return spans
        pos = close.end()
    spans.append((pos, len(text)))
    return spans


def _atx_text(raw: str | None) -> str:
    """A heading's text without its optional closing run of #s (kept out of the regex: no backtracking)."""
    text = (raw or "").rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed.rstrip(" \t")
    return text


_SETEXT = re.compile(r"^(?! {4})([^\n#>\-*=][^\n]*)\n {0,3}(=+|-+)[ \t]*$", re.MULTILINE)
_FENCE_LINE = frozenset(("---", "..."))
_KEY = re.compile(r"[A-Za-z0-9_.-]+")
_BARE_START = frozenset("\"'[]{}|>&*!#%@`")


def _front_matter_block(text: str) -> tuple[str, str] | None:
    """The front matter between a leading `---` line and the next `---`/`...` line, and the rest.

    Found with string scans, never a regex over the block: every line is looked at once, so a
    64 KB line costs the same as 64 KB of short lines."""
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip(" \t\r") != "---":
        return None
    pos = first_end + 1
    while pos < len(text):
        end = text.find("\n", pos)
        line_end = len(text) if end < 0 else end
        if text[pos:line_end].rstrip(" \t\r") in _FENCE_LINE:
            return text[first_end + 1 : pos], text[line_end + 1 :]
        pos = line_end + 1
    return None


def _plain_value(raw: str) -> str | None:
    """A scalar written plainly, 'single' or "double" quoted (no escapes); None for anything else."""
    value = raw.strip(" \t\r")
    if not value:
        return ""
    if value[0] in "\"'":
        quote = value[0]
        if len(value) >= 2 and value[-1] == quote and quote not in value[1:-1]:
            inner = value[1:-1]
            return None if quote == '"' and "\\" in inner else inner
        return None
    if value[0] in _BARE_START or "#" in value:
        return None
    return value


def _plain_front_matter(block: str) -> dict[str, object] | None:
    """Front matter that is nothing but `key: scalar` lines, read without YAML (most docs sites'
    front matter is; YAML parsing was a fifth of indexing time). None: let YAML read it.
    String methods only, so the work is linear in the block's length."""
    meta: dict[str, object] = {}
    for line in block.splitlines():
        if not line.strip():
            continue
        key, colon, rest = line.partition(":")
        if not colon or not _KEY.fullmatch(key) or (rest and rest[0] not in " \t"):
            return None
        value = _plain_value(rest)
        if value is None:
            return None
        meta[key] = value
    return meta


def _front_matter(text: str) -> tuple[dict[str, object], str]:
    found = _front_matter_block(text)
    if found is None:
        return {}, text
    block, rest = found
    plain = _plain_front_matter(block)
    if plain is not None:
        return plain, rest
    import yaml  # only for front matter that is more than key: value lines; keeps CLI start-up lean

    try:
        meta = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}, text  # broken front matter is still text: keep it in the body, search finds it
    return (meta if isinstance(meta, dict) else {}), rest


FIELD_CHARS = 2000
"""At most this many characters of a front-matter description or tag list are indexed."""


def _meta_text(value: object) -> str | None:
    """A front-matter value as searchable text: scalars as they are, lists joined with commas."""
    if isinstance(value, list | tuple):
        value = ", ".join(str(item) for item in value if isinstance(item, str | int | float))
    if isinstance(value, str | int | float) and str(value).strip():
        return " ".join(str(value).split())[:FIELD_CHARS]
    return None


def _meta_tags(meta: dict[str, object]) -> tuple[str, ...]:
    tags = (_meta_text(meta.get(key)) for key in ("tags", "keywords"))
    return tuple(tag for tag in tags if tag)


def _clean_title(value: object) -> str | None:
    if isinstance(value, str | int | float) and str(value).strip():
        return " ".join(str(value).split())[:500]
    return None


def parse_markdown(data: bytes) -> ParsedText:
    meta, body = _front_matter(decode_text(data))
    found = _markdown_headings(body)
    headings = [" ".join(text.split()) for _, _, text in found]
    title = _clean_title(meta.get("title"))
    if title is None:
        top = [text for _, level, text in found if level == 1]
        title = _clean_title(top[0] if top else (headings[0] if headings else None))
    description = _meta_text(meta.get("description")) or _meta_text(meta.get("summary"))
    tags = _meta_tags(meta)
    return ParsedText(title, body, headings, _outline(found), description=description, tags=tags)


def _markdown_headings(body: str) -> list[tuple[int, int, str]]:
    """(start, level, raw text) of every ATX and setext heading outside fenced code, in order."""
    found: list[tuple[int, int, str]] = []
    for start, end in _outside_fences(body):
        atx = [(m.start(), len(m.group(1)), _atx_text(m.group(2))) for m in _ATX.finditer(body, start, end)]
        found += [heading for heading in atx if heading[2]]
        setext = _SETEXT.finditer(body, start, end)
        found += [(m.start(), 1 if m.group(2)[0] == "=" else 2, m.group(1)) for m in setext]
    return sorted(found)


def _outline(found: list[tuple[int, int, str]]) -> tuple[Heading, ...]:
    """(start, level, raw text) of each heading, in order -> the outline (empty titles left out),
    at most MAX_OUTLINE headings: the rest of the text belongs to the last section."""
    headings = (Heading(start, level, clean_title(text)) for start, level, text in found)
    return tuple(islice((heading for heading in headings if heading.title), MAX_OUTLINE))


_RST_HEADING = re.compile(r"^([^\s][^\n]*)\n([=\-~^\"'`#*+:.<>_])\2+[ \t]*$", re.MULTILINE)


def parse_rst(data: bytes) -> ParsedText:
    text = decode_text(data)
    found = _rst_headings(text)
    headings = [" ".join(raw.split()) for _, _, raw in found]
    title = _clean_title(headings[0] if headings else None)
    return ParsedText(title=title, body=text, headings=headings, outline=_outline(found))


def _rst_headings(text: str) -> list[tuple[int, int, str]]:
    """(start, level, raw text) of every underlined title; in reStructuredText the order in which
    adornment characters first appear sets the levels."""
    levels: dict[str, int] = {}
    return [
        (m.start(), levels.setdefault(m.group(2), len(levels) + 1), m.group(1))
        for m in _RST_HEADING.finditer(text)
    ]


def outline_of(ext: str, body: str) -> tuple[Heading, ...] | None:
    """The outline of an extracted text, found again from the text alone (for an index made before
    passages existed); None where the text cannot tell (a PDF's page breaks are not in its text)."""
    if ext in ("md", "markdown"):
        return _outline(_markdown_headings(body))
    if ext == "rst":
        return _outline(_rst_headings(body))
    return None if ext == "pdf" else ()


def parse_plain(data: bytes) -> ParsedText:
    return ParsedText(title=None, body=decode_text(data))


def parse_pdf(data: bytes) -> ParsedText:
    try:
        import pypdf  # imported only when a PDF is met: it is slow to import and rarely needed
    except ImportError:
        raise DocumentRefused(
            "parser-missing", "pypdf is not installed; run: pip install pypdf (or disable pdf in [parsers])"
        ) from None
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        with pypdf.apply_configuration(**PDF_PYPDF_LIMITS):
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise DocumentRefused("unparsable", "the PDF is encrypted; kbkit reads only unencrypted PDFs")
            pages = pdf_pages_within_budget(reader)
            meta_title = reader.metadata.title if reader.metadata else None
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
    return ParsedText(title=_clean_title(meta_title) or _clean_title(first_line), body=body, outline=outline)


PAGE_SEPARATOR = "\n\n"


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


# -- PDF budgets ------------------------------------------------------------------------------
# A PDF is a program: a 2 KB file can ask for 600,000 form drawings. These bound what one file may
# cost; over any of them it is skipped with reason "over-budget" (docs/adr/0018). The draw and
# operator budgets are counts, so a bomb stops at the same point on any machine and within a few
# seconds; the CPU budget is the backstop that keeps any one file within 20 s.

PDF_MAX_PAGES = 2_000
"""More pages than this: skipped before any page is read."""
PDF_MAX_TEXT_CHARS = 16 * 1024 * 1024
"""Extracted text beyond this (all pages together): skipped, extraction stops there."""
PDF_MAX_DRAWS = 10_000
"""`Do` operators (a form or an image drawn) in the whole file, forms' own included: each form
drawn is its content extracted again, so one form drawn over and over is the cheapest bomb."""
PDF_MAX_OPERATORS = 1_000_000
"""Content operators in the whole file, forms' own counted each time a form is drawn."""
PDF_CPU_SECONDS = 15.0
"""CPU time (this thread's) one extraction may take; checked before every content operator. With
reading the file and the one stream parse that runs before any check, a file stays within 20 s."""


class _PypdfLimits(TypedDict):
    stream_parsing_work_maximum_count: int
    zlib_maximum_output_length: int
    xform_maximum_invocations_per_extraction: int


PDF_PYPDF_LIMITS: _PypdfLimits = {
    "stream_parsing_work_maximum_count": 250_000,  # content operations per stream (pypdf: 2,000,000)
    "zlib_maximum_output_length": 32 * 1024 * 1024,  # bytes one compressed stream may expand to
    # forms drawn per page (pypdf: 5,000, past which it leaves their text out without failing):
    # above kbkit's draw budget, so a file is skipped whole rather than indexed in part
    "xform_maximum_invocations_per_extraction": PDF_MAX_DRAWS + 1,
}
"""pypdf's own limits, tightened: they bound the work it does before kbkit's checks can run."""


def pdf_pages_within_budget(reader: pypdf.PdfReader) -> list[str]:
    """Each page's text, or DocumentRefused("over-budget") once a PDF budget above is exceeded."""
    if len(reader.pages) > PDF_MAX_PAGES:
        raise DocumentRefused(
            "over-budget", f"the PDF has {len(reader.pages)} pages, over the {PDF_MAX_PAGES}-page budget"
        )
    _watch_forms_left_out()
    _extraction.budget = budget = _PdfBudget()
    try:
        return _pages_text(reader, budget)
    finally:
        _extraction.budget = None


def _pages_text(reader: pypdf.PdfReader, budget: _PdfBudget) -> list[str]:
    pages: list[str] = []
    total = 0
    for page in reader.pages:
        budget.check()  # before each page too, even one with no operator
        text = page.extract_text(visitor_operand_before=budget.on_operator) or ""
        budget.check()  # a refusal raised inside a form, which pypdf swallowed and read on
        total += len(text)
        if total > PDF_MAX_TEXT_CHARS:
            mib = PDF_MAX_TEXT_CHARS // (1024 * 1024)
            raise DocumentRefused("over-budget", f"the PDF's text is over {mib} MiB by page {len(pages) + 1}")
        pages.append(text)
    return pages


class _PdfBudget:
    """The work one PDF's text extraction has done, against the budgets above. A refusal is kept:
    pypdf catches what is raised while it reads a form, leaves that form out and reads on."""

    def __init__(self) -> None:
        self.started = time.thread_time()
        self.operators = 0
        self.draws = 0
        self.refused: DocumentRefused | None = None

    def refuse(self, reason: str) -> NoReturn:
        self.refused = self.refused or DocumentRefused("over-budget", reason)
        raise self.refused

    def check(self) -> None:
        if self.refused is not None:
            raise self.refused
        if time.thread_time() - self.started > PDF_CPU_SECONDS:
            self.refuse(f"extracting the PDF's text took over {PDF_CPU_SECONDS:.0f} s; stopped")

    def on_operator(self, operator: bytes, *_: object) -> None:
        self.operators += 1
        self.draws += operator == b"Do"
        if self.draws > PDF_MAX_DRAWS:
            self.refuse(
                f"the PDF draws forms or images over {PDF_MAX_DRAWS:,} times (one form drawn over and "
                "over is a bomb); split it or convert it to text"
            )
        if self.operators > PDF_MAX_OPERATORS:
            self.refuse(
                f"the PDF's pages run over {PDF_MAX_OPERATORS:,} content operators (forms counted each "
                "time they are drawn); split it or convert it to text"
            )
        self.check()


_extraction = threading.local()
"""`budget`: the _PdfBudget of the extraction running in this thread, if any."""


class _FormsLeftOut(logging.Handler):
    """pypdf logs a form it could not read and leaves its text out. One over a pypdf limit (a
    content stream over the operation budget, parsed again at every draw) makes the extraction
    in this thread refuse the file, instead of spending its CPU budget and indexing the rest."""

    def emit(self, record: logging.LogRecord) -> None:
        import pypdf

        budget = getattr(_extraction, "budget", None)
        failure = record.args.get("exception") if isinstance(record.args, dict) else None
        if budget is not None and isinstance(failure, pypdf.errors.LimitReachedError):
            budget.refuse(
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


EXTRACTORS: dict[str, Callable[[bytes], ParsedText]] = {
    "md": parse_markdown,
    "markdown": parse_markdown,
    "txt": parse_plain,
    "rst": parse_rst,
    "pdf": parse_pdf,
    **CONVERTED_EXTRACTORS,
}
"""How each file type of kbkit/catalog/filetypes.py becomes text (a missing one fails at import)."""

ALL_PARSERS: dict[str, Parser] = {
    name: Parser(name, media_type, EXTRACTORS[name]) for name, media_type in FILE_TYPES.items()
}
"""Every parser kbkit ships, keyed by extension (no dot, lower case)."""


class Registry:
    """The active parsers: the ones `[parsers] enabled` keeps."""

    def __init__(self, enabled: Iterable[str] | None = None) -> None:
        names = list(ALL_PARSERS) if enabled is None else list(enabled)
        self._parsers = {name: ALL_PARSERS[name] for name in names}

    @property
    def extensions(self) -> tuple[str, ...]:
        return tuple(self._parsers)

    def for_path(self, path: str) -> Parser | None:
        return self._parsers.get(extension_of(path))

    def covers(self, path: str) -> bool:
        return extension_of(path) in self._parsers


def extension_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""


class TextFiles(Registry):
    """Every file as UTF-8 text: for a skill's own files (scripts, references), still read through
    the guard sequence; binary files are refused by `decode_text`."""

    def __init__(self) -> None:
        super().__init__([])

    def for_path(self, path: str) -> Parser:
        media = "text/markdown" if extension_of(path) in ("md", "markdown") else "text/plain"
        return Parser(extension_of(path), media, parse_plain)

    def covers(self, path: str) -> bool:
        return True
