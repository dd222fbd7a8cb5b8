"""HTML pages and Jupyter notebooks (docs/adr/0034): indexed as Markdown through the real path (scan,
search, get_document), boilerplate left out, sections named by their headings, and every budget
tried with a file built to break it: each refusal is one line that `kbkit index --skipped` shows."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.errors import DocumentRefused
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.documents import FILE_SIZE_CAP
from kbkit.kb.formats import html, notebook
from kbkit.kb.formats.base import ParsedText
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markdown_writer import fence_for
from kbkit.kb.formats.registry import ALL_PARSERS
from tests.helpers.project import make_project
from tests.helpers.serve import document_text, serve_in_memory


def parse_html(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """A page read as the index reads it: through the registry and its failure wrapper."""
    return ALL_PARSERS["html"].extract(data, budget)


def parse_notebook(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    return ALL_PARSERS["ipynb"].extract(data, budget)


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Rollout guide</title>
<script>var tracker = "zebracorn";</script><style>.nav { color: red }</style></head>
<body>
<header><a href="/">Home</a> <span>Sitewide banner quokka</span></header>
<nav><a href="/a">Navigation link narwhal</a></nav>
<div role="navigation">Breadcrumb axolotl</div>
<main>
<h1>Rolling out a service</h1>
<p>Ship with the <b>blue-green</b> strategy and <a href="https://example.com/x">watch the dashboards</a>.</p>
<h2>Canary releases<a class="headerlink" href="#canary">¶</a></h2>
<p>Send a tenth of the traffic to the canary pod first.</p>
<ol><li>Build the image<ul><li>tag it</li></ul></li><li>Push it</li></ol>
<table><tr><th>Flag</th><th>Meaning</th></tr><tr><td>--canary</td><td>route a tenth | of traffic</td></tr></table>
<h2>Rollback</h2>
<pre><code class="language-bash">kubectl rollout undo deployment/web</code></pre>
<aside>Related posts wombat</aside>
<form><input name="q" value="search box pangolin"></form>
</main>
<footer>Copyright footer okapi</footer>
</body></html>
"""


LONG_PAGE = PAGE.replace(
    "<h2>Canary",
    "<h2>Monitoring</h2>"
    + "<p>The dashboards show latency and errors for each region.</p>" * 250
    + "<h2>Canary",
)
"""The page with a long section before the one searched for: long enough to be read by sections."""


def notebook_json(cells: list[dict[str, object]], **metadata: object) -> str:
    meta = {"kernelspec": {"name": "python3", "language": "python"}, **metadata}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells})


def code(source: str, output: str = "") -> dict[str, object]:
    outputs = [{"output_type": "stream", "name": "stdout", "text": output}] if output else []
    return {"cell_type": "code", "source": source, "outputs": outputs, "metadata": {}}


def markdown(source: str) -> dict[str, object]:
    return {"cell_type": "markdown", "source": source.splitlines(keepends=True), "metadata": {}}


NOTEBOOK = notebook_json(
    [
        markdown("# Churn analysis\n\nWhy customers leave."),
        code("import pandas as pd\nframe = pd.read_csv('churn.csv')", "loaded 4,200 rows\n"),
        markdown("## Seasonal effects\n\nChurn peaks after the yearly invoice."),
        code("frame.groupby('month').churn.mean()", "x" * (notebook.OUTPUT_MAX_CHARS + 1)),
    ]
)


LONG_NOTEBOOK = notebook_json(
    [
        *json.loads(NOTEBOOK)["cells"][:2],
        markdown("## Data cleaning\n\n" + "Rows with missing months are dropped before grouping.\n\n" * 250),
        *json.loads(NOTEBOOK)["cells"][2:],
    ]
)


def open_kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


def skipped_lines(root: Path) -> str:
    """What `kbkit index --skipped` prints (in-process)."""
    done = CliRunner().invoke(app, ["index", "--root", str(root), "--skipped"])
    assert done.exit_code == 0, done.output
    return done.output


