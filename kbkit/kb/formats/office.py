"""The office formats' extractors, each importing its converter (and the library behind it) only
when a file of that type is met: python-docx, python-pptx, openpyxl and lxml are slow to import."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbkit.kb.parsers import ParsedText


def parse_docx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return ooxml.parse_docx(data)


def parse_pptx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return ooxml.parse_pptx(data)


def parse_xlsx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return ooxml.parse_xlsx(data)


def parse_odt(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return odf.parse_odf(data, "odt")


def parse_odp(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return odf.parse_odf(data, "odp")


def parse_ods(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return odf.parse_odf(data, "ods")


OFFICE_EXTRACTORS: dict[str, Callable[[bytes], ParsedText]] = {
    "docx": parse_docx,
    "pptx": parse_pptx,
    "xlsx": parse_xlsx,
    "odt": parse_odt,
    "odp": parse_odp,
    "ods": parse_ods,
}
"""Extension -> extractor, merged into kbkit/kb/parsers.py's EXTRACTORS."""
