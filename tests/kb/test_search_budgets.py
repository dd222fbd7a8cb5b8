"""Bounded work per document: hostile pages cost search and indexing no more than a budget.

Each test performs the attack and asserts on the work done (what is scanned, what is stored),
never on wall time."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.errors import QueryError
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.fields import INDEX_TEXT_CAP
from kbkit.kb.formats import markdown
from kbkit.kb.search import core, snippets
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory
from tests.peers.launch import forked_kbkit


class _Spy:
    """Stands in for a compiled pattern and records the length of every string it is asked about."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.lengths: list[int] = []

    def fullmatch(self, text: str):  # noqa: ANN201 - re.Match | None
        self.lengths.append(len(text))
        return self.pattern.fullmatch(text)


@pytest.mark.parametrize(
    "line",
    [
        "key: x" + " " * 65536 + "#",  # quadratic for a `[^#]*[ \t]*` regex over the whole line
        "key: x" + " \t" * 32768 + "!",
        "k" * 65536,
        "key: '" + "a" * 65536,
    ],
)
def test_a_64kb_front_matter_line_is_read_without_a_regex_over_the_line(
    monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    spy = _Spy(markdown._KEY)
    monkeypatch.setattr(markdown, "_KEY", spy)
    parsed = markdown.parse_markdown(f"---\ntitle: Odd\n{line}\n---\n# Body\n\ntext\n".encode())
    assert "text" in parsed.body
    assert spy.lengths and max(spy.lengths) <= len("title"), "only a key before ':' meets a pattern"


def test_front_matter_with_a_64kb_line_is_indexed(tmp_path: Path) -> None:
    line = "description: deploys" + " " * 65536 + "#"
    root = make_project(tmp_path / "p", {"odd.md": f"---\n{line}\n---\n# Odd\n\nbody words\n"})
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert report.documents == 1
        assert [hit.path for hit in kb.search("deploys").results] == ["odd.md"]
    finally:
        kb.close()


@pytest.fixture
def dense_page(tmp_path: Path):
    """A 6 MB Markdown page made of little but the query word."""
    body = "deploy " * (6 * 1024 * 1024 // 7)
    root = make_project(
        tmp_path / "p", {"dense.md": "# Dense\n\n" + body, "small.md": "# Small\n\ndeploy once\n"}
    )
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    yield root, kb
    kb.close()


def test_only_the_first_4_mib_of_a_long_page_is_indexed(dense_page) -> None:
    _, kb = dense_page
    sql = "SELECT d.path, length(f.body) FROM documents d JOIN documents_fts f ON f.rowid = d.id"
    sizes = dict(kb.store.reader().execute(sql))
    assert sizes["dense.md"] <= INDEX_TEXT_CAP
    assert sizes["dense.md"] > INDEX_TEXT_CAP - 16


def test_a_snippet_scans_a_bounded_window_of_a_page_dense_with_the_query_word(
    dense_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, kb = dense_page
    scanned: list[int] = []
    real = snippets.snippet_window

    def spy(text: str | None, pattern: re.Pattern[str], fallback: str, plain: snippets.Plain) -> str:
        scanned.append(len(text or ""))
        return real(text, pattern, fallback, plain)

    monkeypatch.setattr(snippets, "snippet_window", spy)
    hits = kb.search("deploy").results
    assert {hit.path for hit in hits} == {"dense.md", "small.md"}
    assert max(scanned) <= snippets.SNIPPET_SCAN_CHARS
    assert "**deploy**" in hits[0].snippet and len(hits[0].snippet) < 400


@pytest.mark.processes
def test_a_page_indexed_in_part_is_said_in_the_summary_and_listed_by_skipped(dense_page) -> None:
    root, _ = dense_page
    result = subprocess.run(
        [*forked_kbkit(), "index", "--skipped", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "1 indexed in part (only the first 4 MiB of text is searchable" in result.stdout
    assert re.search(r"indexed in part dense\.md: \d+ bytes of text, only the first 4 MiB", result.stdout)


@pytest.fixture(scope="module")
def many_hits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,500 pages that all match: ranking them takes SQLite well past a few thousand steps."""
    files = {f"page{i:04}.md": f"# Page {i}\n\nhow to deploy service number {i}\n" for i in range(1500)}
    root = make_project(tmp_path_factory.mktemp("many") / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
    finally:
        kb.close()
    return root


def test_a_search_over_its_time_budget_is_stopped_with_a_line_saying_how_to_narrow_it(
    many_hits: Path,
) -> None:
    kb = KnowledgeBase.open(load_settings(many_hits))
    try:
        with pytest.raises(
            QueryError, match=r"ran past its 0 s budget and was stopped; use more specific words"
        ):
            kb.search("deploy", seconds=0)
        assert len(kb.search("deploy", limit=5).results) == 5  # the same connection serves the next search
    finally:
        kb.close()


@pytest.mark.anyio
async def test_a_search_tool_call_over_budget_is_an_error_result_and_the_server_keeps_serving(
    many_hits: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve_in_memory(many_hits) as client:
        monkeypatch.setattr(core, "SEARCH_SECONDS", 0.0)
        stopped = await client.call_tool("search", {"query": "deploy"})
        assert stopped.is_error
        assert "budget and was stopped" in stopped.content[0].text
        monkeypatch.setattr(core, "SEARCH_SECONDS", 10.0)
        served = await client.call_tool("search", {"query": "deploy", "limit": 3})
        assert not served.is_error and len(served.structured_content["results"]) == 3
