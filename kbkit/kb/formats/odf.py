"""OpenDocument text (.odt), presentations (.odp) and spreadsheets (.ods) as Markdown.

Read with lxml straight from `content.xml` and `meta.xml` (docs/adr/0033): odfpy, the one
library for the format, was last released in 2020, ships no type hints and builds a Python
object for every XML node of the whole package; lxml (already installed for python-docx) parses
one bounded member with entities, DTDs and network access off. Headings keep their outline
levels, lists their nesting, tables are cut like the other formats', repeated rows and cells
(`number-rows-repeated="1048576"`) are never expanded past the caps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.archive import open_archive, parse_xml, read_member, refuse_dtds
from kbkit.kb.formats.base import ParsedText, meta_title, unreadable
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markdown_writer import MarkdownWriter

if TYPE_CHECKING:
    from lxml import etree

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}
KINDS = {
    "odt": ("OpenDocument text", "text", "application/vnd.oasis.opendocument.text"),
    "odp": ("OpenDocument presentation", "presentation", "application/vnd.oasis.opendocument.presentation"),
    "ods": ("OpenDocument spreadsheet", "spreadsheet", "application/vnd.oasis.opendocument.spreadsheet"),
}
"""Extension -> (what messages call it, the office:body child holding it, its mimetype member)."""


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


def parse_odt(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return parse_odf(data, "odt", budget)


def parse_odp(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return parse_odf(data, "odp", budget)


def parse_ods(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return parse_odf(data, "ods", budget)


def parse_odf(data: bytes, ext: str, budget: Budget) -> ParsedText:
    kind, body_name, mimetype = KINDS[ext]
    with open_archive(data, kind, budget) as archive:
        refuse_dtds(archive, kind)
        declared = (read_member(archive, "mimetype", kind, cap=256) or b"").decode("ascii", "replace").strip()
        if declared and declared != mimetype:
            raise DocumentRefused("unparsable", f"the {kind} holds another kind of document ({declared})")
        content = read_member(archive, "content.xml", kind, budget.zip_member_bytes)
        meta = read_member(archive, "meta.xml", kind, budget.zip_member_bytes)
    if content is None:
        raise DocumentRefused("unparsable", f"the {kind} has no content.xml (damaged or not OpenDocument)")
    root = parse_xml(content, "content.xml", kind)
    body = root.find(f"{_q('office:body')}/{_q('office:' + body_name)}")
    if body is None:
        raise DocumentRefused("unparsable", f"the {kind}'s content.xml holds no office:{body_name}")
    writer = MarkdownWriter(budget.meter(kind))
    try:
        first_title = {"odt": _text_body, "odp": _presentation, "ods": _spreadsheet}[ext](body, writer)
    except DocumentRefused:
        raise
    except Exception as exc:  # RecursionError, a value out of range: the file is unreadable, said in one line
        raise unreadable(kind, exc) from None
    title = _meta_title(meta, kind) or first_title
    if title is None and ext == "odt" and writer.headings:
        title = meta_title(writer.headings[0])  # a sheet's name is no title: the file's name is
    body_text = writer.text()
    return ParsedText(title=title, body=body_text, headings=writer.headings, outline=tuple(writer.outline))


def _meta_title(meta: bytes | None, kind: str) -> str | None:
    if meta is None:
        return None
    found = parse_xml(meta, "meta.xml", kind).find(f".//{_q('dc:title')}")
    return meta_title(inline_text(found)) if found is not None else None


def inline_text(element: etree._Element) -> str:
    """The text of a paragraph as shown: `text:s` spaces, tabs and line breaks kept, notes and
    annotations (footnotes, comments) left out."""
    parts = [element.text or ""]
    for child in element:
        tag = child.tag
        if tag == _q("text:s"):
            count = str(child.get(_q("text:c"), "1"))
            parts.append(" " * min(int(count) if count.isdigit() else 1, 100))
        elif tag == _q("text:tab"):
            parts.append("\t")
        elif tag == _q("text:line-break"):
            parts.append("\n")
        elif tag not in (_q("text:note"), _q("office:annotation")) and isinstance(tag, str):
            parts.append(inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


# -- text -------------------------------------------------------------------------------------------


def _text_body(body: etree._Element, writer: MarkdownWriter) -> str | None:
    _blocks(body, writer, 0)
    return None


def _blocks(element: etree._Element, writer: MarkdownWriter, depth: int) -> None:
    """Headings, paragraphs, lists and tables in document order; sections and frames looked into."""
    if depth > writer.budget.odf_nesting:
        return
    for child in element:
        writer.check()
        tag = child.tag
        if tag == _q("text:h"):
            writer.heading(_outline_level(child), inline_text(child))
        elif tag == _q("text:p"):
            frames = child.findall(f".//{_q('draw:text-box')}")
            writer.paragraph(inline_text(child) if not frames else _text_outside(child))
            for frame in frames:
                _blocks(frame, writer, depth + 1)
        elif tag == _q("text:list"):
            _list(child, writer, 0, depth)
        elif tag == _q("table:table"):
            writer.table(_table_rows(child, writer.budget))
        elif tag in (_q("text:section"), _q("draw:frame"), _q("draw:text-box"), _q("text:soft-page-break")):
            _blocks(child, writer, depth + 1)


def _outline_level(heading: etree._Element) -> int:
    level = str(heading.get(_q("text:outline-level"), "1"))
    return int(level) if level.isdigit() else 1


def _text_outside(paragraph: etree._Element) -> str:
    """A paragraph's own text, its anchored text boxes left for _blocks to write."""
    parts = [paragraph.text or ""]
    for child in paragraph:
        if child.tag != _q("draw:frame") and isinstance(child.tag, str):
            parts.append(inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _list(element: etree._Element, writer: MarkdownWriter, level: int, depth: int) -> None:
    if depth > writer.budget.odf_nesting:
        return
    for item in element:
        if item.tag not in (_q("text:list-item"), _q("text:list-header")):
            continue
        for child in item:
            writer.check()
            if child.tag == _q("text:h"):  # a numbered heading: LibreOffice lists its outline numbering
                writer.heading(_outline_level(child), inline_text(child))
            elif child.tag == _q("text:p"):
                writer.list_item(inline_text(child), level)
            elif child.tag == _q("text:list"):
                _list(child, writer, level + 1, depth + 1)


def _table_rows(table: etree._Element, limits: Budget) -> Iterator[list[str]]:
    """The table's non-empty rows, repeated rows and cells expanded only up to the budget's caps."""
    budget, columns = limits.table_rows + 1, limits.table_columns
    given = 0
    for row in table.iter(_q("table:table-row")):
        cells: list[str] = []
        for cell in row:
            if cell.tag not in (_q("table:table-cell"), _q("table:covered-table-cell")):
                continue
            text = " ".join(inline_text(p) for p in cell.iter(_q("text:p")))
            repeat = _repeat(cell, "table:number-columns-repeated", columns + 1 - len(cells))
            cells.extend([text] * repeat)
            if len(cells) > columns:
                break
        if not any(cells):
            continue  # spreadsheets end in empty rows repeated a million times
        for _ in range(_repeat(row, "table:number-rows-repeated", budget - given)):
            given += 1
            yield cells
        if given >= budget:
            return


def _repeat(element: etree._Element, attribute: str, most: int) -> int:
    raw = str(element.get(_q(attribute), "1"))
    return max(0, min(int(raw) if raw.isdigit() else 1, most))


# -- presentation -----------------------------------------------------------------------------------


def _presentation(body: etree._Element, writer: MarkdownWriter) -> str | None:
    pages = body.findall(_q("draw:page"))
    writer.meter.at_most(len(pages), writer.budget.slides, "slides")
    first_title = None
    for number, page in enumerate(pages, start=1):
        writer.check()
        title_frame = next(
            (f for f in page.iter(_q("draw:frame")) if f.get(_q("presentation:class")) == "title"), None
        )
        title = " ".join(inline_text(title_frame).split()) if title_frame is not None else ""
        first_title = first_title or title or None
        writer.heading(2, f"Slide {number}: {title}" if title else f"Slide {number}")
        for child in page:
            if child is title_frame or child.tag == _q("presentation:notes"):
                continue
            _slide_shape(child, writer, 0)
        notes = page.find(_q("presentation:notes"))
        if notes is not None:
            text = "\n".join(
                inline_text(p)
                for frame in notes.iter(_q("draw:frame"))
                if frame.get(_q("presentation:class")) == "notes"
                for p in frame.iter(_q("text:p"))
            ).strip()
            if text:
                writer.paragraph("Speaker notes: " + text)
    return first_title


def _slide_shape(shape: etree._Element, writer: MarkdownWriter, depth: int) -> None:
    if depth > writer.budget.odf_nesting:
        return
    writer.check()
    if shape.tag == _q("draw:g"):
        for inner in shape:
            _slide_shape(inner, writer, depth + 1)
        return
    for child in shape:
        if child.tag == _q("table:table"):
            writer.table(_table_rows(child, writer.budget))
        elif child.tag == _q("draw:text-box"):
            _blocks(child, writer, depth + 1)
        elif child.tag == _q("text:p"):
            writer.paragraph(inline_text(child))
        elif child.tag == _q("text:list"):
            _list(child, writer, 0, depth + 1)


# -- spreadsheet ------------------------------------------------------------------------------------


def _spreadsheet(body: etree._Element, writer: MarkdownWriter) -> str | None:
    cells = writer.budget.workbook_cells
    cells_left = cells
    for sheet in body.findall(_q("table:table")):
        writer.heading(2, f"Sheet: {sheet.get(_q('table:name'), '')}")
        if cells_left < writer.budget.table_columns:
            writer.paragraph(f"(not shown: the spreadsheet's {cells:,}-cell budget is spent)")
            continue
        cells_left -= writer.table(_table_rows(sheet, writer.budget))
    return None
