"""What a query names (docs/adr/0026): a page whose title the query names whole outranks a sibling
page sharing more of its words, and within a page the member the query names is pointed at over a
neighbour whose text shares more of its words. Each ranking test also checks that without its rule
the other page or passage wins, so it cannot pass by accident."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import compile_query, named, names_member, naming
from tests.helpers.project import make_project


def stems(query: str) -> frozenset[str]:
    return compile_query(query).stems


def test_a_query_names_a_title_or_member_when_it_holds_every_word_of_it() -> None:
    query = stems("CDC::GetTextAlign: the current text alignments of a device context")
    assert named("CDC::GetTextAlign", query)
    assert named("CDC Class", query)  # "Class" is the kind of page, not its name
    assert not named("CDC::SetTextAlign", query)
    assert not named("CDC::GetTextAlign", stems("CDC: get the current text alignment"))  # camelCase: whole
    assert named("hash_map::lower_bound", stems("hash map: the lower bounds of a key"))  # snake_case: split
    assert named("list (STL/CLR)", stems("the number of elements in an STL/CLR list"))
    assert not named("Class", query)  # nothing left to name
    assert not named("", query)


def test_a_heading_path_names_a_member_but_not_the_pages_own_constructor() -> None:
    query = stems("std::multimap insert with a hint position")
    assert names_member("multimap Class > multimap::insert", query)
    assert names_member("multimap Class > multimap::insert > Remarks", query)
    assert not names_member("multimap Class > multimap::emplace_hint", query)
    assert not names_member("multimap Class > multimap::multimap", query)  # the title names it too
    assert not names_member("multimap Class", query)


def member(name: str, summary: str, words: str, more: str = "") -> str:
    """A member's section of about 2,000 characters: its one passage."""
    return (
        f"## `{name}`\n\n{summary}\n\n"
        + f"{words} " * 6
        + more
        + "\n\n"
        + "Filler text about drawing. " * 60
        + "\n\n"
    )


NOTES = {
    f"notes/note-{n}.md": f"# Note {n}\n\nThe weather was sunny on day {n}; we walked by the river.\n"
    for n in range(30)
}
"""Pages sharing no word with the questions, so the questions' words are rare, as in a real corpus."""


def open_kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


def test_the_page_whose_title_the_query_names_outranks_a_sibling_sharing_more_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gadget = "# Gadget Class\n\n" + member(
        "Gadget::Resize", "Changes the number of teeth.", "Sets the number of teeth of the gadget."
    )
    sprocket = "# Sprocket Class\n\n" + member(
        "Sprocket::Resize", "Changes the number of teeth it holds.", "Changes the number of teeth it holds."
    )
    files = {"gadget-class.md": gadget, "sprocket-class.md": sprocket, **NOTES}
    kb = open_kb(make_project(tmp_path / "p", files))
    try:
        question = "Gadget: change the number of teeth it holds"
        assert kb.search(question).results[0].path == "gadget-class.md"
        monkeypatch.setattr(naming, "NAMED_TITLE_BOOST", 1.0)
        assert kb.search(question).results[0].path == "sprocket-class.md"
    finally:
        kb.close()


def test_a_hit_points_at_the_member_the_query_names_over_a_neighbour_sharing_more_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (
        "# Box Class\n\n"
        + member("Box::Clear", "Removes every item.", "Empties the box.")
        + member(
            "Box::EmplaceHint",
            "Puts an item at a hint position.",
            "Puts the item at the position of the hint.",
        )
        + member(
            "Box::Insert",
            "Puts an item in the box.",
            "Puts an item in the box, at the end or at a hint.",
            "It may take a position.",
        )
        + member("Box::Size", "Counts the items.", "Counts what the box holds.")
        + "".join(member(f"Box::Draw{n}", f"Draws part {n}.", "Paints the screen.") for n in range(6))
    )  # over 12,000 characters: a result points at the member, not at the page
    kb = open_kb(make_project(tmp_path / "p", {"box-class.md": page, **NOTES}))
    try:
        question = "Box: insert an item with a hint position"
        assert kb.search(question).results[0].section == "Box Class > Box::Insert"
        monkeypatch.setattr(naming, "NAMED_SHARE", 2.0)  # no passage is close enough: the rule is off
        assert kb.search(question).results[0].section == "Box Class > Box::EmplaceHint"
    finally:
        kb.close()


def test_a_member_named_as_what_the_asker_already_has_is_not_chosen_for_being_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question "shut down an engine started with StartEngine" names StartEngine as context:
    the naming rule leaves it to the words, which favour StopEngine; "StartEngine: ..." still names it."""
    page = (
        "# Engine Class\n\n"
        + member("Engine::StartEngine", "Starts the engine.", "Starts the engine and warms it up.")
        + member("Engine::StopEngine", "Shuts the engine down.", "Shuts down an engine that is running.")
        + "".join(member(f"Engine::Draw{n}", f"Draws part {n}.", "Paints the screen.") for n in range(6))
    )
    kb = open_kb(make_project(tmp_path / "p", {"engine-class.md": page, **NOTES}))
    try:
        question = "shut down an engine that was started with StartEngine"
        assert naming.targets(question) == stems("shut down an engine that was started")
        assert kb.search(question).results[0].section == "Engine Class > Engine::StopEngine"
        asked = "StartEngine: what does it do to an engine that is already running"
        assert kb.search(asked).results[0].section == "Engine Class > Engine::StartEngine"
        monkeypatch.setattr(naming, "CONTEXT_WORDS", frozenset())  # every name counts as asked for
        assert kb.search(question).results[0].section == "Engine Class > Engine::StartEngine"
    finally:
        kb.close()