# -- HTML -------------------------------------------------------------------------------------------


def test_an_html_page_is_its_main_content_as_markdown_with_its_structure() -> None:
    parsed = parse_html(PAGE.encode())
    assert parsed.title == "Rollout guide"
    assert parsed.headings == ["Rolling out a service", "Canary releases", "Rollback"]
    body = parsed.body
    assert body.startswith(
        "# Rolling out a service\n\nShip with the blue-green strategy and watch the dashboards."
    )
    assert "## Canary releases\n\nSend a tenth" in body  # the permalink mark is not in the title
    assert "1. Build the image\n   - tag it\n2. Push it" in body
    assert "| Flag | Meaning |\n| --- | --- |\n| --canary | route a tenth \\| of traffic |" in body
    assert "```bash\nkubectl rollout undo deployment/web\n```" in body
    assert "https://example.com" not in body  # links are their text
    for boilerplate in (
        "zebracorn",
        "color",
        "Home",
        "quokka",
        "narwhal",
        "axolotl",
        "wombat",
        "pangolin",
        "okapi",
    ):
        assert boilerplate not in body, boilerplate
    for heading in parsed.outline:
        assert body[heading.start :].startswith("#" * heading.level + " " + heading.title)


def test_permalink_marks_around_a_heading_are_not_its_title() -> None:
    page = b'<h2><a class="doc-anchor" href="#s">\xc2\xa7</a>Supported arguments</h2><h2>#pragma once<a>#</a></h2>'
    assert parse_html(page).headings == ["Supported arguments", "#pragma once"]


def test_without_a_title_element_the_first_h1_is_the_title_and_an_articles_own_header_is_kept() -> None:
    page = (
        "<body><header>Site</header><article><header><h1>Release notes</h1></header><p>Fixed.</p></article>"
    )
    parsed = parse_html(page.encode())
    assert parsed.title == "Release notes"
    assert parsed.body == "# Release notes\n\nFixed."


def test_a_page_inside_one_form_or_a_main_inside_an_aside_is_kept() -> None:
    aspnet = '<body><form id="form1"><nav>Menu</nav><h1>Quarterly report</h1><p>Sales rose.</p></form>'
    assert parse_html(aspnet.encode()).body == "# Quarterly report\n\nSales rose."
    wrapped = "<body><div role='navigation'>Menu</div><aside><main><p>The content.</p></main></aside>"
    assert parse_html(wrapped.encode()).body == "The content."
    search_form = "<body><form><h2>Search</h2><input></form><h1>Title</h1><p>Text.</p>"
    assert parse_html(search_form.encode()).body == "# Title\n\nText."


def test_nested_site_headers_are_dropped_in_one_walk() -> None:
    page = b"<body>" + b"<header>x" * 2000 + b"</header>" * 2000 + b"<p>own</p>"
    assert parse_html(page).body == "own"


def test_the_meta_charset_decides_the_encoding_and_utf8_is_the_default() -> None:
    latin = '<meta charset="iso-8859-1"><title>Caf\xe9 \x93menu\x94</title><p>cr\xe8me</p>'.encode("latin-1")
    parsed = parse_html(latin)
    assert parsed.title == "Café “menu”"  # a latin-1 label means windows-1252, as browsers read it
    assert parsed.body == "crème"
    assert parse_html("<p>naïve</p>".encode()).body == "naïve"
    assert parse_html(b"\xef\xbb\xbf<p>bom</p>").body == "bom"
    assert parse_html("<p>sixteen</p>".encode("utf-16")).body == "sixteen"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"<html><body>\x00\x01\x02\x89PNG", "binary data"),
        (b'<meta charset="latin1"><p>\x00\xff\xfe', "binary data"),
        (b"<p>caf\xe9 without a charset</p>", "not valid UTF-8"),
    ],
)
def test_binary_or_undeclared_non_utf8_html_is_refused_as_undecodable(data: bytes, says: str) -> None:
    with pytest.raises(DocumentRefused, match=says) as refused:
        parse_html(data)
    assert refused.value.reason == "undecodable"


