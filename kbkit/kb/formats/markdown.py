"""Markdown files: front matter (title, description, tags), ATX and setext headings outside fenced
code, the body as written. A reader: the Markdown kbkit writes for converted formats is
markdown_writer.py's."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.base import ParsedText, decode_text, meta_title, outline_of_headings
from kbkit.kb.formats.budget import BUDGET, Budget
from kbkit.kb.formats.markup import PLAIN, Markup, markdown_headings_shown, markdown_window
from kbkit.kb.sections import Heading

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+([^\n]*))?$", re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _fence_close(char: str, width: int) -> re.Pattern[str]:
    return re.compile(rf"^ {{0,3}}{re.escape(char)}{{{width},}}[ \t]*$", re.MULTILINE)


def _outside_fences(text: str) -> list[tuple[int, int]]:
    """The spans of `text` outside fenced code blocks, in one pass (an unclosed fence runs to the
    end, as in CommonMark)."""
    spans, pos = [], 0
    while match := _FENCE_OPEN.search(text, pos):
        fence = match.group(1)
        spans.append((pos, match.start()))
        close = _fence_close(fence[0], len(fence)).search(text, match.end())
        if close is None:
            return spans
        pos = close.end()
    spans.append((pos, len(text)))
    return spans


def _atx_text(raw: str | None) -> str:
    """A heading's text without its optional closing run of #s (kept out of the regex: no backtracking)."""
    text = (raw or "").rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed.rstrip(" \t")
    return text


_ATTRIBUTE = re.compile(r"""#[^\s{}#."'=]+|\.[^\s{}#."'=]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s{}"'=]+)""")
"""One item of an attribute list: `#id`, `.class` or `key=value` (Python-Markdown's attr_list,
which MkDocs and Material use; Pandoc and markdown-it-attrs write the same)."""


ATTRIBUTES_CHARS = 500
"""A `{...}` longer than this is text, not an attribute list: the list's pattern backtracks over a
long word, so a hostile heading of one 1 MB word costs no more than a short one."""


def _only_attributes(text: str) -> bool:
    """Whether `text` is one or more attribute-list items and nothing else."""
    if len(text) > ATTRIBUTES_CHARS:
        return False
    return bool(_ATTRIBUTE.search(text)) and not _ATTRIBUTE.sub(" ", text).strip(" \t")


def heading_attributes(text: str) -> tuple[str, str | None]:
    """A heading's text without a trailing attribute list (`Upload files { #upload-files }`,
    `{: #id .class }`), and the list's `#id` (None when it has none). Text whose last `{...}`
    is not an attribute list (`Set {a, b}`, a template's `{{ x }}`) is kept as written.
    String scans and a regex without nested repeats: linear."""
    stripped = text.rstrip(" \t")
    if not stripped.endswith("}"):
        return text, None
    open_at = stripped.rfind("{", max(0, len(stripped) - ATTRIBUTES_CHARS))
    if open_at < 0 or (open_at and stripped[open_at - 1] not in " \t"):
        return text, None
    inside = stripped[open_at + 1 : -1].strip(" \t")
    inside = inside[1:].lstrip(" \t") if inside.startswith(":") else inside
    if not _only_attributes(inside):
        return text, None
    words = _ATTRIBUTE.findall(inside)
    anchor = next((word[1:] for word in words if word.startswith("#")), None)
    return stripped[:open_at].rstrip(" \t"), anchor


_SETEXT = re.compile(r"^(?! {4})([^\n#>\-*=][^\n]*)\n {0,3}(=+|-+)[ \t]*$", re.MULTILINE)
_FENCE_LINE = frozenset(("---", "..."))
_KEY = re.compile(r"[A-Za-z0-9_.-]+")
_BARE_START = frozenset("\"'[]{}|>&*!#%@`")


