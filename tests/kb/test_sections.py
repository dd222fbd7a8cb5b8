"""A document's outline, sections and passages (kbkit/kb/sections.py, docs/adr/0026): offsets in the
text get_document serves, heading paths, passages of bounded size, and where a result points."""

from __future__ import annotations

from kbkit.kb.formats.markdown import parse_markdown
from kbkit.kb.formats.pdf import parse_pdf
from kbkit.kb.formats.plain import parse_plain
from kbkit.kb.formats.registry import outline_of
from kbkit.kb.formats.rst import parse_rst
from kbkit.kb.sections import ANCHOR_CHARS, MAX_OUTLINE, MAX_PASSAGES, PASSAGE_CHARS, Layout, passages
from tests.peers.hostile import text_pdf

PAGE = """---
title: Widget Class
description: Learn about widgets.
---
# <a name="top"></a> `Widget` Class

A widget draws itself.

```cpp
# not a heading: a preprocessor line in a code fence
```

## Members

Setup
-----

Call `Widget::Init` first.

## <a name="resize"></a> `Widget::Resize`

Changes the size of the widget.

### Remarks

The widget keeps its aspect ratio.
"""


def test_a_markdown_outline_gives_each_heading_its_offset_in_the_served_text_outside_code_fences() -> None:
    parsed = parse_markdown(PAGE.encode())
    titles = [heading.title for heading in parsed.outline]
    assert titles == ["Widget Class", "Members", "Setup", "Widget::Resize", "Remarks"]
    for heading in parsed.outline:  # the body is what get_document serves: front matter left out
        assert parsed.body[heading.start :].lstrip("# ").startswith(("<a", "Members", "Setup", "Remarks"))
    assert [heading.level for heading in parsed.outline] == [1, 2, 2, 2, 3]
    assert parsed.headings[0] == "Widget Class"  # the searched field holds the heading as shown
    assert outline_of("md", parsed.body) == parsed.outline  # found again from the indexed text alone


def test_heading_paths_nest_by_level_and_a_section_ends_at_the_next_heading_of_its_level_or_above() -> None:
    parsed = parse_markdown(PAGE.encode())
    layout = Layout(len(parsed.body), parsed.outline)
    remarks = parsed.body.index("The widget keeps")
    assert layout.path_at(remarks) == "Widget Class > Widget::Resize > Remarks"
    assert layout.path_at(parsed.body.index("Call `Widget::Init`")) == "Widget Class > Setup"
    resize = parsed.body.index('## <a name="resize"')
    assert layout.read_end(resize) == len(parsed.body)  # its Remarks included, to the end
    setup = parsed.body.index("Setup\n---")
    assert layout.read_end(setup) == resize
    assert layout.read_end(0) == len(parsed.body)
    assert layout.read_end(remarks) == len(parsed.body)  # inside a section: read on to the end


def test_restructuredtext_titles_take_their_levels_from_the_order_their_adornments_first_appear() -> None:
    text = "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\nSteps.\n\nUpgrade\n=======\n\nMore.\n"
    parsed = parse_rst(text.encode())
    assert [(h.title, h.level) for h in parsed.outline] == [("Guide", 1), ("Install", 2), ("Upgrade", 1)]
    layout = Layout(len(parsed.body), parsed.outline)
    assert layout.path_at(parsed.body.index("Steps.")) == "Guide > Install"


def test_each_pdf_page_is_a_section_named_page_n_starting_where_its_text_does() -> None:
    parsed = parse_pdf(text_pdf(["first page text", "second page text", "third page text"]))
    assert [heading.title for heading in parsed.outline] == ["page 1", "page 2", "page 3"]
    for number, heading in enumerate(parsed.outline, start=1):
        word = ("first", "second", "third")[number - 1]
        assert parsed.body[heading.start :].startswith(f"{word} page text")
    assert outline_of("pdf", parsed.body) is None  # page breaks cannot be told from the text


