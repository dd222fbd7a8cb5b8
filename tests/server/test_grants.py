"""Restricted folders over real HTTP, as an attacker holding a valid token would try them
(docs/adr/0070): two principals, `alice` granted [restricted.security], `mallory` not. Every way
out of the kb is tried as mallory, and each must say no more than it says of a folder that does
not exist; alice reads it all."""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.helpers.http import STOPPED, HttpServer, http_client, personal_tokens
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS
from tests.helpers.wait import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

SECRET = "zanzibar"
"""A word only the restricted folder holds."""
FILES = {
    "guide.md": "# Deployment guide\n\nHow we deploy the billing service with blue green rollouts.\n",
    "runbooks/failover.md": "# Failover runbook\n\nSwitch the billing database to the replica.\n",
    "security/incident-2026.md": (
        f"# Incident review 2026\n\nThe {SECRET} breach of the billing database: how the replica leaked.\n"
    ),
    "security/keys.md": f"# Key rotation\n\nRotate the {SECRET} keys of the billing service every quarter.\n",
}
CONFIG = """[kb]
path = "docs"

[restricted.security]
paths = ["security/"]
tokens = ["alice", "bob"]
"""


@pytest.fixture
def served(tmp_path: Path) -> Any:
    root = make_project(tmp_path / "project", FILES, CONFIG)
    alice, mallory = personal_tokens(root, "alice", "mallory")
    (root / "docs" / "alias").symlink_to("security")  # links into the restricted folder
    (root / "docs" / "alias.md").symlink_to("security/keys.md")
    (root / "docs" / "security" / "linked.md").write_text(f"# Linked\n\n{SECRET} orchid\n", encoding="utf-8")
    os.link(root / "docs" / "security" / "linked.md", root / "docs" / "linked-copy.md")
    server = HttpServer(root, token=None, args=("--log-format", "json")).wait_ready()
    try:
        yield root, server, alice, mallory
    finally:
        assert server.stop() == STOPPED


async def true(condition: Any) -> bool:
    return bool(condition())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def as_(server: HttpServer, token: str, mode: str) -> AsyncIterator[Client]:
    async with http_client(server.url, mode, bearer(token)) as client:
        yield client


