"""Search points into the document (docs/adr/0026): each result names the section its best passage
is in and where that section starts, its snippet comes from that passage, a long page whose one
section answers competes with short pages, and the passages follow the documents as they change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.passages import Best
from kbkit.kb.schema import REREAD, RESEGMENTED, SCHEMA_VERSION
from kbkit.kb.search.results import ALSO, ALSO_HITS, Section, other_sections
from tests.helpers.project import make_project
from tests.peers.hostile import text_pdf

FILLER = "".join(
    f"## Widget::Member{n}\n\nDraws part {n} of the widget on the screen.\n\n"
    + "The widget keeps its state between calls and repaints when asked. " * 20
    + "\n\n"
    for n in range(150)
)
"""About 200 KB of member sections that share no rare word with the questions below."""
BIG = (
    "---\ntitle: Widget Class\n---\n# `Widget` Class\n\n## Members\n\n|Name|Description|\n|-|-|\n"
    + "".join(f"|[`Widget::Member{n}`](#member{n})|Draws part {n}.|\n" for n in range(150))
    + "|[`Widget::SetOpacity`](#setopacity)|Sets the translucency of the widget.|\n\n"
    + FILLER
    + '## <a name="setopacity"></a> `Widget::SetOpacity`\n\nSets the translucency of the widget.\n\n'
    + "### Remarks\n\nA translucency of 0 hides the widget; 255 makes it opaque. Layered windows only.\n\n"
    + FILLER.replace("Member", "Other")
)


def open_kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


def test_a_result_names_the_section_of_its_best_passage_and_reading_from_its_offset_returns_that_section(
    tmp_path: Path,
) -> None:
    kb = open_kb(make_project(tmp_path / "p", {"widget-class.md": BIG}))
    try:
        [hit] = kb.search("make the widget translucent, layered windows").results
        assert hit.section == "Widget Class > Widget::SetOpacity"
        doc = kb.load(hit.path, offset=hit.offset, max_tokens=8000)
        assert doc.text.startswith('## <a name="setopacity"></a> `Widget::SetOpacity`')
        assert doc.text.endswith("Layered windows only.\n\n")  # the section and its Remarks, no more
        assert doc.section == hit.section and doc.stop == "section"
        assert doc.next_offset == hit.offset + len(doc.text)
        assert "**translucen" in hit.snippet.lower() or "**layered**" in hit.snippet.lower()
        assert "Member1" not in hit.snippet  # not from the member table at the top of the page
    finally:
        kb.close()


def test_a_long_page_whose_one_section_answers_outranks_short_pages_that_only_share_common_words(
    tmp_path: Path,
) -> None:
    short = {
        f"notes/widget-{n}.md": f"# Widget note {n}\n\nThe widget hides when asked; windows repaint it.\n"
        for n in range(8)
    }
    kb = open_kb(make_project(tmp_path / "p", {"widget-class.md": BIG, **short}))
    try:
        hits = kb.search("widget translucency opaque layered windows").results
        assert hits[0].path == "widget-class.md"
        assert len({hit.path for hit in hits}) == len(hits)  # one result per document
    finally:
        kb.close()


TIMERS = (
    "# `Window` Class\n\n"
    + FILLER
    + '## <a name="settimer"></a> `Window::SetTimer`\n\nInstalls a system timer that sends timer '
    "messages to the window at each interval.\n\n"
    + FILLER.replace("Member", "Other")
    + '## <a name="ontimer"></a> `Window::OnTimer`\n\nCalled after each interval of a timer that '
    "the window installed.\n\n"
    + FILLER.replace("Member", "Third")
    + '## <a name="killtimer"></a> `Window::KillTimer`\n\nKills the timer event from the earlier '
    "call to SetTimer.\n\n" + FILLER.replace("Member", "Fourth")
)
"""A page far larger than one read whose three timer sections all match a question about timers."""


def test_a_hit_names_the_other_sections_of_its_page_that_match_nearly_as_well(tmp_path: Path) -> None:
    note = "# Timers\n\nA window timer sends messages at each interval.\n\n## Stopping\n\nKill the timer.\n"
    kb = open_kb(make_project(tmp_path / "p", {"window-class.md": TIMERS, "timers.md": note}))
    try:
        hits = {hit.path: hit for hit in kb.search("stop the window timer installed earlier").results}
        big, small = hits["window-class.md"], hits["timers.md"]
        named = [big.section, *(other.section for other in big.also)]
        assert sorted(named) == sorted(
            f"Window Class > Window::{m}" for m in ("SetTimer", "OnTimer", "KillTimer")
        )
        assert len(big.also) == ALSO and big.section not in [other.section for other in big.also]
        for other in big.also:  # each one is read from its offset, as a hit's own section is
            doc = kb.load(big.path, offset=other.offset, max_tokens=8000)
            assert doc.section == other.section and doc.stop == "section"
        assert small.also == [] and "also" not in small.to_dict()  # read whole from its offset anyway
        unrelated = kb.search("translucency").results
        assert all(hit.also == [] for hit in unrelated)
    finally:
        kb.close()


def test_other_sections_are_distinct_best_first_at_most_two_and_at_least_half_as_good() -> None:
    def passage(anchor: int, score: float) -> Best:
        return Best(1, anchor, anchor, 10, anchor, f"Page > S{anchor}", score)

    pool = {1: [passage(1, 10), passage(2, 9), passage(1, 6), passage(3, 5), passage(4, 4.9)]}
    found = other_sections(pool, {1: pool[1][0]}, [1])
    assert found == {
        1: [Section("Page > S2", 2), Section("Page > S3", 3)]
    }  # S1 twice: once; S4: under half the best
    weak = {1: [passage(1, 10), passage(2, 4.9)]}
    assert other_sections(weak, {1: weak[1][0]}, [1]) == {}  # under half the best: not named
    chosen_by_vector = passage(2, 9)  # the hit points at a passage that is not the pool's best
    assert other_sections(pool, {1: chosen_by_vector}, [1]) == {
        1: [Section("Page > S1", 1), Section("Page > S3", 3)]
    }
    assert other_sections(pool, {}, [1]) == {} and other_sections({}, {1: pool[1][0]}, [1]) == {}
    many = {doc: [Best(doc, 1, 1, 10, 1, "A", 10), Best(doc, 2, 2, 10, 2, "B", 9)] for doc in range(1, 6)}
    chosen = {doc: passages[0] for doc, passages in many.items()}
    assert sorted(other_sections(many, chosen, [5, 4, 3, 2, 1])) == sorted(
        [5, 4, 3][:ALSO_HITS]
    )  # the first hits only


def test_a_small_document_is_read_whole_from_a_results_offset(tmp_path: Path) -> None:
    note = "# Deploying\n\nRoll out with the blue green strategy.\n\n## Rollback\n\nRedeploy the last tag.\n"
    kb = open_kb(make_project(tmp_path / "p", {"deploy.md": note}))
    try:
        [hit] = kb.search("redeploy the last tag").results
        assert (hit.offset, hit.section) == (0, "Deploying")
        assert kb.load(hit.path, offset=hit.offset, max_tokens=8000).text == note
    finally:
        kb.close()


def test_a_pdf_result_names_its_page_and_points_where_that_page_starts(tmp_path: Path) -> None:
    filler = " ".join(["nothing much on this page"] * 200)  # 5 KB a page: too long to be read whole
    pages = [f"page {n}: {filler}" for n in range(1, 4)] + [f"the quokka lives on an island {filler}"]
    kb = open_kb(make_project(tmp_path / "p", {"manual.pdf": text_pdf(pages)}))
    try:
        [hit] = kb.search("quokka").results
        assert hit.section == "page 4"
        assert kb.load("manual.pdf", offset=hit.offset, max_tokens=8000).text.startswith("the quokka")
    finally:
        kb.close()


def test_an_edited_or_removed_document_leaves_no_passage_behind(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"widget-class.md": BIG, "other.md": "# Other\n\nquokka\n"})
    kb = open_kb(root)
    try:
        page = root / "docs" / "widget-class.md"
        page.write_text(BIG.replace("translucency", "quokkaness"), encoding="utf-8")
        (root / "docs" / "other.md").unlink()
        kb.scan()
        assert kb.search("translucency").results == []
        [hit] = kb.search("quokkaness").results
        assert hit.section == "Widget Class > Widget::SetOpacity"
        conn = kb.store.reader()
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES('integrity-check')")
        count = conn.execute("SELECT count(*) FROM passages WHERE doc_id NOT IN (SELECT id FROM documents)")
        assert count.fetchone()[0] == 0
    finally:
        kb.close()


def test_an_index_without_passages_is_upgraded_in_place_keeping_its_vectors_and_rereads_its_pdfs(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", {"widget-class.md": BIG, "manual.pdf": text_pdf(["a quokka page"])})
    settings = load_settings(root)
    open_kb(root).close()
    with sqlite3.connect(settings.index_path) as conn:  # what schema 4 had: no passages, no chunk offsets
        conn.execute("DROP TABLE passages")
        conn.execute("DROP TABLE passages_fts")
        conn.execute("DROP INDEX embeddings_key")
        conn.execute("ALTER TABLE embeddings DROP COLUMN key")
        conn.execute("ALTER TABLE embeddings DROP COLUMN start")
        widget = conn.execute("SELECT id FROM documents WHERE path = 'widget-class.md'").fetchone()[0]
        conn.execute("INSERT INTO embeddings VALUES (?, 0, 'sha', 'model', x'00')", (widget,))
        conn.execute("PRAGMA user_version = 4")
    kb = KnowledgeBase.open(settings)
    try:
        assert (
            kb.store.repaired == f"{RESEGMENTED}; {REREAD}"
        )  # upgraded: only the full-text tables made again
        conn = kb.store.reader()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
        [hit] = kb.search("translucency layered").results
        assert hit.section == "Widget Class > Widget::SetOpacity"
        assert kb.search("quokka").results == []  # a PDF's pages are not in its text: read again
        report = kb.scan()
        assert report.added == 1
        assert kb.search("quokka").results[0].section == "page 1"
    finally:
        kb.close()
