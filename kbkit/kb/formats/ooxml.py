"""Word (.docx), PowerPoint (.pptx) and Excel (.xlsx) files as Markdown, read with python-docx,
python-pptx and openpyxl after the archive checks of archive.py (docs/adr/0033).

Headings keep their levels (Word heading styles and outline levels), slides become
`## Slide N: <title>` sections with their text, tables and speaker notes, and sheets become
`## Sheet: <name>` sections holding a table of their cached values (never their formulas).
Images, charts, embedded objects, comments, headers and footers are left out; external
relationships are never followed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.archive import open_archive, refuse_dtds, text_parts_only
from kbkit.kb.formats.base import ParsedText, meta_title, unreadable
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markdown_writer import MarkdownWriter

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph


def _converted(
    kind: str,
    data: bytes,
    convert: Callable[[bytes, MarkdownWriter], str | None],
    budget: Budget,
    *,
    heading_title: bool = True,
    streamed: tuple[str, ...] = (),
) -> ParsedText:
    """Check the archive, then run `convert` on it (on its text parts only, unless some parts
    are `streamed`: openpyxl's reader loads no image) and return the document's title, with any
    failure of a library on a damaged file turned into one line saying so. Without a title, the
    first heading is the title (`heading_title`; a sheet's name is not: the file's name is)."""
    with open_archive(data, kind, budget, streamed) as archive:
        refuse_dtds(archive, kind)
        if not streamed:
            data = text_parts_only(archive, kind, budget)
    writer = MarkdownWriter(budget.meter(kind))
    try:
        title = convert(data, writer)
    except DocumentRefused:
        raise
    except ImportError:
        raise  # base.guarded says which library is missing
    except Exception as exc:  # the libraries raise many kinds on damaged parts; all mean "unreadable"
        raise unreadable(kind, exc) from None
    body = writer.text()
    title = meta_title(title) or (
        meta_title(writer.headings[0]) if writer.headings and heading_title else None
    )
    return ParsedText(title=title, body=body, headings=writer.headings, outline=tuple(writer.outline))


# -- Word -------------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"heading ([1-9])", re.IGNORECASE)


def parse_docx(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return _converted("Word document", data, _docx, budget)


def _docx(data: bytes, writer: MarkdownWriter) -> str | None:
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    styles = _word_styles(document)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            _docx_table(block, writer)
        else:
            _docx_paragraph(block, writer, styles)
    return meta_title(document.core_properties.title)


def _word_styles(document: Any) -> dict[str | None, tuple[str, int | None]]:
    """Each paragraph style's id -> (name, heading level or None), read once: python-docx's
    `paragraph.style` scans every style of the file for each paragraph without one. The key
    None is the default paragraph style."""
    from docx.enum.style import WD_STYLE_TYPE

    found: dict[str | None, tuple[str, int | None]] = {}
    for style in document.styles:
        if style.type == WD_STYLE_TYPE.PARAGRAPH:
            name = style.name or ""
            found[style.style_id] = (name, _heading_level(name, style.element))
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    found[None] = found.get(default.style_id, ("", None)) if default is not None else ("", None)
    return found


def _heading_level(style_name: str, element: Any) -> int | None:
    """A heading's level: a `Heading N` or `Title` style, else an outline level set on the
    paragraph or its style (Word's own test for what goes in the navigation pane). Elements are
    walked with find(): python-docx's xpath() compiles its expression at every call."""
    if style_name == "Title":
        return 1
    if match := _HEADING_STYLE.fullmatch(style_name):
        return int(match.group(1))
    level = _w_val(element, "pPr", "outlineLvl")
    return int(level) + 1 if level is not None and level.isdigit() and int(level) < 9 else None


def _w_val(element: Any, *path: str) -> str | None:
    """The w:val of the element at `path` (WordprocessingML names) under `element`, if any."""
    from docx.oxml.ns import qn

    for name in path:
        if element is None:
            return None
        element = element.find(qn(f"w:{name}"))
    return None if element is None else element.get(qn("w:val"))


def _docx_paragraph(
    paragraph: Paragraph, writer: MarkdownWriter, styles: dict[str | None, tuple[str, int | None]]
) -> None:
    text = paragraph.text
    element = paragraph._p  # noqa: SLF001 - python-docx exposes neither outline levels nor list levels
    name, level = styles.get(element.style, styles[None])
    own = _heading_level("", element)  # an outline level set on the paragraph itself wins
    if own is not None or level is not None:
        writer.heading(own or level or 1, text)
        return
    depth = _docx_list_depth(paragraph)
    if depth is not None or name.lower().startswith("list"):
        writer.list_item(text, depth or 0, ordered="number" in name.lower())
    else:
        writer.paragraph(text)


def _docx_list_depth(paragraph: Paragraph) -> int | None:
    """The list level of a numbered or bulleted paragraph; None for one outside a list."""
    from docx.oxml.ns import qn

    properties = paragraph._p.pPr  # noqa: SLF001
    numbering = properties.find(qn("w:numPr")) if properties is not None else None
    if numbering is None:
        return None
    level = _w_val(numbering, "ilvl")
    return int(level) if level is not None and level.isdigit() else 0


def _docx_table(table: Table, writer: MarkdownWriter) -> None:
    rows = table.rows
    cells = ([cell.text for cell in row.cells] for row in rows)
    writer.table(cells, total_rows=len(rows))


# -- PowerPoint -------------------------------------------------------------------------------------


def parse_pptx(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return _converted("PowerPoint deck", data, _pptx, budget)


def _pptx(data: bytes, writer: MarkdownWriter) -> str | None:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    slides = deck.slides
    writer.meter.at_most(len(slides), writer.budget.slides, "slides")
    first_title = None
    for number, slide in enumerate(slides, start=1):
        writer.check()
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        first_title = first_title or title or None
        writer.heading(2, f"Slide {number}: {title}" if title else f"Slide {number}")
        skip = title_shape.shape_id if title_shape is not None else None
        for shape in slide.shapes:
            _pptx_shape(shape, writer, skip, 0)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = frame.text.strip() if frame is not None else ""
            if notes:
                writer.paragraph("Speaker notes: " + notes)
    return meta_title(deck.core_properties.title) or first_title


def _pptx_shape(shape: Any, writer: MarkdownWriter, skip: int | None, depth: int) -> None:
    from pptx.enum.shapes import PP_PLACEHOLDER
    from pptx.shapes.group import GroupShape

    writer.check()
    if shape.shape_id == skip and depth == 0:
        return
    if isinstance(shape, GroupShape):
        if depth < writer.budget.group_depth:
            for inner in shape.shapes:
                _pptx_shape(inner, writer, skip, depth + 1)
        return
    if getattr(shape, "has_table", False):
        rows = shape.table.rows
        writer.table(([cell.text for cell in row.cells] for row in rows), total_rows=len(rows))
        return
    if not shape.has_text_frame:
        return  # pictures, charts, media and embedded objects
    bullets = shape.is_placeholder and shape.placeholder_format.type in (
        PP_PLACEHOLDER.BODY,
        PP_PLACEHOLDER.OBJECT,
    )
    for paragraph in shape.text_frame.paragraphs:
        if bullets or paragraph.level > 0:
            writer.list_item(paragraph.text, paragraph.level)
        else:
            writer.paragraph(paragraph.text)


# -- Excel ------------------------------------------------------------------------------------------


def parse_xlsx(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    streamed = ("xl/worksheets/",)  # read row by row: never parsed whole
    return _converted("Excel workbook", data, _xlsx, budget, heading_title=False, streamed=streamed)


def _xlsx(data: bytes, writer: MarkdownWriter) -> str | None:
    import openpyxl

    if not openpyxl.DEFUSEDXML:  # openpyxl parses with defusedxml only when it is installed
        raise DocumentRefused(
            "parser-missing",
            "defusedxml is not installed; run: pip install defusedxml (or drop xlsx from [parsers] enabled)",
        )
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    try:
        cells = writer.budget.workbook_cells
        cells_left = cells
        for sheet in book.worksheets:
            writer.heading(2, f"Sheet: {sheet.title}")
            if cells_left < writer.budget.table_columns:
                writer.paragraph(f"(not shown: the workbook's {cells:,}-cell budget is spent)")
                continue
            cells_left -= _xlsx_sheet(sheet, writer)
        return meta_title(book.properties.title)
    finally:
        book.close()


def _xlsx_sheet(sheet: Any, writer: MarkdownWriter) -> int:
    """One sheet's first rows (empty ones left out) as a table, read with openpyxl's streaming
    reader: rows past the cap are never parsed. Returns the cells written."""
    last = [0]

    def rows() -> Iterator[tuple[object, ...]]:
        read = sheet.iter_rows(max_col=writer.budget.table_columns + 1, values_only=True)
        for number, row in enumerate(read, start=1):
            writer.check()
            if number > writer.budget.sheet_rows_read:
                return
            if any(value is not None for value in row):
                last[0] = number
                yield row

    max_row = _int(sheet.max_row)  # from the sheet's <dimension>: None when it has none

    def total(shown: int) -> int | None:
        return None if max_row is None else shown + max(max_row - last[0] + 1, 1)

    return writer.table(rows(), total_rows=total, total_columns=_int(sheet.max_column))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None