async def search(client: Client, query: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("search", {"query": query, **args})
    assert not result.is_error, result
    data: dict[str, Any] = result.structured_content or {}
    return data


async def read_error(client: Client, path: str) -> str:
    result = await client.call_tool("get_document", {"path": path})
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


async def everything(client: Client) -> list[str]:
    listed, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        listed += [str(r.uri) for r in page.resources]
        cursor = page.next_cursor
        if not cursor:
            return listed


@pytest.mark.parametrize("mode", ERAS)
async def test_a_principal_without_the_grant_learns_nothing_of_a_restricted_folder(
    served: Any, mode: str
) -> None:
    root, server, alice, mallory = served
    async with as_(server, mallory, mode) as client:
        # search: no hit, no count, no note naming it; the empty note is the one of a word nobody has
        found = await search(client, SECRET)
        assert found["results"] == []
        assert (
            found["note"] == f"no document contains any of the words: {SECRET}; try other words or synonyms"
        )
        billing = await search(client, "billing database replica")
        paths = [hit["path"] for hit in billing["results"]]
        assert paths and not any(path.startswith("security") for path in paths)
        assert "security" not in json.dumps(billing)
        prefixed = await search(client, "billing", path_prefix="security/")
        nowhere = await search(client, "billing", path_prefix="nowhere/")
        assert prefixed["note"] == nowhere["note"].replace("nowhere/", "security/")
        # get_document: the same words as a folder that does not exist, for every spelling of the path
        for path, shown in [
            ("security/keys.md", "security"),
            ("security/nothing-here.md", "security"),
            ("Security/keys.md", "Security"),
            ("SECURITY/keys.md", "SECURITY"),
            (unicodedata.normalize("NFD", "security/keys.md"), "security"),
        ]:
            assert await read_error(client, path) == f"{shown!r} does not exist under the kb folder"
        assert await read_error(client, "nowhere/keys.md") == "'nowhere' does not exist under the kb folder"
        for path in (
            "security/../security/keys.md",
            "./security/keys.md",
            "security//keys.md",
            "/security/keys.md",
        ):
            assert "keys" not in (await read_error(client, path)).replace(path, "")
        # resources: not listed, not readable, not in a topic
        listed = await everything(client)
        assert listed and not any("security" in uri for uri in listed)
        for uri in ("kb://doc/security/keys.md", "kb://doc/security%2Fkeys.md", "kb://topic/security"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert SECRET not in str(refused.value) and "Key rotation" not in str(refused.value)
        top = await client.read_resource("kb://topic/")
        assert "security" not in top.contents[0].text  # type: ignore[union-attr]
    audit = [json.loads(line) for line in server.stderr().splitlines() if line.startswith('{"event"')]
    denied = [line for line in audit if line.get("denied")]
    assert denied and all(
        line["principal"] == "mallory" and line["denied"] == ["security"] for line in denied
    )
    assert SECRET not in server.stderr() and "keys.md" not in server.stderr()


@pytest.mark.parametrize("mode", ERAS)
async def test_the_granted_principal_reads_the_restricted_folder_and_the_rest(served: Any, mode: str) -> None:
    root, server, alice, mallory = served
    async with as_(server, alice, mode) as client:
        found = await search(client, SECRET)
        assert {hit["path"] for hit in found["results"]} == {"security/incident-2026.md", "security/keys.md"}
        billing = await search(client, "billing database replica", limit=10)
        paths = [hit["path"] for hit in billing["results"]]
        assert "security/incident-2026.md" in paths and "runbooks/failover.md" in paths
        assert billing["results"][0]["score"] == 1.0
        document = await client.call_tool("get_document", {"path": "security/keys.md"})
        assert not document.is_error and SECRET in document.content[1].text  # type: ignore[union-attr]
        listed = await everything(client)
        assert "kb://doc/security/keys.md" in listed and "kb://doc/guide.md" in listed
        if mode == "auto":  # what a host may share: only what every principal reads alike
            assert (await client.list_resources()).cache_scope == "private"
            assert (await client.read_resource("kb://doc/security/keys.md")).cache_scope == "private"
            assert (await client.read_resource("kb://doc/guide.md")).cache_scope == "public"
            assert (await client.read_resource("kb://topic/")).cache_scope == "private"
        assert listed == sorted(listed, key=lambda uri: uri.removeprefix("kb://doc/"))


async def test_ranking_statistics_come_from_what_the_principal_reads(served: Any) -> None:
    """A word's rarity must not say how many restricted pages hold it: mallory's scores for a public
    page are the same whether or not restricted pages use its words."""
    root, server, alice, mallory = served
    async with as_(server, mallory, "legacy") as client:
        before = await search(client, "billing rotate quarter")
    for number in range(20):
        (root / "docs" / "security" / f"more-{number}.md").write_text(
            "# Billing\n\nbilling billing rotate every quarter\n", encoding="utf-8"
        )

    async def indexed() -> bool:
        async with as_(server, alice, "legacy") as granted:
            hits = (await search(granted, "rotate quarter", limit=30))["results"]
            return sum(1 + len(hit.get("folded", [])) for hit in hits) >= 21  # copies fold

    await eventually(indexed, timeout=60)
    async with as_(server, mallory, "legacy") as client:
        after = await search(client, "billing rotate quarter")
    assert after == before


UPDATED, LISTED = "notifications/resources/updated", "notifications/resources/list_changed"


async def listen(
    server: HttpServer,
    mode: str,
    token: str,
    uris: list[str],
    heard: list[tuple[str, str]],
    ready: anyio.Event,
) -> None:
    """Hear `uris` (and list changes) as `token`'s principal until cancelled: a 2025-11-25 session's
    subscriptions, or a 2026-07-28 listen stream; each notification as (method, uri)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.subscriptions import ResourceUpdated

    async def on_message(message: Any) -> None:
        root_message = getattr(message, "root", message)
        method = getattr(root_message, "method", None)
        if isinstance(method, str):
            uri = getattr(getattr(root_message, "params", None), "uri", "")
            heard.append((method, str(uri or "")))

    async with (
        httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
        Client(
            streamable_http_client(server.url, http_client=http),
            mode=mode,
            cache=None,
            message_handler=on_message if mode == "legacy" else None,
        ) as client,
    ):
        if mode == "legacy":
            for uri in uris:
                await client.subscribe_resource(uri)
            ready.set()
            await anyio.sleep_forever()
        async with client.listen(resources_list_changed=True, resource_subscriptions=uris) as events:
            ready.set()
            async for event in events:
                heard.append((UPDATED, event.uri) if isinstance(event, ResourceUpdated) else (LISTED, ""))


@pytest.mark.parametrize("mode", ERAS)
async def test_a_change_in_a_restricted_folder_is_heard_only_by_its_readers(served: Any, mode: str) -> None:
    """Each subscribes to a restricted page, a public one, and a restricted path that does not
    exist yet (an attacker's way to learn when it is created); then pages change, one is created
    in the folder, and the public one moves into it."""
    root, server, alice, mallory = served
    heard: dict[str, list[tuple[str, str]]] = {"alice": [], "mallory": []}
    updated, listed = UPDATED, LISTED
    uris = ["kb://doc/security/keys.md", "kb://doc/guide.md", "kb://doc/security/guide.md"]

    def count(name: str, method: str, uri: str = "") -> int:
        return sum(1 for m, u in heard[name] if m == method and (not uri or u == uri))

    async with anyio.create_task_group() as group:
        ready = [anyio.Event(), anyio.Event()]
        group.start_soon(listen, server, mode, alice, uris, heard["alice"], ready[0])
        group.start_soon(listen, server, mode, mallory, uris, heard["mallory"], ready[1])
        for event in ready:
            await event.wait()
        await anyio.sleep(1)  # the watcher is registered: a change now is noticed
        (root / "docs" / "security" / "keys.md").write_text("# Key rotation\n\nnew text\n", encoding="utf-8")
        (root / "docs" / "security" / "new.md").write_text("# New\n\nrestricted\n", encoding="utf-8")
        await eventually(lambda: true(lambda: count("alice", updated, "kb://doc/security/keys.md")))
        (root / "docs" / "guide.md").write_text("# Deployment guide\n\nchanged\n", encoding="utf-8")
        await eventually(lambda: true(lambda: count("mallory", updated, "kb://doc/guide.md")))
        before = count("alice", listed)
        (root / "docs" / "guide.md").rename(root / "docs" / "security" / "guide.md")
        await eventually(lambda: true(lambda: count("mallory", updated, "kb://doc/guide.md") >= 2))
        await eventually(lambda: true(lambda: count("alice", listed) > before))
        # a barrier: whatever the folder's change sent mallory was queued before this one
        heard_lists = count("mallory", listed)
        (root / "docs" / "barrier.md").write_text("# Barrier\n\npublic\n", encoding="utf-8")
        await eventually(lambda: true(lambda: count("mallory", listed) > heard_lists))
        group.cancel_scope.cancel()
    assert [u for m, u in heard["mallory"] if "security" in u] == []
    assert count("alice", updated, "kb://doc/security/keys.md") >= 1


@pytest.mark.parametrize("mode", ERAS)
async def test_a_grant_revoked_while_a_stream_is_open_stops_what_it_hears(served: Any, mode: str) -> None:
    """Alice's grant is revoked while her stream is open (a narrowing: it applies at once): bob, still
    granted, hears the folder's next change, alice does not, and a public change she hears after it
    proves nothing was on its way."""
    root, server, alice, mallory = served
    (bob,) = personal_tokens(root, "bob")
    heard: dict[str, list[tuple[str, str]]] = {"alice": [], "bob": []}
    keys, guide = "kb://doc/security/keys.md", "kb://doc/guide.md"
    async with anyio.create_task_group() as group:
        ready = anyio.Event()
        group.start_soon(listen, server, mode, alice, [keys, guide], heard["alice"], ready)
        await ready.wait()
        await anyio.sleep(1)  # the watcher is registered: a change now is noticed
        (root / "docs" / "security" / "keys.md").write_text("# Key rotation\n\nfirst\n", encoding="utf-8")
        await eventually(lambda: true(lambda: (UPDATED, keys) in heard["alice"]))
        (root / "kbkit.toml").write_text(
            CONFIG.replace('tokens = ["alice", "bob"]', 'tokens = ["bob"]'), encoding="utf-8"
        )
        async with as_(server, alice, "legacy") as client:

            async def revoked() -> bool:
                return not (await search(client, SECRET))["results"]

            await eventually(revoked, timeout=60)
        before = len(heard["alice"])
        ready = anyio.Event()
        group.start_soon(listen, server, mode, bob, [keys], heard["bob"], ready)
        await ready.wait()
        (root / "docs" / "security" / "keys.md").write_text("# Key rotation\n\nsecond\n", encoding="utf-8")
        await eventually(lambda: true(lambda: (UPDATED, keys) in heard["bob"]))
        (root / "docs" / "guide.md").write_text("# Deployment guide\n\nchanged\n", encoding="utf-8")
        await eventually(lambda: true(lambda: (UPDATED, guide) in heard["alice"][before:]))
        group.cancel_scope.cancel()
    assert [uri for _, uri in heard["alice"][before:] if "security" in uri] == []


async def test_a_grant_revoked_while_serving_applies_to_the_next_request(served: Any) -> None:
    root, server, alice, mallory = served
    async with as_(server, alice, "legacy") as client:
        assert (await search(client, SECRET))["results"]
        (root / "kbkit.toml").write_text(
            CONFIG.replace('tokens = ["alice", "bob"]', "tokens = []"), encoding="utf-8"
        )

        async def revoked() -> bool:
            return not (await search(client, SECRET))["results"]

        await eventually(revoked, timeout=60)
        assert await read_error(client, "security/keys.md") == "'security' does not exist under the kb folder"


async def test_a_restricted_folder_moved_while_serving_closes_everything_until_a_restart(served: Any) -> None:
    root, server, alice, mallory = served
    (root / "kbkit.toml").write_text(
        CONFIG.replace('"security/"', '"security/", "runbooks/"'), encoding="utf-8"
    )
    async with as_(server, mallory, "legacy") as client:

        async def closed() -> bool:
            return "restarts" in (await search(client, "failover")).get("note", "")

        await eventually(closed, timeout=60)
        assert "restarts" in await read_error(client, "runbooks/failover.md")


async def test_cursors_of_another_principal_open_nothing(served: Any) -> None:
    root, server, alice, mallory = served
    for number in range(120):
        (root / "docs" / "security" / f"page-{number:03}.md").write_text(f"# Page {number}\n\n{SECRET}\n")
    async with as_(server, alice, "legacy") as client:

        async def indexed() -> bool:
            return len(await everything(client)) >= 120

        await eventually(indexed, timeout=90)
        page = await client.list_resources()
        cursor = page.next_cursor
        assert cursor is not None and any("security" in str(r.uri) for r in page.resources)
    async with as_(server, mallory, "legacy") as client:
        following = await client.list_resources(cursor=cursor)
        assert not any("security" in str(r.uri) for r in following.resources)


async def test_a_token_narrower_than_its_owner_reads_only_its_paths(tmp_path: Path) -> None:
    from kbkit.server.auth.tokens import create

    root = make_project(tmp_path / "project", FILES, CONFIG)
    tokens = root / ".kbkit" / "tokens.json"
    ci = create(tokens, "alice", "read", None, paths=("runbooks/",))  # alice's grants, runbooks only
    server = HttpServer(root, token=None).wait_ready()
    try:
        async with as_(server, ci, "auto") as client:
            found = await search(client, "billing database replica")
            assert [hit["path"] for hit in found["results"]] == ["runbooks/failover.md"]
            assert (await search(client, SECRET))["results"] == []
            outside = await search(client, "billing", path_prefix="guide")
            assert outside["results"] == [] and "outside what this token reads" in outside["note"]
            assert "outside what this token reads" in await read_error(client, "guide.md")
            assert await everything(client) == ["kb://doc/runbooks/failover.md"]
            assert (await client.list_resources()).cache_scope == "private"
    finally:
        assert server.stop() == STOPPED


async def test_over_stdio_the_member_reads_their_own_checkout_whole(tmp_path: Path) -> None:
    from tests.helpers.serve import serve_in_memory

    root = make_project(tmp_path / "project", FILES, CONFIG)
    async with serve_in_memory(root) as client:
        found = await search(client, SECRET)
        assert {hit["path"] for hit in found["results"]} == {"security/incident-2026.md", "security/keys.md"}
        assert "kb://doc/security/keys.md" in await everything(client)