def _front_matter_block(text: str) -> tuple[str, str] | None:
    """The front matter between a leading `---` line and the next `---`/`...` line, and the rest.

    Found with string scans, never a regex over the block: every line is looked at once, so a
    64 KB line costs the same as 64 KB of short lines."""
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip(" \t\r") != "---":
        return None
    pos = first_end + 1
    while pos < len(text):
        end = text.find("\n", pos)
        line_end = len(text) if end < 0 else end
        if text[pos:line_end].rstrip(" \t\r") in _FENCE_LINE:
            return text[first_end + 1 : pos], text[line_end + 1 :]
        pos = line_end + 1
    return None


def _plain_value(raw: str) -> str | None:
    """A scalar written plainly, 'single' or "double" quoted (no escapes); None for anything else."""
    value = raw.strip(" \t\r")
    if not value:
        return ""
    if value[0] in "\"'":
        quote = value[0]
        if len(value) >= 2 and value[-1] == quote and quote not in value[1:-1]:
            inner = value[1:-1]
            return None if quote == '"' and "\\" in inner else inner
        return None
    if value[0] in _BARE_START or "#" in value:
        return None
    return value


def _plain_front_matter(block: str) -> dict[str, object] | None:
    """Front matter that is nothing but `key: scalar` lines, read without YAML (most docs sites'
    front matter is; YAML parsing was a fifth of indexing time). None: let YAML read it.
    String methods only, so the work is linear in the block's length."""
    meta: dict[str, object] = {}
    for line in block.splitlines():
        if not line.strip():
            continue
        key, colon, rest = line.partition(":")
        if not colon or not _KEY.fullmatch(key) or (rest and rest[0] not in " \t"):
            return None
        value = _plain_value(rest)
        if value is None:
            return None
        meta[key] = value
    return meta


def _front_matter(text: str) -> tuple[dict[str, object], str]:
    found = _front_matter_block(text)
    if found is None:
        return {}, text
    block, rest = found
    plain = _plain_front_matter(block)
    if plain is not None:
        return plain, rest
    import yaml  # only for front matter that is more than key: value lines; keeps CLI start-up lean

    try:
        meta = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}, text  # broken front matter is still text: keep it in the body, search finds it
    return (meta if isinstance(meta, dict) else {}), rest


FIELD_CHARS = 2000
"""At most this many characters of a front-matter description or tag list are indexed."""


def _meta_text(value: object) -> str | None:
    """A front-matter value as searchable text: scalars as they are, lists joined with commas."""
    if isinstance(value, list | tuple):
        value = ", ".join(str(item) for item in value if isinstance(item, str | int | float))
    if isinstance(value, str | int | float) and str(value).strip():
        return " ".join(str(value).split())[:FIELD_CHARS]
    return None


def _meta_tags(meta: dict[str, object]) -> tuple[str, ...]:
    tags = (_meta_text(meta.get(key)) for key in ("tags", "keywords"))
    return tuple(tag for tag in tags if tag)


def parse_markdown(data: bytes, budget: Budget = BUDGET, *, markup: Markup = PLAIN) -> ParsedText:
    """The file's text as written; front matter is read for its title, description and tags
    (a file is at most documents.FILE_SIZE_CAP: the guard bounds it, no budget is needed).
    Headings are read as the site's generator (`markup`) shows them."""
    meta, body = _front_matter(decode_text(data))
    found = markdown_headings(body, markup)
    headings = [" ".join(text.split()) for _, _, text in found]
    title = meta_title(meta.get("title"))
    if title is None:
        top = [text for _, level, text in found if level == 1]
        title = meta_title(top[0] if top else (headings[0] if headings else None))
    description = _meta_text(meta.get("description")) or _meta_text(meta.get("summary"))
    tags = _meta_tags(meta)
    return ParsedText(title, body, headings, outline_of_headings(found), description=description, tags=tags)


def parse_page_or_partial(data: bytes, budget: Budget = BUDGET, *, markup: Markup = PLAIN) -> ParsedText:
    """A file in a site's partials folder (markup.PARTIAL_FOLDERS): a page when it has front
    matter, else a piece the generator includes into pages, refused with reason `partial`."""
    if _front_matter_block(decode_text(data)) is None:
        raise DocumentRefused(
            "partial", "a piece the site's pages include (no front matter, in an includes folder), not a page"
        )
    return parse_markdown(data, budget, markup=markup)


