"""Who may read what: the one guard every read of the kb passes (docs/adr/0070).

A kb with restricted folders (`[restricted.<name>]`) is served over HTTP from one index per part:
everything outside the restricted folders, and each restricted folder alone. A request reads
through a `View`, the parts its principal may read, and nothing else exists for it: a search ranks
with the statistics of those parts only (a word's rarity, a page's length, the links between
pages, the near-copies and translations folded together), a path in a part it may not read is
answered exactly as a path that is not there, a listing and its cursors never reach another part,
and notifications come only from the parts it reads (kbkit/server/notify.py asks `may_read`).

Over stdio, and over HTTP when no folder is restricted, there is one part, the whole kb folder,
and every reader reads it: the server behaves as it did before grants existed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, Unpack

from kbkit.config.restricted import PUBLIC, Folders, Reader
from kbkit.errors import DocumentRefused
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.documents import Document, IndexedDocument, check_path
from kbkit.kb.search import DEFAULT_LIMIT, DEFAULT_MAX_TOKENS, Ranking, SearchOptions, SearchResult, shape
from kbkit.kb.search.ranking import Ranked, named_exactly
from kbkit.kb.search.results import Hit, within_budget

Denied = Callable[[str], None]
"""Told the restricted folder a request asked for without the grant (its audit line says so)."""


class Readable(Protocol):
    """What the kb tools and resources read through: a `View`, or one `KnowledgeBase`."""

    def search(self, query: str, **options: Unpack[SearchOptions]) -> SearchResult: ...
    def load(self, path: str, *, offset: int = 0, max_tokens: int | None = None) -> Document: ...
    def load_servable(self, path: str) -> Document: ...
    def servable(self, path: str) -> IndexedDocument | None: ...
    def list_servable(
        self, *, folder: str = "", after: str | None = None, limit: int | None = None
    ) -> list[IndexedDocument]: ...


@dataclass(frozen=True)
class Part:
    """One index of the kb and how far its scan has got."""

    name: str
    """PUBLIC, or the restricted folder it holds."""
    kb: KnowledgeBase
    indexing: Callable[[], str | None]


class Library:
    """Every part of the kb this server holds, and which of them a reader may read."""

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts
        self.workers = ThreadPoolExecutor(max(2, os.cpu_count() or 2), thread_name_prefix="kbkit-rank")
        """Where the indexes of one search rank side by side (SQLite lets go of the GIL); each
        worker keeps its own connection to each index, as every thread does."""
        self.layout = parts[0].kb.folders
        """The restricted folders the indexes were cut by."""

    @property
    def partitioned(self) -> bool:
        return self.parts[0].kb.partition is not None

    def folders(self) -> Folders:
        """The restricted folders as the configuration says now (readers apply while serving)."""
        return self.parts[0].kb.settings.restricted

    def moved(self) -> bool:
        """The restricted folders' paths changed since the indexes were cut: until a restart, a
        document could sit in the wrong part, so nothing is served."""
        return self.partitioned and _paths(self.folders()) != _paths(self.layout)

    def readable(self, reader: Reader | None) -> frozenset[str]:
        if not self.partitioned:
            return frozenset(part.name for part in self.parts)
        if self.moved():
            return frozenset()
        return self.folders().readable(reader) & {part.name for part in self.parts}

    def may_read(self, reader: Reader | None, part: str | None) -> bool:
        """Whether `reader` hears of changes in `part` (None: a change of no part, e.g. the skills)."""
        return part is None or part in self.readable(reader)

    def view(self, reader: Reader | None, denied: Denied = lambda folder: None) -> View:
        names = self.readable(reader)
        narrowed = reader.paths if reader is not None else ()
        return View([part for part in self.parts if part.name in names], self, denied, narrowed)


class View:
    """The parts one request may read, read as one kb; with a token narrowed to some paths
    (`kbkit token create --paths`), only what lies under them."""

    def __init__(
        self, parts: list[Part], library: Library, denied: Denied, narrowed: tuple[str, ...] = ()
    ) -> None:
        self.parts = parts
        self.library = library
        self.denied = denied
        self.narrowed = tuple(path.strip("/") for path in narrowed)

    def search(self, query: str, **options: Unpack[SearchOptions]) -> SearchResult:
        """One search over the parts read: each index ranks with its own statistics, the best
        `limit` hits of all are kept by score, and only those are shaped, each by its own index."""
        if not self.parts:
            return SearchResult(note=self.closed())
        prefixes = self._prefixes(options.get("path_prefix") or "")
        if not prefixes:
            outside = (
                f"path_prefix {options.get('path_prefix')!r} is outside what this token reads "
                f"({', '.join(self.narrowed)}); drop it or search under those"
            )
            return SearchResult(note=outside, empty_note=outside)
        if len(self.parts) == 1 and not self.narrowed:
            return self.parts[0].kb.search(query, **options)
        sizes = [part.kb.store.count_documents() for part in self.parts]
        asked = [
            (part.kb, size / max(1, sum(sizes)), prefix)  # together, the pools of one index
            for part, size in zip(self.parts, sizes, strict=True)
            for prefix in prefixes
        ]

        def one(kb: KnowledgeBase, share: float, prefix: str) -> Ranking:
            under: SearchOptions = {**options, "path_prefix": prefix}
            return self._narrow(kb.rank(query, share, **under))

        rankings = list(self.library.workers.map(one, *zip(*asked, strict=True)))
        limit = options.get("limit", DEFAULT_LIMIT)
        seen: set[str] = set()
        chosen: list[tuple[int, Ranked]] = []
        named = named_exactly(query)  # a page the query names goes first, whichever index holds it
        for _, order, hit in sorted(
            ((hit.score, order, hit) for order, found in enumerate(rankings) for hit in found.hits),
            key=lambda item: (not named(item[2]), -item[0], item[1]),
        ):
            if hit.path not in seen and len(chosen) < limit:
                seen.add(hit.path)
                chosen.append((order, hit))
        top = chosen[0][1].score if chosen and chosen[0][1].score > 0 else 1.0
        served: dict[tuple[int, int], Hit] = {}
        empty: list[str] = []
        query_notes: list[str] = []
        for order, found in enumerate(rankings):
            mine = [hit for number, hit in chosen if number == order]
            result = shape(found, mine, max_tokens=None, top=top)
            served |= {(order, ranked.doc_id): hit for ranked, hit in zip(mine, result.results, strict=True)}
            empty += [result.empty_note] if result.empty_note else []
            query_notes = query_notes or result.query_notes  # the same query: the same notes
        words = [note for note in empty if note.startswith("no document contains")]
        return within_budget(
            [served[(order, hit.doc_id)] for order, hit in chosen],
            options.get("max_tokens", DEFAULT_MAX_TOKENS),
            top=top,
            query_notes=query_notes,
            empty_note=None if chosen else next(iter(words or empty), None),
        )

    def _narrow(self, found: Ranking) -> Ranking:
        """`found` without hits or near-copies outside what a narrowed token reads."""
        if self.narrowed:
            found.hits = [hit for hit in found.hits if self._within(hit.path)]
            found.folded = {doc: [p for p in paths if self._within(p)] for doc, paths in found.folded.items()}
        return found

    def _prefixes(self, asked: str) -> list[str]:
        """The path prefixes a search runs under: the one asked for, within the token's paths."""
        if not self.narrowed:
            return [asked]
        found = []
        for path in self.narrowed:
            if asked.startswith(path):
                found.append(asked)
            elif path.startswith(asked):
                found.append(path)
        return list(dict.fromkeys(found))

    def _within(self, path: str) -> bool:
        return not self.narrowed or any(path == p or path.startswith(p + "/") for p in self.narrowed)

    def everyone_reads(self, path: str | None) -> bool:
        """Whether every principal would read the same at `path` (None: a listing, a topic): what
        a host may share (kbkit/server/caching.py)."""
        if path is None and self.narrowed:
            return False
        if not self.library.partitioned:
            return True
        return path is not None and self.library.layout.folder_of(path) == PUBLIC and not self.library.moved()

    def indexing(self) -> str | None:
        return next((line for part in self.parts if (line := part.indexing()) is not None), None)

    def load(self, path: str, *, offset: int = 0, max_tokens: int | None = None) -> Document:
        return self._owner(path).load(path, offset=offset, max_tokens=max_tokens)

    def load_servable(self, path: str) -> Document:
        return self._owner(path).load_servable(path)

    def servable(self, path: str) -> IndexedDocument | None:
        try:
            owner = self._owner(path)
        except DocumentRefused:
            return None
        return owner.servable(path)

    def list_servable(
        self, *, folder: str = "", after: str | None = None, limit: int | None = None
    ) -> list[IndexedDocument]:
        """In path order across the parts read: each gives its first `limit` after `after`."""
        folders = self._prefixes(folder) if self.narrowed else [folder]
        found = {
            row.path: row
            for part in self.parts
            for one in folders
            for row in part.kb.list_servable(folder=one.rstrip("/"), after=after, limit=limit)
            if self._within(row.path)
        }
        rows = sorted(found.values(), key=lambda row: row.path)
        return rows if limit is None else rows[:limit]

    def _owner(self, path: str) -> KnowledgeBase:
        """The index `path` belongs to, if this view reads it; else refused as a path not there."""
        check_path(path)
        if not self.parts:
            raise DocumentRefused("not-found", self.closed())
        name = self.library.layout.folder_of(path)
        owner = next((part.kb for part in self.parts if part.name == name), None)
        if owner is None:
            self.denied(name)
            public = self.library.parts[0].kb
            public.load(path)  # raises the refusal a path that is not there gets
            raise AssertionError("unreachable: the public index admits no restricted path")
        if not self._within(path):
            raise DocumentRefused(
                "not-found",
                f"{path!r} is outside what this token reads ({', '.join(self.narrowed)}); its owner can "
                "create a wider one",
            )
        return owner

    def closed(self) -> str:
        return (
            "the server's restricted folders changed since it started; nothing is served until it "
            "restarts (ask its operator)"
        )


def _paths(folders: Folders) -> dict[str, frozenset[str]]:
    return {name: frozenset(table.paths) for name, table in folders.tables.items()}
