"""Office files built on demand (never checked in) by the libraries that write them: python-docx,
python-pptx, openpyxl and odfpy; and hostile ones made from them with the zipfile module. For
tests/kb/formats/test_office.py and bench/formats_office.py."""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Callable

SECRET = "SECRET-OUTSIDE-THE-FILE"


def sample_docx(title: str | None = "Release Runbook", paragraphs: int = 0) -> bytes:
    """Headings at two levels, a bulleted and a numbered list, a table, and `paragraphs` more."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.add_heading("Deploying", 1)
    document.add_paragraph("Roll out with the blue green strategy, one region at a time.")
    document.add_heading("Rollback", 2)
    document.add_paragraph("Redeploy the last tag from the release branch.", style="List Bullet")
    document.add_paragraph("Page the owner of the failing service.", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, cells in enumerate([("Service", "Owner"), ("billing", "ana"), ("search", "ravi")]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    for n in range(paragraphs):
        document.add_paragraph(f"Paragraph {n} says how the deployment goes on, step by step, in detail.")
    return _saved(document)


def sample_pptx(slides: int = 0) -> bytes:
    """Three slides (a title, bullets with speaker notes, a table), then `slides` more."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Quarterly plan"
    bullets = deck.slides.add_slide(deck.slide_layouts[1])
    bullets.shapes.title.text = "Rollout plan"
    body = bullets.placeholders[1].text_frame
    body.text = "Start with the canary hosts in Frankfurt"
    body.add_paragraph().text = "Then every region, one a day"
    bullets.notes_slide.notes_text_frame.text = "Mention the pager rotation for the weekend."
    numbers = deck.slides.add_slide(deck.slide_layouts[5])
    numbers.shapes.title.text = "Budget"
    table = numbers.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for row, cells in enumerate([("Item", "Cost"), ("servers", "1200"), ("licences", "300")]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    for n in range(slides):
        extra = deck.slides.add_slide(deck.slide_layouts[1])
        extra.shapes.title.text = f"Extra slide {n}"
        extra.placeholders[1].text_frame.text = f"Point {n} of the plan, with the reasoning behind it."
    return _saved(deck)


def sample_xlsx(title: str | None = None, rows: int = 3) -> bytes:
    """A `Costs` sheet (a header and `rows` rows, one a formula with its cached value absent) and an
    `Owners` sheet."""
    import openpyxl

    book = openpyxl.Workbook()
    if title:
        book.properties.title = title
    costs = book.active
    assert costs is not None
    costs.title = "Costs"
    costs.append(["Item", "Monthly cost", "Notes"])
    for n in range(rows):
        costs.append(
            [f"item {n}", 10.5 * (n + 1), f"renewed every spring, line {n}, reviewed by finance each quarter"]
        )
    owners = book.create_sheet("Owners")
    owners.append(["Team", "Lead"])
    owners.append(["storage", "Mireille Okonkwo"])
    return _saved(book)


def sample_odt(title: str | None = "Handbook", paragraphs: int = 0) -> bytes:
    from odf import dc, text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    if title:
        document.meta.addElement(dc.Title(text=title))
    document.text.addElement(text.H(outlinelevel=1, text="Onboarding"))
    document.text.addElement(text.P(text="Welcome aboard; your first week is planned for you."))
    document.text.addElement(text.H(outlinelevel=2, text="Accounts"))
    items = text.List()
    item = text.ListItem()
    item.addElement(text.P(text="Collect the laptop from the front desk"))
    inner = text.List()
    nested = text.ListItem()
    nested.addElement(text.P(text="Enrol its disk encryption key"))
    inner.addElement(nested)
    item.addElement(inner)
    items.addElement(item)
    document.text.addElement(items)
    document.text.addElement(_odf_table("Contacts", [["Desk", "Room"], ["IT", "B-204"]]))
    for n in range(paragraphs):
        document.text.addElement(text.P(text=f"Paragraph {n} says how onboarding goes on, step by step."))
    return _saved(document)


def sample_odp(slides: int = 0) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    deck = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    deck.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    deck.masterstyles.addElement(master)

    def frame(lines: list[str], kind: str | None = None) -> Frame:
        shape = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
        if kind:
            shape.setAttrNS(PRESENTATIONNS, "class", kind)
        box = TextBox()
        for line in lines:
            box.addElement(P(text=line))
        shape.addElement(box)
        return shape

    content = [
        ("Roadmap", ["Launch the mobile app in spring"], ""),
        ("Hiring", ["Two engineers for the platform team"], "Say that the offers went out in May."),
        *(
            (f"Extra slide {n}", [f"Point {n} of the plan, with the reasoning behind it."], "")
            for n in range(slides)
        ),
    ]
    for title, lines, notes in content:
        page = Page(masterpagename=master)
        page.addElement(frame([title], "title"))
        page.addElement(frame(lines))
        if notes:
            holder = Notes()
            holder.addElement(frame([notes], "notes"))
            page.addElement(holder)
        deck.presentation.addElement(page)
    return _saved(deck)


def sample_ods(rows: int = 2) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import TableCell, TableRow

    book = OpenDocumentSpreadsheet()
    sheet = _odf_table(
        "Budget",
        [
            ["Item", "Cost"],
            *([f"line {n}, reviewed by finance each quarter", str(12 + n)] for n in range(rows)),
        ],
    )
    filler = TableRow(numberrowsrepeated=1_048_000)  # what spreadsheets write after the last row
    filler.addElement(TableCell(numbercolumnsrepeated=1024))
    sheet.addElement(filler)
    book.spreadsheet.addElement(sheet)
    return _saved(book)


def _odf_table(name: str, rows: list[list[str]]) -> object:
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    table = Table(name=name)
    for cells in rows:
        row = TableRow()
        for value in cells:
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    return table


def _saved(document: object) -> bytes:
    out = io.BytesIO()
    if hasattr(document, "write"):  # odfpy
        document.write(out)
    else:
        document.save(out)  # type: ignore[attr-defined]
    return out.getvalue()


SAMPLES: dict[str, Callable[[], bytes]] = {
    "docx": sample_docx,
    "pptx": sample_pptx,
    "xlsx": sample_xlsx,
    "odt": sample_odt,
    "odp": sample_odp,
    "ods": sample_ods,
}
"""One ordinary file of each format."""
LONG: dict[str, Callable[[], bytes]] = {
    "docx": lambda: sample_docx(paragraphs=200),
    "pptx": lambda: sample_pptx(slides=150),
    "xlsx": lambda: sample_xlsx(rows=250),
    "odt": lambda: sample_odt(paragraphs=250),
    "odp": lambda: sample_odp(slides=150),
    "ods": lambda: sample_ods(rows=250),
}
"""One file of each format whose text is over sections.ANCHOR_CHARS: a search hit in it points at
the section of its passage (in a shorter file, at the whole text)."""
MAIN_PART = {
    "docx": "word/document.xml",
    "pptx": "ppt/slides/slide2.xml",
    "xlsx": "xl/worksheets/sheet1.xml",
    "odt": "content.xml",
    "odp": "content.xml",
    "ods": "content.xml",
}
"""The XML part holding each sample's text."""


# -- hostile ----------------------------------------------------------------------------------------


def rewrite(data: bytes, name: str, change: Callable[[bytes], bytes]) -> bytes:
    """The archive again, with member `name` changed."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info)
            target.writestr(info.filename, change(content) if info.filename == name else content)
    return out.getvalue()


def with_member(data: bytes, name: str, chunks: int, chunk: bytes = b"\0" * (1024 * 1024)) -> bytes:
    """The archive with one more member: `chunks` copies of `chunk`, streamed (never all in memory)."""
    out = io.BytesIO(data)
    with (
        zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as target,
        target.open(name, "w", force_zip64=False) as member,
    ):
        for _ in range(chunks):
            member.write(chunk)
    return out.getvalue()


_LAUGHS = "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(2, 10))
ENTITY_DTD = '<!DOCTYPE root [<!ENTITY lol1 "lol">' + _LAUGHS + '<!ENTITY xxe SYSTEM "file://{path}">]>'


def with_entities(
    data: bytes, part: str, secret_file: str, marker: str, reference: str = "&lol9; &xxe;"
) -> bytes:
    """The archive with a DTD in `part` declaring a billion laughs (`&lol9;`) and an external
    entity naming `secret_file` (`&xxe;`), and `reference` written right after `marker` in its text."""

    def change(xml: bytes) -> bytes:
        dtd = ENTITY_DTD.replace("{path}", secret_file).encode()
        xml = re.sub(rb"^(<\?xml[^>]*\?>\s*)?", lambda m: (m.group(1) or b"") + dtd, xml, count=1)
        return xml.replace(marker.encode(), marker.encode() + b" " + reference.encode(), 1)

    return rewrite(data, part, change)


def lying_sizes(data: bytes, name: str, declared: int) -> bytes:
    """The archive with member `name`'s uncompressed size in the central directory (and its local
    header) set to `declared`, whatever its data inflates to."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    info = archive.getinfo(name)
    out = bytearray(data)
    struct.pack_into("<L", out, info.header_offset + 22, declared)  # local header
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_length] == name.encode():
            struct.pack_into("<L", out, at + 24, declared)
            return bytes(out)
        at = data.find(b"PK\x01\x02", at + 46)
    raise ValueError(f"no {name} in the central directory")


