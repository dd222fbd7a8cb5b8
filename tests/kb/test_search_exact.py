"""Exact matches first (docs/adr/0067): a page called what the query asks for, by its title, its
file name (a folder's `_index.md`: the folder's) or its folder and file name, outranks pages that
only hold the words, however often. Each ranking test also checks that without the rule the other
page wins, so it cannot pass by accident."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import ranking, search
from tests.helpers.dense import FixedDense
from tests.helpers.project import make_project

NOTES = {
    f"notes/note-{n}.md": f"# Note {n}\n\nThe weather was sunny on day {n}; we walked by the river.\n"
    for n in range(30)
}
"""Pages sharing no word with the questions, so the questions' words are rare, as in a real corpus."""


def first(root: Path, query: str) -> tuple[str, str]:
    """The top hit's path with every rule on, and with exact matches left out."""
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        with_rule = kb.search(query).results[0].path
        with ranking.rules_off("exact matches"):
            without = kb.search(query).results[0].path
        return with_rule, without
    finally:
        kb.close()


def mentions(words: str, times: int) -> str:
    """A long page whose sections keep using `words`."""
    return "".join(
        f"## Step {n}: {words}\n\nHere we {words} again, then check the {words} result.\n\n"
        for n in range(times)
    )


def test_a_page_titled_as_the_query_outranks_a_long_page_about_the_words(tmp_path: Path) -> None:
    files = {
        "collector/install/_index.md": "---\ntitle: Install the Collector\n---\n\nPick a package for your system.\n",
        "helm/collector.md": "# Collector chart\n\n" + mentions("install the collector", 6),
        **NOTES,
    }
    assert first(make_project(tmp_path / "p", files), "install the collector") == (
        "collector/install/_index.md",
        "helm/collector.md",
    )


def test_a_file_named_as_the_query_outranks_a_page_about_the_words(tmp_path: Path) -> None:
    files = {
        "error/boxing_errors.md": "# Wrapping failures\n\nWrap each error in a box to keep the original.\n",
        "scope/move.md": "# Moves\n\n" + mentions("boxing errors", 8),
        **{f"scope/page-{n}.md": f"# Page {n}\n\nSee [moves](move.md).\n" for n in range(8)},
        **NOTES,
    }
    assert first(make_project(tmp_path / "p", files), "boxing errors") == (
        "error/boxing_errors.md",
        "scope/move.md",
    )


def test_a_folder_and_file_name_together_name_a_page(tmp_path: Path) -> None:
    files = {
        "widgets/digits.md": "# Digits\n\nShows numbers in large characters.\n",
        "guide/colors.md": "# Colors\n\n" + mentions("digits widget", 4),
        **NOTES,
    }
    assert first(make_project(tmp_path / "p", files), "Digits widget") == (
        "widgets/digits.md",
        "guide/colors.md",
    )


def test_what_is_x_finds_the_page_called_so_among_pages_that_all_hold_x(tmp_path: Path) -> None:
    files = {
        "guide/what-is-gizmo.md": "# What is Gizmo?\n\nA tool that builds sites.\n",
        "reference/config.md": "# Config\n\n" + mentions("gizmo", 5),
        **{f"guide/page-{n}.md": f"# Page {n}\n\nSee [config](../reference/config.md).\n" for n in range(8)},
        **NOTES,
    }
    assert first(make_project(tmp_path / "p", files), "what is gizmo") == (
        "guide/what-is-gizmo.md",
        "reference/config.md",
    )


def test_a_name_is_exact_only_with_no_word_more_and_none_fewer() -> None:
    query = frozenset(ranking.stems("install the collector"))
    assert query in ranking.names_of("collector/install/_index.md", "Install the Collector")
    assert query not in ranking.names_of("setup/_index.md", "Install the Collector on Linux")
    assert query not in ranking.names_of("setup/install.md", "Install")
    assert frozenset(ranking.stems("vitepress")) in ranking.names_of("guide/intro.md", "What is VitePress?")
    assert frozenset(ranking.stems("digits widget")) in ranking.names_of("widgets/digits.md", "Digits")


def test_only_known_rules_can_be_left_out() -> None:
    with pytest.raises(ValueError, match="no ranking rule named 'speling'"), ranking.rules_off("speling"):
        pass
    with ranking.rules_off("exact matches", "references"):
        assert not ranking.on("exact matches")
        assert ranking.on("passages")
    assert ranking.on("exact matches")


def test_a_page_named_exactly_stays_first_when_vectors_prefer_another(tmp_path: Path) -> None:
    files = {
        "widgets/digits.md": "# Digits\n\nShows numbers in large characters.\n",
        "guide/colors.md": "# Colors\n\n" + mentions("digits widget", 4),
        **NOTES,
    }
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", files)))
    try:
        kb.scan()
        dense = FixedDense(kb, {"guide/colors.md": 0.9, "widgets/digits.md": 0.1})
        hybrid = search(kb.store, kb.registry, "Digits widget", dense=dense).results
        assert hybrid[0].path == "widgets/digits.md"
        with ranking.rules_off("exact matches"):
            assert (
                search(kb.store, kb.registry, "Digits widget", dense=dense).results[0].path
                == "guide/colors.md"
            )
    finally:
        kb.close()
