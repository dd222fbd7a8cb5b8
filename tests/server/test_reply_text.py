"""A reply's text block is what agents that read text hand their model (docs/clients.md, "What
reaches the model"): search hits in a few plain lines, not the JSON again; the structured content
stays whole and valid; `get_document`'s text is in both parts (docs/adr/0069)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from kbkit.kb.search.results import legend
from kbkit.kb.tokens import estimate_tokens
from kbkit.server.rendering import read_line, search_text
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, document_text, serve_in_memory

pytestmark = pytest.mark.anyio

PER_HIT = 90
"""Tokens a hit's lines may take: title, path and section, a snippet (about 60), `also`."""
PAGES = {
    f"runbooks/deploy-{n}.md": f"# Deploy step {n}\n\n## Switch traffic\n\nFlip the router to green, "
    f"step {n} of the blue-green deploy.\n\n## Roll back\n\nFlip the router back to blue.\n"
    for n in range(12)
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "p", PAGES)


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("limit", [5, 10])
async def test_search_text_names_every_hit_in_a_few_lines_and_the_json_stays_valid(
    project: Path, mode: str, limit: int
) -> None:
    async with serve_in_memory(project, mode) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["search"].output_schema
        result = await client.call_tool("search", {"query": "flip the router to green", "limit": limit})
    data = result.structured_content
    assert not result.is_error and data is not None and len(data["results"]) == limit
    jsonschema.validate(data, schema)
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(result.content) == 1 and text == search_text(data)
    for rank, hit in enumerate(data["results"], 1):
        assert f"{rank}. {hit['title']}\n   path={hit['path']} offset={hit['offset']}" in text
    assert "{" not in text and "score" not in text
    assert estimate_tokens(text) <= PER_HIT * limit < estimate_tokens(data) * 2


def test_the_note_is_shown_only_where_it_says_what_the_lines_do_not() -> None:
    hit = {"path": "a.md", "title": "A", "score": 1.0, "section": "", "offset": 0, "snippet": "x"}
    folded = {**hit, "folded": ["b.md"]}
    explained = "; ".join(legend(1, 0))
    cut = "max_tokens=50 cut the list at 1 of 3 hits; raise max_tokens or lower limit"
    text = search_text({"results": [folded], "truncated": True, "note": f"{cut}; {explained}"})
    assert "near-copies folded here: b.md" in text and f"note: {cut}" in text
    assert "`folded`" not in text
    assert "note:" not in search_text({"results": [folded], "truncated": False, "note": explained})
    assert search_text({"results": [], "truncated": False, "note": "no document contains"}) == (
        "no hits\nnote: no document contains"
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_get_document_s_text_is_in_the_structured_content_and_its_own_block(
    project: Path, mode: str
) -> None:
    async with serve_in_memory(project, mode) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["get_document"].output_schema
        read = await client.call_tool("get_document", {"path": "runbooks/deploy-3.md"})
    data = read.structured_content
    assert not read.is_error and data is not None
    jsonschema.validate(data, schema)
    assert data["text"] == document_text(read) == PAGES["runbooks/deploy-3.md"]
    assert read.content[0].text == read_line(data)  # type: ignore[union-attr]
    assert read_line(data).startswith("runbooks/deploy-3.md (text/markdown, ")
