"""A live index: edits reach subscribed agents, many servers share one index, a broken index heals."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, document_text, kbkit_command, serve_in_memory, serve_stdio
from tests.helpers.wait import eventually, wait_until
from tests.peers.launch import forked_kbkit

pytestmark = pytest.mark.anyio


class Inbox:
    """Notifications a client received, for waiting on one with a deadline."""

    def __init__(self) -> None:
        self.seen: list[object] = []
        self._changed = anyio.Event()

    async def handler(self, message: object) -> None:
        inner = getattr(message, "root", message)
        if isinstance(inner, types.ResourceUpdatedNotification | types.ResourceListChangedNotification):
            self.seen.append(inner)
            self._changed.set()
            self._changed = anyio.Event()

    async def wait_for(self, kind: type, uri: str | None = None, timeout: float = 60.0) -> float:
        started = time.monotonic()
        with anyio.fail_after(timeout):
            while not any(isinstance(n, kind) and (uri is None or n.params.uri == uri) for n in self.seen):
                await self._changed.wait()
        return time.monotonic() - started


async def uris(client) -> list[str]:
    return [r.uri for r in (await client.list_resources()).resources]


async def test_both_eras_advertise_subscriptions_and_list_changes(project: Path) -> None:
    async with serve_in_memory(project, "legacy") as client:
        resources = client.server_capabilities.resources
        assert resources.subscribe is True and resources.list_changed is True
    async with serve_in_memory(project, "auto") as client:
        assert client.server_capabilities.resources.list_changed is True


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")  # the 2025-11-25 API, on purpose
async def test_a_subscribed_legacy_client_hears_an_edit(project: Path) -> None:
    """How soon is bench/live.py's to measure; here, that the notification comes at all."""
    inbox = Inbox()
    async with serve_in_memory(project, "legacy", message_handler=inbox.handler) as client:
        await uris(client)  # the start-up scan is over: what follows is the edit's own notification
        inbox.seen.clear()
        await client.session.subscribe_resource("kb://doc/notes.txt")
        (project / "docs" / "notes.txt").write_text("Rewritten notes about checkpoints.\n")
        await inbox.wait_for(types.ResourceUpdatedNotification, "kb://doc/notes.txt")
        text = (await client.read_resource("kb://doc/notes.txt")).contents[0].text
        assert "checkpoints" in text


async def test_a_modern_listener_hears_an_edit(project: Path) -> None:
    async with serve_in_memory(project, "auto") as client:
        await uris(client)  # the start-up scan is over: what follows is the edit's own notification
        async with client.listen(resource_subscriptions=["kb://doc/notes.txt"]) as subscription:
            (project / "docs" / "notes.txt").write_text("Rewritten notes about checkpoints.\n")
            with anyio.fail_after(60):
                async for event in subscription:
                    if getattr(event, "uri", None) == "kb://doc/notes.txt":
                        break
            text = (await client.read_resource("kb://doc/notes.txt")).contents[0].text
            assert "checkpoints" in text


@pytest.mark.parametrize("mode", ERAS)
async def test_create_delete_rename_and_ignore_each_change_the_listing(project: Path, mode: str) -> None:
    inbox = Inbox()
    docs = project / "docs"

    async def expect_list_change(action) -> None:
        inbox.seen.clear()
        action()
        await inbox.wait_for(types.ResourceListChangedNotification)

    if mode == "legacy":
        context = serve_in_memory(project, mode, message_handler=inbox.handler)
    else:
        context = serve_in_memory(project, mode)
    async with context as client:
        await uris(client)  # waits for the start-up scan, whose own list change comes before the reply
        if mode == "legacy":
            await expect_list_change(lambda: (docs / "new.md").write_text("# New page\n\nfresh words\n"))
            assert "kb://doc/new.md" in await uris(client)
            await expect_list_change(lambda: (docs / "new.md").rename(docs / "renamed.md"))
            listed = await uris(client)
            assert "kb://doc/renamed.md" in listed and "kb://doc/new.md" not in listed
            await expect_list_change(lambda: (docs / "renamed.md").unlink())
            assert "kb://doc/renamed.md" not in await uris(client)
            await expect_list_change(lambda: (docs / ".kbignore").write_text("runbooks/\n"))
        else:
            async with client.listen(resources_list_changed=True) as subscription:
                (docs / ".kbignore").write_text("runbooks/\n")
                with anyio.fail_after(60):
                    async for _event in subscription:
                        break
        assert "kb://doc/runbooks/deploy.rst" not in await uris(client)
        hits = (await client.call_tool("search", {"query": "blue green"})).structured_content["results"]
        assert hits == []
        still = await client.call_tool("get_document", {"path": "runbooks/deploy.rst"})
        assert not still.is_error and "blue green" in document_text(still)


