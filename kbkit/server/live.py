"""A live index: build it in the background, watch the folder, reindex what changed, and tell every client.

The server answers at once; the start-up scan runs beside it (docs/adr/0012), committing in
batches, so searches and listings grow as it goes and say how far it has got. Then two tasks
run beside the server. The watcher (watchfiles: inotify, no polling) turns bursts of
file events into one incremental scan under the one-writer lock; edits of kbkit.toml are
applied at once. The monitor notices every commit to the index, by this process or by any
other `kbkit serve` on the same project (SQLite's data_version), diffs the servable documents
against its last snapshot and publishes `list_changed` and `updated`. Reading that diff rather
than trusting our own scan is what keeps several servers on one index in step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread

from kbkit.catalog.agents import CANONICAL_SKILL_DIR
from kbkit.config import CONFIG_FILE, LOCAL_CONFIG_FILE, load_settings
from kbkit.errors import KbkitError
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.indexer import ScanReport
from kbkit.kb.uris import doc_uri
from kbkit.server.notify import Notifier

DEBOUNCE_MS = 150
"""Events closer together than this are one change (an editor's save is several events)."""
CATCH_UP_SECONDS = 0.5
"""After this long the watcher is surely registered; one rescan then covers the gap before it."""
POLL_SECONDS = 0.5
"""How often the monitor asks SQLite whether anything committed: one PRAGMA, nearly free."""
BOOT_WAIT_SECONDS = 10.0
"""The longest a request that reads the index waits for the start-up scan (see `settled`); it
is reached only when a first batch takes that long (hundreds of large PDFs)."""

Snapshot = dict[str, tuple[str, str, int]]
SkillsStamp = tuple[tuple[str, int], ...]
"""(skill folder name, SKILL.md's mtime_ns) for every installed skill: a change means reload."""


class LiveIndex:
    def __init__(
        self,
        kb: KnowledgeBase,
        notifier: Notifier,
        *,
        watch: bool,
        report: Callable[[str], None],
        skills: bool = True,
    ) -> None:
        self.kb = kb
        self.part = kb.partition
        """The part of the kb this index holds (None: all of it); its changes go to its readers only."""
        self.skills = skills
        """Whether this one also tells clients of installed skills changing (one index of several does)."""
        self.notifier = notifier
        self.watch = watch
        self.report = report
        self.booting = True
        """True until the start-up scan has finished (or failed, or was stopped)."""
        self._flags: dict[str, anyio.Event] = {}
        """`ready` (requests go ahead) and `booted` (the start-up scan is over), made on first use."""
        self._halt = threading.Event()
        """Tells a scan running in its worker thread to stop at the next document."""
        self._snapshot: Snapshot = {}
        self._skills_stamp: SkillsStamp = ()
        self._poke: anyio.Event | None = None
        self._stop: anyio.Event | None = None
        self._checking: anyio.Lock | None = None
        self._scans = 0
        """Scans of this process running now (a watcher's rescan may queue behind another)."""
        self._trouble: str | None = None
        self._config_stamp = self._config_state()
        """kbkit.toml and kbkit.local.toml as the settings in use were read (an edit before the
        watcher is up is applied by the catch-up)."""

    def stop(self) -> None:
        """Let the scan and the watcher thread return now (cancelling alone would wait for them)."""
        self._halt.set()
        if self._stop is not None:
            self._stop.set()

    async def settled(self) -> None:
        """Return when a request can be answered usefully: the start-up scan has finished, or it
        has committed a first batch of a larger kb, or another process holds the writer lock (it
        builds the index; its batches are served). A kb of one batch (BATCH_SIZE files) thus
        answers in full from the first request, whatever the machine's load; a larger one answers
        after its first batch with what is indexed so far, and says so. At most BOOT_WAIT_SECONDS."""
        if self.booting:
            with anyio.move_on_after(BOOT_WAIT_SECONDS):
                await self._flag("ready").wait()

    def indexing(self) -> str | None:
        """'indexing: 4,200 of 9,753 documents' while a scan with work runs (this process's or
        another's, read from the index), or while the start-up scan looks for work; else None.
        Blocking: call it from a worker thread."""
        progress = self.kb.indexing()
        if progress is not None:
            return progress.line()
        return "indexing: looking for documents" if self.booting else None

    def _flag(self, name: str) -> anyio.Event:
        if name not in self._flags:  # made on the event loop, by whichever of run() or a request is first
            self._flags[name] = anyio.Event()
        return self._flags[name]

    async def run(self) -> None:
        self._poke = anyio.Event()
        self._stop = anyio.Event()
        self._checking = anyio.Lock()
        if not await self._open():
            return
        self._snapshot = await anyio.to_thread.run_sync(self._read_snapshot)
        self._skills_stamp = self._skills_state()
        self._version = await anyio.to_thread.run_sync(self.kb.store.data_version)
        async with anyio.create_task_group() as group:
            group.start_soon(self._monitor)
            if self.watch:  # from the start: an edit made while the start-up scan runs is not lost
                group.start_soon(self._watch_or_say_why)
            await self._boot()

    async def _open(self) -> bool:
        """Open the index off the answering path: check it, create it, or rebuild a broken one."""
        try:
            await anyio.to_thread.run_sync(self.kb.prepare)
        except KbkitError as exc:
            self.report(f"index: {exc}; searches and resources fail until that is fixed and kbkit restarted")
            self._boot_over()
            return False
        if self.kb.store.repaired:
            self.report(f"index repaired: {self.kb.store.repaired}")
        return True

    def _boot_over(self) -> None:
        self.booting = False
        self._flag("booted").set()
        self._flag("ready").set()

    async def _boot(self) -> None:
        """The start-up scan. Its notifications and lines go out before `settled()` returns, so a
        reply that waited for the scan follows them."""
        started = time.perf_counter()
        if await anyio.to_thread.run_sync(self.kb.store.writer_busy):
            self._flag("ready").set()  # another process is indexing: serve its batches, do not wait
        try:
            report = await self._scan()
        except KbkitError as exc:
            if not self._halt.is_set():
                self.report(f"index: indexing failed ({exc}); serving what is indexed; `kbkit index` retries")
        else:
            if report.interrupted:
                self.report(f"index repaired: {report.interrupted}")
            if report.stopped:
                self.report(
                    f"indexing stopped (shutting down) with {report.documents} documents; "
                    "the next start goes on from there"
                )
            else:
                await self._check()
                skipped = report.skipped_summary()
                self.report(
                    f"indexing finished: {report.documents} documents in "
                    f"{time.perf_counter() - started:.2f} s ({report.changes()})"
                    + (f"; {skipped}" if skipped else "")
                )
        finally:
            self._boot_over()

    async def _watch_or_say_why(self) -> None:
        """Watching is a convenience: when it cannot run, the server keeps serving and says so."""
        try:
            await self._watch()
        except Exception as exc:  # e.g. inotify limits, a folder removed under the watcher
            self.report(
                f"index: watching stopped ({type(exc).__name__}: {exc}); edits are picked up by "
                "`kbkit index` or the next start"
            )

    async def _watch(self) -> None:
        from watchfiles import awatch  # imported only when watching: start-up stays lean

        root = self.kb.settings.root
        state = str(self.kb.settings.state_dir)
        targets = [self.kb.settings.kb_path]
        targets += [
            p
            for p in (root / CONFIG_FILE, root / LOCAL_CONFIG_FILE, root / CANONICAL_SKILL_DIR)
            if p.exists()
        ]

        def relevant(_change: object, path: str) -> bool:
            return not path.startswith(state) and "/.git/" not in path

        async with anyio.create_task_group() as group:
            group.start_soon(self._catch_up)
            async for changes in awatch(
                *targets,
                watch_filter=relevant,
                debounce=DEBOUNCE_MS,
                step=50,
                stop_event=self._stop,
                rust_timeout=1000,
            ):
                paths = {Path(p) for _, p in changes}
                if any(p.name in (CONFIG_FILE, LOCAL_CONFIG_FILE) and p.parent == root for p in paths):
                    self._reload_settings()
                await self._rescan()

    async def _catch_up(self) -> None:
        """One rescan once the watcher is up: edits made before it was registered are not lost."""
        await anyio.sleep(CATCH_UP_SECONDS)
        if self._config_state() != self._config_stamp:
            self._reload_settings()
        await self._rescan()

    def _config_state(self) -> tuple[tuple[int, int] | None, ...]:
        root = self.kb.settings.root
        found: list[tuple[int, int] | None] = []
        for name in (CONFIG_FILE, LOCAL_CONFIG_FILE):
            try:
                info = (root / name).stat()
            except OSError:
                found.append(None)
                continue
            found.append((info.st_mtime_ns, info.st_size))
        return tuple(found)

    async def _rescan(self) -> None:
        await self._flag("booted").wait()  # the start-up scan first; this one then finds what came since
        try:
            report = await self._scan()
        except KbkitError as exc:
            if not self._halt.is_set():
                self.report(f"index: a rescan failed ({exc}); serving the last committed state")
            return
        if report.touched:
            self.report(
                f"index: {report.added} added, {report.changed} changed, {report.removed} removed "
                f"in {report.seconds * 1000:.0f} ms"
            )

    async def _batch_in(self, partial: bool) -> None:
        """A batch of this process's scan is committed. Clients hear of it now (`list_changed`: the
        listing grows as a first build goes); the exact diff waits for the scan's end. After a first
        partial batch of the start-up scan, requests stop waiting for the rest."""
        if partial:
            self._flag("ready").set()
            await self.notifier.resources_changed(self.part)

    async def _scan(self) -> ScanReport:
        """One scan in a worker thread. While it runs it holds the writer lock, so every commit is
        its own: the monitor leaves them to `_batch_in` and diffs once, when the scan is over."""

        def committed(done: int, total: int) -> None:
            anyio.from_thread.run(self._batch_in, 0 < done < total)

        self._scans += 1
        try:
            # A thread cannot be cancelled: `stop()` makes the scan end at its next document, and
            # its report (what was committed) is still taken when the server is shutting down.
            with anyio.CancelScope(shield=True):
                report = await anyio.to_thread.run_sync(
                    lambda: self.kb.scan(committed, log=self.report, stop=self._halt)
                )
        finally:
            self._scans -= 1
        if self._poke is not None:  # run() creates it
            self._poke.set()  # the diff now, not at the next poll
        return report

    def _reload_settings(self) -> None:
        self._config_stamp = self._config_state()
        try:
            settings = load_settings(self.kb.settings.root)
        except KbkitError as exc:
            self.report(f"config: {exc}; keeping the previous settings")
            return
        before = self.kb.settings.config.server.http
        self.kb.reconfigure(settings)
        stale = [
            f"[server.http] {name}"
            for name in type(before).model_fields
            if getattr(before, name) != getattr(settings.config.server.http, name)
        ]
        self.report("config: kbkit.toml changed; parsers and ignore rules applied")
        if stale:
            self.report(
                f"config: {', '.join(stale)} changed too, which a running server does not apply (who may "
                "call, limits, the bind): restart it for them to take effect; until then the old values hold"
            )

    async def _monitor(self) -> None:
        assert self._poke is not None, "start run() first"
        while True:
            with anyio.move_on_after(POLL_SECONDS):
                await self._poke.wait()
            self._poke = anyio.Event()
            await self._check()

    async def _check(self) -> None:
        """Publish what changed since the last look. An index that vanished or broke is said once
        and never stops the server."""
        assert self._checking is not None, "start run() first"
        async with self._checking:
            try:
                await self._check_once()
                self._trouble = None
            except Exception as exc:
                if str(exc) != self._trouble:
                    self._trouble = str(exc)
                    self.report(
                        f"index: change notifications paused ({exc}); `kbkit index` repairs the index"
                    )

    async def _check_once(self) -> None:
        version = await anyio.to_thread.run_sync(self.kb.store.data_version)
        skills = self._skills_state()
        if version != self._version and not self._scans:
            self._version = version
            await self._publish_index_changes()
        if self.skills and skills != self._skills_stamp:
            self._skills_stamp = skills
            await self.notifier.prompts_changed()
            await self.notifier.resources_changed()

    async def _publish_index_changes(self) -> None:
        """`list_changed` when a document came, went or changed title or size; `updated` for each
        document that was listed and changed or went. A new one is announced by `list_changed`
        alone: a first build adds thousands, and an event each would slow it by half."""
        before = self._snapshot
        after = await anyio.to_thread.run_sync(self._read_snapshot)
        self._snapshot = after
        updated = [path for path in before if before[path] != after.get(path)]
        if before.keys() != after.keys() or any(before[p][1:] != after[p][1:] for p in updated if p in after):
            await self.notifier.resources_changed(self.part)
        for path in sorted(updated):
            await self.notifier.resource_updated(doc_uri(path), self.part)

    def _read_snapshot(self) -> Snapshot:
        """Servable documents: path -> (sha256, title, size). What a client could see change."""
        return {doc.path: (doc.sha256, doc.title, doc.size) for doc in self.kb.list_servable()}

    def _skills_state(self) -> SkillsStamp:
        folder = self.kb.settings.root / CANONICAL_SKILL_DIR
        if not folder.is_dir():
            return ()
        stamp = []
        for skill in sorted(folder.iterdir()):
            target = skill / "SKILL.md"
            if target.exists():
                stamp.append((skill.name, target.stat().st_mtime_ns))
        return tuple(stamp)
