"""Word, PowerPoint, Excel and OpenDocument files (docs/adr/0033): indexed and served as Markdown
that keeps their structure, searched section by section (a slide, a sheet), and each budget
tried with a file built to break it: a zip bomb, a header that lies, entities, a million cells,
too many slides or too much text, encrypted and damaged files. Every file is built here
(tests/peers/office.py) by the library that writes the format, or from one with zipfile."""

from __future__ import annotations

import io
import random
import socket
import sys
import zipfile
from pathlib import Path

import anyio
import pytest

from kbkit.config import load_settings
from kbkit.errors import DocumentRefused
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats import archive, markdown_writer, odf, ooxml
from kbkit.kb.formats.base import ParsedText
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.registry import ALL_PARSERS
from tests.helpers.project import make_project
from tests.helpers.serve import document_text, kbkit_in_process, serve_in_memory
from tests.peers.office import (
    LONG,
    MAIN_PART,
    SAMPLES,
    big_sheet_xlsx,
    damaged_member,
    lying_sizes,
    many_members,
    rewrite,
    sample_docx,
    sample_odp,
    sample_ods,
    sample_odt,
    sample_pptx,
    sample_xlsx,
    with_entities,
    with_member,
)

SESSION_BOUND = 60
OLE_HEADER = archive.OLE_MAGIC + b"\0" * 504


