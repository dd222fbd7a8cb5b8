"""A dense ranking fixed by hand, for testing what the fusion with vectors keeps of BM25's order."""

from __future__ import annotations

from kbkit.kb.base import KnowledgeBase


class FixedDense:
    """`cosines` by path, every other document far below (a `DenseRanker`)."""

    languages = None

    def __init__(self, kb: KnowledgeBase, cosines: dict[str, float]) -> None:
        ids = dict(kb.store.reader().execute("SELECT path, id FROM documents ORDER BY path"))
        ranked = sorted(ids, key=lambda path: -cosines.get(path, 0.0))
        self._ranking = [(ids[path], cosines.get(path, 0.0), 0) for path in ranked]

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        return self._ranking[:limit]

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        return {}

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        return [0.0] * len(texts)
