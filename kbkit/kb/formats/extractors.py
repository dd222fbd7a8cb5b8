"""The extractors of every converted format (office files, HTML pages, notebooks), each importing
its converter (and the library behind it) only when a file of that type is met: python-docx,
python-pptx, openpyxl and lxml are slow to import. Each runs through `_run`, so a failure its
converter does not name skips that one file and never stops a scan."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kbkit.catalog.filetypes import LIBRARIES
from kbkit.errors import DocumentRefused

if TYPE_CHECKING:
    from kbkit.kb.parsers import ParsedText

DISTRIBUTIONS = {module: dist for pairs in LIBRARIES.values() for module, dist in pairs}
"""Import name -> the name pip installs (python-docx for `docx`)."""


def _run(convert: Callable[[], ParsedText]) -> ParsedText:
    """The converter's result; a missing library, or any failure it did not name itself, becomes
    DocumentRefused (the indexer skips a file for that and nothing else)."""
    try:
        return convert()
    except DocumentRefused:
        raise
    except ImportError as exc:
        raise _library_missing(exc) from None
    except Exception as exc:
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise DocumentRefused("unparsable", f"the file could not be read ({reason})") from None


def _library_missing(exc: ImportError) -> DocumentRefused:
    name = (exc.name or "").split(".")[0]
    package = DISTRIBUTIONS.get(name, name) or str(exc)
    return DocumentRefused(
        "parser-missing",
        f"{package} is not installed; run: pip install {package} (or drop the type from [parsers] enabled)",
    )


def parse_docx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return _run(lambda: ooxml.parse_docx(data))


def parse_pptx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return _run(lambda: ooxml.parse_pptx(data))


def parse_xlsx(data: bytes) -> ParsedText:
    from kbkit.kb.formats import ooxml

    return _run(lambda: ooxml.parse_xlsx(data))


def parse_odt(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return _run(lambda: odf.parse_odf(data, "odt"))


def parse_odp(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return _run(lambda: odf.parse_odf(data, "odp"))


def parse_ods(data: bytes) -> ParsedText:
    from kbkit.kb.formats import odf

    return _run(lambda: odf.parse_odf(data, "ods"))


def parse_html(data: bytes) -> ParsedText:
    from kbkit.kb.formats import html

    return _run(lambda: html.parse_html(data))


def parse_notebook(data: bytes) -> ParsedText:
    from kbkit.kb.formats import notebook

    return _run(lambda: notebook.parse_notebook(data))


CONVERTED_EXTRACTORS: dict[str, Callable[[bytes], ParsedText]] = {
    "docx": parse_docx,
    "pptx": parse_pptx,
    "xlsx": parse_xlsx,
    "odt": parse_odt,
    "odp": parse_odp,
    "ods": parse_ods,
    "html": parse_html,
    "htm": parse_html,
    "ipynb": parse_notebook,
}
"""Extension -> extractor, merged into kbkit/kb/parsers.py's EXTRACTORS."""