async def test_narrowing_parsers_in_kbkit_toml_is_applied_while_serving(project: Path) -> None:
    inbox = Inbox()
    async with serve_in_memory(project, "legacy", message_handler=inbox.handler) as client:
        assert "kb://doc/notes.txt" in await uris(client)
        inbox.seen.clear()  # the start-up scan's own list change
        (project / "kbkit.toml").write_text('[kb]\npath = "docs"\n[parsers]\nenabled = ["md", "rst"]\n')
        await inbox.wait_for(types.ResourceListChangedNotification)
        assert "kb://doc/notes.txt" not in await uris(client)


@pytest.mark.processes
async def test_with_no_watch_edits_wait_for_the_next_index(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\nwatch = false\n')
    watched = make_project(tmp_path / "watched")  # the control: the same edit, with a watcher
    async with serve_stdio(root) as client, serve_in_memory(watched) as control:
        await uris(client)  # waits for the start-up scan: late.md comes after it
        (root / "docs" / "late.md").write_text("# Late\n")
        (watched / "docs" / "late.md").write_text("# Late\n")

        async def seen_by_the_watcher() -> bool:
            return "kb://doc/late.md" in await uris(control)

        await eventually(seen_by_the_watcher, what="the control server's watcher to pick up late.md")
        assert "kb://doc/late.md" not in await uris(client)  # a watcher would have picked it up by now
        subprocess.run([*forked_kbkit(), "index", "--root", str(root)], check=True, capture_output=True)
        # another process indexed: this server notices the commit and serves it

        async def served() -> bool:
            return "kb://doc/late.md" in await uris(client)

        await eventually(served, what="the other process's index to be served")
    assert "not watching" in (root / "serve-stderr.log").read_text()


@pytest.mark.processes
async def test_four_servers_share_one_index_while_a_fifth_process_edits_200_files(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p", {f"topic/page-{i:03}.md": f"# Page {i}\n\nversion zero\n" for i in range(200)}
    )
    errors: list[str] = []
    done = anyio.Event()
    searches = [0] * 4
    """How many searches each agent has finished."""

    async def agent(n: int, seen: dict[int, set[str]]) -> None:
        async with serve_stdio(root, stderr_path=tmp_path / f"serve-{n}.log") as client:
            while not done.is_set():
                result = await client.call_tool("search", {"query": "version page", "limit": 5})
                if result.is_error:
                    errors.append(result.content[0].text)
                searches[n] += 1
                await anyio.sleep(0.05)  # a pace, not a wait for something
            with anyio.fail_after(60):  # converge: every server sees every edit
                while True:
                    hits = await client.call_tool(
                        "search", {"query": "edited", "limit": 100, "max_tokens": 100000}
                    )
                    seen[n] = {hit["path"] for hit in hits.structured_content["results"]}
                    if len(seen[n]) == 100:
                        break
                    await anyio.sleep(0.3)

    seen: dict[int, set[str]] = {}
    async with anyio.create_task_group() as group:
        for n in range(4):
            group.start_soon(agent, n, seen)
        await eventually(all_searching(searches), what="all four servers up and searching")
        await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys_python(), "-c", _EDITOR.format(root=str(root / "docs" / "topic"))],
                check=True,
                timeout=120,
            )
        )
        await eventually(all_searching(searches), what="every server searching after the edits")
        done.set()
    assert errors == []
    assert len({frozenset(paths) for paths in seen.values()}) == 1 and len(seen[0]) == 100
    for n in range(4):
        assert "database is locked" not in (tmp_path / f"serve-{n}.log").read_text()


def all_searching(searches: list[int]):  # noqa: ANN201 - an async predicate for eventually()
    """A predicate: every agent has finished two more searches since this was made."""
    start = list(searches)

    async def check() -> bool:
        return all(now >= then + 2 for now, then in zip(searches, start, strict=True))

    return check


