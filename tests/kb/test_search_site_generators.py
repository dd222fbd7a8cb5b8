"""Documentation sites as their generators lay them out (Sphinx with `.txt` sources, Hugo, mdBook,
VitePress): each page's title, section paths and snippets are what the built site shows, the
generator's templates and included pieces are not pages (docs/adr/0064). Each fixture is written
in its generator's own syntax, as its documentation gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats.markup import HUGO, PLAIN, Markup, markdown_heading, rst_plain
from kbkit.kb.search.results import SearchResult
from kbkit.kb.sites import markup_of, rst_suffixes
from tests.helpers.project import make_project, write_files

FILLER = "\n\nBackground: " + "alpha beta gamma delta epsilon. " * 300 + "\n\n"
"""A paragraph that makes a section a passage of its own, and a page a hit points into."""


def padded(page: str) -> str:
    """`page` with FILLER at each `{filler}`."""
    return page.replace("{filler}", FILLER)


SPHINX_CONF = """# Configuration file for the Sphinx documentation builder.
project = "Widgets"
extensions = ["sphinx.ext.intersphinx"]
source_suffix = {
    ".txt": "restructuredtext",
}
root_doc = "index"
"""
SPHINX_INDEX = """=====================
Widgets documentation
=====================

Everything about widgets: start with :doc:`topics/settings`, then read :ref:`ref-settings`.
"""
SPHINX_REF_SETTINGS = """.. _ref-settings:

========
Settings
========

.. contents::
    :local:
    :depth: 1

Core settings
=============

.. setting:: CACHE_TIMEOUT

``CACHE_TIMEOUT``
-----------------

Default: ``300``
{filler}
How long :ref:`cached pages <topics-caching>` stay fresh, in seconds; see
:setting:`CACHE_BACKEND` and the |project| release notes.

.. code-block:: python

    CACHE_TIMEOUT = 600

.. note::

    A timeout of zero expires pages at once.
{filler}"""
SPHINX_TOPIC_SETTINGS = """.. _topics-settings:

========
Settings
========

A settings file is a Python module with module-level variables; choose one with the
``WIDGETS_SETTINGS_MODULE`` environment variable before the widget server starts.
"""


def indexed(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


def titles(kb: KnowledgeBase) -> dict[str, str]:
    return dict(kb.store.reader().execute("SELECT path, title FROM documents").fetchall())


def shown(result: SearchResult) -> str:
    """Everything a search shows of its hits: titles, section paths and snippets."""
    return "\n".join(f"{hit.title} | {hit.section} | {hit.snippet}" for hit in result.results)


@pytest.fixture
def sphinx_site(tmp_path: Path) -> KnowledgeBase:
    files = {
        "conf.py": SPHINX_CONF,
        "index.txt": SPHINX_INDEX,
        "ref/settings.txt": padded(SPHINX_REF_SETTINGS),
        "topics/settings.txt": SPHINX_TOPIC_SETTINGS,
    }
    kb = indexed(make_project(tmp_path / "p", files))
    yield kb
    kb.close()


def test_a_sphinx_sites_txt_sources_are_read_as_restructuredtext(sphinx_site: KnowledgeBase) -> None:
    assert titles(sphinx_site) == {
        "index.txt": "Widgets documentation",
        "ref/settings.txt": "Settings",
        "topics/settings.txt": "Settings",
    }
    found = sphinx_site.search("cache timeout")
    hit = found.results[0]
    assert hit.path == "ref/settings.txt"
    assert hit.section == "Settings > Core settings > CACHE_TIMEOUT"
    document = sphinx_site.load("ref/settings.txt")
    assert "    CACHE_TIMEOUT = 600" in document.text  # the code is served as written
    assert document.media_type == "text/x-rst"


def test_roles_directives_and_substitutions_do_not_leak_into_what_search_shows(
    sphinx_site: KnowledgeBase,
) -> None:
    for query in ("cached pages stay fresh", "timeout of zero expires", "widgets settings module"):
        text = shown(sphinx_site.search(query))
        assert text, query
        for leak in (":ref:", ":setting:", "|project|", ".. ", "code-block", "``", "<topics-caching>"):
            assert leak not in text, (query, leak, text)
    snippet = sphinx_site.search("cached pages stay fresh").results[0].snippet
    assert "**cached** **pages**" in snippet and "CACHE_BACKEND" in snippet


def test_pages_sharing_a_name_and_title_in_a_sphinx_site_are_both_found(sphinx_site: KnowledgeBase) -> None:
    found = sphinx_site.search("settings", limit=10)
    assert {"ref/settings.txt", "topics/settings.txt"} <= {hit.path for hit in found.results}
    assert not any(hit.folded for hit in found.results)


@pytest.mark.parametrize(
    ("conf", "suffixes"),
    [
        ('source_suffix = ".txt"\n', ["txt"]),
        ("source_suffix = ['.rst', '.txt']\n", ["txt"]),
        (
            "source_suffix = {'.rst': 'restructuredtext', '.txt': 'restructuredtext', '.md': 'markdown'}\n",
            ["txt"],
        ),
        ('source_suffix = ".rst"\n', []),
        ("extensions = []\n", []),
    ],
)
def test_the_suffixes_sphinx_reads_as_restructuredtext_come_from_source_suffix(
    conf: str, suffixes: list[str]
) -> None:
    assert rst_suffixes(conf) == suffixes


HUGO_TOML = """baseURL = "https://example.org/"
languageCode = "en-us"
title = "Widget SDK"

