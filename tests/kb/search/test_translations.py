"""Which copy of a translated page a search shows: the one in the query's language, told by the
words the kb's own copies hold. A VitePress site as its generator lays it out (`docs/<lang>/`,
the config beside the pages), English and Spanish, with one page also in Portuguese, Russian
and Ukrainian."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search.ranking import Ranked
from kbkit.kb.search.translations import DEFAULT_LANGUAGES, Written, fold, spoken
from tests.helpers.project import make_project

SITE = {
    ".vitepress/config.ts": "export default { locales: { en: { lang: 'en-US' }, es: { lang: 'es' } } }\n",
    "en/guide/getting-started.md": "# Getting Started\n\n## Setup Wizard\n\n"
    "VitePress ships with a command line setup wizard that scaffolds a basic project.\n\n"
    "```sh\nnpx vitepress init\n```\n",
    "es/guide/getting-started.md": "# Primeros pasos\n\n## Asistente de instalación\n\n"
    "VitePress viene con un asistente de instalación por línea de comandos que crea un proyecto básico.\n\n"
    "```sh\nnpx vitepress init\n```\n",
    "en/guide/mpa-mode.md": "# MPA Mode\n\nMPA (Multi-Page Application) mode ships zero JavaScript by default.\n",
    "es/guide/mpa-mode.md": "# Modo MPA\n\nEl modo MPA (aplicación de múltiples páginas) no envía JavaScript por defecto.\n",
    "pt/guide/mpa-mode.md": "# Modo MPA\n\nO modo MPA (aplicação de múltiplas páginas) não envia JavaScript por padrão.\n",
    "ru/guide/mpa-mode.md": "# Режим MPA\n\nРежим MPA по умолчанию не отправляет JavaScript.\n",
    "uk/guide/mpa-mode.md": "# Режим MPA\n\nРежим MPA за замовчуванням не надсилає JavaScript.\n",
    "en/reference/cli.md": "# Command Line Interface\n\n## vitepress dev\n\nStart the dev server.\n\n"
    "## vitepress init\n\nStart the setup wizard.\n",
    "es/reference/cli.md": "# Interfaz de línea de comandos\n\n## vitepress dev\n\nInicia el servidor.\n\n"
    "## vitepress init\n\nInicia el asistente de instalación.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    opened = KnowledgeBase.open(load_settings(make_project(tmp_path / "site", SITE)))
    opened.scan()
    try:
        yield opened
    finally:
        opened.close()


def paths(kb: KnowledgeBase, query: str) -> list[str]:
    return [hit.path for hit in kb.search(query, max_tokens=None).results]


def test_a_spanish_question_gets_the_spanish_page_with_the_english_one_folded_under_it(
    kb: KnowledgeBase,
) -> None:
    """No Spanish function word, Latin script like the English copy: the Spanish copies alone hold
    `asistente` and `instalación`."""
    found = kb.search("asistente instalación", max_tokens=None).results
    assert found[0].path == "es/guide/getting-started.md"
    assert "en" in found[0].translations
    assert all(not path.startswith("en/") for path in paths(kb, "asistente instalación"))


def test_an_english_question_gets_the_english_page_with_the_spanish_one_folded_under_it(
    kb: KnowledgeBase,
) -> None:
    found = kb.search("setup wizard", max_tokens=None).results
    assert found[0].path == "en/guide/getting-started.md"
    assert "es" in found[0].translations
    assert all(not path.startswith("es/") for path in paths(kb, "setup wizard"))


def test_words_every_language_holds_leave_the_default_language(kb: KnowledgeBase) -> None:
    assert paths(kb, "vitepress init")[0].startswith("en/")


def test_a_question_two_languages_share_keeps_a_copy_in_each(kb: KnowledgeBase) -> None:
    """`modo` is Spanish and Portuguese: either may be meant, so neither copy hides the other."""
    found = paths(kb, "modo MPA")
    assert {"es/guide/mpa-mode.md", "pt/guide/mpa-mode.md"} <= set(found[:2])
    assert "en/guide/mpa-mode.md" not in found


def test_the_kb_decides_only_when_its_candidates_are_in_two_languages() -> None:
    conn = sqlite3.connect(":memory:")  # never queried: one language among the candidates
    one = [Ranked(1, "guide/a.md", "A", ".md", "x", 1.0), Ranked(2, "guide/b.md", "B", ".md", "y", 0.5)]
    assert spoken(conn, "asistente instalación", ("asistente", "instalación"), one) == Written(
        DEFAULT_LANGUAGES
    )
    assert spoken(conn, "レスポンスにクッキー", ("レスポンス",), one) == Written(frozenset({"ja"}))


def test_among_the_languages_of_a_script_the_words_decide(kb: KnowledgeBase) -> None:
    """Russian and Ukrainian share the Cyrillic script; `отправляет` is in the Russian copy alone."""
    found = paths(kb, "режим MPA не отправляет")
    assert found[0] == "ru/guide/mpa-mode.md"
    assert "uk/guide/mpa-mode.md" not in found


def test_folding_keeps_the_copy_in_the_query_language_at_the_page_rank() -> None:
    ranked = [
        Ranked(1, "en/a.md", "A", ".md", "1", 3.0),
        Ranked(2, "es/b.md", "B", ".md", "2", 2.0),
        Ranked(3, "es/a.md", "A", ".md", "3", 1.0),
    ]
    kept, others = fold(ranked, Written(frozenset({"es"})))
    assert [(hit.path, hit.score) for hit in kept] == [("es/a.md", 3.0), ("es/b.md", 2.0)]
    assert others[3] == ["en"]


ROOT_LOCALE_SITE = {
    ".vitepress/config.mts": "import { defineConfig } from 'vitepress'\n\nexport default defineConfig({\n"
    "  title: 'VitePress',\n  locales: {\n"
    "    root: { label: 'English', lang: 'en-US' },\n"
    "    es: { label: 'Español', lang: 'es', link: '/es/' },\n"
    "    zh: { label: '简体中文', lang: 'zh-Hans', link: '/zh/' }\n  }\n})\n",
    "index.md": "---\nlayout: home\nhero:\n  name: VitePress\n---\n",
    "es/index.md": "---\nlayout: home\nhero:\n  name: VitePress\n---\n",
    "guide/getting-started.md": SITE["en/guide/getting-started.md"],
    "es/guide/getting-started.md": SITE["es/guide/getting-started.md"],
    "zh/guide/getting-started.md": "# 快速开始\n\n## 安装向导\n\n"
    "VitePress 附带一个命令行设置向导，可以帮助你构建一个基本项目。\n\n```sh\nnpx vitepress init\n```\n",
    "guide/routing.md": "# Routing\n\nFile-based routing: each Markdown file is a page.\n",
}
"""VitePress' root locale: the default language's pages at the top (`guide/x.md`), each other
language's in a folder named for it (`es/guide/x.md`), as `locales: { root: ... }` lays them out."""


def test_the_root_locales_page_and_its_translations_are_one_page(tmp_path: Path) -> None:
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "site", ROOT_LOCALE_SITE)))
    kb.scan()
    try:
        found = kb.search("setup wizard", max_tokens=None).results
        assert found[0].path == "guide/getting-started.md"
        assert found[0].translations == ["es", "zh"]
        found = kb.search("asistente instalación", max_tokens=None).results
        assert found[0].path == "es/guide/getting-started.md"
        assert found[0].translations == ["default", "zh"]
        assert "guide/getting-started.md" not in [hit.path for hit in found]
        assert kb.search("安装向导", max_tokens=None).results[0].path == "zh/guide/getting-started.md"
        found = kb.search("vitepress init", max_tokens=None).results  # every copy holds it: one shown
        assert [hit.path for hit in found if hit.path.endswith("getting-started.md")] == [
            "guide/getting-started.md"
        ]
        assert kb.search("file-based routing", max_tokens=None).results[0].translations == []
    finally:
        kb.close()