def test_100000_nested_divs_are_refused_at_the_parsers_depth_limit_not_walked() -> None:
    deep = (
        b"<html><body><p>before</p>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + b"</body></html>"
    )
    with pytest.raises(DocumentRefused, match=r"over the HTML parser's limits \(Excessive depth") as refused:
        parse_html(deep)
    assert refused.value.reason == "over-budget"


def test_nesting_within_the_parsers_limit_is_read_without_recursion_and_lists_are_flattened_past_8() -> None:
    within = b"<body>" + b"<div>" * 2000 + b"deep text" + b"</div>" * 2000
    assert parse_html(within).body == "deep text"
    lists = b"<body>" + b"<ul><li>item" * 1000 + b"</li></ul>" * 1000
    body = parse_html(lists).body
    assert body.count("item") == 1000
    widest = max(len(line) - len(line.lstrip(" ")) for line in body.splitlines())
    assert widest <= 2 * BUDGET.html_nesting  # deeper levels are written flat, not indented further


def test_how_deep_lists_indent_and_how_much_of_a_heading_is_read_are_the_budgets() -> None:
    lists = b"<body>" + b"<ul><li>item" * 50 + b"</li></ul>" * 50

    def widest(budget: Budget) -> int:
        body = parse_html(lists, budget).body
        assert body.count("item") == 50  # deeper levels are written flat, never dropped
        return max(len(line) - len(line.lstrip(" ")) for line in body.splitlines())

    assert widest(Budget(html_nesting=2)) < widest(Budget(html_nesting=8)) <= 2 * 8
    small = Budget(heading_chars=20)
    assert parse_html(b"<h1>" + b"word " * 100 + b"</h1>", small).title == "word word word word"
    assert parse_notebook(notebook_json([markdown("# " + "word " * 100)]).encode(), small).headings == [
        "word word word word"
    ]


def test_a_page_over_the_tag_budget_is_refused_before_it_is_parsed() -> None:
    budget = Budget(html_nodes=100)
    parse_html(b"<body>" + b"<p>x</p>" * 99, budget)
    with pytest.raises(DocumentRefused, match="has 101 tags, over the 100-node budget") as refused:
        parse_html(b"<body>" + b"<p>x</p>" * 100, budget)
    assert refused.value.reason == "over-budget"


def test_attributes_count_against_the_node_budget_and_one_tag_may_not_have_over_256() -> None:
    many = b"<p " + b" ".join(b"a%d" % n for n in range(BUDGET.html_attributes + 1)) + b">x</p>"
    with pytest.raises(
        DocumentRefused, match="a tag in the page has 257 attributes, over the 256"
    ) as refused:
        parse_html(many)  # libxml2 checks each attribute against all before it: quadratic
    assert refused.value.reason == "over-budget"
    hidden = b'<p title="a > b" ' + b" ".join(b"a%d" % n for n in range(300)) + b">x</p>"
    with pytest.raises(DocumentRefused, match="301 attributes"):
        parse_html(hidden)  # a `>` in a quoted value does not end the tag for the count either
    parse_html(b'<p title="' + b"word " * 1000 + b'" class=x>x</p>')  # words in a value are not attributes
    budget = Budget(html_nodes=100)
    parse_html(b"<body>" + b'<p class="c" id=i>x</p>' * 33, budget)
    with pytest.raises(DocumentRefused, match="over 100 tags and attributes"):
        parse_html(b"<body>" + b'<p class="c" id=i>x</p>' * 34, budget)


