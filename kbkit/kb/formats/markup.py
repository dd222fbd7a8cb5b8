"""What a documentation site's generator writes into its pages that a reader never sees: the one
place that reduces a heading, a title or a snippet's window to what the built site shows.

A site's generator is known from its config (kb/sites.py). Plain Markdown's own syntax is always
read (markdown-it-py's inline parser: escapes, code spans, emphasis, inline HTML; reference-style
links `[text][ref]` kept as their text); a generator's is read only on its site, so `{{< x >}}`
on a site no generator claims stays as written: Hugo's shortcodes (`{{< tab >}}`,
`{{% param x %}}`), mdBook's `{{#include file}}`, VitePress' and Docusaurus' `::: tip`
containers and `{{ }}` interpolation, MkDocs' `!!! note` admonitions. reStructuredText (Sphinx)
has its own: roles (`:ref:`text <label>`` -> text), substitutions, directive and target lines.
Generic types are not HTML: `RefCell<T>` stays `RefCell<T>` (docs/adr/0064).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

HUGO = "hugo"
MDBOOK = "mdbook"
VITEPRESS = "vitepress"
DOCUSAURUS = "docusaurus"
MKDOCS = "mkdocs"
SPHINX = "sphinx"
GENERATORS = (HUGO, MDBOOK, VITEPRESS, DOCUSAURUS, MKDOCS, SPHINX)


@dataclass(frozen=True)
class Markup:
    """The syntax a kb's pages are written in beyond plain Markdown and reStructuredText."""

    generator: str = ""
    """One of GENERATORS, or "" for none found."""
    rst_extensions: frozenset[str] = frozenset()
    """Extensions (no dot, lower case) Sphinx reads as reStructuredText besides `rst`
    (`source_suffix = ".txt"`)."""


PLAIN = Markup()
PARTIAL_FOLDERS = frozenset(("_includes", "includes", "_partials", "partials"))
"""On a generator's site, a Markdown file without front matter in a folder named so is a piece
included into pages (Hugo's `content/docs/_includes/`, Jekyll's `_includes/`), not a page."""

_SHORTCODE = re.compile(r"\{\{[<%]-?[^{}\n]{0,500}?-?[>%]\}\}")
"""Hugo: `{{< tab "Go" >}}`, `{{< /tab >}}`, `{{% param "version" %}}`, `{{<- x ->}}`."""
_MDBOOK = re.compile(r"\{\{#[a-z_]+[^{}\n]{0,500}\}\}")
"""mdBook: `{{#include file.rs:anchor}}`, `{{#rustdoc_include ...}}`, `{{#playground ...}}`."""
_INTERPOLATION = re.compile(r"\{\{[^{}\n]{0,500}\}\}")
"""VitePress (Vue) and Docusaurus (MDX `{...}` is JSX; `{{ }}` Vue): `{{ $frontmatter.title }}`."""
_CONTAINER = re.compile(r"^[ \t]*:::+[ \t]*(?:\{?[\w-]*\}?)?[ \t]*", re.MULTILINE)
"""VitePress and Docusaurus containers: a `::: tip`, `:::note[Title]` or closing `:::` marker."""
_ADMONITION = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?)[ \t]*[\w-]+(?:[ \t]+[\w-]+)*[ \t]*", re.MULTILINE)
"""MkDocs (Python-Markdown admonition, pymdownx.details): `!!! note "Title"`, `??? tip`."""
_MDX_IMPORT = re.compile(r"^(?:import|export)[ \t][^\n]*$", re.MULTILINE)
"""Docusaurus (MDX): `import Tabs from '@theme/Tabs';` lines."""
_REFERENCE_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\[[^\[\]\n]{0,300}\]")
"""Markdown reference-style links `[text][]` and `[text][ref]`: their text."""
_GENERIC_BEFORE = re.compile(r"[\w)\]]$")
"""What ends the text just before `<T>` when it is a type's parameter list, not a tag."""


def _generator_free(text: str, generator: str) -> str:
    """`text` without the syntax `generator` adds to Markdown (each pattern run only on text
    holding its opening characters: most headings hold none)."""
    if "{{" in text and generator == HUGO:
        text = _SHORTCODE.sub("", text)
    elif "{{" in text and generator == MDBOOK:
        text = _MDBOOK.sub("", text)
    elif generator in (VITEPRESS, DOCUSAURUS):
        text = _INTERPOLATION.sub("", text) if "{{" in text else text
        text = _CONTAINER.sub("", text) if ":::" in text else text
        text = _MDX_IMPORT.sub("", text) if generator == DOCUSAURUS and "port " in text else text
    elif generator == MKDOCS and ("!!!" in text or "???" in text):
        text = _ADMONITION.sub("", text)
    return _REFERENCE_LINK.sub(r"\1", text) if "][" in text else text


@functools.cache
def _inline() -> MarkdownIt:
    from markdown_it import MarkdownIt

    rules = ["emphasis", "link", "image", "backticks", "html_inline", "escape", "entity", "autolink"]
    return MarkdownIt("zero", {"html": True}).enable(rules)