def parse(ext: str, data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return ALL_PARSERS[ext].extract(data, budget)


def refused(ext: str, data: bytes, budget: Budget = BUDGET) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        parse(ext, data, budget)
    assert "\n" not in str(caught.value)
    return caught.value


def open_kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


# -- structure --------------------------------------------------------------------------------------


def test_a_word_document_keeps_its_heading_levels_lists_and_table_and_its_core_title() -> None:
    parsed = parse("docx", sample_docx())
    assert parsed.title == "Release Runbook"
    assert [(h.level, h.title) for h in parsed.outline] == [(1, "Deploying"), (2, "Rollback")]
    assert parsed.body.startswith("# Deploying\n\nRoll out with the blue green strategy")
    assert "## Rollback\n\n- Redeploy the last tag from the release branch.\n1. Page the owner" in parsed.body
    assert "| Service | Owner |\n| --- | --- |\n| billing | ana |\n| search | ravi |\n" in parsed.body
    for heading in parsed.outline:
        assert parsed.body[heading.start :].startswith("#" * heading.level + " " + heading.title)
    assert parse("docx", sample_docx(title=None)).title == "Deploying"  # no core title: the first heading


def test_a_deck_is_one_section_a_slide_with_its_text_tables_and_speaker_notes() -> None:
    parsed = parse("pptx", sample_pptx())
    assert [h.title for h in parsed.outline] == [
        "Slide 1: Quarterly plan",
        "Slide 2: Rollout plan",
        "Slide 3: Budget",
    ]
    assert parsed.title == "Quarterly plan"  # no core title: the first slide's
    slide2 = parsed.body[parsed.outline[1].start : parsed.outline[2].start]
    assert slide2 == (
        "## Slide 2: Rollout plan\n\n- Start with the canary hosts in Frankfurt\n- Then every region, one a day\n\n"
        "Speaker notes: Mention the pager rotation for the weekend.\n\n"
    )
    assert "| Item | Cost |\n| --- | --- |\n| servers | 1200 |\n| licences | 300 |\n" in parsed.body


def test_a_workbook_is_one_section_a_sheet_holding_a_table_of_its_values() -> None:
    parsed = parse("xlsx", sample_xlsx())
    assert [h.title for h in parsed.outline] == ["Sheet: Costs", "Sheet: Owners"]
    assert parsed.title is None  # the file's name is the title then, not a sheet's
    assert (
        "| Item | Monthly cost | Notes |\n| --- | --- | --- |\n| item 0 | 10.5 | renewed every spring"
        in parsed.body
    )
    assert (
        "## Sheet: Owners\n\n| Team | Lead |\n| --- | --- |\n| storage | Mireille Okonkwo |\n" in parsed.body
    )
    assert parse("xlsx", sample_xlsx(title="Running costs")).title == "Running costs"


def test_opendocument_text_slides_and_sheets_convert_as_their_office_counterparts() -> None:
    text = parse("odt", sample_odt())
    assert text.title == "Handbook"
    assert [(h.level, h.title) for h in text.outline] == [(1, "Onboarding"), (2, "Accounts")]
    assert "- Collect the laptop from the front desk\n  - Enrol its disk encryption key\n" in text.body
    assert "| Desk | Room |\n| --- | --- |\n| IT | B-204 |\n" in text.body
    assert parse("odt", sample_odt(title=None)).title == "Onboarding"
    slides = parse("odp", sample_odp())
    assert [h.title for h in slides.outline] == ["Slide 1: Roadmap", "Slide 2: Hiring"]
    assert slides.title == "Roadmap"
    assert (
        "Two engineers for the platform team\n\nSpeaker notes: Say that the offers went out in May."
        in slides.body
    )
    sheets = parse("ods", sample_ods())
    assert [h.title for h in sheets.outline] == ["Sheet: Budget"]
    assert sheets.body == (
        "## Sheet: Budget\n\n| Item | Cost |\n| --- | --- |\n"
        "| line 0, reviewed by finance each quarter | 12 |\n| line 1, reviewed by finance each quarter | 13 |\n\n"
    )


def test_each_format_is_indexed_and_a_hit_in_a_deck_or_sheet_names_its_slide_or_sheet(tmp_path: Path) -> None:
    files = {f"office/sample.{ext}": build() for ext, build in LONG.items()}
    kb = open_kb(make_project(tmp_path / "p", files))
    try:
        assert kb.store.skipped() == []
        [deck] = kb.search("canary hosts frankfurt").results
        assert (deck.path, deck.section) == ("office/sample.pptx", "Slide 2: Rollout plan")
        assert "**Frankfurt**" in deck.snippet or "**frankfurt**" in deck.snippet.lower()
        [sheet] = kb.search("Mireille Okonkwo").results
        costs = kb.search("item 12 renewed every spring").results[0]
        assert (costs.path, costs.section) == ("office/sample.xlsx", "Sheet: Costs")
        assert (sheet.path, sheet.section) == ("office/sample.xlsx", "Sheet: Owners")
        [word] = kb.search("redeploy the last tag release branch").results
        assert (word.path, word.section, word.title) == (
            "office/sample.docx",
            "Deploying > Rollback",
            "Release Runbook",
        )
        [odp] = kb.search("offers went out in May").results[:1]
        assert (odp.path, odp.section) == ("office/sample.odp", "Slide 2: Hiring")
        [odt] = kb.search("disk encryption key").results[:1]
        assert (odt.path, odt.section) == ("office/sample.odt", "Onboarding > Accounts")
        [ods] = kb.search("line 7 reviewed by finance").results[:1]
        assert (ods.path, ods.section) == ("office/sample.ods", "Sheet: Budget")
    finally:
        kb.close()


@pytest.mark.anyio
async def test_get_document_serves_the_markdown_with_its_table_and_reads_a_slide_from_a_hits_offset(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", {"plan.pptx": LONG["pptx"](), "runbook.docx": sample_docx()})
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(root) as client:
            read = await client.call_tool("get_document", {"path": "runbook.docx"})
            assert not read.is_error, read.content
            assert read.structured_content["media_type"] == "text/markdown"
            assert "| Service | Owner |\n| --- | --- |\n| billing | ana |" in document_text(read)
            found = await client.call_tool("search", {"query": "pager rotation weekend"})
            hit = found.structured_content["results"][0]
            assert (hit["path"], hit["section"]) == ("plan.pptx", "Slide 2: Rollout plan")
            slide = await client.call_tool("get_document", {"path": "plan.pptx", "offset": hit["offset"]})
            assert document_text(slide).startswith("## Slide 2: Rollout plan\n\n- Start with the canary")
            assert "Slide 3" not in document_text(slide)
            assert slide.structured_content["section"] == "Slide 2: Rollout plan"


# -- budgets ----------------------------------------------------------------------------------------


def never_call_the_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if python-docx, python-pptx or openpyxl is asked to open a file from now on."""
    import docx
    import openpyxl
    import pptx

    def called(*_: object, **__: object) -> None:
        raise AssertionError("the library was handed a file the archive checks should have refused")

    monkeypatch.setattr(docx, "Document", called)
    monkeypatch.setattr(pptx, "Presentation", called)
    monkeypatch.setattr(openpyxl, "load_workbook", called)


def test_a_zip_bomb_is_refused_from_its_declared_sizes_before_anything_is_inflated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bomb = with_member(sample_docx(), "word/media/zeros.bin", chunks=64)  # 64 MiB of zeros
    assert len(bomb) < 200 * 1024
    dense = with_member(sample_xlsx(), "xl/media/zeros.bin", chunks=4)
    deck = sample_pptx()
    never_call_the_libraries(monkeypatch)
    inflated: list[int] = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda *a, **k: inflated.append(1) or real_open(*a, **k))
    over = refused("docx", bomb)
    assert over.reason == "over-budget"
    assert "word/media/zeros.bin unpacks to 67,108,864 bytes, over the 32 MiB budget per part" in str(over)
    ratio = refused("xlsx", dense)
    assert ratio.reason == "over-budget" and "-fold, over the 500-fold budget (a zip bomb)" in str(ratio)
    total = refused("pptx", deck, Budget(zip_total_bytes=20 * 1024))
    assert total.reason == "over-budget" and "unpacks to over" in str(total)
    assert inflated == []


def test_a_header_that_lies_about_a_members_size_cannot_make_a_read_larger(tmp_path: Path) -> None:
    declared = 2 * 1024 * 1024
    liar = lying_sizes(with_member(sample_docx(), "word/big.xml", chunks=16), "word/big.xml", declared)
    with zipfile.ZipFile(io.BytesIO(liar)) as zipped:
        assert zipped.getinfo("word/big.xml").file_size == declared
        got = 0
        with pytest.raises(zipfile.BadZipFile, match="CRC"), zipped.open("word/big.xml") as member:
            while chunk := member.read(1024 * 1024):
                got += len(chunk)
        assert got <= declared  # zipfile stops at the declared size, then fails the CRC check
        with pytest.raises(DocumentRefused, match="over 524,288 bytes") as over:
            archive.read_member(zipped, "word/big.xml", "test file", cap=512 * 1024)
        assert over.value.reason == "over-budget"
        with pytest.raises(DocumentRefused, match="word/big.xml is damaged") as damaged:
            archive.read_member(zipped, "word/big.xml", "test file", cap=BUDGET.zip_member_bytes)
        assert damaged.value.reason == "unparsable"
    odt = lying_sizes(sample_odt(), "content.xml", 100)
    assert refused("odt", odt).reason == "unparsable"


MARKERS = {
    "docx": "blue green",
    "pptx": "canary hosts",
    "xlsx": "Monthly cost",
    "odt": "Welcome aboard",
    "odp": "mobile app",
    "ods": "Item",
}
"""Text in each sample's main part, after which the entity is used."""


@pytest.mark.parametrize("reference", ["&lol9;", "&xxe;"])
@pytest.mark.parametrize("ext", list(MAIN_PART))
def test_entities_in_a_part_are_refused_and_the_parsers_below_expand_and_fetch_nothing(
    ext: str, reference: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-OUTSIDE-THE-FILE")
    part = MAIN_PART[ext]
    hostile = with_entities(SAMPLES[ext](), part, str(secret), MARKERS[ext], reference)
    written = zipfile.ZipFile(io.BytesIO(hostile)).read(part)
    assert b"<!ENTITY xxe SYSTEM" in written and MARKERS[ext].encode() + b" " + reference.encode() in written
    first = refused(ext, hostile)
    assert first.reason == "unparsable" and "declares a DTD or entities" in str(first)
    # Below kbkit's check, each parser is safe on its own: lxml with resolve_entities=False (python-docx,
    # python-pptx, kbkit's OpenDocument reader; libxml2 also stops the laughs), defusedxml (openpyxl).
    monkeypatch.setattr(ooxml, "refuse_dtds", lambda *_: None)
    monkeypatch.setattr(odf, "refuse_dtds", lambda *_: None)
    try:
        body = parse(ext, hostile).body
    except DocumentRefused as error:  # the parser refused the entities: fine, as long as it says so
        assert error.reason == "unparsable" and "\n" not in str(error)
    else:
        assert MARKERS[ext] in body  # the part was read...
        assert "SECRET-OUTSIDE" not in body and "lollol" not in body  # ...and its entities left unexpanded


def test_a_sheet_of_a_million_cells_is_cut_without_reading_past_its_first_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openpyxl.worksheet import _reader

    rows_parsed: list[int] = []
    real = _reader.WorkSheetParser.parse_row
    monkeypatch.setattr(
        _reader.WorkSheetParser, "parse_row", lambda self, row: rows_parsed.append(1) or real(self, row)
    )
    parsed = parse("xlsx", big_sheet_xlsx(rows=1000, columns=1000))
    sheet = parsed.body[: parsed.outline[1].start]
    assert sheet.count("\n| 7 |") == BUDGET.table_rows
    assert "… 800 more rows; … 970 more columns not shown" in sheet
    assert len(rows_parsed) < BUDGET.table_rows + 10  # not the other 800


def test_spreadsheets_repeated_empty_rows_and_a_workbooks_total_are_within_the_cell_budgets() -> None:
    ods = parse("ods", sample_ods(rows=500))  # and 1,048,000 empty rows of 1,024 cells after them
    assert ods.body.count("\n| line ") == BUDGET.table_rows - 1
    assert "… more rows not shown" in ods.body
    small = Budget(workbook_cells=5 * 3 + 20)
    # Costs: 5 rows x 3 columns; Owners over what is left
    book = parse("xlsx", sample_xlsx(rows=4), small).body
    assert "## Sheet: Owners\n\n(not shown: the workbook's 35-cell budget is spent)" in book


def test_too_many_slides_are_refused_before_any_slide_is_read() -> None:
    budget = Budget(slides=4)
    parse("pptx", sample_pptx(slides=1), budget)
    deck = refused("pptx", sample_pptx(slides=2), budget)
    assert deck.reason == "over-budget" and "has 5 slides, over the 4-slide budget" in str(deck)
    assert refused("odp", sample_odp(slides=3), budget).reason == "over-budget"


def test_how_deep_sections_and_groups_are_read_and_how_far_a_sheet_is_looked_at_are_the_budgets() -> None:
    import openpyxl
    from odf import text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    outer = document.text
    for depth in range(6):
        section = text.Section(name=f"s{depth}")
        outer.addElement(section)
        outer = section
    outer.addElement(text.P(text="deep words"))
    odt = io.BytesIO()
    document.write(odt)
    assert "deep words" in parse("odt", odt.getvalue()).body
    assert "deep words" not in parse("odt", odt.getvalue(), Budget(odf_nesting=3)).body

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.cell(row=1, column=1, value="header")
    sheet.cell(row=120, column=1, value="late row")
    xlsx = io.BytesIO()
    book.save(xlsx)
    assert "late row" in parse("xlsx", xlsx.getvalue()).body
    assert "late row" not in parse("xlsx", xlsx.getvalue(), Budget(sheet_rows_read=100)).body

    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    shapes = deck.slides.add_slide(deck.slide_layouts[6]).shapes
    for _ in range(5):
        shapes = shapes.add_group_shape().shapes
    shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "grouped words"
    pptx = io.BytesIO()
    deck.save(pptx)
    assert "grouped words" in parse("pptx", pptx.getvalue()).body
    assert "grouped words" not in parse("pptx", pptx.getvalue(), Budget(group_depth=3)).body


@pytest.mark.parametrize("ext", ["docx", "odt", "pptx"])
def test_conversion_stops_once_the_text_or_cpu_budget_is_spent(
    ext: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = {"docx": lambda: sample_docx(paragraphs=400), "odt": lambda: sample_odt(paragraphs=400)}
    data = build.get(ext, lambda: sample_pptx(slides=150))()
    written: list[int] = []
    real_write = markdown_writer.MarkdownWriter._write
    monkeypatch.setattr(
        markdown_writer.MarkdownWriter,
        "_write",
        lambda self, text: (real_write(self, text), written.append(len(text))),
    )
    over = refused(ext, data, Budget(text_chars=4000))
    assert over.reason == "over-budget" and "text is over 4,000 characters" in str(over)
    assert sum(written) <= 4000 and len(written) < 200  # stopped there: the file has 400 blocks
    written.clear()
    slow = refused(ext, data, Budget(cpu_seconds=-1.0))
    assert slow.reason == "over-budget" and "took over" in str(slow)
    assert written == []


def test_too_many_members_are_refused_from_the_end_record_before_zipfile_lists_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crowded = many_members(51)
    listed: list[int] = []
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: listed.append(1))
    crowd = refused("docx", crowded, Budget(zip_members=50))
    assert crowd.reason == "over-budget" and "lists 51 members, over the 50-member budget" in str(crowd)
    assert listed == []


def test_encrypted_damaged_and_mis_named_files_are_skipped_with_a_line_each_and_the_rest_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connects: list[object] = []
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: connects.append(address))
    docx = sample_docx()
    external = rewrite(
        docx,
        "word/_rels/document.xml.rels",
        lambda rels: rels.replace(
            b"</Relationships>",
            b'<Relationship Id="rIdX1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            b'relationships/image" Target="http://127.0.0.1:9/x.png" TargetMode="External"/>'
            b'<Relationship Id="rIdX2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            b'relationships/oleObject" Target="file:///etc/passwd" TargetMode="External"/></Relationships>',
        ),
    )
    encrypted_zip = io.BytesIO()
    with zipfile.ZipFile(encrypted_zip, "w") as target:
        target.writestr("content.xml", b"<x/>")
    flagged = bytearray(encrypted_zip.getvalue())
    flagged[6] |= 1  # the local header's encrypted bit
    flagged[flagged.find(b"PK\x01\x02") + 8] |= 1  # and the directory's
    files = {
        "guide.md": "# Guide\n\nHow we work.\n",
        "linked.docx": external,
        "secret.docx": OLE_HEADER,
        "locked.ods": bytes(flagged),
        "half.pptx": sample_pptx()[:20_000],
        "noise.xlsx": b"PK\x03\x04" + b"\x17" * 3000,
        "sheet-named.docx": sample_xlsx(),
        "wrong.odt": sample_ods(),
    }
    root = make_project(tmp_path / "p", files)
    done = kbkit_in_process("index", "--root", str(root), "--skipped")
    assert done.returncode == 0, done.stderr
    lines = {
        line.split(":", 1)[0].split()[-1]: line for line in done.stdout.splitlines() if "skipped " in line
    }
    assert "6 skipped (" in done.stdout
    assert "is an OLE compound file, not a zip: it is password-protected" in lines["secret.docx"]
    assert "has encrypted parts" in lines["locked.ods"]
    assert "truncated or damaged zip" in lines["half.pptx"]
    assert "damaged" in lines["noise.xlsx"]
    assert "could not be read" in lines["sheet-named.docx"]
    assert (
        "holds another kind of document (application/vnd.oasis.opendocument.spreadsheet)"
        in lines["wrong.odt"]
    )
    assert "linked.docx" not in lines and connects == []
    assert "Traceback" not in done.stdout + done.stderr
    kb = open_kb(root)
    try:
        assert {hit.path for hit in kb.search("blue green strategy").results} == {"linked.docx"}
    finally:
        kb.close()


def test_a_missing_library_skips_its_files_with_parser_missing_and_the_doctor_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbkit.diagnostics import Context, check_parsers

    deck = sample_pptx()
    root = make_project(tmp_path / "p", {"guide.md": "# Guide\n"})
    monkeypatch.setitem(sys.modules, "pptx", None)  # `import pptx` now fails as if uninstalled
    missing = refused("pptx", deck)
    assert (
        missing.reason == "parser-missing"
        and "python-pptx is not installed; run: pip install python-pptx" in str(missing)
    )
    (finding,) = check_parsers(Context(root, load_settings(root)))
    assert finding.status == "warn"
    assert finding.finding == "pptx is enabled but python-pptx is not installed: those files are skipped"
    assert "-m pip install python-pptx, or drop pptx from [parsers] enabled" in finding.fix


def test_images_and_embedded_files_are_never_inflated_and_whole_parsed_xml_has_its_own_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    noise = random.Random(1).randbytes(256 * 1024)
    linked = rewrite(
        sample_docx(),
        "word/_rels/document.xml.rels",
        lambda rels: rels.replace(
            b"</Relationships>",
            b'<Relationship Id="rIdP9" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            b'relationships/image" Target="media/image9.png"/></Relationships>',
        ),
    )
    typed = rewrite(
        linked,
        "[Content_Types].xml",
        lambda types: types.replace(
            b"<Default ", b'<Default Extension="png" ContentType="image/png"/><Default ', 1
        ),
    )
    # 2 MiB that python-docx would load whole on opening:
    pictured = with_member(typed, "word/media/image9.png", chunks=8, chunk=noise)
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def reading(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, mode: str = "r", *args: object) -> object:
        info = name if isinstance(name, zipfile.ZipInfo) or mode != "r" else self.getinfo(name)
        if (
            mode == "r" and isinstance(info, zipfile.ZipInfo) and info.file_size
        ):  # a member inflated (an emptied copy's, or one written, is not)
            opened.append(info.filename)
        return real_open(self, name, mode, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "open", reading)
    assert parse("docx", pictured).title == "Release Runbook"
    assert "word/media/image9.png" not in opened and "word/document.xml" in opened
    sheet = big_sheet_xlsx(rows=300, columns=40)
    over = refused("docx", sample_docx(), Budget(zip_parsed_bytes=30 * 1024))
    assert over.reason == "over-budget" and "XML parts unpack to over 0 MiB" in str(over)
    assert parse("xlsx", sheet).outline[0].title == "Sheet: Costs"  # a sheet is streamed, not parsed whole


@pytest.mark.parametrize("ext", list(MAIN_PART))
def test_a_damaged_deflate_stream_or_an_unknown_compression_method_is_one_line_not_a_crash(ext: str) -> None:
    data = SAMPLES[ext]()
    for broken in (damaged_member(data, MAIN_PART[ext]), damaged_member(data, MAIN_PART[ext], method=99)):
        error = refused(ext, broken)
        assert error.reason == "unparsable", error


def test_opendocument_numbered_headings_inside_outline_lists_stay_headings() -> None:
    from odf import text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    numbered = text.List()
    item = text.ListItem()
    item.addElement(text.H(outlinelevel=2, text="Escalation"))
    numbered.addElement(item)
    document.text.addElement(text.H(outlinelevel=1, text="Support"))
    document.text.addElement(numbered)
    document.text.addElement(text.P(text="Call the duty manager."))
    out = io.BytesIO()
    document.write(out)
    parsed = parse("odt", out.getvalue())
    assert [(h.level, h.title) for h in parsed.outline] == [(1, "Support"), (2, "Escalation")]
    assert "## Escalation\n\nCall the duty manager." in parsed.body