def test_a_page_whose_text_is_over_the_budget_is_refused_even_in_one_text_node() -> None:
    budget = Budget(text_chars=1000)
    assert len(parse_html(b"<p>" + b"a" * 990 + b"</p>", budget).body) == 990
    assert (
        parse_html(b"<p>" + b" \n" * 5000 + b"word</p>", budget).body == "word"
    )  # folded white space is not text
    for page in (
        b"<p>" + b"a" * 1001 + b"</p>",
        b"<p>word</p>" * 300,
        b"<pre>" + b"a" * 2000 + b"</pre>",
        b"<table>" + b"<tr><td>word</td></tr>" * 300 + b"</table>",  # counted before a cell holds it
        b"<ul>" + b"<li>word</li>" * 300 + b"</ul>",  # or a list item
    ):
        with pytest.raises(DocumentRefused, match="the page's text is over 1,000 characters") as refused:
            parse_html(page, budget)
        assert refused.value.reason == "over-budget"


def test_white_space_is_folded_in_chunks_with_runs_across_their_edges_folded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(html, "FOLD_CHUNK", 4)
    assert parse_html(b"<p>ab  \n    \t  cd e    f</p>").body == "ab cd e f"


def test_without_lxml_a_page_is_refused_as_parser_missing_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "lxml.html", None)  # an import of it raises ImportError
    with pytest.raises(DocumentRefused, match="lxml is not installed; run: pip install lxml") as refused:
        parse_html(b"<p>x</p>")
    assert refused.value.reason == "parser-missing"


def test_the_walk_stops_once_its_cpu_budget_is_spent() -> None:
    with pytest.raises(DocumentRefused, match="reading the page took over") as refused:
        parse_html(b"<p>x</p>", Budget(cpu_seconds=-1.0))  # spent before the first element
    assert refused.value.reason == "over-budget"


def test_a_wide_table_is_capped_in_columns_and_cells() -> None:
    cells = "".join(f"<td>c{n}</td>" for n in range(100))
    page = f"<table><tr>{cells}</tr><tr><td>{'w' * 5000}</td></tr></table>".encode()
    body = parse_html(page, Budget(table_columns=5, cell_chars=50)).body
    header, _, row = body.splitlines()
    assert header.count(" | ") == 4 and header.endswith(" ".join(f"c{n}" for n in range(4, 100)) + " |")
    assert row == "| " + "w" * 50 + " |  |  |  |  |"
    wide = parse_html(page).body.splitlines()  # the shipped budget: 30 columns, 500 characters a cell
    assert wide[0].count(" | ") == BUDGET.table_columns - 1
    assert "| " + "w" * BUDGET.cell_chars + " |" in wide[2]


def test_nothing_a_page_links_to_is_loaded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("linked file contents")
    target = secret.as_uri()
    page = (
        f'<!DOCTYPE html SYSTEM "{target}"><html><head><link rel="stylesheet" href="{target}">'
        f'<base href="{target}"></head><body><img src="{target}" alt="chart"><iframe src="{target}"></iframe>'
        f'<object data="{target}"></object><p>Own text.</p></body></html>'
    )
    parsed = parse_html(page.encode())
    assert "linked file contents" not in parsed.body
    assert parsed.body == "chart\n\nOwn text."  # an image is its alt text, nothing more


# -- notebooks ---------------------------------------------------------------------------------------


def test_a_notebook_is_its_markdown_cells_and_fenced_code_with_short_outputs_only() -> None:
    parsed = parse_notebook(NOTEBOOK.encode())
    assert parsed.title == "Churn analysis"
    assert parsed.headings == ["Churn analysis", "Seasonal effects"]
    assert parsed.body == (
        "# Churn analysis\n\nWhy customers leave.\n\n"
        "```python\nimport pandas as pd\nframe = pd.read_csv('churn.csv')\n```\n\n"
        "```text\nloaded 4,200 rows\n```\n\n"
        "## Seasonal effects\n\nChurn peaks after the yearly invoice.\n\n"
        "```python\nframe.groupby('month').churn.mean()\n```"  # its long output is left out whole
    )
    for heading in parsed.outline:
        assert parsed.body[heading.start :].startswith("#" * heading.level + " " + heading.title)


