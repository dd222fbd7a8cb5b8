"""Notifications stay bounded per client: a client that never reads its stream cannot silence the
others, and subscriptions per session are capped."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.server.factory import create_server
from kbkit.server.notify import MAX_SUBSCRIBED_BYTES, MAX_SUBSCRIPTIONS
from tests.helpers.http import HttpServer, auth_headers, legacy_session, open_event_stream
from tests.helpers.project import make_project

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed"),  # the 2025-11-25 era is tested
]

DEEP = "/".join(f"{i:02}" + "d" * 240 for i in range(15))
"""A 3.6 KB folder path: every `updated` notification about a document under it is that big."""


class StalledListener:
    """A 2025-11-25 session whose notification stream is opened and then never read."""

    def __init__(self, server: HttpServer) -> None:
        self.url = server.url
        self.headers = legacy_session(server.url)
        self.sock = open_event_stream(server.port, self.headers, receive_buffer=4096)

    def post(self, message: dict) -> httpx2.Response:
        return httpx2.post(self.url, headers=self.headers, json=message, timeout=30)


@pytest.mark.processes
async def test_a_client_that_never_reads_its_notifications_does_not_silence_the_others(
    tmp_path: Path,
) -> None:
    docs = {f"{DEEP}/doc{i:02}.md": "# Doc\n\nversion 0\n" for i in range(60)}
    root = make_project(tmp_path / "p", docs)
    server = HttpServer(root).wait_ready(timeout=60)
    heard: list[int] = []
    changed = anyio.Event()

    async def handler(message: object) -> None:
        nonlocal changed
        if isinstance(getattr(message, "root", message), types.ResourceListChangedNotification):
            heard.append(1)
            changed.set()
            changed = anyio.Event()

    stalled = None
    try:
        stalled = StalledListener(server)
        for i, path in enumerate(docs):
            uri = "kb://doc/" + path
            reply = stalled.post(
                {"jsonrpc": "2.0", "id": i + 1, "method": "resources/subscribe", "params": {"uri": uri}}
            )
            assert reply.status_code == 200, reply.text
        async with (
            httpx2.AsyncClient(headers=auth_headers(), timeout=30) as http,
            Client(
                streamable_http_client(server.url, http_client=http),
                mode="legacy",
                cache=None,
                message_handler=handler,
            ) as reader,
        ):
            await reader.list_tools()
            for version in range(1, 40):
                before = len(heard)
                for path in docs:  # a new size: the listing changes, and every subscriber hears `updated`
                    (root / "docs" / path).write_text(f"# Doc\n\nversion {version}{'!' * version}\n")
                with anyio.fail_after(60):
                    while len(heard) == before:
                        await changed.wait()
                if "fell 256 notifications behind" in server.stderr():
                    break
            else:
                raise AssertionError("the stalled client was never dropped: " + server.stderr()[-2000:])
            before = len(heard)
            (root / "docs" / "new.md").write_text("# New\n")
            with anyio.fail_after(60):  # still notified after the stalled one was dropped
                while len(heard) == before:
                    await changed.wait()
    finally:
        if stalled is not None:
            with contextlib.suppress(OSError):
                stalled.sock.close()
        server.stop()


@pytest.fixture
async def legacy_client(project: Path):
    kb = KnowledgeBase.open(load_settings(project))
    kb.scan()
    try:
        async with Client(create_server(kb), mode="legacy") as client:
            yield client
    finally:
        kb.close()


async def test_subscriptions_per_session_are_capped_with_a_clear_error(legacy_client: Client) -> None:
    for i in range(MAX_SUBSCRIPTIONS):
        await legacy_client.session.subscribe_resource(f"kb://doc/n{i}.md")
    await legacy_client.session.subscribe_resource("kb://doc/n0.md")  # again: not a new one
    with pytest.raises(MCPError, match=f"already subscribes to {MAX_SUBSCRIPTIONS} resources"):
        await legacy_client.session.subscribe_resource("kb://doc/one-too-many.md")
    await legacy_client.session.unsubscribe_resource("kb://doc/n1.md")
    await legacy_client.session.subscribe_resource("kb://doc/one-too-many.md")  # room again


async def test_the_subscribed_uris_of_a_session_are_capped_in_size(legacy_client: Client) -> None:
    long = "kb://doc/" + "x" * (MAX_SUBSCRIBED_BYTES // 4)
    for i in range(3):
        await legacy_client.session.subscribe_resource(f"{long}{i}")
    with pytest.raises(MCPError, match="would exceed"):
        await legacy_client.session.subscribe_resource(f"{long}3")


async def test_a_listen_stream_is_capped_at_the_same_number_of_uris(project: Path) -> None:
    kb = KnowledgeBase.open(load_settings(project))
    kb.scan()
    try:
        async with Client(create_server(kb), mode="auto") as client:
            too_many = [f"kb://doc/n{i}.md" for i in range(MAX_SUBSCRIPTIONS + 1)]
            with pytest.raises(MCPError, match=f"at most {MAX_SUBSCRIPTIONS} resources"):
                async with client.listen(resource_subscriptions=too_many):
                    pass
    finally:
        kb.close()
