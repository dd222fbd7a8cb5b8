"""Reads bounded by the caller (docs/adr/0026), over the protocol in both eras: search points at a
section, get_document from that offset returns that section within `max_tokens`, and the two kb
tool definitions stay small enough for an agent's context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbkit.kb.reads import DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS
from kbkit.kb.tokens import estimate_tokens
from kbkit.server.rendering import read_line, search_text
from kbkit.server.tools import KB_TOOLS
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, bounded_session, document_text

pytestmark = pytest.mark.anyio

MEMBERS = "".join(
    f"## Grid::Member{n}\n\nPaints row {n} of the grid.\n\n"
    + "".join(f"Line {k} of member {n} says what the grid does here.\n" for k in range(40))
    + "\n"
    for n in range(60)
)
PAGE = (
    "# Grid Class\n\nA grid of cells.\n\n"
    + MEMBERS
    + "## Grid::Freeze\n\nKeeps the header rows in view while the rest scrolls.\n\n"
    + "### Remarks\n\nFrozen rows are drawn first.\n\n"
    + MEMBERS.replace("Member", "Other")
)
LONG_SECTION = "# Log\n\n" + "".join(f"Entry {n}: the service answered.\n\n" for n in range(4000))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "p", {"grid-class.md": PAGE, "log.md": LONG_SECTION})


@pytest.fixture(params=ERAS)
def mode(request: pytest.FixtureRequest) -> str:
    """Each test runs in both protocol eras."""
    era: str = request.param
    return era


async def test_search_then_get_document_from_the_hits_offset_reads_that_section_only(
    root: Path, mode: str
) -> None:
    async with bounded_session(root, mode) as client:
        await client.list_tools()  # the client checks results against the schemas it listed
        found = await client.call_tool("search", {"query": "keep header rows visible while scrolling"})
        hit = found.structured_content["results"][0]
        assert hit["path"] == "grid-class.md" and hit["section"] == "Grid Class > Grid::Freeze"
        assert found.content[0].text == search_text(found.structured_content)
        read = await client.call_tool("get_document", {"path": hit["path"], "offset": hit["offset"]})
        assert not read.is_error, read.content
        data = read.structured_content
        assert read.content[0].text == read_line(data)
        text = document_text(read)
        assert text == "## Grid::Freeze\n\nKeeps the header rows in view while the rest scrolls.\n\n" + (
            "### Remarks\n\nFrozen rows are drawn first.\n\n"
        )
        assert data["section"] == "Grid Class > Grid::Freeze" and data["offset"] == hit["offset"]
        assert data["truncated"] is True and data["next_offset"] == hit["offset"] + len(text)
        assert f"offset={data['next_offset']}" in data["note"] and "whole section" in data["note"]
        after = await client.call_tool("get_document", {"path": hit["path"], "offset": data["next_offset"]})
        assert document_text(after).startswith("## Grid::Other0")
        assert after.structured_content["section"] == "Grid Class > Grid::Other0"


async def test_max_tokens_bounds_a_read_cut_at_a_boundary_and_reading_on_loses_and_repeats_nothing(
    root: Path, mode: str
) -> None:
    async with bounded_session(root, mode) as client:
        pieces, offset = [], 0
        while True:
            read = await client.call_tool(
                "get_document", {"path": "log.md", "offset": offset, "max_tokens": 500}
            )
            assert not read.is_error, read.content
            text, data = document_text(read), read.structured_content
            assert estimate_tokens(text) <= 500 and text.endswith("\n\n")  # a paragraph boundary
            pieces.append(text)
            if not data["truncated"]:
                break
            assert "max_tokens" in data["note"] or "cut" in data["note"]
            offset = data["next_offset"]
        assert "".join(pieces) == LONG_SECTION and len(pieces) > 10
        default = await client.call_tool("get_document", {"path": "log.md"})
        assert DEFAULT_MAX_TOKENS * 0.9 < estimate_tokens(document_text(default)) <= DEFAULT_MAX_TOKENS
        assert default.structured_content["section"] == "Log"


async def test_max_tokens_has_a_hard_upper_bound_and_a_floor(root: Path, mode: str) -> None:
    async with bounded_session(root, mode) as client:
        for value in (MAX_MAX_TOKENS + 1, 10, 0):
            refused = await client.call_tool("get_document", {"path": "log.md", "max_tokens": value})
            assert refused.is_error and "max_tokens" in refused.content[0].text
        largest = await client.call_tool("get_document", {"path": "log.md", "max_tokens": MAX_MAX_TOKENS})
        assert MAX_MAX_TOKENS * 0.9 < estimate_tokens(document_text(largest)) <= MAX_MAX_TOKENS


async def test_path_prefix_is_a_plain_string_in_the_schema_and_null_still_means_no_prefix(
    root: Path, mode: str
) -> None:
    async with bounded_session(root, mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        prefix = tools["search"].input_schema["properties"]["path_prefix"]
        assert prefix["type"] == "string" and prefix["default"] == "" and "anyOf" not in prefix
        limits = tools["get_document"].input_schema["properties"]["max_tokens"]
        assert (limits["default"], limits["maximum"]) == (DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS)
        for value in (None, "", "grid"):
            found = await client.call_tool("search", {"query": "grid freeze", "path_prefix": value})
            assert not found.is_error and found.structured_content["results"][0]["path"] == "grid-class.md"


def test_the_two_kb_tool_definitions_together_cost_at_most_about_a_thousand_tokens() -> None:
    """What every agent pays in context for kbkit's tools, as `tools/list` sends them."""
    declared = [
        tool.declaration().model_dump(by_alias=True, mode="json", exclude_none=True)
        for tool in KB_TOOLS.values()
    ]
    assert len(json.dumps(declared)) / 4 <= 1000
    for text in (KB_TOOLS["search"].description, KB_TOOLS["get_document"].description):
        assert "offset" in text  # the workflow: search, then get_document from the hit's offset