def test_a_notebooks_metadata_title_wins_and_code_comments_are_not_headings() -> None:
    data = notebook_json(
        [code("# not a heading\nx = 1"), markdown("```\n# nor this\n```\n## Real heading")],
        title="Given title",
    )
    parsed = parse_notebook(data.encode())
    assert parsed.title == "Given title"
    assert parsed.headings == ["Real heading"]


@pytest.mark.parametrize("run", [0, 1, 2, 3, 5, 6, 7, 12, 13, 1000, 1_000_001])
def test_a_fence_is_longer_than_the_longest_run_of_backticks_inside(run: int) -> None:
    content = "a ``` b `` c " + "`" * run + " d"
    assert fence_for(content) == "`" * max(3, run + 1, 4)
    assert fence_for("no backticks") == "```"


def test_a_code_fence_inside_a_cell_gets_a_longer_fence() -> None:
    parsed = parse_notebook(notebook_json([code('doc = """\n```\nx\n```\n"""')]).encode())
    assert parsed.body.startswith("````python\n") and parsed.body.endswith("\n````")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "the notebook is not JSON"),
        (b"{'cells': []}", "the notebook is not JSON"),
        (b"[1, 2, 3]", "JSON but not a notebook"),
        (b'{"nbformat": 3, "worksheets": []}', "not an nbformat 4 notebook \\(nbformat 3"),
        (b'{"nbformat": 4, "cells": {}}', "not an nbformat 4 notebook \\(nbformat 4, no cell list"),
        (b'{"nbformat": 4, "cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deep"),
    ],
)
def test_a_notebook_that_is_not_json_or_not_a_notebook_is_refused_in_one_line(data: bytes, says: str) -> None:
    with pytest.raises(DocumentRefused, match=says) as refused:
        parse_notebook(data)
    assert refused.value.reason == "unparsable"
    assert "\n" not in str(refused.value)


def test_a_notebook_over_the_json_value_budget_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[bytes] = []
    monkeypatch.setattr(notebook.json, "loads", lambda data: parsed.append(data))
    bomb = b'{"nbformat": 4, "cells": [' + b"{}," * 600 + b"{}]}"
    with pytest.raises(DocumentRefused, match="over 1,000 JSON values .* clear its outputs") as refused:
        parse_notebook(bomb, Budget(notebook_json_values=1000))
    assert refused.value.reason == "over-budget" and parsed == []


def test_a_notebook_whose_text_is_over_the_budget_is_refused() -> None:
    cells = notebook_json([markdown("word " * 100)] * 3).encode()
    assert parse_notebook(cells, Budget(text_chars=2000)).body.count("word") == 300
    with pytest.raises(DocumentRefused, match="the notebook's text is over 1,000 characters") as refused:
        parse_notebook(cells, Budget(text_chars=1000))
    assert refused.value.reason == "over-budget"


# -- through the index, search and get_document ---------------------------------------------------------