def test_a_section_that_fits_is_one_passage_with_its_subsections_a_long_one_split_at_paragraphs() -> None:
    member = "## Small::Member\n\nShort.\n\n### Remarks\n\nAlso short.\n\n"
    paragraphs = "".join(f"Paragraph {n} " + "word " * 60 + "\n\n" for n in range(60))
    text = f"# Big Class\n\nIntro.\n\n{member}## Big::Member\n\n{paragraphs}"
    parsed = parse_markdown(text.encode())
    found = passages(parsed.body, parsed.outline)
    small = [p for p in found if p.path.startswith("Big Class > Small::Member")]
    assert len(small) == 1 and parsed.body[small[0].start : small[0].end] == member
    big = [p for p in found if p.path == "Big Class > Big::Member"]
    assert len(big) > 1 and all(p.end - p.start <= PASSAGE_CHARS for p in big)
    assert all(parsed.body[p.start : p.end].startswith(("## Big", "Paragraph")) for p in big)
    covered = "".join(parsed.body[p.start : p.end] for p in found)
    assert covered.replace("\n", "") == parsed.body.replace("\n", "")  # nothing lost, nothing twice


def test_a_result_points_at_the_whole_member_it_matched_in_not_only_at_its_remarks() -> None:
    filler = "".join(f"## Other{n}\n\n" + "text " * 400 + "\n\n" for n in range(10))
    member = (
        "## Widget::Resize\n\nSyntax.\n\n### Parameters\n\n"
        + "p " * 1600
        + "\n\n### Remarks\n\nKeeps ratio.\n\n"
    )
    text = f"# Widget Class\n\n{filler}{member}{filler}"
    parsed = parse_markdown(text.encode())
    remarks = next(p for p in passages(parsed.body, parsed.outline) if p.path.endswith("Remarks"))
    assert remarks.anchor == parsed.body.index("## Widget::Resize")
    assert remarks.anchor_path == "Widget Class > Widget::Resize"
    assert len(parsed.body) > ANCHOR_CHARS


def test_a_small_document_is_one_passage_and_a_result_in_it_points_at_its_start() -> None:
    parsed = parse_markdown(b"# Note\n\nA few words.\n\n## Detail\n\nMore words.\n")
    [only] = passages(parsed.body, parsed.outline)
    assert (only.start, only.end, only.anchor, only.anchor_path) == (0, len(parsed.body), 0, "Note")


def test_plain_text_is_cut_into_blocks_of_bounded_size_at_blank_lines() -> None:
    text = "".join(f"line {n} of a plain log\n" + ("\n" if n % 7 == 6 else "") for n in range(2000))
    parsed = parse_plain(text.encode())
    found = passages(parsed.body, parsed.outline)
    assert len(found) > 10 and all(p.end - p.start <= PASSAGE_CHARS and p.path == "" for p in found)
    assert all(parsed.body[p.start - 2 : p.start] == "\n\n" for p in found[1:])


def test_thousands_of_tiny_sections_are_merged_into_a_bounded_number_of_passages() -> None:
    text = "".join(f"# h{n}\n\nx{n} " + "y " * 20 + "\n\n" for n in range(20_000))
    parsed = parse_markdown(text.encode())
    found = passages(parsed.body, parsed.outline)
    assert len(found) <= MAX_PASSAGES
    assert found[0].start == 0 and found[-1].end == len(parsed.body)


def test_a_page_of_more_headings_than_the_outline_holds_keeps_the_rest_in_its_last_section() -> None:
    parsed = parse_markdown(("# h\n\nx\n\n" * (MAX_OUTLINE * 3)).encode())
    assert len(parsed.outline) == MAX_OUTLINE and len(parsed.headings) == MAX_OUTLINE * 3
    layout = Layout(len(parsed.body), parsed.outline)
    last = parsed.outline[-1].start
    assert layout.read_end(last) == len(parsed.body)  # the last section runs to the end
    assert len(passages(parsed.body, parsed.outline)) <= MAX_PASSAGES