[params]
exportInterval = 60
"""
HUGO_METRICS = """---
title: "Metrics"
weight: 20
---

{{< tabpane text=true >}}
{{% tab header="Go" %}}

Create a meter with `otel.Meter("app")` and record the request latency histogram.
{filler}
{{% /tab %}}
{{< /tabpane >}}

## Metrics {#metrics}

The SDK exports metrics every {{% param "exportInterval" %}} seconds; see the [exporters][] page
and the [collector guide][collector].
{filler}
## Exporters {{< version "1.2" >}}

Push exporters send batches over OTLP.
{filler}
[exporters]: /docs/exporters/
[collector]: https://example.com/collector
"""
HUGO_INCLUDE = """Install the SDK before you record metrics: `go get example.org/sdk`.
"""
HUGO_PARTIAL = """<footer class="site-footer">
  {{ with .Site.Params.copyright }}<p>{{ . }} metrics and exporters</p>{{ end }}
</footer>
"""


def test_hugo_shortcodes_heading_ids_and_reference_links_are_not_shown(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {"docs/metrics.md": padded(HUGO_METRICS), "docs/_includes/install.md": HUGO_INCLUDE},
        config='[kb]\npath = "content"\n',
    )
    (root / "docs").rename(root / "content")
    (root / "hugo.toml").write_text(HUGO_TOML)
    kb = indexed(root)
    try:
        assert titles(kb) == {"docs/metrics.md": "Metrics"}  # the included piece is not a page
        sections = {kb.search(query).results[0].section for query in ("exports metrics", "push exporters")}
        assert sections == {"Metrics", "Exporters"}
        for query in ("request latency histogram", "exports metrics collector guide", "push exporters"):
            text = shown(kb.search(query))
            assert "{{" not in text and "}}" not in text and "{#" not in text, text
        snippet = kb.search("exports metrics collector guide").results[0].snippet
        assert "the **exporters** page" in snippet and "[]" not in snippet and "][" not in snippet
    finally:
        kb.close()


def test_hugos_layouts_are_not_pages_when_the_kb_is_the_whole_site(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {}, config='[kb]\npath = "."\n')
    write_files(
        root,
        {
            "hugo.toml": HUGO_TOML,
            "content/docs/metrics.md": HUGO_METRICS,
            "layouts/partials/footer.html": HUGO_PARTIAL,
            "themes/docsy/layouts/docs/list.html": HUGO_PARTIAL,
        },
    )
    kb = indexed(root)
    try:
        assert set(titles(kb)) == {"content/docs/metrics.md"}
    finally:
        kb.close()


BOOK_TOML = """[book]
title = "The Widget Book"
authors = ["Widget Team"]
language = "en"
src = "src"
"""
BOOK_SUMMARY = """# Summary

- [Interior mutability](ch15-05-interior-mutability.md)
"""
BOOK_CHAPTER = """## `RefCell<T>` and the Interior Mutability Pattern

