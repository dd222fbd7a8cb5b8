"""The embedding pass: the documents whose vectors are missing, stale or of another model are
embedded and their vectors written into the index (`embeddings`: one float16 row per chunk, with
its offset and token hash), in short write transactions; vectors of documents gone are dropped.
A chunk whose tokens already have a stored vector (in this document's last version, in another
document, or earlier in the pass) takes it instead of a model run.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from kbkit.errors import SemanticUnavailable
from kbkit.kb.semantic.chunks import Chunk, Section
from kbkit.kb.semantic.encoder import Encoder
from kbkit.kb.store import Store

GROUP_DOCUMENTS = 64
"""Documents read, embedded and written per transaction (and per progress report)."""
_BODY_CHARS = 1 << 22
"""At most this much of a document's text is read for its passages (the indexed text's own cap)."""


@dataclass
class EmbedReport:
    embedded: int = 0
    """Documents (re)embedded by this pass."""
    chunks: int = 0
    """Chunks stored for them."""
    reused: int = 0
    """Of those, chunks whose vector was already stored (same tokens): no model run."""
    removed: int = 0
    """Vector rows dropped: of documents gone, or of another model or text view."""
    total: int = 0
    """Documents with current vectors after the pass."""
    pending: int = 0
    """Documents this pass set out to embed."""
    seconds: float = 0.0


ProgressFn = Callable[[int, int], None]
"""Called with (documents done, documents to do): once the work is known, then after each group."""

_INSERT = "INSERT INTO embeddings (doc_id, chunk, sha256, model, vector, start, key) VALUES (?,?,?,?,?,?,?)"


def embed_pending(
    store: Store,
    encoder: Encoder,
    *,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> EmbedReport:
    """Embed every document whose vectors are missing, stale (content changed) or of another model,
    and drop vectors of documents that are gone. Documents go shortest first in groups of
    GROUP_DOCUMENTS (similar lengths: little padding in a model run); a chunk whose tokens already
    have a stored vector takes it, and each distinct new chunk is run once. Each group is its own
    short write transaction, so readers and the indexer are never held up long, and a stopped pass
    keeps what it wrote."""
    started = time.perf_counter()
    report = EmbedReport()
    model = encoder.model_key
    conn = store.connect()
    try:
        conn.execute("BEGIN IMMEDIATE")
        report.removed = conn.execute("DELETE FROM embeddings WHERE model != ?", (model,)).rowcount
        conn.execute("COMMIT")
        pending = conn.execute(
            "SELECT d.id, d.sha256 FROM documents d "
            "LEFT JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
            "WHERE e.sha256 IS NULL OR e.sha256 != d.sha256 ORDER BY d.text_size, d.id"
        ).fetchall()
        report.pending = len(pending)
        if progress is not None:
            progress(0, len(pending))
        for first in range(0, len(pending), GROUP_DOCUMENTS):
            if should_stop():
                break
            group = dict(pending[first : first + GROUP_DOCUMENTS])
            ids = ",".join(str(doc_id) for doc_id in group)
            parts = _sections(conn, ids)
            rows = conn.execute(
                f"SELECT rowid, title, substr(body, 1, ?) FROM documents_fts WHERE rowid IN ({ids})",
                (_BODY_CHARS,),
            ).fetchall()
            batch = [
                (doc_id, group[doc_id], encoder.chunks(title or "", body or "", parts.get(doc_id)))
                for doc_id, title, body in rows
            ]
            _write(conn, encoder, batch, model, report)
            if progress is not None:
                progress(min(len(pending), first + GROUP_DOCUMENTS), len(pending))
        # Last, so a renamed or moved page found its vectors above under its new name.
        conn.execute("BEGIN IMMEDIATE")
        report.removed += conn.execute(
            "DELETE FROM embeddings WHERE doc_id NOT IN (SELECT id FROM documents)"
        ).rowcount
        conn.execute("COMMIT")
        report.total = embedded_count(conn)
    except sqlite3.Error as exc:
        raise SemanticUnavailable(f"embedding into {store.path} failed: {exc}") from None
    finally:
        conn.close()
    report.seconds = time.perf_counter() - started
    return report


def _sections(conn: sqlite3.Connection, ids: str) -> dict[int, list[Section]]:
    """doc_id -> its passages in order (start, length, the heading path a search result names)."""
    found: dict[int, list[Section]] = {}
    for doc_id, start, length, path in conn.execute(
        f"SELECT doc_id, start, length, section FROM passages WHERE doc_id IN ({ids}) ORDER BY doc_id, ord"
    ):
        found.setdefault(doc_id, []).append(Section(start, length, path))
    return found


def _known(conn: sqlite3.Connection, model: str, keys: list[bytes]) -> dict[bytes, bytes]:
    """Stored vectors of these chunk keys (from any document, this model and text view)."""
    found: dict[bytes, bytes] = {}
    for first in range(0, len(keys), 500):
        part = keys[first : first + 500]
        found.update(
            conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(part))}) "
                "AND model = ?",
                (*part, model),
            ).fetchall()
        )
    return found


def _write(
    conn: sqlite3.Connection,
    encoder: Encoder,
    batch: list[tuple[int, str, list[Chunk]]],
    model: str,
    report: EmbedReport,
) -> None:
    keys = list(dict.fromkeys(chunk.key for _, _, chunks in batch for chunk in chunks))
    vectors = _known(conn, model, keys)
    new = {chunk.key: chunk.ids for _, _, chunks in batch for chunk in chunks if chunk.key not in vectors}
    if new:
        computed = encoder.encode_ids(list(new.values())).astype("float16")
        vectors.update((key, computed[row].tobytes()) for row, key in enumerate(new))
    conn.execute("BEGIN IMMEDIATE")
    try:
        for doc_id, sha, chunks in batch:
            # Only if the document still has the content these vectors were made from.
            current = conn.execute("SELECT sha256 FROM documents WHERE id = ?", (doc_id,)).fetchone()
            conn.execute("DELETE FROM embeddings WHERE doc_id = ?", (doc_id,))
            if current is not None and current[0] == sha:
                conn.executemany(
                    _INSERT,
                    [
                        (doc_id, chunk.number, sha, model, vectors[chunk.key], chunk.start, chunk.key)
                        for chunk in chunks
                    ],
                )
                report.embedded += 1
                report.chunks += len(chunks)
                for chunk in chunks:
                    if chunk.key in new:
                        del new[chunk.key]  # its one model run; any other use of it is a reuse
                    else:
                        report.reused += 1
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def waiting_count(conn: sqlite3.Connection, model: str) -> int:
    """Documents the next pass embeds: no vectors, vectors of older content, or of another model
    or text view (`model`, as `chunks.stored_model` spells it)."""
    count: int = conn.execute(
        "SELECT count(*) FROM documents d LEFT JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
        "AND e.sha256 = d.sha256 AND e.model = ? WHERE e.doc_id IS NULL",
        (model,),
    ).fetchone()[0]
    return count


def embedded_count(conn: sqlite3.Connection) -> int:
    """Documents whose vectors match their current content."""
    count: int = conn.execute(
        "SELECT count(*) FROM documents d JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
        "AND e.sha256 = d.sha256"
    ).fetchone()[0]
    return count
