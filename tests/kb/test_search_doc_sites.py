"""A documentation site as generators lay it out (MkDocs, as FastAPI's docs are): a folder per
language, heading attribute lists (`{ #id }`), words bold in the source, the theme's Jinja
templates beside the pages, and a long change log naming every feature. Searched through the
server's tools in memory, as an agent searches."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.kb import sites
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats import html, markdown
from kbkit.kb.formats.markdown import heading_attributes, plain_inline
from kbkit.kb.schema import REREAD, SCHEMA_VERSION
from kbkit.kb.search.translations import copy_of, query_languages
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory

FORMS_EN = """# Request Forms and Files { #request-forms-and-files }

You can define files and form fields at the same time using `File` and `Form`.

## Define **File** and **Form** parameters { #define-file-and-form-parameters }

Create file and form parameters the same way you would for `Body` or `Query`.
The files and form fields will be uploaded as **form data** and you will receive the files and form fields.
"""
FORMS_JA = """# リクエストフォームとファイル { #request-forms-and-files }

`File`と`Form`を同時に使うことでファイルとフォームフィールドを定義することができます。

## `File`と`Form`のパラメータの定義 { #define-file-and-form-parameters }

ファイルとフォームフィールドは**フォームデータ**としてアップロードされます。
"""
FORMS_ES = """# Formularios y archivos del request { #request-forms-and-files }

Puedes definir archivos y campos de formulario al mismo tiempo usando `File` y `Form`.

## Definir parámetros de **File** y **Form** { #define-file-and-form-parameters }

Los archivos y campos de formulario se subirán como **form data** y recibirás los archivos.
"""
FILES_EN = """# Request Files { #request-files }

You can define files to be uploaded by the client using `File`.

## Import `File` { #import-file }

Import `File` and `UploadFile` from `fastapi`.
"""
COOKIES_EN = """# Response Cookies { #response-cookies }

## Use a `Response` parameter { #use-a-response-parameter }

You can declare a parameter of type `Response` and set cookies in that temporal response object.
"""
RELEASE_NOTES = "# Release Notes { #release-notes }\n\n" + "".join(
    f"## 0.{n}.0 {{ #0{n}0 }}\n\n### Features\n\n"
    f"* Add support for file uploads together with form fields in forms, version {n}. PR #{n}.\n"
    f"* Set a cookie in the response object from a dependency, fix {n}. PR #{n + 1}.\n"
    "* Docs: update translations and examples of request forms and files.\n\n"
    for n in range(60)
)
MAIN_TEMPLATE = """{% extends "base.html" %}

{% block site_nav %}
  {% if nav %}
    <div class="md-sidebar">{% include "partials/nav.html" %}</div>
  {% endif %}
  Upload a file together with form fields: the forms documentation.
{% endblock %}
"""
COPYRIGHT_PARTIAL = """<div class="md-copyright">
    The FastAPI trademark is owned by @tiangolo: form fields and files.
    {% if not config.extra.generator == false %}
    Made with <a href="https://zensical.org">Zensical</a>
    {% endif %}
</div>
"""
JINJA_GUIDE = """<html><head><title>Templates guide</title></head><body>
<h1>Jinja templates</h1>
<p>A layout extends its base template and fills its blocks:</p>
<pre><code>{% extends "base.html" %}
{% block content %}{{ page.title }}{% endblock %}</code></pre>
</body></html>
"""
FORMS = "en/docs/tutorial/request-forms-and-files.md"
SITE = {
    FORMS: FORMS_EN,
    "ja/docs/tutorial/request-forms-and-files.md": FORMS_JA,
    "es/docs/tutorial/request-forms-and-files.md": FORMS_ES,
    "en/docs/tutorial/request-files.md": FILES_EN,
    "tr/docs/tutorial/request-files.md": FILES_EN.replace("You can define", "Yükleme: you can define"),
    "en/docs/advanced/response-cookies.md": COOKIES_EN,
    "en/docs/release-notes.md": RELEASE_NOTES,
    "en/overrides/main.html": MAIN_TEMPLATE,
    "en/overrides/partials/copyright.html": COPYRIGHT_PARTIAL,
    "en/docs/templates.html": JINJA_GUIDE,
}


async def searched(root: Path, *queries: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (query, arguments)'s search result, from one server over the index of `root`."""
    out = []
    with anyio.fail_after(120):
        async with serve_in_memory(root) as client:
            for query, arguments in queries:
                found = await client.call_tool("search", {"query": query, **arguments})
                assert not found.is_error, found.content
                assert found.structured_content is not None
                out.append(found.structured_content)
    return out