INLINE_RULES = (
    "emphasis",
    "link",
    "image",
    "backticks",
    "html_inline",
    "escape",
    "entity",
    "autolink",
    "newline",
)
"""The inline syntax a snippet is read with: half the work of the whole CommonMark set."""
_MARKUP = ("**", "__", "](", "</")
"""A stretch holding none of these has no bold, link or inline HTML to reduce: not parsed (on
cpp-docs seven windows in ten; a parse costs about 0.1 ms)."""


@functools.cache
def _inline_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("zero").enable(list(INLINE_RULES))


def plain_inline(text: str, markup: Markup = PLAIN) -> str:
    """A stretch of Markdown as a reader sees it: emphasis, links, images and inline HTML reduced
    to their text, code spans kept in backticks, headings' attribute lists left out. For snippets:
    a word bold in the source would otherwise come out as `****word****` once marked. The stretch
    may start or end anywhere (a search snippet's window): a `**` left unpaired by the cut goes too.
    The site generator's own syntax (`markup`: shortcodes, containers) is left out first."""
    text = markdown_window(text, markup)
    lines = []
    for line in text.split("\n"):
        if line.rstrip(" \t").endswith("}"):
            title, anchor = heading_attributes(line)
            line = title if anchor is not None or line.lstrip().startswith("#") else line
        lines.append(line)
    close = lines[0].find("}")
    if close >= 0 and "{" not in lines[0][:close] and _only_attributes(lines[0][:close]):
        lines[0] = lines[0][close + 1 :]  # an attribute list the stretch starts inside
    cut = lines[-1].rfind(" {")
    if cut >= 0 and "}" not in lines[-1][cut:] and lines[-1][cut + 2 :].lstrip()[:1] in ("#", ":", "."):
        lines[-1] = lines[-1][:cut]  # an attribute list cut off by the stretch's end
    text = "\n".join(lines)
    if not any(markup in text for markup in _MARKUP):
        return text
    out: list[str] = []
    for block in _inline_parser().parseInline(text):
        for token in block.children or ():
            if token.type == "text":
                out.append(token.content.replace("**", "").replace("__", ""))
            elif token.type == "code_inline":
                out.append(f"`{token.content}`")
            elif token.type in ("softbreak", "hardbreak"):
                out.append("\n")
            elif token.type == "image":
                out.append(token.content)
    return "".join(out)


def _titled(raw: str) -> str:
    """A heading's text without a trailing attribute list (heading_attributes)."""
    return heading_attributes(raw)[0] if "{" in raw else raw


def markdown_headings(body: str, markup: Markup = PLAIN) -> list[tuple[int, int, str]]:
    """(start, level, text) of every ATX and setext heading outside fenced code, in order, each as
    the page shows it: a trailing attribute list (`{ #id }`), inline markup and the generator's
    syntax are not part of its text (markup.markdown_headings_shown)."""
    found: list[tuple[int, int, str]] = []
    for start, end in _outside_fences(body):
        atx = [
            (m.start(), len(m.group(1)), _titled(_atx_text(m.group(2))))
            for m in _ATX.finditer(body, start, end)
        ]
        found += [heading for heading in atx if heading[2]]
        setext = _SETEXT.finditer(body, start, end)
        found += [(m.start(), 1 if m.group(2)[0] == "=" else 2, _titled(m.group(1))) for m in setext]
    found.sort()
    shown = markdown_headings_shown([text for _, _, text in found], markup)
    return [(start, level, text) for (start, level, _), text in zip(found, shown, strict=True)]


def outline(body: str, markup: Markup = PLAIN) -> tuple[Heading, ...]:
    """The outline of a Markdown text, found again from the text alone."""
    return outline_of_headings(markdown_headings(body, markup))
