"""The dense ranking: a query embedded once and scored against every stored chunk vector; a
document's similarity mixes its opening's best cosine and its best passage's (PASSAGE_SHARE), and
its passage windows' cosines, and short texts embedded at search time (a hit's leading headings),
help choose which passage a hybrid hit points at (docs/adr/0057, 0074).
`search.py` fuses this ranking with BM25.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from kbkit.kb.semantic.chunks import MAX_CHUNKS
from kbkit.kb.semantic.encoder import Encoder
from kbkit.kb.store import Store

PASSAGE_SHARE = 0.5
"""A document's dense score: (1 - PASSAGE_SHARE) x its opening's best cosine + PASSAGE_SHARE x its
best passage's (its opening's again when it has one passage). Measured against the best of all
vectors and the opening alone (docs/benchmarks.md)."""
TEXT_VECTORS = 4096
"""Vectors of short texts embedded at search time (`text_cosines`) kept for the next search: the
same pages come back in an agent's searches, so their texts are embedded once (1.5 KB each)."""


class DenseIndex:
    """The `search.DenseRanker` over the stored vectors, reloaded when the index changes."""

    def __init__(self, store: Store, encoder: Encoder, *, passage_share: float = PASSAGE_SHARE) -> None:
        self._store = store
        self._encoder = encoder
        self._share = passage_share
        """PASSAGE_SHARE, unless a benchmark measures another."""
        self._lock = threading.Lock()
        self._version: tuple[int, int] | None = None
        self._matrix: Any = None
        self._starts: Any = None
        self._offsets: Any = None
        self._passage: Any = None
        """Per row: a passage's window (else one of the page's opening)."""
        self._doc_ids: list[int] = []
        self._paths: list[str] = []
        self._rows: dict[int, int] = {}
        """doc_id -> its index in `_doc_ids` (and `_starts`)."""
        self._asked: tuple[str, Any] | None = None
        """The last query and its vector: `passage_cosines` after `rank` embeds it once."""
        self._texts: OrderedDict[str, Any] = OrderedDict()
        """Short texts embedded at search time -> their vectors, the least recently used dropped."""

    @property
    def languages(self) -> frozenset[str] | None:
        return self._encoder.files.languages

    def _load(self) -> None:
        np = self._encoder._np
        conn = self._store.reader()
        version = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM embeddings").fetchone()
        version = (self._store.data_version(), *version)
        if version == self._version:
            return
        rows = conn.execute(
            "SELECT e.doc_id, d.path, e.vector, e.start, e.chunk FROM embeddings e "
            "JOIN documents d ON d.id = e.doc_id AND d.sha256 = e.sha256 "
            "WHERE e.model = ? ORDER BY e.doc_id, e.chunk",
            (self._encoder.model_key,),
        ).fetchall()
        doc_ids: list[int] = []
        paths: list[str] = []
        starts: list[int] = []
        for index, (doc_id, path, *_) in enumerate(rows):
            if not doc_ids or doc_ids[-1] != doc_id:
                doc_ids.append(doc_id)
                paths.append(path)
                starts.append(index)
        blob = b"".join(row[2] for row in rows)
        width = len(rows[0][2]) // 2 if rows else 0
        self._matrix = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), width).astype(np.float32)
        self._starts = np.array(starts, dtype=np.int64)
        self._offsets = np.array([row[3] for row in rows], dtype=np.int64)
        self._passage = np.array([row[4] >= MAX_CHUNKS for row in rows], dtype=bool)
        self._doc_ids, self._paths = doc_ids, paths
        self._rows = {doc_id: index for index, doc_id in enumerate(doc_ids)}
        self._version = version

    def _vector(self, query: str) -> Any:
        """`query` embedded (once for a `rank` and the `passage_cosines` after it)."""
        asked = self._asked
        if asked is not None and asked[0] == query:
            return asked[1]
        vector = self._encoder.encode([query])[0]
        self._asked = (query, vector)
        return vector

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        """doc_id -> (where the text of each of its passage windows starts, its cosine with
        `query`), for the documents of `doc_ids` that have passage windows (a page of more than one
        passage)."""
        vector = self._vector(query)
        out: dict[int, list[tuple[int, float]]] = {}
        with self._lock:
            self._load()
            for doc_id in doc_ids:
                index = self._rows.get(doc_id)
                if index is None:
                    continue
                low = int(self._starts[index])
                high = int(self._starts[index + 1]) if index + 1 < len(self._starts) else len(self._offsets)
                rows = [row for row in range(low, high) if self._passage[row]]
                if rows:
                    cosines = self._matrix[rows] @ vector
                    starts = [int(self._offsets[row]) for row in rows]
                    out[doc_id] = list(zip(starts, map(float, cosines), strict=True))
        return out

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        """The cosine of `query` with each of `texts`, embedded now (short texts: a few passages'
        headings), their vectors kept for later searches (TEXT_VECTORS)."""
        vector = self._vector(query)
        with self._lock:
            known = {text: self._texts[text] for text in texts if text in self._texts}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known |= dict(zip(missing, self._encoder.encode(missing), strict=True))
        with self._lock:
            for text, found in known.items():
                self._texts[text] = found
                self._texts.move_to_end(text)
            while len(self._texts) > TEXT_VECTORS:
                self._texts.popitem(last=False)
        return [float(known[text] @ vector) for text in texts]

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        """The `limit` documents most like `query`: (doc_id, score, where the text of its most
        similar passage window starts, or of its opening window for a page of one passage), best
        first. The score mixes the opening's best cosine and the best passage's (PASSAGE_SHARE)."""
        np = self._encoder._np
        vector = self._vector(query)
        with self._lock:
            self._load()
            if not self._doc_ids:
                return []
            cosines = self._matrix @ vector
            bounds, offsets, passage = self._starts, self._offsets, self._passage
            doc_ids, paths = self._doc_ids, self._paths
        opening = np.where(passage, -np.inf, cosines)
        inside = np.where(passage, cosines, -np.inf)
        opening_best = np.maximum.reduceat(opening, bounds)
        passage_best = np.maximum.reduceat(inside, bounds)
        passage_best = np.where(np.isfinite(passage_best), passage_best, opening_best)
        scores = (1 - self._share) * opening_best + self._share * passage_best
        if path_prefix:
            keep = np.array([path.startswith(path_prefix) for path in paths])
            scores = np.where(keep, scores, -np.inf)
        count = min(limit, len(doc_ids))
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        ranked = []
        for i in top:
            if not np.isfinite(scores[i]):
                continue
            low = int(bounds[i])
            high = int(bounds[i + 1]) if i + 1 < len(bounds) else len(cosines)
            rows = inside[low:high] if passage[low:high].any() else cosines[low:high]
            ranked.append((doc_ids[i], float(scores[i]), int(offsets[low + int(np.argmax(rows))])))
        return ranked