_EDITOR = """
import pathlib, time
root = pathlib.Path({root!r})
for i in range(200):
    text = f"# Page {{i}}\\n\\nversion one, edited\\n" if i % 2 == 0 else f"# Page {{i}}\\n\\nversion one\\n"
    (root / f"page-{{i:03}}.md").write_text(text)
    time.sleep(0.005)
"""


def sys_python() -> str:
    import sys

    return sys.executable


@pytest.mark.processes
def test_an_indexer_killed_mid_batch_leaves_a_consistent_index_and_the_next_start_says_so(
    tmp_path: Path,
) -> None:
    files = {f"bulk/doc-{i:05}.md": f"# Doc {i}\n\n" + "filler words " * 200 + "\n" for i in range(6000)}
    root = make_project(tmp_path / "p", files)
    index = subprocess.Popen(  # the console script: SIGKILL must reach the indexer itself, at once
        [*kbkit_command(), "index", "--root", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    db = root / ".kbkit" / "index.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for a first batch to be committed, then kill mid-run
        try:
            count = sqlite3.connect(db).execute("SELECT count(*) FROM documents").fetchone()[0]
        except sqlite3.Error:
            count = 0
        if count >= 500:
            break
        time.sleep(0.02)
    os.kill(index.pid, signal.SIGKILL)
    index.wait(timeout=10)
    partial = sqlite3.connect(db).execute("SELECT count(*) FROM documents").fetchone()[0]
    assert 0 < partial < 6000, "the indexer finished before it could be killed; make the corpus larger"
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    result = subprocess.run(
        [*forked_kbkit(), "index", "--root", str(root)], capture_output=True, text=True, timeout=120
    )
    assert "index: 6000 documents" in result.stdout
    assert "an earlier indexing run (pid" in result.stdout and "was cut off" in result.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM documents_fts").fetchone()[0] == 6000
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.processes
async def test_a_corrupt_index_is_rebuilt_at_start_and_served(project: Path) -> None:
    subprocess.run([*forked_kbkit(), "index", "--root", str(project)], check=True, capture_output=True)
    db = project / ".kbkit" / "index.db"
    db.write_bytes(os.urandom(8192))
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    async with serve_stdio(project) as client:
        hits = (await client.call_tool("search", {"query": "guard"})).structured_content["results"]
        assert hits[0]["path"] == "adr/0001-guards.md"
    assert "index repaired: the index was unreadable" in (project / "serve-stderr.log").read_text()


async def test_a_watcher_that_cannot_run_is_reported_and_the_server_keeps_serving(
    project: Path, monkeypatch
) -> None:
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase
    from kbkit.server.live import LiveIndex
    from kbkit.server.notify import Notifier

    kb = KnowledgeBase.open(load_settings(project))
    kb.scan()
    lines: list[str] = []
    live = LiveIndex(kb, Notifier(), watch=True, report=lines.append)

    async def broken_watch() -> None:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(live, "_watch", broken_watch)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(live.run)

            async def reported() -> bool:
                return any(line.startswith("index: watching stopped (OSError") for line in lines)

            # the monitor keeps running (a crash would end the task group); only the watcher stopped
            await eventually(reported, what=f"the watcher's failure to be reported: {lines}")
            group.cancel_scope.cancel()
    finally:
        kb.close()


async def test_an_index_that_breaks_while_serving_pauses_notifications_without_a_crash(
    project: Path, monkeypatch
):
    from kbkit.config import load_settings
    from kbkit.errors import IndexUnavailable
    from kbkit.kb.base import KnowledgeBase
    from kbkit.server.live import LiveIndex
    from kbkit.server.notify import Notifier

    kb = KnowledgeBase.open(load_settings(project))
    kb.scan()
    lines: list[str] = []
    live = LiveIndex(kb, Notifier(), watch=False, report=lines.append)
    calls = {"n": 0}
    real = kb.store.data_version

    def flaky() -> int:
        calls["n"] += 1
        if calls["n"] > 1:  # the first call (at start) works, then the file is gone
            raise IndexUnavailable("cannot open the index: disk I/O error")
        return real()

    monkeypatch.setattr(kb.store, "data_version", flaky)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(live.run)

            async def polled_on() -> bool:
                return calls["n"] >= 3  # the monitor kept polling after the first failure

            await eventually(polled_on, what="the monitor to poll again after a failure")
            group.cancel_scope.cancel()
        paused = [line for line in lines if "notifications paused" in line]
        assert paused == [  # said once, however often the monitor met it
            "index: change notifications paused (cannot open the index: disk I/O error); "
            "`kbkit index` repairs the index"
        ]
    finally:
        kb.close()


def test_a_server_starting_while_another_creates_the_index_waits_instead_of_rebuilding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several agents start their servers at once on a new project: the second must not take the
    first one's half-created file for a broken index and delete it under it."""
    import fcntl
    import threading

    from kbkit.kb import store
    from kbkit.kb.store import Store

    refused = threading.Event()  # the second server has asked for the writer lock and been told to wait

    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        try:
            real_flock(fd, operation)
        except BlockingIOError:
            if threading.current_thread() is second:
                refused.set()
            raise

    monkeypatch.setattr(store.fcntl, "flock", flock)  # the fcntl module itself: restored after the test

    db = tmp_path / ".kbkit" / "index.db"
    db.parent.mkdir()
    creator = Store(db)
    opened: list[Store] = []
    with creator.writer():
        half = sqlite3.connect(db)  # what the first server has written so far: one table, no version
        half.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY)")
        half.commit()
        half.close()
        second = threading.Thread(target=lambda: opened.append(Store.open(db)))
        second.start()
        wait_until(refused.is_set, what="the second server to ask for the writer lock")
        assert second.is_alive()  # waiting for the writer lock, not judging the half-made file
        db.unlink()
        creator._create()  # the first server finishes its index
    second.join(timeout=30)
    assert opened and opened[0].repaired is None
    opened[0].close()


# --- indexing in the background (docs/adr/0012) -----------------------------------------------

PAGES = {f"topic/page-{i:03}.md": f"# Page {i}\n\nshared words about widgets\n" for i in range(90)}


class HeldScan:
    """Makes `kb.scan` pause after committed batches until the test lets it go on. It waits in
    the indexer's own progress hook (called after each commit), so nothing depends on timing."""

    def __init__(self, kb, pause_at: tuple[int, ...]) -> None:  # noqa: ANN001
        self.pause_at = set(pause_at)
        self.paused = threading.Event()
        self.go = threading.Event()
        self.finish = threading.Event()
        real = kb.scan

        def scan(progress=None, **options):  # noqa: ANN001, ANN202
            def hold(done: int, total: int) -> None:
                if progress is not None:
                    progress(done, total)  # the server's own hook: publish this batch now
                if done in self.pause_at and not self.finish.is_set():
                    self.go.clear()
                    self.paused.set()
                    self.go.wait(60)

            return real(hold, **options)

        kb.scan = scan

    async def wait_paused(self) -> None:
        assert await anyio.to_thread.run_sync(self.paused.wait, 30), "the scan never reached its pause"
        self.paused.clear()

    def step(self) -> None:
        self.go.set()

    def release(self) -> None:
        self.finish.set()
        self.go.set()


class ListChanges:
    """`resources/list_changed` as either era receives it: counted, and awaited with a deadline."""

    def __init__(self) -> None:
        self.count = 0
        self._event = anyio.Event()

    def saw(self) -> None:
        self.count += 1
        self._event.set()
        self._event = anyio.Event()

    async def handler(self, message: object) -> None:
        if isinstance(getattr(message, "root", message), types.ResourceListChangedNotification):
            self.saw()

    async def after(self, count: int, timeout: float = 30.0) -> None:
        with anyio.fail_after(timeout):
            while self.count <= count:
                await self._event.wait()


class Lines:
    """The server's status lines, with an event for the one that says indexing finished."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.finished = anyio.Event()

    def __call__(self, line: str) -> None:
        self.seen.append(line)
        if line.startswith("indexing finished:"):
            self.finished.set()


def open_kb(root: Path):  # noqa: ANN201
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase

    return KnowledgeBase.open(load_settings(root))


async def search(client, query: str = "widgets") -> dict:  # noqa: ANN001
    result = await client.call_tool("search", {"query": query, "limit": 100, "max_tokens": 100000})
    assert not result.is_error, result.content
    return result.structured_content


async def all_uris(client) -> list[str]:  # noqa: ANN001
    found, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        found += [r.uri for r in page.resources]
        cursor = page.next_cursor
        if not cursor:
            return found


@pytest.mark.parametrize("mode", ERAS)
async def test_while_indexing_search_returns_what_is_indexed_so_far_and_the_listing_grows_with_list_changed(
    tmp_path: Path, monkeypatch, mode: str
) -> None:
    from kbkit.kb import indexer
    from kbkit.server.factory import create_server

    monkeypatch.setattr(indexer, "BATCH_SIZE", 20)
    kb = open_kb(make_project(tmp_path / "p", PAGES))
    held = HeldScan(kb, pause_at=(20, 40))
    changes, lines = ListChanges(), Lines()
    server = create_server(kb, watch=False, report=lines)
    try:
        async with (
            Client(server, mode=mode, message_handler=changes.handler) as client,
            anyio.create_task_group() as group,
        ):
            if mode != "legacy":  # 2026-07-28 clients hear list changes on a listen stream

                async def listen() -> None:
                    async with client.listen(resources_list_changed=True) as events:
                        async for _event in events:
                            changes.saw()

                group.start_soon(listen)
            await held.wait_paused()
            data = await search(client)
            assert len(data["results"]) == 20
            assert data["note"] == "indexing: 20 of 90 documents; results cover only what is indexed so far"
            assert len(await all_uris(client)) == 20

            seen = changes.count
            held.step()  # on to the next batch: clients hear of it while indexing is still running
            await held.wait_paused()
            await changes.after(seen)
            assert len(await all_uris(client)) == 40
            assert (await search(client))["note"].startswith("indexing: 40 of 90 documents")
            assert not lines.finished.is_set()

            held.release()
            with anyio.fail_after(30):
                await lines.finished.wait()
            data = await search(client)
            assert len(data["results"]) == 90 and "note" not in data
            assert len(await all_uris(client)) == 90
            group.cancel_scope.cancel()
    finally:
        held.release()
        kb.close()
    assert [line for line in lines.seen if line.startswith("indexing finished:")] == [
        next(line for line in lines.seen if line.startswith("indexing finished: 90 documents in "))
    ]


async def test_a_search_with_no_match_yet_says_indexing_is_not_finished_instead_of_no_match(
    tmp_path: Path, monkeypatch
) -> None:
    from kbkit.kb import indexer
    from kbkit.server.factory import create_server

    monkeypatch.setattr(indexer, "BATCH_SIZE", 20)
    kb = open_kb(make_project(tmp_path / "p", PAGES))
    held = HeldScan(kb, pause_at=(20,))
    try:
        async with Client(create_server(kb, watch=False), mode="legacy") as client:
            await held.wait_paused()
            data = await search(client, "zeppelin")
            assert data["results"] == []
            assert data["note"] == (
                "indexing: 20 of 90 documents; nothing indexed so far matches: "
                "search again when indexing has finished"
            )
            held.release()
    finally:
        held.release()
        kb.close()


async def test_a_small_kb_answers_its_first_search_in_full(tmp_path: Path) -> None:
    from kbkit.server.factory import create_server

    kb = open_kb(make_project(tmp_path / "p", PAGES))
    try:
        async with Client(create_server(kb, watch=False), mode="legacy") as client:
            data = await search(client)  # sent at once: waits for the start-up scan, briefly
            assert len(data["results"]) == 90 and "note" not in data
    finally:
        kb.close()


async def test_a_second_server_serves_what_another_is_indexing_and_reports_its_progress(
    tmp_path: Path, monkeypatch
) -> None:
    """Two servers on one project (two stores: their own connections and lock handles, as two
    processes have): one builds the index, the other waits for the writer lock, serves what is
    committed meanwhile and tells its clients how far the other has got."""
    from kbkit.kb import indexer
    from kbkit.server.factory import create_server

    monkeypatch.setattr(indexer, "BATCH_SIZE", 20)
    root = make_project(tmp_path / "p", PAGES)
    builder, other = open_kb(root), open_kb(root)
    held = HeldScan(builder, pause_at=(20,))
    builder_lines, other_lines = Lines(), Lines()
    try:
        async with (
            Client(create_server(builder, watch=False, report=builder_lines), mode="legacy"),
        ):
            await held.wait_paused()
            async with Client(create_server(other, watch=False, report=other_lines), mode="legacy") as client:
                data = await search(client)
                assert len(data["results"]) == 20
                assert data["note"].startswith("indexing: 20 of 90 documents")
                held.release()
                with anyio.fail_after(30):
                    await other_lines.finished.wait()
                assert len((await search(client))["results"]) == 90
            with anyio.fail_after(30):
                await builder_lines.finished.wait()
    finally:
        held.release()
        builder.close()
        other.close()
    assert "(90 added, 0 changed, 0 removed)" in next(
        line for line in builder_lines.seen if line.startswith("indexing finished:")
    )
    assert "(0 added, 0 changed, 0 removed)" in next(  # only one of them built the index
        line for line in other_lines.seen if line.startswith("indexing finished:")
    )


async def test_a_server_stopped_mid_build_keeps_what_it_indexed_and_the_next_start_goes_on(
    tmp_path: Path, monkeypatch
) -> None:
    from kbkit.kb import indexer
    from kbkit.server.factory import create_server

    monkeypatch.setattr(indexer, "BATCH_SIZE", 20)
    root = make_project(tmp_path / "p", PAGES)
    kb = open_kb(root)
    paused = threading.Event()
    real = kb.scan

    def scan_until_told_to_stop(progress=None, *, stop: threading.Event, **options):  # noqa: ANN001, ANN202
        def hold(done: int, total: int) -> None:
            progress(done, total)
            if done == 20:
                paused.set()
                stop.wait(60)  # go on only once the server says stop: it must then end at the next document

        return real(hold, stop=stop, **options)

    kb.scan = scan_until_told_to_stop
    lines = Lines()
    try:
        async with Client(create_server(kb, watch=False, report=lines), mode="legacy"):
            assert await anyio.to_thread.run_sync(paused.wait, 30)
            # leaving the client shuts the server down while the scan is held after its first batch
    finally:
        kb.close()
    assert any(line.startswith("indexing stopped (shutting down) with ") for line in lines.seen), lines.seen
    assert not lines.finished.is_set()
    kb = open_kb(root)
    try:
        indexed = kb.store.reader().execute("SELECT count(*) FROM documents").fetchone()[0]
        assert 20 <= indexed < 90
        report = kb.scan()
        assert report.interrupted is None  # a stop is not a crash: nothing to repair
        assert report.added == 90 - indexed and report.documents == 90
    finally:
        kb.close()


@pytest.mark.processes
async def test_kbkit_serve_answers_initialize_before_indexing_a_fresh_large_kb_finishes(
    tmp_path: Path,
) -> None:
    files = {f"bulk/doc-{i:05}.md": f"# Doc {i}\n\n" + "filler words " * 200 + "\n" for i in range(4000)}
    root = make_project(tmp_path / "p", files)
    log = tmp_path / "serve.log"
    async with serve_stdio(root, stderr_path=log) as client:
        # The handshake is done. The server writes its stderr lines straight to the file, so a
        # line written before the reply to initialize would be there now.
        assert client.protocol_version == "2025-11-25"
        answered = log.read_text()
        assert "transport: stdio" in answered
        assert "indexing finished" not in answered
        with anyio.fail_after(120):
            while "indexing finished" not in log.read_text():
                await client.list_tools()  # the server keeps answering while it indexes
                await anyio.sleep(0.1)
        data = await search(client, "filler")
        assert "note" not in data and len(data["results"]) == 100
    assert "[kbkit] indexing finished: 4000 documents in " in log.read_text()


async def test_a_server_answers_before_it_opens_the_index_and_says_when_the_index_cannot_be_opened(
    tmp_path: Path,
) -> None:
    """The index file is checked, created or rebuilt in the background (a large index takes a
    while to check); a project where it cannot be made still answers, and every kb request says why."""
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase
    from kbkit.server.factory import create_server

    root = make_project(tmp_path / "p", PAGES)
    (root / ".kbkit").write_text("a file where the index folder should be\n")
    kb = KnowledgeBase.open(load_settings(root), deferred=True)
    assert not (root / ".kbkit").is_dir()  # nothing touched yet
    lines = Lines()
    try:
        async with Client(create_server(kb, watch=False, report=lines), mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["search", "get_document"]
            result = await client.call_tool("search", {"query": "widgets"})
            assert result.is_error and "cannot create" in result.content[0].text
    finally:
        kb.close()
    assert any(line.startswith("index: cannot create ") for line in lines.seen), lines.seen