async def search(root: Path, query: str, **arguments: Any) -> dict[str, Any]:
    return (await searched(root, (query, arguments)))[0]


async def topic(root: Path, prefix: str) -> str:
    with anyio.fail_after(60):
        async with serve_in_memory(root) as client:
            read = await client.read_resource(f"kb://topic/{prefix}")
            return "\n".join(getattr(content, "text", "") for content in read.contents)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_project(tmp_path / "p", SITE)


@pytest.mark.anyio
async def test_heading_attribute_lists_stay_out_of_titles_section_paths_snippets_and_listings(
    site: Path,
) -> None:
    found = await search(site, "form parameters", path_prefix="en/docs/tutorial/")
    hit = found["results"][0]
    assert hit["path"] == "en/docs/tutorial/request-forms-and-files.md"
    assert hit["title"] == "Request Forms and Files"
    assert hit["section"].startswith("Request Forms and Files") and "{" not in hit["section"]
    assert "{" not in hit["snippet"] and "#define" not in hit["snippet"]
    listing = await topic(site, "en/docs/tutorial")
    assert "Request Forms and Files" in listing and "{ #" not in listing


@pytest.mark.anyio
async def test_a_word_bold_in_the_source_is_marked_once_never_as_four_stars(site: Path) -> None:
    found = await search(site, "define file form parameters", path_prefix="en/docs/tutorial/request-forms")
    snippet = found["results"][0]["snippet"]
    assert "****" not in snippet
    assert (
        "**Define** **File** and **Form** **parameters**" in snippet
    )  # File and Form are bold in the source


@pytest.mark.anyio
async def test_touching_marks_in_japanese_are_one_mark(site: Path) -> None:
    found = await search(site, "フォームデータ", path_prefix="ja/")
    snippet = found["results"][0]["snippet"]
    assert "****" not in snippet
    assert "**フォームデータ**" in snippet


def test_the_themes_templates_are_skipped_as_templates_and_said_so(site: Path) -> None:
    done = CliRunner().invoke(app, ["index", "--root", str(site), "--skipped"])
    assert done.exit_code == 0, done.output
    assert "en/overrides/main.html" in done.output and "en/overrides/partials/copyright.html" in done.output
    assert "template" in done.output
    assert "en/docs/templates.html" not in done.output  # Jinja shown inside <pre><code> is a page's example


MKDOCS_YML = """site_name: FastAPI
theme:
  name: material
  custom_dir: overrides  # the theme's templates and partials
markdown_extensions:
  pymdownx.emoji:
    emoji_index: !!python/name:material.extensions.emoji.twemoji
"""
SPONSORS_PARTIAL = """<div class="item">
  <a title="Cryptocurrency Payment Gateway" href="https://example.com/?ref=site" target="_blank">
    <span class="sponsor-badge">sponsor</span>
    <img class="sponsor-image" src="/img/sponsors/gateway.png" alt="Cryptocurrency Payment Gateway" />
  </a>
</div>
"""


def indexed_paths(root: Path) -> set[str]:
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        return {row[0] for row in kb.store.reader().execute("SELECT path FROM documents")}
    finally:
        kb.close()


def test_the_theme_folder_mkdocs_yml_names_is_not_indexed_not_even_its_plain_partials(tmp_path: Path) -> None:
    """A partial of sponsor links holds no template statement, yet it is the theme's, not a page:
    the site's config says so, and the indexer reads it; without the config the partial is a page."""
    site = make_project(
        tmp_path / "p",
        {**SITE, "en/mkdocs.yml": MKDOCS_YML, "en/overrides/partials/banner-sponsors.html": SPONSORS_PARTIAL},
    )
    done = CliRunner().invoke(app, ["index", "--root", str(site), "--skipped"])
    assert done.exit_code == 0, done.output
    assert "1 site theme folder (mkdocs.yml's custom_dir" in done.output
    assert "overrides" not in done.output  # passed by, not refused file by file
    assert not any("/overrides/" in path for path in indexed_paths(site))
    assert FORMS in indexed_paths(site)

    (site / "docs" / "en" / "mkdocs.yml").unlink()
    assert "en/overrides/partials/banner-sponsors.html" in indexed_paths(site)