*Interior mutability* is a design pattern that lets you mutate data through an immutable reference.
{filler}
{{#rustdoc_include ../listings/ch15/listing-15-24/src/main.rs:here}}

### Keeping Track of Borrows at Runtime with `RefCell<T>`

The borrow checker counts the active borrows at runtime.
{filler}
{{#include ../listings/ch15/listing-15-25/output.txt}}
"""


def test_mdbook_includes_do_not_leak_generic_types_stay_in_headings_and_unlisted_files_are_not_pages(
    tmp_path: Path,
) -> None:
    root = make_project(
        tmp_path / "p",
        {
            "SUMMARY.md": BOOK_SUMMARY,
            "ch15-05-interior-mutability.md": padded(BOOK_CHAPTER),
            "listings/ch15/shared-intro.md": "Borrows are checked at runtime by a counter.\n",
        },
        config='[kb]\npath = "docs"\n',
    )
    (root / "book.toml").write_text(BOOK_TOML.replace('src = "src"', 'src = "docs"'))
    kb = indexed(root)
    try:
        page = "ch15-05-interior-mutability.md"
        assert titles(kb) == {"SUMMARY.md": "Summary", page: "RefCell<T> and the Interior Mutability Pattern"}
        hit = kb.search("active borrows at runtime").results[0]
        assert hit.section == (
            "RefCell<T> and the Interior Mutability Pattern > Keeping Track of Borrows at Runtime with RefCell<T>"
        )
        for query in ("active borrows", "mutate data immutable reference"):
            assert "{{#" not in shown(kb.search(query))
    finally:
        kb.close()
    done = CliRunner().invoke(app, ["index", "--root", str(root), "--skipped"])
    assert "1 Markdown file the book's SUMMARY.md does not list" in done.output


VITEPRESS_CONFIG = """import { defineConfig } from 'vitepress'

export default defineConfig({
  title: 'Widgets',
  description: 'Widgets in Vue',
})
"""
VITEPRESS_PAGE = """# Using Vue in Markdown <Badge type="tip" text="beta" />
{filler}
## \\<script setup>

Declare the reactive counter state in a `<script setup>` block at the top of the page.

::: tip Reactive counters
Each page keeps its own counter state, reset on navigation.
:::
{filler}
The page title is {{ $frontmatter.title }} on every widget page.
"""


def test_vitepress_containers_components_and_escapes_are_read_as_the_page_shows_them(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {".vitepress/config.mts": VITEPRESS_CONFIG, "guide/using-vue.md": padded(VITEPRESS_PAGE)},
    )
    kb = indexed(root)
    try:
        assert titles(kb) == {"guide/using-vue.md": "Using Vue in Markdown"}
        hit = kb.search("reactive counter state script setup").results[0]
        assert hit.section == "Using Vue in Markdown > <script setup>"
        for query in ("counter state reset on navigation", "title widget page"):
            text = shown(kb.search(query))
            assert ":::" not in text and "{{" not in text and "Badge" not in text, text
    finally:
        kb.close()


def test_a_generators_syntax_is_read_only_on_its_site(tmp_path: Path) -> None:
    """`{{< x >}}` means nothing to plain Markdown: on a site no generator claims it is kept."""
    assert markup_of(tmp_path) == PLAIN
    heading = "Write {{< note >}} shortcodes"
    assert markdown_heading(heading) == heading
    assert markdown_heading(heading, Markup(HUGO)) == "Write shortcodes"
    assert markdown_heading("See [the guide][] and [Vec<T>][vec]") == "See the guide and Vec<T>"
    assert markdown_heading("`HashMap<K, V>` and Option<Box<T>>") == "HashMap<K, V> and Option<Box<T>>"
    assert markdown_heading('Status <span class="badge">new</span>') == "Status new"


def test_restructuredtext_roles_read_as_sphinx_shows_them() -> None:
    assert rst_plain(":class:`~widgets.core.Widget` and :func:`!frobnicate`") == "Widget and frobnicate"
    assert rst_plain("`Django <https://www.djangoproject.com/>`_ and ``code``") == "Django and code"
    assert rst_plain("Override ``__init__`` as Django_ says") == "Override __init__ as Django says"
