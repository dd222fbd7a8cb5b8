"""HTML pages as Markdown (docs/adr/0034): the page's own content, its structure kept, no boilerplate.

lxml (libxml2) parses: linear time whatever the nesting, and it stops at a fixed depth (2,048
with `huge_tree`) instead of slowing down; the tree is then walked without recursion, so no
nesting reaches Python's stack. Nothing a page links to is ever loaded: only its own bytes are read.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.base import ParsedText, decode_text
from kbkit.kb.formats.budget import BUDGET, Budget, Meter
from kbkit.kb.formats.markdown_writer import fenced
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title

if TYPE_CHECKING:
    from lxml.html import HtmlElement

FOLD_CHUNK = 64 * 1024
"""White space is folded this many characters at a time: `re.sub` keeps every match of a call
until it returns, so one 48 MB text node folded whole took 650 MB."""
CHECK_EVERY = 4096
"""The walk checks the CPU budget every this many elements: a backstop behind the node counts,
so that with parsing any one page stays within the budget."""

DROPPED = frozenset(
    ("script", "style", "noscript", "template", "nav", "aside", "form", "head", "iframe", "object")
    + ("svg", "math", "canvas", "select", "button", "textarea", "input", "embed", "audio", "video")
)
"""Elements left out with everything inside: code, navigation, forms and embedded media."""
DROPPED_ROLES = frozenset(("navigation", "banner", "contentinfo", "search", "complementary"))
LANDMARK_PARENTS = frozenset(("article", "aside", "main", "nav", "section"))
"""A header or footer inside one of these is that part's own (an article's title), not the site's."""
BLOCKS = frozenset(
    ("p", "div", "section", "article", "main", "body", "header", "footer", "figure", "figcaption")
    + ("address", "details", "summary", "center", "hgroup", "fieldset", "dl", "dt", "dd", "hr")
    + ("caption", "legend", "picture", "html")
)
HEADINGS = {f"h{n}": n for n in range(1, 7)}
PERMALINKS = "#¶§🔗 "
"""Trailing marks that docs generators put in a heading as its own link: not part of its title."""
LEADING_PERMALINKS = "¶§🔗 "
"""The same marks put before the title (rustdoc's `§`); a leading `#` may be the title's own."""

_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_LINE_BREAKS = re.compile(r" *\n[ \n]*")
_TAG_WITH_SPACE = re.compile(rb"""<[A-Za-z][^\s>]*\s(?:=\s*"[^"]*"|=\s*'[^']*'|[^>])*""")
"""A start tag with something after its name: to its `>`, a `>` inside a quoted value included.
Each branch starts with a different character, and nothing follows the loop: no backtracking."""
_QUOTED_VALUE = re.compile(rb"""=\s*"[^"]*"|=\s*'[^']*'""")
_LANGUAGE = re.compile(r"(?:language|lang)-([A-Za-z0-9_+#.-]{1,40})")