_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_EMPTY_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*["'][^"'<>]*["']\s*>\s*</a>""")
"""An anchor element with no text (`<a name="top"></a>`, cpp-docs' headings): nothing shown."""
_INLINE_MARKS = re.compile(
    r"\\[!-/:-@\[-`{-~]|\*|\]\(|!\[|(?<![\w)\]])<[A-Za-z/!?]|</|&#?\w+;|__\S.*__|(?<![\w\\_])_(?=[^\s_])"
)
"""What Markdown reads as more than text outside code spans: an escape, emphasis, a link or image,
a tag (`<Badge />`, `</code>`; not a type's `Vec<T>`), an entity. A heading with none of these is
its text with its code spans' backticks left out (cpp-docs: nearly all); the others are parsed,
a page's at once (markdown_headings_shown)."""


def markdown_heading(raw: str, markup: Markup = PLAIN) -> str:
    """A Markdown heading as the built page shows it: escapes resolved (`\\<script setup>`),
    code spans, emphasis and links to their text, inline HTML and the generator's syntax left out,
    a type's `<T>` kept (`RefCell<T>`, `` `Vec<T>` ``)."""
    return " ".join(markdown_headings_shown([raw], markup)[0].split())


def markdown_headings_shown(raws: list[str], markup: Markup = PLAIN) -> list[str]:
    """Each of a page's headings as markdown_heading reads it (spaces not yet folded: the outline
    folds them), the ones with markup parsed in one pass (each its own paragraph: emphasis never
    pairs across two headings)."""
    texts = [_generator_free(raw, markup.generator) for raw in raws]
    texts = [_EMPTY_ANCHOR.sub("", text) if "</a>" in text else text for text in texts]
    marked = [
        index
        for index, text in enumerate(texts)
        if _INLINE_MARKS.search(_CODE_SPAN.sub("", text) if "`" in text else text)
    ]
    shown = [_CODE_SPAN.sub(r"\2", text) if "`" in text else text for text in texts]
    if marked:
        paragraphs = (
            token for token in _inline().parse("\n\n".join(texts[i] for i in marked)) if token.children
        )
        for index, paragraph in zip(marked, paragraphs, strict=False):
            out: list[str] = []
            for token in paragraph.children or ():
                visible = token.type in ("text", "code_inline", "image")
                if visible or (
                    token.type == "html_inline" and _is_type_parameters(token.content, "".join(out))
                ):
                    out.append(token.content)
                elif token.type == "softbreak":
                    out.append(" ")
            shown[index] = " ".join("".join(out).split())
    return shown


def _is_type_parameters(tag: str, before: str) -> bool:
    """Whether an inline "tag" is a generic's parameter list (`RefCell<T>`): an opening tag
    without attributes written right after a name."""
    return not tag.startswith("</") and "=" not in tag and bool(_GENERIC_BEFORE.search(before))


def markdown_window(text: str, markup: Markup = PLAIN) -> str:
    """A stretch of a Markdown page without the generator's syntax and with reference-style links
    as their text, ready for the plain reading a snippet gets (formats/markdown.plain_inline)."""
    return _generator_free(text, markup.generator)


_ROLE = re.compile(r":[\w.:+-]{1,60}:`([^`\n]{0,300})`")
_ROLE_TARGET = re.compile(r"^(.*?)\s*<[^<>]*>$", re.DOTALL)
_LITERAL = re.compile(r"``([^`\n]{1,300})``")
_LINK = re.compile(r"`([^`<\n]{1,300}?)\s*<[^<>`\n]*>`__?")
_INTERPRETED = re.compile(r"`([^`\n]{1,300})`_{0,2}")
_SUBSTITUTION = re.compile(r"\|([\w][\w .-]{0,60})\|_{0,2}")
_DIRECTIVE = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:_[^\n]*|\[[^\]\n]*\][^\n]*|\|[^\n]*|[\w:.-]+::[^\n]*)$", re.MULTILINE
)
"""Explicit markup lines: `.. code-block:: python`, `.. note::`, `.. _label:` targets,
`.. [1]` footnotes, `.. |name| replace::` definitions (a directive's content stays)."""
_OPTION = re.compile(r"^[ \t]+:[\w-]+:(?:[ \t][^\n]*)?$", re.MULTILINE)
"""A directive's options (`:linenos:`, `:caption: Example`) under its line."""
_STRONG = re.compile(r"\*\*([^*\n]{1,300})\*\*|\*([^*\s][^*\n]{0,300})\*")
_NAMED_REFERENCE = re.compile(r"\b([^\W_](?:[\w.-]{0,100}[^\W_])?)__?(?=[\s.,;:!?)]|$)")
"""A named hyperlink reference, `Django_` or `Django__` (not `__init__`)."""


def _role_text(match: re.Match[str]) -> str:
    """What Sphinx shows for a role: `text <target>` -> text; `~a.b.c` -> c; `!x` -> x."""
    inner = match.group(1)
    titled = _ROLE_TARGET.match(inner)
    if titled and titled.group(1):
        return titled.group(1)
    inner = inner.lstrip("!")
    return inner[1:].rsplit(".", 1)[-1] if inner.startswith("~") else inner


def rst_plain(text: str) -> str:
    """reStructuredText as the built page shows it: roles, links, literals, emphasis and
    substitutions to their text; directive, target and option lines left out (their content
    stays: a `.. note::`'s text, a `.. code-block::`'s code)."""
    if not any(char in text for char in "`|*:_."):
        return text
    text = _OPTION.sub("", _DIRECTIVE.sub("", text))
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _INTERPRETED.sub(r"\1", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    text = _STRONG.sub(lambda match: match.group(1) or match.group(2), text)
    return _NAMED_REFERENCE.sub(r"\1", text)