@pytest.mark.parametrize(
    ("config", "config_dir", "expected"),
    [
        ("theme:\n  custom_dir: overrides\n", "en", "en/overrides"),
        ("theme:\n  custom_dir: 'theme/custom'  # ours\n", "", "theme/custom"),
        ("theme:\n    custom_dir: ./overrides/\n", "en", "en/overrides"),
        ("theme:\n  custom_dir: ../../etc\n", "en", None),  # not below the config's folder
        ("theme:\n  custom_dir: ../docs\n", "en", None),
        ("theme:\n  custom_dir: /etc\n", "", None),
        ("theme:\n  custom_dir: .\n", "en", None),  # the config's own folder holds the pages too
        ("theme:\n  custom_dir: en/..\n", "", None),
        ("custom_dir: overrides\n", "", None),  # only a theme's key, indented under it
        ("theme: material\n", "", None),
    ],
)
def test_only_a_theme_folder_below_the_config_is_taken(
    config: str, config_dir: str, expected: str | None
) -> None:
    assert sites.theme_folder(config, config_dir) == expected


def test_a_config_that_cannot_be_read_names_no_theme_and_indexing_goes_on(tmp_path: Path) -> None:
    oversize = "theme:\n  custom_dir: overrides\n" + "# padding\n" * (sites.MAX_CONFIG_BYTES // 10)
    for name, config in [("big", oversize), ("binary", b"\xff\xfe\x00theme:\n  custom_dir: overrides\n")]:
        site = make_project(
            tmp_path / name, {"mkdocs.yml": config, "overrides/page.md": "# Theme notes\n\nKept.\n"}
        )
        assert "overrides/page.md" in indexed_paths(site)
    linked = make_project(tmp_path / "linked", {"overrides/page.md": "# Theme notes\n\nKept.\n"})
    (tmp_path / "elsewhere.yml").write_text("theme:\n  custom_dir: overrides\n", encoding="utf-8")
    (linked / "docs" / "mkdocs.yml").symlink_to(tmp_path / "elsewhere.yml")
    assert "overrides/page.md" in indexed_paths(linked)  # a link is not the site's own config


@pytest.mark.anyio
async def test_a_page_showing_template_code_is_still_found(site: Path) -> None:
    found, everything = await searched(
        site, ("extends base template blocks", {}), ("upload a file together with form fields", {"limit": 20})
    )
    assert [hit["path"] for hit in found["results"]][:1] == ["en/docs/templates.html"]
    assert not any("/overrides/" in hit["path"] for hit in everything["results"])


@pytest.mark.anyio
async def test_translations_of_a_page_are_one_hit_in_the_querys_language(site: Path) -> None:
    english, japanese, spanish = await searched(
        site,
        ("upload a file together with form fields", {}),
        ("ファイルとフォームを一緒にアップロード", {}),
        ("subir un archivo junto con campos de formulario", {}),
    )
    paths = [hit["path"] for hit in english["results"]]
    assert paths[0] == "en/docs/tutorial/request-forms-and-files.md"
    assert english["results"][0]["translations"] == ["es", "ja"]
    assert not any(path.startswith(("ja/", "es/", "tr/")) for path in paths)
    assert "translations" in english["note"]
    assert japanese["results"][0]["path"] == "ja/docs/tutorial/request-forms-and-files.md"
    assert spanish["results"][0]["path"] == "es/docs/tutorial/request-forms-and-files.md"
    assert spanish["results"][0]["translations"] == ["en", "ja"]


@pytest.mark.anyio
async def test_the_suffix_layout_of_translations_folds_too(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {"guide/forms.md": FORMS_EN, "guide/forms.ja.md": FORMS_JA, "guide/files.md": FILES_EN},
    )
    found, english = await searched(root, ("ファイルとフォーム", {}), ("form fields", {}))
    assert found["results"][0]["path"] == "guide/forms.ja.md"
    assert found["results"][0]["translations"] == ["default"]
    assert [hit["path"] for hit in english["results"]].count("guide/forms.ja.md") == 0


@pytest.mark.anyio
async def test_folders_that_only_look_like_languages_are_not_folded(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {"ops/setup.md": FILES_EN, "dev/setup.md": FILES_EN.replace("# Request Files", "# Files")},
    )
    found = await search(root, "define files uploaded")
    assert sorted(hit["path"] for hit in found["results"]) == ["dev/setup.md", "ops/setup.md"]
    assert not any(hit.get("translations") for hit in found["results"])


@pytest.mark.anyio
async def test_a_change_log_naming_the_feature_ranks_below_the_features_page(site: Path) -> None:
    found, alone = await searched(site, ("set a cookie in the response", {}), ("version 42", {}))
    paths = [hit["path"] for hit in found["results"]]
    assert paths[0] == "en/docs/advanced/response-cookies.md"
    assert paths.index("en/docs/release-notes.md") > 0  # still found when it is what is asked for
    assert alone["results"][0]["path"] == "en/docs/release-notes.md"


def test_attribute_lists_are_read_as_python_markdown_writes_them_and_other_braces_are_text() -> None:
    assert heading_attributes("Upload files { #upload-files }") == ("Upload files", "upload-files")
    assert heading_attributes('Title {: #x .wide data-k="a b" }') == ("Title", "x")
    assert heading_attributes("Styled { .note }") == ("Styled", None)
    for text in ("Set {a, b}", "{{ page.title }}", "Close}", "Glued{#id}", "Two {#a}}", "Empty { }"):
        assert heading_attributes(text) == (text, None)


def test_plain_text_of_a_cut_stretch_drops_markup_and_attribute_lists_cut_at_either_end() -> None:
    assert plain_inline("#define-forms }\nUse **File** and [Form](x.md) `Body` { #a") == (
        "\nUse File and Form `Body`"
    )
    assert plain_inline("ends inside **bold") == "ends inside bold"


def test_copies_and_query_languages() -> None:
    assert copy_of("docs/ja/docs/a/b.md") == copy_of("docs/ja/docs/a/b.md")
    assert copy_of("docs/zh-hant/docs/b.md").language == "zh-hant"  # type: ignore[union-attr]
    assert copy_of("docs/en/docs/b.md").page == copy_of("docs/pt/docs/b.md").page  # type: ignore[union-attr]
    assert copy_of("b.fr.md").page == "b.md"  # type: ignore[union-attr]
    assert copy_of("ops/b.md") is None and copy_of("b.min.js") is None
    assert query_languages("응답에 쿠키 설정") == {"ko"}
    assert query_languages("レスポンスにクッキーを設定") == {"ja"}
    assert "zh" in query_languages("同时上传文件")
    assert "ru" in query_languages("загрузить файл")
    assert query_languages("poner una cookie en la respuesta") == {"es"}
    assert query_languages("set a cookie") == {"", "en"}


def test_a_brace_run_too_long_to_be_an_attribute_list_is_text_and_costs_no_backtracking() -> None:
    huge = "Title {" + "a" * 1_000_000 + "=}"  # the item pattern would backtrack over the whole word
    assert heading_attributes(huge) == (huge, None)
    many = "Title { " + "#a " * 300_000 + "}"
    assert heading_attributes(many) == (many, None)


def test_an_index_built_before_reads_its_pages_again_once_keeping_vectors(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index made by a kbkit whose readers kept `{ #id }` in titles and indexed templates
    (schema 7): the upgrade marks its Markdown and HTML for the next scan, which reads them again."""
    settings = load_settings(site)
    with monkeypatch.context() as before:
        before.setattr(markdown, "heading_attributes", lambda text: (text, None))
        before.setattr(html, "_refuse_template", lambda root: None)
        old = KnowledgeBase.open(settings)
        old.scan()
        old.close()
    with closing(sqlite3.connect(settings.index_path)) as conn, conn:
        titles = dict(conn.execute("SELECT path, title FROM documents").fetchall())
        assert titles[FORMS] == "Request Forms and Files { #request-forms-and-files }"  # as it was
        assert "en/overrides/main.html" in titles
        conn.execute(
            "INSERT INTO embeddings (doc_id, chunk, sha256, model, vector) "
            "SELECT id, 0, sha256, 'm', x'00' FROM documents WHERE path = ?",
            (FORMS,),
        )
        conn.execute("PRAGMA user_version = 7")
    kb = KnowledgeBase.open(settings)
    try:
        assert kb.store.repaired == REREAD
        report = kb.scan()
        assert report.changed == sum(1 for path in SITE if path.endswith(".md")) + 1  # and templates.html
        assert kb.search("form parameters", path_prefix="en/docs/tutorial/").results[0].title == (
            "Request Forms and Files"
        )
        conn = kb.store.reader()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        indexed = {row[0] for row in conn.execute("SELECT path FROM documents")}
        assert "en/overrides/main.html" not in indexed and "en/docs/templates.html" in indexed
        assert {row[0] for row in conn.execute("SELECT reason_code FROM skipped")} == {"template"}
        kept = "SELECT count(*) FROM embeddings e JOIN documents d ON d.id = e.doc_id AND d.sha256 = e.sha256"
        assert conn.execute(kept).fetchone()[0] == 1  # the same bytes: its vectors still count
    finally:
        kb.close()
    again = KnowledgeBase.open(settings)
    try:
        assert again.store.repaired is None  # once
        assert again.scan().changed == 0
    finally:
        again.close()