def parse_html(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """The page as Markdown, its outline from its h1-h6, its title from <title> or the first h1."""
    utf8 = _utf8(data)
    meter = budget.meter("page")
    _check_nodes(data, meter)
    root = _parse(utf8)
    del utf8
    if root is None:
        return ParsedText(title=None, body="")
    _refuse_template(root)
    title = _clean((root.findtext("head/title") or "")[: budget.heading_chars])
    _drop_boilerplate(root)
    writer = _Writer(meter)
    writer.walk(_content_root(root))
    body, found = writer.finish()
    if title is None:
        title = next((heading.title for heading in found if heading.level == 1), None)
    return ParsedText(
        title=title,
        body=body,
        headings=[heading.title for heading in found],
        outline=tuple(found[:MAX_OUTLINE]),
    )


def _check_nodes(data: bytes, meter: Meter) -> None:
    """Refuse a page over the node budgets before libxml2 sees it. Counted generously: every `<`
    not followed by `/` is a tag, every space-separated word in a tag (outside quoted values)
    an attribute."""
    most_nodes, most_attributes = meter.budget.html_nodes, meter.budget.html_attributes
    tags = data.count(b"<") - data.count(b"</")
    if tags > most_nodes:
        meter.refuse(f"the page has {tags:,} tags, over the {most_nodes:,}-node budget; split it")
    nodes = tags
    for match in _TAG_WITH_SPACE.finditer(data):
        attributes = len(_QUOTED_VALUE.sub(b"=", match.group()).split()) - 1
        if attributes > most_attributes:
            meter.refuse(
                f"a tag in the page has {attributes:,} attributes, over the {most_attributes} allowed"
            )
        nodes += attributes
        if nodes > most_nodes:
            meter.refuse(f"the page has over {most_nodes:,} tags and attributes (the node budget); split it")


def _utf8(data: bytes) -> bytes:
    """The page in UTF-8. A BOM wins, then a <meta charset> in the first 1,024 bytes, else UTF-8;
    binary is refused as for any text file (base.decode_text). UTF-8 is passed on as it came."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return decode_text(data).encode("utf-8")
    match = None if data.startswith(codecs.BOM_UTF8) else _CHARSET.search(data[:1024])
    codec = _codec(match.group(1).decode("ascii")) if match else None
    if match is None or codec is None:
        decode_text(data)  # refuses binary and bad UTF-8; the text itself is not needed
        return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data
    if b"\x00" in data:
        raise DocumentRefused("undecodable", "the file holds binary data (NUL bytes), not an HTML page")
    try:
        return data.decode(codec).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentRefused(
            "undecodable",
            f"the page says it is {match.group(1).decode('ascii')} (<meta charset>) but is not "
            f"(bad byte at offset {exc.start}); fix its charset or save it as UTF-8",
        ) from None


def _codec(label: str) -> str | None:
    """The codec for a charset label as browsers read it (latin-1 means windows-1252; a page
    cannot be UTF-16 without a BOM), or None: read as UTF-8."""
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name in ("utf-8", "ascii") or name.startswith("utf-16") or name.startswith("utf-32"):
        return None
    return "cp1252" if name == "iso8859-1" else name


def _parse(utf8: bytes) -> HtmlElement | None:
    try:
        import lxml.etree
        import lxml.html
    except ImportError:
        raise DocumentRefused(
            "parser-missing", "lxml is not installed; run: pip install lxml (or disable html in [parsers])"
        ) from None

    parser = lxml.html.HTMLParser(
        encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True, no_network=True
    )
    try:
        root = lxml.html.document_fromstring(utf8, parser=parser)
    except lxml.etree.ParserError:  # "Document is empty": nothing but white space or comments
        return None
    except lxml.etree.LxmlError as exc:
        raise DocumentRefused("unparsable", f"the page could not be parsed ({exc})") from None
    for error in parser.error_log:
        if error.type_name == "ERR_RESOURCE_LIMIT":
            limit = error.message.strip()
            raise DocumentRefused(
                "over-budget", f"the page is over the HTML parser's limits ({limit}); split it"
            )
    return root


_STATEMENT = re.compile(r"\{%-?\s*([A-Za-z_]\w{0,30})[^%\n]{0,300}%\}")
"""A template statement (`{% extends "base.html" %}`, `{% if nav %}`): Jinja, Django, Liquid,
Nunjucks and Twig all write them so."""
AS_WRITTEN = frozenset(("pre", "code", "kbd", "samp", "script", "style", "textarea", "xmp"))
"""Elements whose text a page shows (or runs) as written: a statement there is an example."""


def _refuse_template(root: HtmlElement) -> None:
    """Refuse a theme's template (MkDocs `overrides/main.html`, a Django or Jekyll layout): a
    template statement in the page's own text or in an attribute value, outside code, means the
    file is the source of pages, not a page; indexed, it would be a page of `{% block %}` lines
    that every search on the site's words may return."""
    import lxml.etree

    walker = lxml.etree.iterwalk(root, events=("start",))
    for _, element in walker:
        tag = element.tag if isinstance(element.tag, str) else ""
        texts = [element.tail or ""]
        if tag in AS_WRITTEN:
            walker.skip_subtree()
        else:
            texts += [element.text or "", *(str(value) for value in element.attrib.values())]
        for text in texts:
            if "{%" in text and (found := _STATEMENT.search(text)):
                raise DocumentRefused(
                    "template",
                    f"a template (`{{% {found.group(1)} ... %}}` outside code), not a page: the "
                    "source of a site's pages is not indexed; the pages it renders are",
                )


def _drop_boilerplate(root: HtmlElement) -> None:
    """Leave out what is not the page's own content (its tail text stays with the parent). One
    walk, top-down: whether a header is inside an article is counted on the way, not looked up."""
    import lxml.etree

    kept = _holders(root)
    doomed = []
    landmarks = 0
    walker = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, element in walker:
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "end":
            landmarks -= tag in LANDMARK_PARENTS
            continue
        if element not in kept and (
            tag in DROPPED
            or (element.get("role") or "").strip().lower() in DROPPED_ROLES
            or (tag in ("header", "footer") and not landmarks)
        ):
            doomed.append(element)
            walker.skip_subtree()  # it goes whole: nothing inside needs a look
        landmarks += tag in LANDMARK_PARENTS
    for element in doomed:
        element.drop_tree()


def _holders(root: HtmlElement) -> set[HtmlElement]:
    """What holds the page's content and is never dropped: the ancestors of its <main> or first
    <article>, and a form around its first <h1> (ASP.NET pages sit in one form)."""
    kept: set[HtmlElement] = set()
    for path in (".//main", ".//article"):
        found = root.find(path)
        if found is not None:
            kept.update(found.iterancestors())
    h1 = root.find(".//h1")
    if h1 is not None:
        kept.update(parent for parent in h1.iterancestors() if parent.tag == "form")
    return kept


def _content_root(root: HtmlElement) -> HtmlElement:
    """<main> when the page has one, else its one <article>, else its body."""
    main = root.find(".//main")
    if main is not None:
        return main
    articles = root.findall(".//article")
    if len(articles) == 1:
        return articles[0]
    body = root.find(".//body")
    return root if body is None else body


def _clean(text: str) -> str | None:
    return clean_title(text) or None


@dataclass
class _Frame:
    """A container whose text is shaped when it closes: a list item, a quote, a table."""

    kind: str
    blocks: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    """For a table: its rows of cell texts."""
    ordered: bool = False
    number: int = 0


class _Writer:
    """Walks the tree once (lxml's iterwalk, no recursion) and writes Markdown within the meter's
    budget: the text read is counted as it comes (the meter), the Markdown written as it grows."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.budget = meter.budget
        self.out: list[str] = []
        self.size = 0
        self.found: list[Heading] = []
        self.inline: list[str] = []
        self.frames: list[_Frame] = []
        self.cell: list[str] | None = None
        """The texts of the table cell being read, if any: everything in it is one line."""
        self.cell_depth = 0
        """How many frames were open (or written flat) when the cell opened: its own table's."""
        self.skipped_frames: list[bool] = []
        """For each list, quote or table open: True when it is written flat (too deep, in a cell)."""

    # -- output ----------------------------------------------------------------------------------

    def block(self, text: str, heading: tuple[int, str] | None = None) -> None:
        """A finished block: into the enclosing frame, or the body (with the heading it starts)."""
        if not text.strip():
            return
        if self.cell is not None:
            self.cell.append(" " + text)
            return
        if self.frames:
            self.frames[-1].blocks.append(text)
            return
        if self.out:
            self.out.append("\n\n")
            self.size += 2
        if heading is not None:
            self.found.append(Heading(self.size, heading[0], heading[1]))
        self.out.append(text)
        self.size += len(text)
        self.meter.within_text(self.size)

    def flush(self) -> None:
        """The inline text gathered so far, as one paragraph."""
        if self.cell is not None or not self.inline:
            return
        text = _LINE_BREAKS.sub("\n", "".join(self.inline)).strip()
        self.inline = []
        self.block(text)

    def text(self, raw: str | None) -> None:
        if not raw:
            return
        pieces: list[str] = []
        for start in range(0, len(raw), FOLD_CHUNK):
            piece = _SPACE.sub(" ", raw[start : start + FOLD_CHUNK])
            if pieces and pieces[-1].endswith(" ") and piece.startswith(" "):
                piece = piece[1:]
            if piece:
                self.take(len(piece))
                pieces.append(piece)
        collapsed = "".join(pieces)
        if self.cell is not None:
            self.cell.append(collapsed)
        else:
            self.inline.append(collapsed)

    def take(self, chars: int) -> None:
        """Characters of text read (white space folded), wherever they go: counted against the
        text budget as they come, before any block, cell or list holds them."""
        self.meter.take(chars)

    def finish(self) -> tuple[str, list[Heading]]:
        self.flush()
        return "".join(self.out), self.found

    # -- the walk --------------------------------------------------------------------------------

    def walk(self, root: HtmlElement) -> None:
        import lxml.etree

        walker = lxml.etree.iterwalk(root, events=("start", "end"))
        for count, (event, element) in enumerate(walker):
            if count % CHECK_EVERY == 0:
                self.meter.check()
            tag = element.tag if isinstance(element.tag, str) else ""
            if event == "start":
                if self.start(tag, element):
                    walker.skip_subtree()
                else:
                    self.text(element.text)
            else:
                self.end(tag)
                if element is not root:
                    self.text(element.tail)

    def start(self, tag: str, element: HtmlElement) -> bool:
        """Open `element`; True when its whole content was written already (skip its subtree)."""
        if tag in HEADINGS or tag == "pre":
            self.flush()
            content = element.text_content()
            self.take(len(content))
            if tag == "pre":
                self.block(fenced(content.strip("\n"), _language(element)))
                return True
            title = clean_title(content[: self.budget.heading_chars])
            title = title.rstrip(PERMALINKS).lstrip(LEADING_PERMALINKS)
            if not self.frames and self.cell is None and title:
                self.block(f"{'#' * HEADINGS[tag]} {title}", (HEADINGS[tag], title))
            else:
                self.text(f" {title} ")
                self.flush()
            return True
        if tag == "br":
            if self.cell is None:
                self.inline.append("\n")  # kept: text() folds every other white space
            else:
                self.cell.append(" ")
        elif tag == "img":
            self.text(f" {element.get('alt') or ''} ")
        elif tag == "code":
            self.text("`")
        elif tag in ("td", "th") and self.cell is None and self.frames and self.frames[-1].kind == "table":
            self.cell, self.cell_depth = [], len(self.skipped_frames)
        elif tag == "tr" and self.cell is None and self.frames and self.frames[-1].kind == "table":
            self.frames[-1].rows.append([])
        elif tag in ("table", "ul", "ol", "li", "blockquote"):
            self.open_frame(tag)
        elif tag in BLOCKS or tag in ("td", "th", "tr"):
            self.flush()
        return False

    def end(self, tag: str) -> None:
        if tag == "code":
            self.text("`")
        elif tag in ("td", "th") and self.cell is not None and self.cell_depth == len(self.skipped_frames):
            chars = self.budget.cell_chars
            text = "".join(self.cell)[: 2 * chars]
            text = _SPACE.sub(" ", text).strip().replace("|", "\\|")
            self.cell = None
            row = self.frames[-1].rows
            if not row:
                row.append([])
            row[-1].append(text[:chars])
        elif tag in ("table", "ul", "ol", "li", "blockquote"):
            self.close_frame(tag)
        elif tag in BLOCKS or tag in ("td", "th", "tr"):
            self.flush()

    def open_frame(self, tag: str) -> None:
        self.flush()
        nested = self.cell is not None or (tag != "table" and len(self.frames) >= self.budget.html_nesting)
        if tag == "table" and self.frames and self.frames[-1].kind == "table" and self.cell is None:
            nested = True  # a table directly in a table (not in a cell): read as text
        self.skipped_frames.append(nested)
        if not nested:
            frame = _Frame(tag, ordered=tag == "ol")
            if tag == "li" and self.frames and self.frames[-1].kind in ("ul", "ol"):
                parent = self.frames[-1]
                parent.number += 1
                frame.ordered, frame.number = parent.ordered, parent.number
            self.frames.append(frame)

    def close_frame(self, tag: str) -> None:
        if not self.skipped_frames:
            return
        if self.skipped_frames.pop():
            self.flush()
            return
        self.flush()
        frame = self.frames.pop()
        if frame.kind == "li":
            marker = f"{frame.number or 1}. " if frame.ordered else "- "
            self.block(_indented("\n".join(frame.blocks), marker))
        elif frame.kind in ("ul", "ol"):
            self.block("\n".join(frame.blocks))
        elif frame.kind == "blockquote":
            text = "\n\n".join(frame.blocks)
            self.block("\n".join(f"> {line}" if line else ">" for line in text.split("\n")))
        else:
            self.block("\n\n".join([*frame.blocks, _table(frame.rows, self.budget.table_columns)]))


def _indented(text: str, marker: str) -> str:
    pad = " " * len(marker)
    lines = text.split("\n")
    return "\n".join([marker + lines[0], *(pad + line if line else "" for line in lines[1:])])


def _table(rows: list[list[str]], columns: int) -> str:
    rows = [row for row in rows if any(cell for cell in row)]
    if not rows:
        return ""
    width = min(max(len(row) for row in rows), columns)
    shaped = [
        [*row[: width - 1], " ".join(row[width - 1 :])]
        if len(row) > width
        else [*row, *[""] * (width - len(row))]
        for row in rows
    ]
    lines = [_row(shaped[0]), _row(["---"] * width), *(_row(row) for row in shaped[1:])]
    return "\n".join(lines)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _language(element: HtmlElement) -> str:
    """`language-x` / `lang-x` on the <pre> or the <code> in it, as a fence's info string."""
    code = element.find("code")
    for candidate in (element, code):
        match = _LANGUAGE.search(candidate.get("class") or "") if candidate is not None else None
        if match:
            return match.group(1)
    return ""
