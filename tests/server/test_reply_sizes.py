"""Every reply fits one message of the transport: large and escaping-heavy documents, long search
hit lists and topic listings reach the MCP SDK's own HTTP client in both protocol eras, which
refuses a server-sent event over 1 MiB. What does not fit is cut, the cut is said, and reading on
from `next_offset` gets the rest, nothing lost or repeated. A document read is bounded by its
max_tokens long before a message is full; the largest one still fits."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from kbkit.kb.reads import MAX_MAX_TOKENS
from kbkit.kb.tokens import estimate_tokens
from kbkit.server.rendering import read_line, search_text
from kbkit.server.replies import REPLY_LIMIT, RESULT_LIMIT, encoded_size, fit_text, result_size
from kbkit.server.tools import KB_TOOLS
from tests.helpers.http import HttpServer, http_client
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, document_text

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("replies")]  # one worker starts the module's server

LINES = "".join(f'line {n:06}: "quoted", a back\\slash and a tab\there.\n' for n in range(19_000))
"""990 KB of plain text with the escapes every document has: 1.08 MB as JSON, just over a reply
(and under a million characters, so every number in the envelope has as many digits as a cut's)."""
HOSTILE = "".join(f"\x01\x02\x1b[0m 🙂 ünïcode {n:06}\n" for n in range(60_000))
"""Control characters (six bytes each as JSON), an emoji (twelve, escaped) and accents: 1.7 MB of
UTF-8 that takes 3.7 MB as escaped JSON."""
EMOJI = "".join(f"{n:06} " + "🙂" * 100 + "\n" for n in range(2000))
"""Emoji only, as far as a read's budget can tell: one character each of JSON, twelve bytes each on
the wire, so the largest read carries the most bytes any read can."""
DEEP = "/".join(f"{i:02}" + "d" * 240 for i in range(15))
"""A 3.6 KB folder path: a hit or a listing entry under it is that big, twice over."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    docs = {"big-0.md": LINES, "hostile.md": HOSTILE, "emoji.md": EMOJI}
    docs |= {f"{DEEP}/n{i:03}.md": f"# Note {i}\n\nneedle in a deep folder\n" for i in range(160)}
    root = make_project(tmp_path_factory.mktemp("replies") / "p", docs)
    running = HttpServer(root).wait_ready(timeout=60)
    yield running
    running.stop()


@pytest.fixture(params=ERAS)
async def client(server: HttpServer, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """A client of the module's server, in each protocol era."""
    async with http_client(server.url, request.param) as connected:
        yield connected


async def read_whole(client: Client, path: str) -> tuple[str, int]:
    """Every piece of a document through get_document; returns the text and how many replies it took."""
    pieces, offset, replies = [], 0, 0
    while True:
        result = await client.call_tool(
            "get_document", {"path": path, "offset": offset, "max_tokens": MAX_MAX_TOKENS}
        )
        assert not result.is_error, result.content
        replies += 1
        data = result.structured_content
        assert result.content[0].text == read_line(data) and data["text"] == document_text(result)
        pieces.append(document_text(result))
        if not data["truncated"]:
            assert "next_offset" not in data and "note" not in data
            return "".join(pieces), replies
        assert (
            data["next_offset"] == offset + len(pieces[-1])
            and f"offset={data['next_offset']}" in data["note"]
        )
        offset = data["next_offset"]


@pytest.mark.processes
async def test_the_largest_read_of_the_most_escaped_text_fits_one_reply_and_reads_on_exactly(
    client: Client,
) -> None:
    first = await client.call_tool("get_document", {"path": "emoji.md", "max_tokens": MAX_MAX_TOKENS})
    assert not first.is_error and first.structured_content["truncated"]
    shown = document_text(first)
    assert shown == EMOJI[: first.structured_content["next_offset"]]
    assert MAX_MAX_TOKENS // 2 < estimate_tokens(shown) <= MAX_MAX_TOKENS
    # 12 bytes on the wire per emoji, and the text goes twice (structured content and text block)
    assert REPLY_LIMIT // 3 < encoded_size(shown) < REPLY_LIMIT // 2
    text, replies = await read_whole(client, "emoji.md")
    assert text == EMOJI and replies >= 2


def test_a_reply_that_would_outgrow_a_message_is_cut_where_it_fits_and_says_where_to_read_on() -> None:
    """No read within max_tokens fills a message, so the last guard is tested on its own."""
    text = LINES * 2
    data = {"path": "big.md", "media_type": "text/markdown", "section": "", "text": text}
    reply = KB_TOOLS["get_document"].reply(data | {"truncated": False, "size": len(text), "offset": 7})
    meta = reply.structured_content
    assert meta is not None and meta["truncated"] is True
    shown = reply.content[-1].text
    assert text.startswith(shown) and meta["next_offset"] == 7 + len(shown)
    assert f"offset={meta['next_offset']}" in meta["note"]
    assert REPLY_LIMIT - 16 * 1024 < result_size(reply) <= RESULT_LIMIT


@pytest.mark.processes
async def test_an_escaping_heavy_document_is_read_in_bounded_pieces_with_nothing_lost_or_repeated(
    client: Client,
) -> None:
    text, replies = await read_whole(client, "hostile.md")
    assert text == HOSTILE
    assert replies > encoded_size(HOSTILE) // REPLY_LIMIT  # 1.7 MB of UTF-8, 3.7 MB on the wire


@pytest.mark.processes
async def test_a_resource_read_is_cut_to_fit_and_says_where_to_read_on(client: Client) -> None:
    for path, full in (("hostile.md", HOSTILE), ("big-0.md", LINES)):
        text = (await client.read_resource(f"kb://doc/{path}")).contents[0].text
        shown, _, notice = text.rpartition("\n\n[kbkit: TRUNCATED")
        assert shown and full.startswith(shown), path
        assert f"offset={len(shown)}.]" in notice and f"only the first {len(shown.encode())} bytes" in notice
        rest = await client.call_tool("get_document", {"path": path, "offset": len(shown)})
        assert full[len(shown) :].startswith(document_text(rest))


@pytest.mark.processes
async def test_a_search_whose_hits_outgrow_a_reply_is_cut_and_says_so(client: Client) -> None:
    await client.list_tools()  # the client checks results against the schema it listed
    result = await client.call_tool("search", {"query": "needle", "limit": 100, "max_tokens": 10**7})
    assert not result.is_error
    data = result.structured_content
    assert result.content[0].text == search_text(data)
    assert 10 < len(data["results"]) < 100 and data["truncated"] is True
    assert f"holds {len(data['results'])} of 100 hits" in data["note"]
    few = await client.call_tool("search", {"query": "needle", "limit": 5, "max_tokens": 10**7})
    assert len(few.structured_content["results"]) == 5 and few.structured_content["truncated"] is False


@pytest.mark.processes
async def test_a_topic_listing_that_outgrows_a_reply_is_cut_with_a_notice(client: Client) -> None:
    text = (await client.read_resource("kb://topic/")).contents[0].text
    listed = [line for line in text.splitlines() if line.startswith("- [")]
    assert 10 < len(listed) < 162
    assert f"[kbkit: TRUNCATED. Only the first {len(listed)} documents are listed;" in text


def test_fit_text_finds_the_longest_prefix_that_fits() -> None:
    for text in (LINES[:5000], HOSTILE[:5000], "🙂" * 3000, ""):
        for budget in (0, 2, 3, 13, 1000, 7777, 10**6):
            shown = fit_text(text, budget)
            assert text.startswith(shown)
            if shown:
                assert encoded_size(shown) <= budget, (budget, len(shown))
            if shown != text:
                assert encoded_size(text[: len(shown) + 1]) > budget, (budget, len(shown))