def test_pages_and_notebooks_are_searched_by_section_and_refusals_are_listed_one_line_each(
    tmp_path: Path,
) -> None:
    big = tmp_path / "p" / "docs" / "huge-output.ipynb"
    root = make_project(
        tmp_path / "p",
        {
            "guide.html": LONG_PAGE,
            "old/guide.htm": PAGE.replace("Rollout guide", "Old rollout guide"),
            "churn.ipynb": LONG_NOTEBOOK,
            "deep.html": b"<body>" + b"<div>" * 100_000,
            "binary.html": b"\x00\x01\x02\x03" * 100,
            "broken.ipynb": b"not json at all",
            "huge-output.ipynb": b"",
        },
    )
    with big.open("r+b") as file:  # a 500 MB notebook, sparse: the size cap refuses it unread
        file.write(notebook_json([code("print(1)")]).encode())
        file.truncate(500 * 1024 * 1024)
    kb = open_kb(root)
    try:
        [hit] = [h for h in kb.search("canary pod tenth of the traffic").results if h.path == "guide.html"]
        assert hit.title == "Rollout guide" and hit.section == "Rolling out a service > Canary releases"
        doc = kb.load("guide.html", offset=hit.offset, max_tokens=2000)
        assert doc.media_type == "text/markdown" and doc.text.startswith("## Canary releases")
        [nb_hit] = kb.search("churn peaks after the yearly invoice").results[:1]
        assert nb_hit.path == "churn.ipynb" and nb_hit.section == "Churn analysis > Seasonal effects"
        assert kb.search("zebracorn").results == [] and kb.search("okapi").results == []
        assert any(h.path == "old/guide.htm" for h in kb.search("blue-green strategy").results)
        skipped = dict(kb.store.skipped())
    finally:
        kb.close()
    assert set(skipped) == {"deep.html", "binary.html", "broken.ipynb", "huge-output.ipynb"}
    assert "Excessive depth" in skipped["deep.html"]
    assert "binary data" in skipped["binary.html"]
    assert "the notebook is not JSON" in skipped["broken.ipynb"]
    assert skipped["huge-output.ipynb"] == f"over the {FILE_SIZE_CAP // (1024 * 1024)} MiB cap"
    assert os.stat(big).st_blocks * 512 < 1024 * 1024  # still sparse: the test wrote no 500 MB
    lines = skipped_lines(root)
    assert "4 skipped" in lines
    for path, reason in skipped.items():
        assert f"  skipped {path}: {reason}\n" in lines and "\n" not in reason


def test_a_failure_the_converter_does_not_name_skips_that_file_and_not_the_scan(tmp_path: Path) -> None:
    """A notebook holding a 5,000-digit number: json raises a plain ValueError (Python's limit on
    digits), not a JSON error. The file is skipped in one line; the rest of the kb is indexed."""
    digits = "1" + "0" * 5000
    root = make_project(
        tmp_path / "p",
        {
            "guide.html": PAGE,
            "digits.ipynb": '{"cells": [], "metadata": {"n": '
            + digits
            + '}, "nbformat": 4, "nbformat_minor": 5}',
        },
    )
    kb = open_kb(root)
    try:
        assert any(hit.path == "guide.html" for hit in kb.search("blue-green strategy").results)
        skipped = dict(kb.store.skipped())
    finally:
        kb.close()
    assert skipped["digits.ipynb"].startswith("the file could not be read (ValueError: Exceeds the limit")


@pytest.mark.anyio
async def test_get_document_serves_a_page_as_markdown_and_refuses_a_bad_notebook_as_a_tool_error(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", {"guide.html": PAGE, "churn.ipynb": NOTEBOOK, "bad.ipynb": "[]"})
    with (root / "docs" / "huge.ipynb").open("wb") as sparse:
        sparse.truncate(500 * 1024 * 1024)
    with anyio.fail_after(60):
        async with serve_in_memory(root) as client:
            await client.list_tools()
            read = await client.call_tool("get_document", {"path": "guide.html"})
            assert not read.is_error, read.content
            assert read.structured_content["media_type"] == "text/markdown"
            assert document_text(read).startswith("# Rolling out a service\n\n")
            found = await client.call_tool("search", {"query": "read_csv churn"})
            assert found.structured_content["results"][0]["path"] == "churn.ipynb"
            refused = await client.call_tool("get_document", {"path": "bad.ipynb"})
            assert refused.is_error and "JSON but not a notebook" in refused.content[0].text
            huge = await client.call_tool("get_document", {"path": "huge.ipynb"})
            assert huge.is_error and f"over the {FILE_SIZE_CAP} byte cap" in huge.content[0].text


def test_parsers_enabled_can_leave_the_new_types_out(tmp_path: Path) -> None:
    config = '[kb]\npath = "docs"\n\n[parsers]\nenabled = ["md", "ipynb"]\n'
    root = make_project(tmp_path / "p", {"guide.html": PAGE, "churn.ipynb": NOTEBOOK}, config=config)
    kb = open_kb(root)
    try:
        assert {hit.path for hit in kb.search("churn canary").results} == {"churn.ipynb"}
    finally:
        kb.close()