def many_members(count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for n in range(count):
            target.writestr(f"m{n}", b"")
    return out.getvalue()


def big_sheet_xlsx(rows: int, columns: int) -> bytes:
    """A workbook whose one sheet holds rows x columns numbers, its XML written directly (openpyxl
    takes minutes to write a million cells); its dimension says how far it runs."""
    from openpyxl.utils import get_column_letter

    row_xml = "<c><v>7</v></c>" * columns
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="A1:{get_column_letter(columns)}{rows}"/><sheetData>'
        + "".join(f'<row r="{n}">{row_xml}</row>' for n in range(1, rows + 1))
        + "</sheetData></worksheet>"
    )
    return rewrite(sample_xlsx(), "xl/worksheets/sheet1.xml", lambda _: sheet.encode())


def damaged_member(data: bytes, name: str, *, method: int | None = None) -> bytes:
    """The archive with member `name`'s deflate stream overwritten in its middle, or (with
    `method`) its compression method set to that number in both headers."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    out = bytearray(data)
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_length + extra_length
    if method is None:
        middle = start + info.compress_size // 3
        out[middle : middle + 16] = b"\xff" * 16
        return bytes(out)
    struct.pack_into("<H", out, info.header_offset + 8, method)
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + length] == name.encode():
            struct.pack_into("<H", out, at + 10, method)
        at = data.find(b"PK\x01\x02", at + 46)
    return bytes(out)
