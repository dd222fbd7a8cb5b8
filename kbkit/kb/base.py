"""`KnowledgeBase`: the kb folder, its index and its active parsers, behind one object.

The server and the CLI hold one of these and nothing else from `kbkit.kb`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar, Unpack

from kbkit.config import Settings
from kbkit.config.restricted import PUBLIC
from kbkit.errors import DocumentRefused, IndexUnavailable
from kbkit.kb import documents, indexer, search, sites
from kbkit.kb.documents import Document, IndexedDocument
from kbkit.kb.formats.registry import Registry
from kbkit.kb.ignore import IgnoreRules
from kbkit.kb.store import Peek, SqliteError, Store, index_error

if TYPE_CHECKING:
    from kbkit.kb.semantic import EmbedReport, Hybrid

_P = ParamSpec("_P")
_T = TypeVar("_T")


class KnowledgeBase:
    def __init__(self, settings: Settings, store: Store, partition: str | None = None) -> None:
        self.settings = settings
        self.store = store
        self.partition = partition
        """None: the whole kb folder. Else the restricted folder this index holds alone, or PUBLIC
        (everything outside them): the shared server keeps one index each (docs/adr/0070)."""
        self.folders = settings.restricted
        """The restricted folders this index was cut by (a change needs a new index)."""
        self.registry = Registry(settings.parsers, sites.markup_of(settings.kb_path))
        self.hybrid: Hybrid | None = None
        """The `semantic` extra's state when `[search] semantic = true` and it can run (else None)."""
        self.hybrid_off: str | None = None
        """Why hybrid search is off (None when it is on)."""
        self._setup_hybrid()

    def _setup_hybrid(self) -> None:
        if not self.settings.search.semantic:
            waiting = self.settings.waiting("search.model")  # a model a commit names, not yet trusted
            self.hybrid, self.hybrid_off = None, waiting.line() if waiting else "[search] semantic = false"
            return
        from kbkit.kb import semantic  # imports nothing heavy until a model is loaded

        reason = semantic.unavailable_reason(self.settings.search.model, self.settings.root)
        if reason is not None:
            self.hybrid, self.hybrid_off = None, reason
            return
        files = semantic.locate_model(self.settings.search.model, self.settings.root)
        if self.hybrid is None or self.hybrid.files != files:
            if self.hybrid is not None:
                self.hybrid.stop()
            self.hybrid = semantic.Hybrid(self.store, files)
        self.hybrid_off = None

    @classmethod
    def open(cls, settings: Settings, *, deep: bool = False, deferred: bool = False) -> KnowledgeBase:
        """`deep`: also check (and repair) the full-text index itself, as `kbkit index` does.
        `deferred`: touch no file yet; `prepare()` opens the index later (a server answers first)."""
        if deferred:
            return cls(settings, Store(settings.index_path))
        return cls(settings, Store.open(settings.index_path, deep=deep))

    @classmethod
    def partitioned(cls, settings: Settings) -> list[KnowledgeBase]:
        """One deferred index for everything outside the restricted folders (first), then one per
        restricted folder: each ranks with statistics of its own documents only."""
        return [
            cls(settings, Store(settings.state_dir / f"index.{_label(name)}.db"), name)
            for name in (PUBLIC, *settings.restricted.names)
        ]

    def admits(self, path: str) -> bool:
        """Whether `path` belongs to this index's part of the kb folder."""
        return self.partition is None or self.folders.folder_of(path) == self.partition

    def _rules(self) -> IgnoreRules:
        rules = IgnoreRules.load(self.settings.kb_path, self.settings.exclude_dirs)
        return rules if self.partition is None else rules.only(self.admits)

    def peek(self) -> Peek:
        """How many documents the index holds before it is opened (a server's boot line), bounded."""
        return self.store.peek()

    def prepare(self) -> None:
        """Open a deferred index: check it, create it or rebuild it (`store.repaired` says why)."""
        self.store.prepare()

    def close(self) -> None:
        if self.hybrid is not None:
            self.hybrid.stop()
        self.store.close()

    def scan(
        self,
        progress: indexer.ProgressFn | None = None,
        *,
        log: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> indexer.ScanReport:
        """Index what changed, holding the one-writer lock (other processes keep reading meanwhile)."""
        rules = self._rules()
        with self.store.writer(log=log, stop=stop):
            report = indexer.scan(
                self.store, self.settings.kb_path, self.registry, rules, progress=progress, stop=stop
            )
        if self.hybrid is not None and report.touched:
            self.hybrid.poke()
        return report

    def stale(self) -> int:
        """Files a scan would add, reindex or drop, by stat alone: no lock taken, nothing read or written."""
        rules = self._rules()
        return indexer.count_stale(self.store, self.settings.kb_path, self.registry, rules)

    def embed(self, progress: indexer.ProgressFn | None = None) -> EmbedReport | None:
        """Embed what changed, in the foreground (`kbkit index`); None when hybrid search is off."""
        return None if self.hybrid is None else self.hybrid.embed(progress)

    def embed_in_background(self, log: Callable[[str], None] | None = None) -> None:
        """While serving: embed what is pending on a background thread, and again after each scan."""
        if self.hybrid is not None:
            self.hybrid.start_background(log)

    def describe_search(self) -> tuple[bool, str]:
        """(fine, a line): hybrid on or off, the model, how many documents wait for vectors, why off."""
        from kbkit.kb import semantic

        if self.hybrid is None:
            return semantic.describe(None, self.hybrid_off, None)
        files = self.hybrid.files
        if not self.store.prepared:
            # A server opens its index in the background (docs/adr/0012), the doctor never does:
            # counted without opening it, bounded, as the boot line's documents are.
            counted, _ = self.store.glance(lambda conn: semantic.waiting(conn, files))
            return semantic.describe(self.hybrid, self.hybrid_off, counted)
        try:
            return semantic.describe(
                self.hybrid, self.hybrid_off, semantic.waiting(self.store.reader(), files)
            )
        except (IndexUnavailable, *SqliteError) as exc:
            return False, f"search: the index could not be read ({exc})"

    def dense_ranker(self) -> search.DenseRanker | None:
        return None if self.hybrid is None else self.hybrid.ranker()

    def indexing(self) -> indexer.Progress | None:
        """How far a running scan has got, whichever process runs it; None when none is running."""
        progress = self._query(lambda conn, _registry: indexer.read_progress(conn))
        if progress is None or not self.store.writer_busy():
            return None  # no scan with work, or the row of one that was killed
        return progress

    def reconfigure(self, settings: Settings) -> None:
        """New settings (kbkit.toml edited while serving): the next scan applies them."""
        self.settings = settings
        self.registry = Registry(settings.parsers, sites.markup_of(settings.kb_path))
        self._setup_hybrid()

    def rank(self, query: str, share: float = 1.0, **options: Unpack[search.SearchOptions]) -> search.Ranking:
        """A search's first step alone (`search.shape` serves the hits chosen from it): a server
        reading several indexes ranks in each, then shapes only the hits it keeps."""
        return search.rank(
            self.store,
            self.registry,
            query,
            dense=self.dense_ranker(),
            limit=options.get("limit", search.DEFAULT_LIMIT),
            path_prefix=options.get("path_prefix"),
            seconds=options.get("seconds"),
            lexical_weight=options.get("lexical_weight"),
            share=share,
        )

    def search(self, query: str, **options: Unpack[search.SearchOptions]) -> search.SearchResult:
        return search.search(self.store, self.registry, query, dense=self.dense_ranker(), **options)

    def load(self, path: str, *, offset: int = 0, max_tokens: int | None = None) -> Document:
        """Any file under the kb folder with a registered extension, indexed or not, except kbkit's
        own state; with `max_tokens`, the section at `offset` within that many tokens (kbkit/kb/reads.py)."""
        self._refuse_private(path)
        self._refuse_outside(path)
        return documents.load_document(
            self.settings.kb_path, path, self.registry, offset=offset, max_tokens=max_tokens
        )

    def _refuse_private(self, path: str) -> None:
        """kbkit's state folder (`.kbkit/`: the index, the tokens file) and a tokens file set
        elsewhere (with its lock and temporary files) are never served, whatever the kb folder holds."""
        documents.check_path(path)
        settings = self.settings
        target = (settings.kb_path / path).resolve()
        private = [settings.state_dir.resolve()]
        if settings.http.tokens_file:
            private.append((settings.root / settings.http.tokens_file).resolve())
        for place in private:
            sibling = target.parent == place.parent and target.name.startswith(
                (f"{place.name}.", f".{place.name}.")  # tokens.json.lock, .tokens.json.XXXX.tmp
            )
            if target == place or place in target.parents or sibling:
                raise DocumentRefused(
                    "private", f"{path!r} is kbkit's own state (tokens, index), which is never served"
                )

    def _refuse_outside(self, path: str) -> None:
        """A path of another partition is, to this index's readers, a path that does not exist: the
        same words as for a file that is not there, naming the part a missing folder would name."""
        if self.admits(path):
            return
        shown = self.folders.withheld_prefix(path) if self.partition == PUBLIC else None
        raise DocumentRefused("not-found", f"{shown or path!r} does not exist under the kb folder")

    def load_servable(self, path: str) -> Document:
        """Only what the resource listing offers: the guard sequence, bounded by the index."""
        documents.check_path(path)
        if self.servable(path) is None:
            raise DocumentRefused(
                "not-servable",
                f"{path!r} is not an indexed document (ignored, unregistered, skipped or absent); "
                "use get_document to read files outside the index",
            )
        return self.load(path)

    def servable(self, path: str) -> IndexedDocument | None:
        return self._query(documents.servable_document, path)

    def list_servable(
        self, *, folder: str = "", after: str | None = None, limit: int | None = None
    ) -> list[IndexedDocument]:
        return self._query(documents.servable_documents, folder=folder, after=after, limit=limit)

    def _query(
        self,
        fn: Callable[Concatenate[sqlite3.Connection, Registry, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """A thin sqlite3 error boundary around one read."""
        try:
            return fn(self.store.reader(), self.registry, *args, **kwargs)
        except SqliteError as exc:
            raise index_error(exc, "cannot read", self.store.path) from None


def _label(partition: str) -> str:
    return "public" if partition == PUBLIC else f"restricted-{partition}"
