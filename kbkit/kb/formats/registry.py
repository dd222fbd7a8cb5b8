"""The parser registry: file extension -> media type and reader, on top of every format module.

One parser per extension, from kbkit/catalog/filetypes.py. A reader's module is imported the
first time a file of its type is read, never at start-up, and every reading runs through
`base.guarded`: a failure its reader does not name skips that one file and never stops a scan.
`[parsers] enabled` narrows the registry by extension name; the guard sequence refuses any
extension the active registry does not cover.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol, cast

from kbkit.catalog.filetypes import FILE_TYPES, READERS
from kbkit.kb.formats.base import ParsedText, Reader, guarded
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markup import PARTIAL_FOLDERS, PLAIN, Markup
from kbkit.kb.sections import Heading


class MarkupReader(Protocol):
    """A reader that reads a site generator's syntax (`markup`) besides its format's own."""

    def __call__(self, data: bytes, budget: Budget = ..., *, markup: Markup = ...) -> ParsedText: ...


MARKDOWN_READER = "markdown.parse_markdown"
RST_READER = "rst.parse_rst"
PARTIAL_READER = "markdown.parse_page_or_partial"
MARKUP_READERS = frozenset((MARKDOWN_READER, RST_READER, PARTIAL_READER))
"""The readers a site's Markup is passed to (formats/markup.py)."""


@functools.cache
def load_reader(spec: str) -> Reader:
    """The reader named "module.function" in kbkit/kb/formats/, its module imported now."""
    module, _, name = spec.rpartition(".")
    found: Reader = getattr(importlib.import_module(f"kbkit.kb.formats.{module}"), name)
    return found


@dataclass(frozen=True)
class Parser:
    name: str
    """The extension without its dot, as written in `[parsers] enabled`."""
    media_type: str
    """What a resource read or get_document reports for the extracted text."""
    reader: str
    """Its reader, "module.function" in kbkit/kb/formats/ (READERS in catalog/filetypes.py)."""
    markup: Markup = PLAIN
    """The site generator's syntax its pages are written in (Markdown and reStructuredText)."""

    def extract(self, data: bytes, budget: Budget = BUDGET) -> ParsedText:
        """The file's text within `budget`, or DocumentRefused saying why not."""
        if self.reader in MARKUP_READERS and self.markup != PLAIN:
            marked = cast(MarkupReader, load_reader(self.reader))
            return guarded(lambda: marked(data, budget, markup=self.markup))
        return guarded(lambda: load_reader(self.reader)(data, budget))


ALL_PARSERS: dict[str, Parser] = {
    name: Parser(name, media_type, READERS[name]) for name, media_type in FILE_TYPES.items()
}
"""Every parser kbkit ships, keyed by extension (no dot, lower case)."""


class Registry:
    """The active parsers: the ones `[parsers] enabled` keeps, reading the site's `markup` (a
    Sphinx site's `.txt` sources as reStructuredText, kb/sites.py)."""

    def __init__(self, enabled: Iterable[str] | None = None, markup: Markup = PLAIN) -> None:
        names = list(ALL_PARSERS) if enabled is None else list(enabled)
        self.markup = markup
        self._parsers = {name: self._marked(ALL_PARSERS[name]) for name in names}

    def _marked(self, parser: Parser) -> Parser:
        if self.markup == PLAIN:
            return parser
        if parser.name in self.markup.rst_extensions:
            return replace(
                parser, media_type=ALL_PARSERS["rst"].media_type, reader=RST_READER, markup=self.markup
            )
        return replace(parser, markup=self.markup) if parser.reader in MARKUP_READERS else parser

    def reads_rst(self, ext: str) -> bool:
        """Whether documents of extension `ext` are read as reStructuredText."""
        found = self._parsers.get(ext)
        return found is not None and found.reader == RST_READER

    @property
    def extensions(self) -> tuple[str, ...]:
        return tuple(self._parsers)

    def for_path(self, path: str) -> Parser | None:
        found = self._parsers.get(extension_of(path))
        partial = self.markup.generator and PARTIAL_FOLDERS.intersection(path.split("/")[:-1])
        if found is not None and found.reader == MARKDOWN_READER and partial:
            return replace(found, reader=PARTIAL_READER)
        return found

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
        return Parser(extension_of(path), media, READERS["txt"])

    def covers(self, path: str) -> bool:
        return True


def outline_of(ext: str, body: str) -> tuple[Heading, ...] | None:
    """The outline of an extracted text, found again from the text alone (for an index made before
    passages existed); None where the text cannot tell (a PDF's page breaks are not in its text)."""
    if ext in ("md", "markdown"):
        from kbkit.kb.formats import markdown

        return markdown.outline(body)
    if ext == "rst":
        from kbkit.kb.formats import rst

        return rst.outline(body)
    return None if ext == "pdf" else ()
